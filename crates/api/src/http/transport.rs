//! Accepting connections and driving HTTP/1 on each, with the hygiene a
//! public listener needs: caps on open connections (globally and per peer
//! address, with a share kept for requests with a valid token, `gate`) where
//! refusing is just closing the socket; header and idle timeouts; request
//! bodies charged to a budget as they arrive and held to a pace (`metered`).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use super::Tokens;
use super::body_budget::{BodyBudget, Charge};
use super::gate::{Gate, GateLimits, Ticket};
use super::metered::{BodyPace, MeteredBody};

/// Bounds on the connections one server holds (`[http]` of the config;
/// docs/api.md has each key).
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Open connections at once; past it the oldest connection without a
    /// proven token is closed, or the new one when there is none.
    pub max_connections: usize,
    /// Open connections from one peer address at once.
    pub max_connections_per_peer: usize,
    /// Places of `max_connections` that only connections which carried a
    /// valid token may hold (the gate closes the oldest other one instead).
    pub reserved_connections: usize,
    /// Connections one tenant's token keeps its place on; past it the
    /// tenant's further connections are treated as without a token.
    pub max_connections_per_tenant: usize,
    /// Time a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// Longest wait for the next piece of a request body, and the grace
    /// before `body_min_bytes_per_sec` counts.
    pub body_read_timeout: Duration,
    /// After the grace a body must have averaged this many bytes a second
    /// (its deadline: the grace plus 1 s per this many bytes received).
    pub body_min_bytes_per_sec: u64,
    /// A connection on which no byte moved either way for this long is closed
    /// (an event stream's keep-alives count; a reader that stopped does not).
    pub idle_timeout: Duration,
    /// Request body bytes held by the requests in progress, summed, charged
    /// as they arrive; a piece that does not fit gets 503 `busy`.
    pub max_body_memory_bytes: usize,
    /// The same for one tenant's requests (and for all requests without a
    /// valid token together); past it 429 `body_budget_exceeded`.
    pub max_body_memory_per_tenant_bytes: usize,
    /// Streams open at once per tenant (`streams`).
    pub max_streams_per_tenant: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            max_connections_per_peer: 256,
            reserved_connections: 512,
            max_connections_per_tenant: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            body_min_bytes_per_sec: 16 << 10,
            idle_timeout: Duration::from_secs(120),
            max_body_memory_bytes: 256 << 20,
            max_body_memory_per_tenant_bytes: 64 << 20,
            max_streams_per_tenant: 256,
        }
    }
}

impl ConnectionLimits {
    fn gate(&self) -> GateLimits {
        GateLimits {
            max_connections: self.max_connections,
            per_peer: self.max_connections_per_peer,
            reserved: self.reserved_connections,
            per_tenant: self.max_connections_per_tenant,
        }
    }

    fn pace(&self) -> BodyPace {
        BodyPace {
            stall: self.body_read_timeout,
            min_rate: self.body_min_bytes_per_sec,
        }
    }
}

/// Serves `app` on `listener` until `shutdown`, then lets open connections
/// finish their requests (the caller bounds how long by aborting the task).
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    max_body_bytes: usize,
    tokens: Arc<Tokens>,
    shutdown: CancellationToken,
) {
    let gate = Arc::new(Gate::new(limits.gate()));
    let bodies = Arc::new(BodyBudget::new(
        limits.max_body_memory_bytes,
        limits.max_body_memory_per_tenant_bytes,
        max_body_bytes,
    ));
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
            // Reap finished connection tasks so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of descriptors or memory: back off instead of spinning.
                tracing::warn!(error = %err, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(ticket) = gate.admit(peer.ip()) else {
            // Refused: closing costs nothing more than the accept did.
            drop(tcp);
            continue;
        };
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "setting TCP_NODELAY");
        }
        let shared = Shared {
            app: app.clone(),
            tokens: tokens.clone(),
            gate: gate.clone(),
            bodies: bodies.clone(),
        };
        let limits = limits.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            serve_connection(tcp, peer, shared, &limits, Arc::new(ticket), shutdown).await;
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// What every connection's requests share.
struct Shared {
    app: Router,
    tokens: Arc<Tokens>,
    gate: Arc<Gate>,
    bodies: Arc<BodyBudget>,
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    shared: Shared,
    limits: &ConnectionLimits,
    ticket: Arc<Ticket>,
    shutdown: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: tcp,
        activity: activity.clone(),
    });
    let pace = limits.pace();
    let activity_in_service = activity.clone();
    let evicted = ticket.evicted.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut app = shared.app.clone();
        let busy_request = activity_in_service.begin();
        // The headers are read: a valid token proves the connection, and
        // names whose share of the body budget the body is charged to.
        let payer = shared.tokens.tenant_of(request.headers()).cloned();
        if let Some(tenant) = &payer {
            shared.gate.prove(&ticket, tenant);
        }
        let charge = Arc::new(Charge::new(shared.bodies.clone(), payer));
        let cut = Arc::new(OnceLock::new());
        let request = request
            .map(|body| Body::new(MeteredBody::new(body, charge.clone(), cut.clone(), pace)));
        async move {
            let response = app.call(request).await;
            let response = match cut.get() {
                Some(cut) => Ok(cut.response(pace)),
                None => response,
            };
            // The handler held the body's bytes until now.
            drop(charge);
            drop(busy_request);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    // With upgrades: a port route passes a WebSocket through.
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    let idle = limits.idle_timeout;
    let check_every = (idle / 4).max(Duration::from_millis(100));
    let mut draining = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(%peer, error = %err, "connection ended with an error");
                }
                return;
            }
            () = evicted.cancelled() => {
                tracing::debug!(%peer, "connection closed to make room for another");
                return;
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep(check_every) => {
                if activity.idle_for() >= idle {
                    tracing::debug!(%peer, idle_secs = idle.as_secs(), "idle connection closed");
                    return;
                }
            }
        }
    }
}

/// When a byte last moved on a connection, and whether a handler is at work
/// (a long exec answers nothing until it ends, yet is not idle).
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    handling: AtomicUsize,
}

/// A request being handled; the connection counts as busy meanwhile.
#[derive(Debug)]
struct Handling(Arc<Activity>);

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
        }
    }

    fn begin(self: &Arc<Self>) -> Handling {
        self.handling.fetch_add(1, Ordering::Relaxed);
        Handling(self.clone())
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        if self.handling.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// A stream that notes every read and write that moved bytes.
#[derive(Debug)]
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
