//! The host side of the guest protocol: one connection, many requests at once.
//!
//! A writer task sends frames in order; a reader task routes every guest frame
//! to the request whose id it carries (zero or more events, then one final
//! frame). When the connection ends or breaks, every pending and later request
//! fails with [`GuestError::Disconnected`] carrying the reason. Every buffer
//! on the way is bounded ([`StreamLimits`]; see `demux`).

mod demux;
mod exec;
mod limits;
mod ops;
mod port;
mod snapshot;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use paddock_core::sandbox::{BoxError, GuestError, GuestOps, SandboxError, SandboxId};
use paddock_proto::{
    ErrorCode, ErrorInfo, GuestMessage, HostFrame, PROTOCOL_VERSION, Reply, Request, STREAM_WINDOW,
    encode_frame,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc};

pub use exec::ExecStream;
pub use limits::{SlowReader, StreamLimits, StreamLimitsError};

use demux::{Incoming, Outgoing, RELEASE_CREDIT, Shared, StreamState, WRITE_QUEUE_FRAMES};

/// A connection to one guest agent. Cheap to clone; all clones share the
/// connection, which closes (and so ends the guest) when the last one is dropped.
#[derive(Debug, Clone)]
pub struct GuestClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    frames: mpsc::Sender<Outgoing>,
    /// Request payload bytes sent and not yet answered (see [`StreamLimits`]).
    input_budget: Arc<Semaphore>,
    shared: Arc<Shared>,
    /// Set once by the handshake.
    agent_version: OnceLock<String>,
    /// The sandbox's OOM-kill counter file, when its backend knows it.
    oom_counter: OnceLock<PathBuf>,
}

impl GuestClient {
    /// Starts the connection's tasks on the current tokio runtime and
    /// completes the version handshake, with the default [`StreamLimits`].
    pub async fn connect<R, W>(reader: R, writer: W) -> Result<Self, GuestError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::connect_with(reader, writer, StreamLimits::default()).await
    }

    /// [`GuestClient::connect`] with the given bounds.
    pub async fn connect_with<R, W>(
        reader: R,
        writer: W,
        limits: StreamLimits,
    ) -> Result<Self, GuestError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let input_budget = Arc::new(Semaphore::new(
            limits
                .input_budget_bytes
                .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize)),
        ));
        let shared = Arc::new(Shared::new(limits));
        let (frames, frames_rx) = mpsc::channel(WRITE_QUEUE_FRAMES);
        shared.set_writer(&frames);
        tokio::spawn(demux::write_loop(writer, frames_rx, shared.clone()));
        tokio::spawn(demux::read_loop(reader, shared.clone()));

        let client = Self {
            inner: Arc::new(Inner {
                frames,
                input_budget,
                shared,
                agent_version: OnceLock::new(),
                oom_counter: OnceLock::new(),
            }),
        };
        let agent_version = client.hello().await?;
        let _ = client.inner.agent_version.set(agent_version);
        Ok(client)
    }

    /// Greets the guest again on this connection (after a `Suspend` whose
    /// save did not happen: the guest waits for a new Hello).
    pub async fn greet(&self) -> Result<(), GuestError> {
        self.hello().await.map(drop)
    }

    /// Hello, checking the guest speaks this protocol; its agent version.
    async fn hello(&self) -> Result<String, GuestError> {
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
        };
        match self.start(hello, &[]).await?.reply().await {
            Ok((Reply::Hello { version, .. }, _)) if version != PROTOCOL_VERSION => {
                Err(GuestError::VersionMismatch {
                    host: PROTOCOL_VERSION,
                    guest: version.to_string(),
                })
            }
            Ok((Reply::Hello { agent_version, .. }, _)) => Ok(agent_version),
            Ok((other, _)) => Err(ops::unexpected("hello", &other)),
            Err(GuestError::Refused { error, .. }) if error.code == ErrorCode::VersionMismatch => {
                Err(GuestError::VersionMismatch {
                    host: PROTOCOL_VERSION,
                    guest: error.message,
                })
            }
            Err(err) => Err(err),
        }
    }

    /// Has every exec of this connection tell an out-of-memory kill from
    /// another SIGKILL (`ExitInfo::oom_killed`) by reading `file`, the
    /// sandbox's OOM-kill counter (`paddock_jail::oom_counter_in`). Set once;
    /// a second call is ignored.
    pub fn watch_oom(&self, file: PathBuf) {
        let _ = self.inner.oom_counter.set(file);
    }

    /// The sandbox's OOM kills so far; None when unknown (no counter, or
    /// it cannot be read).
    pub(crate) async fn oom_kills(&self) -> Option<u64> {
        let file = self.inner.oom_counter.get()?;
        let text = tokio::fs::read_to_string(file).await.ok()?;
        paddock_jail::parse_oom_kills(&text)
    }

    /// [`GuestClient::connect`] over a unix stream socket.
    pub async fn connect_unix(stream: tokio::net::UnixStream) -> Result<Self, GuestError> {
        Self::connect_unix_with(stream, StreamLimits::default()).await
    }

    /// [`GuestClient::connect_with`] over a unix stream socket.
    pub async fn connect_unix_with(
        stream: tokio::net::UnixStream,
        limits: StreamLimits,
    ) -> Result<Self, GuestError> {
        let (reader, writer) = stream.into_split();
        Self::connect_with(reader, writer, limits).await
    }

    /// The bounds this connection was made with.
    pub fn limits(&self) -> &StreamLimits {
        &self.inner.shared.limits
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

    /// Destroys a sandbox this guest serves: asks the guest to stop, for at
    /// most `timeout` (a guest that is gone, silent or refuses is no error:
    /// the teardown ends it either way), then runs the backend's `teardown`,
    /// whose failure is the sandbox's destroy error.
    pub(crate) async fn shut_down_then(
        &self,
        id: &SandboxId,
        timeout: Duration,
        teardown: impl Future<Output = Result<(), BoxError>>,
    ) -> Result<(), SandboxError> {
        if !self.is_closed() {
            match tokio::time::timeout(timeout, GuestOps::shutdown(self)).await {
                Ok(Ok(())) | Ok(Err(GuestError::Disconnected { .. })) | Err(_) => {}
                Ok(Err(err)) => {
                    tracing::debug!(sandbox_id = %id, error = %err, "guest refused shutdown");
                }
            }
        }
        teardown.await.map_err(|source| SandboxError::Destroy {
            id: id.clone(),
            source,
        })
    }

    /// Sends a request and returns the channel its answer arrives on. Waits
    /// (up to [`StreamLimits::input_stall`]) while the connection's input
    /// budget or the writer's queue is full.
    async fn start(&self, request: Request, payload: &[u8]) -> Result<Call, GuestError> {
        let op = request.name();
        // Exec stdin is consumed while the command runs: its budget comes
        // back once written, not when the (late) answer arrives.
        let budget_until_written = matches!(request, Request::Exec(_));
        let id = self.inner.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = encode_frame(&HostFrame { id, request }, payload)
            .map_err(|source| GuestError::Encode { op, source })?;
        let stall = self.inner.shared.limits.input_stall;
        let stalled = || GuestError::Refused {
            op,
            error: ErrorInfo::new(
                ErrorCode::Timeout,
                format!(
                    "the sandbox took no more input for {}s (its guest is not reading); request not sent",
                    stall.as_secs()
                ),
            ),
        };
        let budget = if payload.is_empty() {
            None
        } else {
            let cost = u32::try_from(payload.len())
                .unwrap_or(u32::MAX)
                .min(u32::try_from(self.inner.shared.limits.input_budget_bytes).unwrap_or(u32::MAX))
                .max(1);
            let acquire = self.inner.input_budget.clone().acquire_many_owned(cost);
            match tokio::time::timeout(stall, acquire).await {
                Ok(Ok(permit)) => Some(permit),
                Ok(Err(_)) => None,
                Err(_) => return Err(stalled()),
            }
        };
        // Registered before sending, so no answer can arrive unrouted.
        let (rx, stream) = self.inner.shared.register(op, id)?;
        let (held, sent) = if budget_until_written {
            (None, budget)
        } else {
            (budget, None)
        };
        let call = Call {
            id,
            op,
            rx,
            stream,
            shared: self.inner.shared.clone(),
            frames: self.inner.frames.clone(),
            consumed: 0,
            finished: false,
            _budget: held,
        };
        let outgoing = Outgoing {
            frame,
            _budget: sent,
        };
        match tokio::time::timeout(stall, self.inner.frames.send(outgoing)).await {
            Ok(Ok(())) => Ok(call),
            Ok(Err(_)) => Err(call.disconnected()),
            Err(_) => Err(stalled()),
        }
    }

    /// Sends a request whose answer nobody waits for (the reader drops it).
    /// Never waits: when the writer's queue is full the request is dropped.
    fn send_detached(&self, request: Request) {
        let id = self.inner.shared.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(frame) = encode_frame(&HostFrame { id, request }, &[]) {
            let outgoing = Outgoing {
                frame,
                _budget: None,
            };
            if self.inner.frames.try_send(outgoing).is_err() {
                tracing::warn!(id, "guest input queue full; detached request dropped");
            }
        }
    }

    /// Sends a request and waits for its final answer.
    async fn call(&self, request: Request, payload: &[u8]) -> Result<(Reply, Vec<u8>), GuestError> {
        self.start(request, payload).await?.reply().await
    }
}

