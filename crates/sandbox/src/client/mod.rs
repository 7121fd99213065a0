//! The host side of the guest protocol: one connection, many requests at once.
//!
//! A writer task sends frames in order; a reader task routes every guest frame
//! to the request whose id it carries (zero or more events, then one final
//! frame). When the connection ends or breaks, every pending and later request
//! fails with [`GuestError::Disconnected`] carrying the reason.

mod demux;
mod exec;
mod ops;
mod snapshot;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use paddock_core::sandbox::GuestError;
use paddock_proto::{
    ErrorCode, GuestMessage, HostFrame, PROTOCOL_VERSION, Reply, Request, encode_frame,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use exec::ExecStream;

use demux::{Incoming, Shared};

/// A connection to one guest agent. Cheap to clone; all clones share the
/// connection, which closes (and so ends the guest) when the last one is dropped.
#[derive(Debug, Clone)]
pub struct GuestClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    next_id: AtomicU64,
    frames: mpsc::UnboundedSender<Vec<u8>>,
    shared: Arc<Shared>,
    /// Set once by the handshake.
    agent_version: OnceLock<String>,
}

impl GuestClient {
    /// Starts the connection's tasks on the current tokio runtime and
    /// completes the version handshake.
    pub async fn connect<R, W>(reader: R, writer: W) -> Result<Self, GuestError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::default());
        let (frames, frames_rx) = mpsc::unbounded_channel();
        tokio::spawn(demux::write_loop(writer, frames_rx, shared.clone()));
        tokio::spawn(demux::read_loop(reader, shared.clone()));

        let client = Self {
            inner: Arc::new(Inner {
                next_id: AtomicU64::new(1),
                frames,
                shared,
                agent_version: OnceLock::new(),
            }),
        };
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
        };
        let agent_version = match client.start(hello, &[])?.reply().await {
            Ok((Reply::Hello { version, .. }, _)) if version != PROTOCOL_VERSION => {
                return Err(GuestError::VersionMismatch {
                    host: PROTOCOL_VERSION,
                    guest: version.to_string(),
                });
            }
            Ok((Reply::Hello { agent_version, .. }, _)) => agent_version,
            Ok((other, _)) => return Err(ops::unexpected("hello", &other)),
            Err(GuestError::Refused { error, .. }) if error.code == ErrorCode::VersionMismatch => {
                return Err(GuestError::VersionMismatch {
                    host: PROTOCOL_VERSION,
                    guest: error.message,
                });
            }
            Err(err) => return Err(err),
        };
        let _ = client.inner.agent_version.set(agent_version);
        Ok(client)
    }

    /// [`GuestClient::connect`] over a unix stream socket.
    pub async fn connect_unix(stream: tokio::net::UnixStream) -> Result<Self, GuestError> {
        let (reader, writer) = stream.into_split();
        Self::connect(reader, writer).await
    }

    /// The guest's version string from the handshake.
    pub fn agent_version(&self) -> &str {
        self.inner
            .agent_version
            .get()
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The connection is gone; every request will fail.
    pub fn is_closed(&self) -> bool {
        self.inner.shared.is_closed()
    }

    /// Sends a request and returns the channel its answer arrives on.
    fn start(&self, request: Request, payload: &[u8]) -> Result<Call, GuestError> {
        let op = request.name();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = encode_frame(&HostFrame { id, request }, payload)
            .map_err(|source| GuestError::Encode { op, source })?;
        // Registered before sending, so no answer can arrive unrouted.
        let rx = self.inner.shared.register(op, id)?;
        let call = Call {
            id,
            op,
            rx,
            shared: self.inner.shared.clone(),
        };
        if self.inner.frames.send(frame).is_err() {
            return Err(call.disconnected());
        }
        Ok(call)
    }

    /// Sends a request whose answer nobody waits for (the reader drops it).
    fn send_detached(&self, request: Request) {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(frame) = encode_frame(&HostFrame { id, request }, &[]) {
            let _ = self.inner.frames.send(frame);
        }
    }

    /// Sends a request and waits for its final answer.
    async fn call(&self, request: Request, payload: &[u8]) -> Result<(Reply, Vec<u8>), GuestError> {
        self.start(request, payload)?.reply().await
    }
}

/// The answer channel of one request. Dropping it stops routing frames to it.
#[derive(Debug)]
struct Call {
    id: u64,
    op: &'static str,
    rx: mpsc::UnboundedReceiver<Incoming>,
    shared: Arc<Shared>,
}

impl Call {
    async fn next(&mut self) -> Result<Incoming, GuestError> {
        self.rx.recv().await.ok_or_else(|| self.disconnected())
    }

    /// The final answer; events before it are skipped.
    async fn reply(mut self) -> Result<(Reply, Vec<u8>), GuestError> {
        loop {
            match self.next().await? {
                (GuestMessage::Event(_), _) => continue,
                (GuestMessage::Reply(reply), payload) => return Ok((reply, payload)),
                (GuestMessage::Error(error), _) => {
                    return Err(GuestError::Refused { op: self.op, error });
                }
            }
        }
    }

    fn disconnected(&self) -> GuestError {
        GuestError::Disconnected {
            op: self.op,
            reason: self.shared.closed_reason(),
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.shared.forget(self.id);
    }
}
