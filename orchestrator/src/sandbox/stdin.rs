//! Streams paddock's stdin to a running command.

use std::io::Read;
use std::sync::Arc;

use paddock_core::sandbox::GuestOps;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const CHUNK: usize = 64 << 10;

/// Reads our stdin on a thread (a blocking read cannot be cancelled, so it
/// must not hold a runtime thread) and sends it to exec `target`, closing the
/// command's stdin at our end of file. Stops quietly when the command is gone.
pub fn forward(guest: Arc<dyn GuestOps>, target: u64) -> JoinHandle<()> {
    let mut rx = read_on_a_thread(CHUNK);
    tokio::spawn(async move {
        // A closed channel without an empty chunk (no reader thread) is end of file too.
        while let Some(chunk) = rx.recv().await {
            let eof = chunk.is_empty();
            if guest.exec_stdin(target, &chunk, eof).await.is_err() || eof {
                return;
            }
        }
        let _ = guest.exec_stdin(target, &[], true).await;
    })
}

/// Our stdin, read on a thread in chunks of at most `chunk` bytes, as they
/// come; an empty chunk is end of file, and so is a closed channel.
pub fn read_on_a_thread(chunk: usize) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(2);
    let reader = std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            loop {
                let mut buf = vec![0u8; chunk];
                let n = match stdin.read(&mut buf) {
                    Ok(n) => n,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    // An unreadable stdin (closed, a directory) is an empty one.
                    Err(_) => 0,
                };
                buf.truncate(n);
                if tx.blocking_send(buf).is_err() || n == 0 {
                    return;
                }
            }
        });
    if let Err(err) = reader {
        tracing::warn!(error = %err, "cannot read stdin; the command gets an empty stdin");
    }
    rx
}
