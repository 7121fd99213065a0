//! Feeding a child's stdin in request order.
//!
//! The connection's reader enqueues each `ExecStdin` / `ProcessWrite` chunk
//! synchronously (so chunks keep the order they arrived in, even though
//! requests are handled concurrently); one pump task per child writes them and
//! acknowledges each once it is in the pipe, which gives the host flow control.

use paddock_proto::{ErrorCode, ErrorInfo};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use super::command::InputPipe;

pub type Ack = oneshot::Receiver<Result<(), ErrorInfo>>;

#[derive(Debug)]
pub struct Chunk {
    data: Vec<u8>,
    eof: bool,
    done: oneshot::Sender<Result<(), ErrorInfo>>,
}

/// The sending side, kept where later requests can find it.
#[derive(Debug, Clone)]
pub struct StdinFeed {
    tx: mpsc::UnboundedSender<Chunk>,
}

#[derive(Debug)]
pub struct StdinQueue {
    rx: mpsc::UnboundedReceiver<Chunk>,
}

pub fn channel() -> (StdinFeed, StdinQueue) {
    let (tx, rx) = mpsc::unbounded_channel();
    (StdinFeed { tx }, StdinQueue { rx })
}

pub(crate) fn closed() -> ErrorInfo {
    ErrorInfo::new(ErrorCode::StdinClosed, "stdin is closed")
}

impl StdinFeed {
    /// Queues bytes (and optionally end of file); the ack resolves once written.
    pub fn submit(&self, data: Vec<u8>, eof: bool) -> Ack {
        let (done, ack) = oneshot::channel();
        if let Err(mpsc::error::SendError(chunk)) = self.tx.send(Chunk { data, eof, done }) {
            let _ = chunk.done.send(Err(closed()));
        }
        ack
    }
}

/// Writes queued chunks until end of file, a write error, or every feed is gone.
pub async fn pump(stdin: InputPipe, mut queue: StdinQueue) {
    let mut stdin = Some(stdin);
    while let Some(chunk) = queue.rx.recv().await {
        let result = match stdin.as_mut() {
            None => Err(closed()),
            Some(pipe) => match write_chunk(pipe, &chunk.data).await {
                Ok(()) => Ok(()),
                Err(e) => {
                    stdin = None;
                    // The process closed its end (or exited): a state of
                    // the process, not a failure of the guest.
                    let code = if e.kind() == std::io::ErrorKind::BrokenPipe {
                        ErrorCode::StdinClosed
                    } else {
                        ErrorCode::Io
                    };
                    Err(ErrorInfo::new(code, format!("writing stdin: {e}")))
                }
            },
        };
        if chunk.eof {
            stdin = None;
        }
        let _ = chunk.done.send(result);
    }
}

async fn write_chunk(pipe: &mut InputPipe, data: &[u8]) -> std::io::Result<()> {
    pipe.write_all(data).await?;
    pipe.flush().await
}
