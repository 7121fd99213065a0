//! Accepting connections and driving HTTP/1 on each, with the hygiene a
//! public listener needs: a cap on open connections (globally and per peer
//! address) where refusing is just closing the socket; header, body and idle
//! timeouts; and a budget for request bodies held in memory at once.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::TimeoutBody;
use tower_service::Service;

use super::ApiError;

/// Bounds on the connections one server holds.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Open connections at once; past it new ones are closed on accept.
    pub max_connections: usize,
    /// Open connections from one peer address at once.
    pub max_connections_per_peer: usize,
    /// Time a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// Longest wait for the next piece of a request body.
    pub body_read_timeout: Duration,
    /// A connection on which no byte moved either way for this long is closed
    /// (an event stream's keep-alives count; a reader that stopped does not).
    pub idle_timeout: Duration,
    /// Request body bytes held by the requests in progress, summed; a request
    /// whose body does not fit gets 503 at once.
    pub max_body_memory_bytes: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            max_connections_per_peer: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            max_body_memory_bytes: 256 << 20,
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
    shutdown: CancellationToken,
) {
    let gate = Arc::new(Gate::new(&limits));
    let bodies = Arc::new(BodyBudget::new(
        limits.max_body_memory_bytes,
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
        let app = app.clone();
        let limits = limits.clone();
        let bodies = bodies.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            serve_connection(tcp, peer, app, &limits, bodies, shutdown).await;
            drop(ticket);
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: &ConnectionLimits,
    bodies: Arc<BodyBudget>,
    shutdown: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: tcp,
        activity: activity.clone(),
    });
    let body_timeout = limits.body_read_timeout;
    let activity_in_service = activity.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let mut app = app.clone();
        let bodies = bodies.clone();
        let busy_request = activity_in_service.begin();
        async move {
            let Some(permit) = bodies.reserve(&request) else {
                return Ok::<_, std::convert::Infallible>(busy());
            };
            let request = request.map(|body| Body::new(TimeoutBody::new(body_timeout, body)));
            let response = app.call(request).await;
            drop(permit);
            drop(busy_request);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service);
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

fn busy() -> Response<Body> {
    let mut response = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "the server holds as many request bodies as it may; retry shortly",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    super::headers::harden(response)
}

/// The connection caps: one ticket per open connection.
#[derive(Debug)]
struct Gate {
    global: Arc<Semaphore>,
    per_peer: usize,
    peers: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

#[derive(Debug)]
struct Ticket {
    _global: OwnedSemaphorePermit,
    peer: IpAddr,
    peers: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Gate {
    fn new(limits: &ConnectionLimits) -> Self {
        Self {
            global: Arc::new(Semaphore::new(
                limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            )),
            per_peer: limits.max_connections_per_peer.max(1),
            peers: Arc::default(),
        }
    }

    fn admit(&self, peer: IpAddr) -> Option<Ticket> {
        let global = self.global.clone().try_acquire_owned().ok()?;
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let open = peers.entry(peer).or_insert(0);
        if *open >= self.per_peer {
            return None;
        }
        *open += 1;
        Some(Ticket {
            _global: global,
            peer,
            peers: self.peers.clone(),
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = peers.get_mut(&self.peer) {
            *open -= 1;
            if *open == 0 {
                peers.remove(&self.peer);
            }
        }
    }
}

/// Request bodies held in memory at once, by their declared (or largest
/// allowed) size.
#[derive(Debug)]
struct BodyBudget {
    bytes: Arc<Semaphore>,
    max_body: u32,
}

impl BodyBudget {
    fn new(total: usize, max_body: usize) -> Self {
        let total = total.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        Self {
            bytes: Arc::new(Semaphore::new(total)),
            max_body: u32::try_from(max_body.min(total)).unwrap_or(u32::MAX),
        }
    }

    /// None when the body does not fit now; Some(None) for a request without one.
    fn reserve(&self, request: &Request<Incoming>) -> Option<Option<OwnedSemaphorePermit>> {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let chunked = request.headers().contains_key(header::TRANSFER_ENCODING);
        let cost = match declared {
            Some(0) | None if !chunked => return Some(None),
            Some(len) => u32::try_from(len).unwrap_or(u32::MAX).min(self.max_body),
            None => self.max_body,
        };
        match self.bytes.clone().try_acquire_many_owned(cost.max(1)) {
            Ok(permit) => Some(Some(permit)),
            Err(_) => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_caps_each_peer_and_the_total() {
        let gate = Gate::new(&ConnectionLimits {
            max_connections: 3,
            max_connections_per_peer: 2,
            ..ConnectionLimits::default()
        });
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "127.0.0.3".parse().unwrap();
        let first = gate.admit(a).unwrap();
        let _second = gate.admit(a).unwrap();
        assert!(gate.admit(a).is_none(), "third from one peer refused");
        let _other = gate.admit(b).unwrap();
        assert!(gate.admit(b).is_none(), "global cap reached");
        drop(first);
        assert!(
            gate.admit(a).is_some(),
            "a closed connection frees its place"
        );
    }
}
