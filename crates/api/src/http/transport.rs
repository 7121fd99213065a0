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
use axum::http::{HeaderValue, Request, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use super::Tokens;
use super::body_budget::{BodyBudget, Charge};
use super::connection_limits::ConnectionLimits;
use super::gate::{Gate, Ticket};
use super::metered::MeteredBody;

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
        limits.body_share(max_body_bytes),
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
        let (parts, body) = request.into_parts();
        let body = MeteredBody::new(body, charge.clone(), cut.clone(), pace);
        let unread = body.left_unread();
        let request = Request::from_parts(parts, Body::new(body));
        async move {
            let response = app.call(request).await;
            let mut response = match cut.get() {
                Some(cut) => Ok(cut.response(pace)),
                None => response,
            };
            // hyper closes a connection whose request body was dropped
            // unread; saying so keeps the client from pooling it.
            if let Ok(response) = &mut response
                && unread.load(Ordering::Relaxed)
            {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
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
