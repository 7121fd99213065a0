//! `PortConnect`: a TCP connection to a server inside the sandbox, relayed
//! over the host connection.
//!
//! The guest connects to `127.0.0.1:port` itself, so a sandbox without any
//! network (only a loopback) is reached all the same. Bytes from the server
//! go out as `Data` events, read only while the host has granted credit for
//! them (the same flow control as exec output); bytes for the server arrive
//! in `PortWrite` requests and go through the same in-order pump as a
//! command's streamed stdin, each acknowledged once written, so a server
//! that stops reading slows the host down instead of growing a buffer here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use paddock_proto::{ErrorCode, ErrorInfo, Event, Reply, check_port};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::error::{Handled, bad_request};
use crate::exec::command::InputPipe;
use crate::exec::stdin::{self, StdinFeed};
use crate::server::outbox::Outbox;

/// Connect timeout when the request names none.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle timeout when the request names none.
const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest idle timeout a request may ask for.
const MAX_IDLE_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// Bytes read from the server at once (and so the largest `Data` event).
const READ_CHUNK: usize = 64 << 10;

/// Tunnels in flight, by request id, for `PortWrite` and `PortClose`.
#[derive(Debug, Default)]
pub struct PortRegistry {
    open: Mutex<HashMap<u64, Tunnel>>,
}

#[derive(Debug, Clone)]
struct Tunnel {
    feed: StdinFeed,
    close: Arc<Notify>,
}

fn unknown(target: u64) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::UnknownProcess,
        format!("no port tunnel with request id {target} is open"),
    )
}

impl PortRegistry {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Tunnel>> {
        // Single inserts and removes: a panic while holding it leaves it consistent.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a `PortWrite` for `target` goes.
    pub fn feed(&self, target: u64) -> Result<StdinFeed, ErrorInfo> {
        self.lock()
            .get(&target)
            .map(|t| t.feed.clone())
            .ok_or_else(|| unknown(target))
    }

    /// `PortClose`: the tunnel ends at once (its request answers `Ok`).
    pub fn close(&self, target: u64) -> Handled {
        let tunnel = self
            .lock()
            .get(&target)
            .cloned()
            .ok_or_else(|| unknown(target))?;
        tunnel.close.notify_one();
        Ok((Reply::Ok, Vec::new()))
    }

    /// Closes every tunnel (the host connection ended).
    pub fn clear(&self) {
        for tunnel in self.lock().drain().map(|(_, t)| t) {
            tunnel.close.notify_one();
        }
    }

    fn register(&self, id: u64, tunnel: Tunnel) -> bool {
        let mut open = self.lock();
        if open.contains_key(&id) {
            return false;
        }
        open.insert(id, tunnel);
        true
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }
}

/// Timeouts of one tunnel.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub idle: Duration,
}

impl Timeouts {
    pub fn from_request(connect_ms: Option<u64>, idle_ms: Option<u64>) -> Self {
        Self {
            connect: connect_ms.map_or(CONNECT_TIMEOUT, Duration::from_millis),
            idle: idle_ms
                .map_or(IDLE_TIMEOUT, Duration::from_millis)
                .min(MAX_IDLE_TIMEOUT),
        }
    }
}

/// Registers the tunnel at once (so a `PortWrite` or `PortClose` right
/// after it finds it) and runs it in its own task.
pub fn start(ports: &Arc<PortRegistry>, outbox: &Outbox, id: u64, port: u16, timeouts: Timeouts) {
    let (feed, queue) = stdin::channel();
    let close = Arc::new(Notify::new());
    let ports = ports.clone();
    let outbox = outbox.clone();
    if !ports.register(
        id,
        Tunnel {
            feed,
            close: close.clone(),
        },
    ) {
        tokio::spawn(async move {
            let error = bad_request(format!("request id {id} is already in use"));
            outbox.finish(id, Err(error)).await;
        });
        return;
    }
    tokio::spawn(async move {
        let result = run(&outbox, id, port, timeouts, queue, &close).await;
        ports.remove(id);
        outbox.finish(id, result).await;
    });
}

