//! Load tool for the abuse tests: opens COUNT connections to ADDR, spread
//! over the loopback source addresses given, sends each half a header set,
//! prints `ready OPENED` and holds them until stdin closes; then prints
//! `held N` (how many the server still kept open). A separate process so the
//! connections count against its own descriptor limit, not the test's.
//!
//!     paddock-half-open ADDR COUNT SOURCE...

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const HALF_HEADERS: &[u8] = b"POST /v1/sandboxes HTTP/1.1\r\nHost: paddock\r\nX-Slow: ";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, count, sources @ ..] = args.as_slice() else {
        bail!("usage: paddock-half-open ADDR COUNT SOURCE...");
    };
    let addr: SocketAddr = addr.parse().context("ADDR")?;
    let count: usize = count.parse().context("COUNT")?;
    let sources = sources
        .iter()
        .map(|s| s.parse::<IpAddr>())
        .collect::<Result<Vec<_>, _>>()
        .context("SOURCE")?;
    if sources.is_empty() {
        bail!("at least one SOURCE address");
    }
    raise_fd_limit();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(addr, count, &sources))
}

async fn run(addr: SocketAddr, count: usize, sources: &[IpAddr]) -> anyhow::Result<()> {
    let mut open = Vec::with_capacity(count);
    for i in 0..count {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(sources[i % sources.len()], 0))?;
        let mut tcp = socket
            .connect(addr)
            .await
            .with_context(|| format!("connection {i}"))?;
        // A refused connection may already be closed: that is the point.
        let _ = tcp.write_all(HALF_HEADERS).await;
        open.push(tcp);
    }
    println!("ready {}", open.len());
    let mut stdin = tokio::io::stdin();
    let mut sink = [0u8; 64];
    while stdin.read(&mut sink).await.unwrap_or(0) > 0 {}
    let mut held = 0;
    for tcp in &mut open {
        if still_open(tcp).await {
            held += 1;
        }
    }
    println!("held {held}");
    Ok(())
}

async fn still_open(tcp: &mut TcpStream) -> bool {
    let mut buf = [0u8; 256];
    !matches!(
        tokio::time::timeout(Duration::from_millis(1), tcp.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}
