//! The connection's two tasks: a writer that sends encoded frames in order,
//! and a reader that routes each guest frame to the request it answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use paddock_core::sandbox::GuestError;
use paddock_proto::{FrameReader, GuestFrame, GuestMessage, error_chain};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// One guest frame for a request: the message and its payload.
pub(crate) type Incoming = (GuestMessage, Vec<u8>);

/// State shared by the client handles and the two tasks.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests waiting for frames, by id.
    pending: HashMap<u64, mpsc::UnboundedSender<Incoming>>,
    /// Set once the connection is unusable; why, for every later error.
    closed: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves the map consistent (single
        // inserts and removes), so a poisoned lock is still safe to use.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request; fails when the connection is already closed.
    pub(crate) fn register(
        &self,
        op: &'static str,
        id: u64,
    ) -> Result<mpsc::UnboundedReceiver<Incoming>, GuestError> {
        let mut state = self.lock();
        if let Some(reason) = &state.closed {
            return Err(GuestError::Disconnected {
                op,
                reason: reason.clone(),
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        state.pending.insert(id, tx);
        Ok(rx)
    }

    pub(crate) fn forget(&self, id: u64) {
        self.lock().pending.remove(&id);
    }

    pub(crate) fn closed_reason(&self) -> String {
        self.lock()
            .closed
            .clone()
            .unwrap_or_else(|| "request abandoned by the connection".to_owned())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }

    /// Marks the connection dead and wakes every pending request: dropping
    /// their senders ends their channels, and they read `closed` for the reason.
    pub(crate) fn close(&self, reason: String) {
        let dropped = {
            let mut state = self.lock();
            if state.closed.is_none() {
                tracing::debug!(%reason, pending = state.pending.len(), "guest connection closed");
                state.closed = Some(reason);
            }
            std::mem::take(&mut state.pending)
        };
        drop(dropped);
    }

    fn dispatch(&self, frame: GuestFrame, payload: Vec<u8>) {
        let id = frame.id;
        let is_final = frame.message.is_final();
        let mut state = self.lock();
        let sender = if is_final {
            state.pending.remove(&id)
        } else {
            state.pending.get(&id).cloned()
        };
        drop(state);
        match sender {
            Some(tx) => {
                if tx.send((frame.message, payload)).is_err() && !is_final {
                    // The caller stopped listening; drop later frames early.
                    self.forget(id);
                }
            }
            None => tracing::debug!(id, "guest frame for no pending request dropped"),
        }
    }
}

/// Reads guest frames until the connection ends or breaks, then closes `shared`.
pub(crate) async fn read_loop<R: AsyncRead + Unpin>(reader: R, shared: Arc<Shared>) {
    let mut reader = FrameReader::new(reader);
    let reason = loop {
        match reader.read_frame().await {
            Ok(Some(raw)) => match raw.decode::<GuestFrame>() {
                Ok(frame) => shared.dispatch(frame, raw.payload),
                Err(err) => break format!("guest sent a malformed frame: {}", error_chain(&err)),
            },
            Ok(None) => break "guest closed the connection".to_owned(),
            Err(err) => break format!("reading from the guest failed: {}", error_chain(&err)),
        }
    };
    shared.close(reason);
}

/// Writes encoded frames in order until every client handle is gone (then
/// shuts the write side down, which tells the guest to exit) or a write fails.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: mpsc::UnboundedReceiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    while let Some(frame) = frames.recv().await {
        let written = match writer.write_all(&frame).await {
            Ok(()) => writer.flush().await,
            Err(err) => Err(err),
        };
        if let Err(err) = written {
            shared.close(format!("writing to the guest failed: {err}"));
            return;
        }
    }
    let _ = writer.shutdown().await;
}