/// The answer channel of one request. Taking events grants the guest credit
/// for more; dropping it stops routing frames to it.
#[derive(Debug)]
struct Call {
    id: u64,
    op: &'static str,
    rx: mpsc::UnboundedReceiver<Incoming>,
    stream: Arc<StreamState>,
    shared: Arc<Shared>,
    frames: mpsc::Sender<Outgoing>,
    /// Event bytes taken and not yet granted back.
    consumed: u64,
    finished: bool,
    /// The request's share of the input budget, returned when it is answered.
    _budget: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Call {
    async fn next(&mut self) -> Result<Incoming, GuestError> {
        let Some((message, payload)) = self.rx.recv().await else {
            return Err(self.disconnected());
        };
        self.shared.taken(&self.stream, payload.len());
        if message.is_final() {
            self.finished = true;
            self._budget = None;
        } else if self.shared.caller_grants(&self.stream) {
            self.consumed += payload.len() as u64;
            if self.consumed >= STREAM_WINDOW / 2 {
                self.grant();
            }
        }
        Ok((message, payload))
    }

    /// Gives the guest back the credit for what was taken; kept for later
    /// when the writer's queue is full.
    fn grant(&mut self) {
        if let Some(frame) = self.shared.credit_frame(self.id, self.consumed)
            && self.frames.try_send(frame).is_ok()
        {
            self.consumed = 0;
        }
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
        self.rx.close();
        while let Ok((_, payload)) = self.rx.try_recv() {
            self.shared.taken(&self.stream, payload.len());
        }
        if !self.finished && self.stream.streamed.load(Ordering::Relaxed) {
            // Nobody reads this stream any more: let the guest finish it at once.
            self.shared.send_control(self.id, RELEASE_CREDIT);
        }
    }
}
