//! The connection's two tasks: a writer that sends encoded frames in order,
//! and a reader that routes each guest frame to the request it answers.
//!
//! Every buffer between them and the callers is bounded. Host to guest: at
//! most [`WRITE_QUEUE_FRAMES`] frames wait for the writer, and request
//! payloads hold a share of the input budget until answered. Guest to host:
//! each stream's waiting payload bytes are counted against a per-stream and a
//! per-connection cap; the guest sends a stream only as much as the host
//! granted ([`STREAM_WINDOW`]), so an honest guest never reaches them, and what
//! goes past them is dropped with a marker (exec output) or fails the request
//! (anything else). The reader itself never waits on a caller, so one stalled
//! stream cannot hold back the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use paddock_core::sandbox::GuestError;
use paddock_proto::{
    ErrorCode, ErrorInfo, FrameReader, GuestFrame, GuestMessage, HostFrame, Request, STREAM_WINDOW,
    encode_frame, error_chain,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::limits::{SlowReader, StreamLimits};

/// One guest frame for a request: the message and its payload.
pub(crate) type Incoming = (GuestMessage, Vec<u8>);

/// Frames that may wait for the writer.
pub(crate) const WRITE_QUEUE_FRAMES: usize = 64;

/// Credit goes back to the guest in steps of this many consumed bytes.
const GRANT_STEP: u64 = STREAM_WINDOW / 2;

/// Credit granted to a stream nobody reads any more, so the guest finishes
/// it at once instead of waiting for credit that never comes.
pub(crate) const RELEASE_CREDIT: u64 = u64::MAX / 2;

/// One encoded frame for the writer, with the input budget it holds until written.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) frame: Vec<u8>,
    pub(crate) _budget: Option<OwnedSemaphorePermit>,
}

/// State shared by the client handles and the two tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) limits: StreamLimits,
    pub(crate) next_id: AtomicU64,
    /// Payload bytes routed to callers and not yet taken, over every stream.
    queued: AtomicUsize,
    /// For credit the reader grants itself ([`SlowReader::Drop`]); weak, so
    /// the writer still ends when the last client handle goes.
    frames: Mutex<Option<mpsc::WeakSender<Outgoing>>>,
}

#[derive(Debug, Default)]
struct State {
    /// Requests waiting for frames, by id.
    pending: HashMap<u64, Route>,
    /// Set once the connection is unusable; why, for every later error.
    closed: Option<String>,
}

#[derive(Debug)]
struct Route {
    tx: mpsc::UnboundedSender<Incoming>,
    stream: Arc<StreamState>,
}

/// The accounting of one request's stream, shared with its caller.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    /// Payload bytes routed and not yet taken by the caller.
    queued: AtomicUsize,
    /// Output bytes dropped since the caller last looked.
    pub(crate) dropped: AtomicU64,
    /// Exec output: may be dropped with a marker rather than failing the request.
    output: bool,
    /// Received bytes not yet granted back ([`SlowReader::Drop`] only).
    ungranted: AtomicU64,
    /// The stream saw events, so the guest holds credit state for it.
    pub(crate) streamed: AtomicBool,
}

impl StreamState {
    /// Whether the reader grants credit as frames arrive instead of the caller
    /// as it takes them.
    fn grants_on_receipt(&self, limits: &StreamLimits) -> bool {
        self.output && limits.slow_reader == SlowReader::Drop
    }
}

