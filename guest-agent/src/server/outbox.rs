//! The single writer of the connection: every frame the guest sends goes
//! through one channel to one task, so frames never interleave.

use paddock_proto::{
    ErrorCode, ErrorInfo, Event, FrameWriter, GuestFrame, GuestMessage, encode_frame,
};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};

use super::credit::{Credit, Credits};

use crate::error::Handled;

/// Frames that may wait in the channel; senders beyond it wait, which is how
/// a host that stops reading slows command output down instead of growing memory.
const QUEUE_FRAMES: usize = 64;

/// How long an event waits for the host to grant credit before its stream
/// gives up (the host stopped reading that request; the stream ends with an error).
pub const CREDIT_STALL: Duration = Duration::from_secs(60);

#[derive(Debug)]
enum Outgoing {
    Frame(Box<GuestFrame>, Vec<u8>),
    /// Resolves once every frame queued before it has been written.
    Flush(oneshot::Sender<()>),
}

#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Outgoing>,
    credits: Arc<Credits>,
}

impl Outbox {
    /// Starts the writer task. The returned receiver resolves when the writer
    /// stops (the connection failed); the serve loop ends with it.
    pub fn start<W>(writer: W) -> (Outbox, oneshot::Receiver<()>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(QUEUE_FRAMES);
        let (stopped_tx, stopped_rx) = oneshot::channel();
        tokio::spawn(async move {
            write_frames(FrameWriter::new(writer), rx).await;
            let _ = stopped_tx.send(());
        });
        (
            Outbox {
                tx,
                credits: Arc::default(),
            },
            stopped_rx,
        )
    }

    /// Sends an event once stream `id` has credit; false (and nothing sent)
    /// when the host granted none within [`CREDIT_STALL`].
    pub async fn event(&self, id: u64, event: Event, payload: Vec<u8>) -> bool {
        let credit = self.credit(id);
        if !credit.available_within(CREDIT_STALL).await {
            tracing::warn!(id, "the host granted no credit in time; stream abandoned");
            return false;
        }
        credit.spend(payload.len());
        self.send(id, GuestMessage::Event(event), payload).await;
        true
    }

    /// The flow-control credit of stream `id`.
    pub fn credit(&self, id: u64) -> Arc<Credit> {
        self.credits.stream(id)
    }

    /// `StreamCredit` from the host.
    pub fn grant(&self, id: u64, bytes: u64) {
        self.credits.grant(id, bytes);
    }

    pub async fn finish(&self, id: u64, result: Handled) {
        let (message, payload) = match result {
            Ok((reply, payload)) => (GuestMessage::Reply(reply), payload),
            Err(error) => (GuestMessage::Error(error), Vec::new()),
        };
        self.send(id, message, payload).await;
        self.credits.end(id);
    }

    async fn send(&self, id: u64, message: GuestMessage, payload: Vec<u8>) {
        // A closed channel means the connection is gone; nothing to tell anyone.
        let _ = self
            .tx
            .send(Outgoing::Frame(
                Box::new(GuestFrame { id, message }),
                payload,
            ))
            .await;
    }

    /// Waits until everything queued so far is on the wire (or the writer died).
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Outgoing::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

async fn write_frames<W: AsyncWrite + Unpin>(
    mut writer: FrameWriter<W>,
    mut rx: mpsc::Receiver<Outgoing>,
) {
    while let Some(item) = rx.recv().await {
        let (frame, payload) = match item {
            Outgoing::Flush(done) => {
                let _ = done.send(());
                continue;
            }
            Outgoing::Frame(frame, payload) => (frame, payload),
        };
        let encoded = match encode_frame(&frame, &payload) {
            Ok(encoded) => encoded,
            Err(e) => {
                // Only an oversized reply can get here; the request still gets
                // its one final frame.
                tracing::error!(id = frame.id, error = %e, "cannot encode frame");
                let error = GuestFrame {
                    id: frame.id,
                    message: GuestMessage::Error(ErrorInfo::new(
                        ErrorCode::TooLarge,
                        e.to_string(),
                    )),
                };
                match encode_frame(&error, &[]) {
                    Ok(encoded) => encoded,
                    Err(_) => continue,
                }
            }
        };
        if let Err(e) = writer.write_encoded(&encoded).await {
            tracing::info!(error = %e, "connection closed while writing");
            return;
        }
    }
}
