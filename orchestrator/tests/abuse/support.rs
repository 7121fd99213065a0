//! What every abuse test shares: `paddock serve` as a real process, raw
//! HTTP from chosen loopback addresses, the server's RSS from /proc.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::{PADDOCK, ServerProcess, unique};

pub struct Server {
    pub process: ServerProcess,
    pub addr: SocketAddr,
    /// The attacking tenant's (`abuse`).
    pub token: String,
    /// Another tenant's (`victim`): what it is answered shows whether one
    /// tenant's abuse reaches the others.
    pub victim: String,
}

impl Server {
    /// `paddock serve` with `config` (TOML, tokens added here).
    pub fn start(data: &Path, config: &str) -> Result<Self> {
        let token = format!("abuse-token-{}", unique("t"));
        let victim = format!("victim-token-{}", unique("v"));
        let file = data.join("serve.toml");
        std::fs::write(
            &file,
            format!(
                "{config}\n[[tokens]]\ntoken = \"{token}\"\ntenant = \"abuse\"\n\
                 [[tokens]]\ntoken = \"{victim}\"\ntenant = \"victim\"\n"
            ),
        )?;
        let mut child = Command::new(PADDOCK)
            .args(["serve", "--listen", "127.0.0.1:0", "--node"])
            .arg(unique("abuse"))
            .arg("--data-dir")
            .arg(data)
            .arg("--config")
            .arg(&file)
            .env_remove("PADDOCK_TOKENS")
            .env_remove("PADDOCK_DATABASE_URL")
            .env_remove("PADDOCK_CONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("spawning paddock serve")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let url = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .map(str::to_owned);
        let process = ServerProcess {
            child,
            url: url.clone().unwrap_or_default(),
        };
        let Some(url) = url else {
            bail!("paddock serve did not print its address: {line:?}");
        };
        Ok(Self {
            process,
            addr: url.trim_end_matches('/').parse()?,
            token,
            victim,
        })
    }

    pub fn rss_bytes(&self) -> u64 {
        rss_of(self.process.child.id())
    }

    pub async fn connect_from(&self, source: IpAddr) -> Result<TcpStream> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        Ok(socket.connect(self.addr).await?)
    }

    /// A connection the server has surely accepted: one keep-alive request
    /// answered on it, and it stays open.
    pub async fn kept_alive_from(&self, source: IpAddr) -> Result<TcpStream> {
        self.kept_alive_as(None, source, Duration::from_secs(20))
            .await
    }