async fn connect(port: u16, timeout: Duration) -> Result<TcpStream, ErrorInfo> {
    let port = check_port(u64::from(port)).map_err(|e| bad_request(e.to_string()))?;
    match tokio::time::timeout(timeout, TcpStream::connect(("127.0.0.1", port))).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(ErrorInfo::new(
            ErrorCode::NotListening,
            format!("nothing listens on port {port} in the sandbox (127.0.0.1:{port})"),
        )),
        Ok(Err(e)) => Err(ErrorInfo::new(
            ErrorCode::Io,
            format!("connecting to 127.0.0.1:{port}: {e}"),
        )),
        Err(_) => Err(ErrorInfo::new(
            ErrorCode::Timeout,
            format!(
                "connecting to 127.0.0.1:{port} took longer than {} ms",
                timeout.as_millis()
            ),
        )),
    }
}

async fn run(
    outbox: &Outbox,
    id: u64,
    port: u16,
    timeouts: Timeouts,
    queue: stdin::StdinQueue,
    close: &Notify,
) -> Handled {
    let stream = connect(port, timeouts.connect).await?;
    // Small writes (a request line, a WebSocket frame) go out at once.
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let activity = Arc::new(Activity::new());
    let pipe: InputPipe = Box::new(Counted {
        inner: writer,
        activity: activity.clone(),
    });
    tokio::spawn(stdin::pump(pipe, queue));
    tracing::debug!(id, port, "port tunnel open");
    if !outbox.event(id, Event::Connected, Vec::new()).await {
        return Err(abandoned());
    }
    let credit = outbox.credit(id);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let idle_left = timeouts.idle.saturating_sub(activity.idle_for());
        if idle_left.is_zero() {
            tracing::debug!(id, port, "port tunnel idle; closed");
            return Ok((Reply::Ok, Vec::new()));
        }
        let room = usize::try_from(credit.left()).unwrap_or(usize::MAX);
        if room == 0 {
            // The host is behind: stop reading the server until it catches up.
            tokio::select! {
                () = credit.available() => continue,
                () = close.notified() => return Ok((Reply::Ok, Vec::new())),
                () = tokio::time::sleep(idle_left) => continue,
            }
        }
        let want = room.min(buf.len());
        let read = tokio::select! {
            read = reader.read(&mut buf[..want]) => read,
            () = close.notified() => return Ok((Reply::Ok, Vec::new())),
            () = tokio::time::sleep(idle_left) => continue,
        };
        match read {
            Ok(0) => return Ok((Reply::Ok, Vec::new())),
            Ok(n) => {
                activity.touch();
                if !outbox.event(id, Event::Data, buf[..n].to_vec()).await {
                    return Err(abandoned());
                }
            }
            Err(e) => {
                return Err(ErrorInfo::new(
                    ErrorCode::Io,
                    format!("reading from 127.0.0.1:{port}: {e}"),
                ));
            }
        }
    }
}

fn abandoned() -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::Timeout,
        "the host took no data from this tunnel in time",
    )
}

/// When a byte last moved either way.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// The server's write side, marking activity on every write.
struct Counted<W> {
    inner: W,
    activity: Arc<Activity>,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(_))) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_is_not_listening_and_the_proxy_port_is_refused() {
        // Bind then drop: a port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = connect(port, CONNECT_TIMEOUT).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::NotListening, "{err}");
        assert!(err.message.contains(&port.to_string()), "{err}");
        let err = connect(paddock_proto::PROXY_PORT, CONNECT_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BadRequest, "{err}");
    }

    #[test]
    fn timeouts_default_and_are_bounded() {
        let t = Timeouts::from_request(None, None);
        assert_eq!((t.connect, t.idle), (CONNECT_TIMEOUT, IDLE_TIMEOUT));
        let t = Timeouts::from_request(Some(5), Some(u64::MAX));
        assert_eq!(
            (t.connect, t.idle),
            (Duration::from_millis(5), MAX_IDLE_TIMEOUT)
        );
    }
}