impl Shared {
    pub(crate) fn new(limits: StreamLimits) -> Self {
        Self {
            state: Mutex::new(State::default()),
            limits,
            next_id: AtomicU64::new(1),
            queued: AtomicUsize::new(0),
            frames: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves the map consistent (single
        // inserts and removes), so a poisoned lock is still safe to use.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_writer(&self, frames: &mpsc::Sender<Outgoing>) {
        *self.frames.lock().unwrap_or_else(|e| e.into_inner()) = Some(frames.downgrade());
    }

    /// Registers a request; fails when the connection is already closed.
    pub(crate) fn register(
        &self,
        op: &'static str,
        id: u64,
    ) -> Result<(mpsc::UnboundedReceiver<Incoming>, Arc<StreamState>), GuestError> {
        let mut state = self.lock();
        if let Some(reason) = &state.closed {
            return Err(GuestError::Disconnected {
                op,
                reason: reason.clone(),
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let stream = Arc::new(StreamState {
            output: op == "exec",
            ..StreamState::default()
        });
        state.pending.insert(
            id,
            Route {
                tx,
                stream: stream.clone(),
            },
        );
        Ok((rx, stream))
    }

    pub(crate) fn forget(&self, id: u64) {
        self.lock().pending.remove(&id);
    }

    /// The caller took a frame of `len` payload bytes.
    pub(crate) fn taken(&self, stream: &StreamState, len: usize) {
        stream.queued.fetch_sub(len, Ordering::Relaxed);
        self.queued.fetch_sub(len, Ordering::Relaxed);
    }

    /// Whether the caller of `stream` grants credit itself as it takes frames.
    pub(crate) fn caller_grants(&self, stream: &StreamState) -> bool {
        !stream.grants_on_receipt(&self.limits)
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

    /// A `StreamCredit` frame for `target`, or None when it cannot be encoded.
    pub(crate) fn credit_frame(&self, target: u64, bytes: u64) -> Option<Outgoing> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = Request::StreamCredit { target, bytes };
        let frame = encode_frame(&HostFrame { id, request }, &[]).ok()?;
        Some(Outgoing {
            frame,
            _budget: None,
        })
    }

    fn dispatch(&self, frame: GuestFrame, payload: Vec<u8>) {
        let id = frame.id;
        let is_final = frame.message.is_final();
        let len = payload.len();
        let mut state = self.lock();
        let route = if is_final {
            state.pending.remove(&id)
        } else {
            state.pending.get(&id).map(|route| Route {
                tx: route.tx.clone(),
                stream: route.stream.clone(),
            })
        };
        let Some(route) = route else {
            drop(state);
            tracing::debug!(id, "guest frame for no pending request dropped");
            return;
        };
        let stream = &route.stream;
        if !is_final {
            stream.streamed.store(true, Ordering::Relaxed);
            if stream.grants_on_receipt(&self.limits) {
                self.grant_received(id, stream, len);
            }
            let over_stream =
                stream.queued.load(Ordering::Relaxed) + len > self.limits.stream_buffer_bytes;
            let over_sandbox =
                self.queued.load(Ordering::Relaxed) + len > self.limits.sandbox_buffer_bytes;
            if over_stream || over_sandbox {
                if stream.output {
                    stream.dropped.fetch_add(len as u64, Ordering::Relaxed);
                    return;
                }
                state.pending.remove(&id);
                drop(state);
                tracing::warn!(
                    id,
                    over_stream,
                    "request's reader fell behind; request failed"
                );
                let error = ErrorInfo::new(
                    ErrorCode::TooLarge,
                    "the host's buffer for this request is full: its reader fell behind",
                );
                let _ = route.tx.send((GuestMessage::Error(error), Vec::new()));
                self.send_control(id, RELEASE_CREDIT);
                return;
            }
        }
        drop(state);
        stream.queued.fetch_add(len, Ordering::Relaxed);
        self.queued.fetch_add(len, Ordering::Relaxed);
        if route.tx.send((frame.message, payload)).is_err() {
            self.taken(stream, len);
            if !is_final {
                // The caller stopped listening; drop later frames early.
                self.forget(id);
            }
        }
    }

    /// [`SlowReader::Drop`]: credit goes back as soon as bytes arrive, so the
    /// guest never waits for the caller.
    fn grant_received(&self, id: u64, stream: &StreamState, len: usize) {
        let total = stream.ungranted.fetch_add(len as u64, Ordering::Relaxed) + len as u64;
        if total >= GRANT_STEP {
            stream.ungranted.fetch_sub(total, Ordering::Relaxed);
            if !self.send_control(id, total) {
                stream.ungranted.fetch_add(total, Ordering::Relaxed);
            }
        }
    }

    /// Queues a control frame without waiting; false when the writer's queue
    /// is full or gone (the caller keeps what it wanted to send for later).
    pub(crate) fn send_control(&self, target: u64, credit: u64) -> bool {
        let frames = self
            .frames
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(mpsc::WeakSender::upgrade);
        match (frames, self.credit_frame(target, credit)) {
            (Some(frames), Some(frame)) => frames.try_send(frame).is_ok(),
            _ => false,
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
    mut frames: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared>,
) {
    while let Some(outgoing) = frames.recv().await {
        let written = match writer.write_all(&outgoing.frame).await {
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