    /// [`Self::kept_alive_from`] with `token` (or none) on its request,
    /// answered within `within`.
    pub async fn kept_alive_as(
        &self,
        token: Option<&str>,
        source: IpAddr,
        within: Duration,
    ) -> Result<TcpStream> {
        let mut tcp = self.connect_from(source).await?;
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        tcp.write_all(format!("GET /v1/health HTTP/1.1\r\nHost: paddock\r\n{auth}\r\n").as_bytes())
            .await?;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let answered = tokio::time::timeout(within, async {
            loop {
                let n = tcp.read(&mut buf).await?;
                if n == 0 {
                    bail!("closed before answering");
                }
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse().ok())
                        .context("no content-length")?;
                    if body.len() >= len {
                        return Ok(());
                    }
                }
            }
        })
        .await;
        answered.with_context(|| format!("no answer within {within:?}"))??;
        Ok(tcp)
    }

    /// One request on its own connection from 127.0.0.1; the status and body.
    pub async fn request(&self, method: &str, path: &str, body: &str) -> Result<(u16, String)> {
        self.request_from(local(1), method, path, body).await
    }

    pub async fn request_from(
        &self,
        source: IpAddr,
        method: &str,
        path: &str,
        body: &str,
    ) -> Result<(u16, String)> {
        self.request_as(&self.token, source, method, path, body)
            .await
    }

    /// One request with `token` on its own connection from `source`.
    pub async fn request_as(
        &self,
        token: &str,
        source: IpAddr,
        method: &str,
        path: &str,
        body: &str,
    ) -> Result<(u16, String)> {
        let mut tcp = self.connect_from(source).await?;
        let head = head_with(token, method, path, body.len(), "application/json");
        tcp.write_all(head.as_bytes()).await?;
        tcp.write_all(body.as_bytes()).await?;
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut answer))
            .await
            .context("no answer within 20 s")??;
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("not an HTTP answer: {text:?}"))?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        Ok((status, body))
    }

    pub fn head(&self, method: &str, path: &str, len: usize, accept: &str) -> String {
        head_with(&self.token, method, path, len, accept)
    }

    /// How long the victim tenant waits for its health answer from
    /// 127.0.0.9 (an address no attacker uses); fails unless it is a 200.
    pub async fn victim_health_latency(&self) -> Result<Duration> {
        let started = Instant::now();
        let (status, body) = self
            .request_as(&self.victim, local(9), "GET", "/v1/health", "")
            .await?;
        if status != 200 {
            bail!("the victim's health: {status} {body}");
        }
        Ok(started.elapsed())
    }

    pub async fn create_sandbox(&self) -> Result<String> {
        let (status, body) = self.request("POST", "/v1/sandboxes", "{}").await?;
        if status != 201 {
            bail!("creating a sandbox: {status} {body}");
        }
        let value: serde_json::Value = serde_json::from_str(&body)?;
        Ok(value["id"].as_str().context("no id")?.to_owned())
    }

    /// An exec answered as JSON; fails unless it exited 0 printing `hi`.
    pub async fn exec_echo(&self, sandbox: &str) -> Result<()> {
        let path = format!("/v1/sandboxes/{sandbox}/exec");
        let (status, body) = self
            .request("POST", &path, r#"{"argv": ["echo", "hi"]}"#)
            .await?;
        if status != 200 || !body.contains(r#""stdout":"hi\n""#) {
            bail!("exec on {sandbox}: {status} {body}");
        }
        Ok(())
    }

    /// Starts a streamed exec from `source` and returns its connection
    /// unread past what the caller reads.
    pub async fn stream_exec(
        &self,
        source: IpAddr,
        sandbox: &str,
        argv: &str,
    ) -> Result<TcpStream> {
        let mut tcp = self.connect_from(source).await?;
        let body = format!(r#"{{"argv": {argv}}}"#);
        let head = self.head(
            "POST",
            &format!("/v1/sandboxes/{sandbox}/exec"),
            body.len(),
            "text/event-stream",
        );
        tcp.write_all(head.as_bytes()).await?;
        tcp.write_all(body.as_bytes()).await?;
        Ok(tcp)
    }
}

/// A request head with `token`, closing the connection after the answer.
pub fn head_with(token: &str, method: &str, path: &str, len: usize, accept: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: paddock\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: {accept}\r\nContent-Length: {len}\r\n\
         Connection: close\r\n\r\n"
    )
}

pub fn local(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

pub fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Reads until `tcp` closes or `within` passes; true when it closed.
pub async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A `paddock-half-open` process holding half-sent connections.
pub struct HalfOpen {
    child: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl HalfOpen {
    pub fn start(addr: SocketAddr, count: usize, sources: &[String]) -> Result<Self> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_paddock-half-open"))
            .arg(addr.to_string())
            .arg(count.to_string())
            .args(sources)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning paddock-half-open")?;
        let lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        Ok(Self { child, lines })
    }

    pub fn line(&mut self, prefix: &str) -> Result<usize> {
        let line = self.lines.next().context("paddock-half-open ended")??;
        line.strip_prefix(prefix)
            .and_then(|n| n.trim().parse().ok())
            .with_context(|| format!("paddock-half-open said {line:?}"))
    }

    /// How many connections it opened.
    pub fn ready(&mut self) -> Result<usize> {
        self.line("ready ")
    }

    /// Lets go; how many the server still held open.
    pub fn finish(mut self) -> Result<usize> {
        drop(self.child.stdin.take());
        let held = self.line("held ")?;
        self.child.wait()?;
        Ok(held)
    }
}

impl Drop for HalfOpen {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn tokio_util_stop() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))
}

pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `count` execs one after another, each on its own connection.
pub async fn exec_latencies(server: &Server, sandbox: &str, count: usize) -> Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        server.exec_echo(sandbox).await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

pub fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

pub fn raise_fd_limit(needed: usize) -> Result<()> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    let needed = needed as u64;
    // Root may raise the hard limit too; the server inherits both.
    let target = hard.max(needed);
    if soft < target {
        setrlimit(Resource::RLIMIT_NOFILE, target, target).with_context(|| {
            format!("raising RLIMIT_NOFILE from {soft}/{hard} to the {needed} this test needs")
        })?;
    }
    Ok(())
}
