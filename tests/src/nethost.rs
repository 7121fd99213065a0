//! Test hosts for the network scenarios: each in a network namespace the
//! test makes, joined to the host by a veth pair, on a documentation
//! address (198.51.100.0/24 or 203.0.113.0/24, which the egress guard
//! refuses unless a test names the host with [`TestHost::allow_option`]),
//! serving a small HTTP answer (echoing Host and Origin as servers do); and a DNS server on the host's
//! loopback whose answers the test sets (and may change between look-ups).
//! Nothing here sends a packet beyond this machine.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{Name, RData, Record, RecordType};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Which documentation range a test host is in.
#[derive(Debug, Clone, Copy)]
pub enum DocRange {
    /// 198.51.100.0/24 (TEST-NET-2)
    Net2,
    /// 203.0.113.0/24 (TEST-NET-3)
    Net3,
    /// 10.250.0.0/24: a private address, which the guard refuses.
    Private,
}

/// One test host: a namespace, a veth pair and an HTTP server on `port`.
#[derive(Debug)]
pub struct TestHost {
    netns: String,
    /// The test host's address.
    pub ip: Ipv4Addr,
    /// The host side of the veth (an address of the host itself).
    pub host_side: Ipv4Addr,
    pub port: u16,
    connections: Arc<AtomicUsize>,
    /// The request heads it was sent, oldest first.
    heads: Arc<Mutex<Vec<String>>>,
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

impl TestHost {
    /// A host answering every HTTP request with `hello from NAME`, or with
    /// `body_bytes` bytes of zeros when given (for downloads).
    pub fn start(
        name: &str,
        range: DocRange,
        port: u16,
        body_bytes: Option<usize>,
    ) -> anyhow::Result<Self> {
        Self::start_with(name, range, port, body_bytes, None)
    }

    /// [`Self::start`] serving HTTPS with `tls` (see [`crate::tlshost`]).
    pub fn start_tls(
        name: &str,
        range: DocRange,
        port: u16,
        tls: Arc<rustls::ServerConfig>,
    ) -> anyhow::Result<Self> {
        Self::start_with(name, range, port, None, Some(tls))
    }

    /// The request heads this host was sent, oldest first.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// A host running `handler` on every connection to `port` (one thread
    /// per connection), over TLS with `tls` when given: for services that
    /// answer more than a fixed body, such as the fake model provider
    /// ([`crate::fake_provider`]). The handler owns the connection; over TLS,
    /// dropping it sends the close notification. [`Self::heads`] stays empty.
    pub fn start_service(
        name: &str,
        range: DocRange,
        port: u16,
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: ConnectionHandler,
    ) -> anyhow::Result<Self> {
        let (host, listener) = Self::make(range, port)?;
        let counter = host.connections.clone();
        std::thread::Builder::new()
            .name(format!("test-host-{name}"))
            .spawn(move || serve_service(listener, counter, tls, handler))
            .context("starting the service thread")?;
        Ok(host)
    }

    fn start_with(
        name: &str,
        range: DocRange,
        port: u16,
        body_bytes: Option<usize>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> anyhow::Result<Self> {
        let (host, listener) = Self::make(range, port)?;
        let body = match body_bytes {
            Some(len) => vec![0u8; len],
            None => format!("hello from {name}\n").into_bytes(),
        };
        let counter = host.connections.clone();
        let heads = host.heads.clone();
        std::thread::spawn(move || serve_http(listener, counter, heads, body, tls));
        Ok(host)
    }

    /// The namespace, the veth pair and a listener on `port` inside.
    fn make(range: DocRange, port: u16) -> anyhow::Result<(Self, TcpListener)> {
        static REAPED: std::sync::Once = std::sync::Once::new();
        REAPED.call_once(reap_dead_processes_hosts);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        anyhow::ensure!(n < 63, "at most 63 test hosts per process");
        let slot = u8::try_from(n * 4).context("slot")?;
        let base = match range {
            DocRange::Net2 => [198, 51, 100],
            DocRange::Net3 => [203, 0, 113],
            DocRange::Private => [10, 250, 0],
        };
        let host_side = Ipv4Addr::new(base[0], base[1], base[2], slot + 1);
        let inside = Ipv4Addr::new(base[0], base[1], base[2], slot + 2);
        let pid = std::process::id();
        let netns = format!("pdk-th-{pid}-{n}");
        let veth = format!("pth{:x}{n}", pid % 0xfffff);
        ip(&["netns", "add", &netns])?;
        let host = TestHost {
            netns: netns.clone(),
            ip: inside,
            host_side,
            port,
            connections: Arc::new(AtomicUsize::new(0)),
            heads: Arc::default(),
        };
        ip(&[
            "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &netns,
        ])?;
        ip(&["addr", "add", &format!("{host_side}/30"), "dev", &veth])?;
        ip(&["link", "set", &veth, "up"])?;
        ip(&[
            "-n",
            &netns,
            "addr",
            "add",
            &format!("{inside}/30"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", &netns, "link", "set", "eth0", "up"])?;
        ip(&["-n", &netns, "link", "set", "lo", "up"])?;
        let listener = bind_in(&netns, SocketAddr::from((inside, port)))?;
        Ok((host, listener))
    }

    /// A UDP echo on `port` of this host; returns the count of datagrams
    /// it received (each is sent back unchanged).
    pub fn udp_echo(&self, port: u16) -> anyhow::Result<Arc<AtomicUsize>> {
        let path = format!("/run/netns/{}", self.netns);
        let addr = SocketAddr::from((self.ip, port));
        let socket = std::thread::spawn(move || -> anyhow::Result<UdpSocket> {
            let ns = std::fs::File::open(&path).context("opening the test namespace")?;
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
            UdpSocket::bind(addr).with_context(|| format!("binding {addr}"))
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the binding thread panicked"))??;
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = socket.send_to(&buf[..n], from);
            }
        });
        Ok(count)
    }

    /// How many connections reached this host.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// The option that lets the egress guard through to this host: its
    /// documentation (or private) address is refused otherwise, as an
    /// operator names an internal host.
    pub fn allow_option(&self) -> String {
        format!("--egress-allow-private={}", self.ip)
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        // The veth goes with the namespace.
        let _ = ip(&["netns", "del", &self.netns]);
    }
}

/// A listening socket inside the namespace `netns`, bound from a thread of
/// its own that joins it and ends.
fn bind_in(netns: &str, addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let path = format!("/run/netns/{netns}");
    std::thread::spawn(move || -> anyhow::Result<TcpListener> {
        let ns = std::fs::File::open(&path).context("opening the test namespace")?;
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
        TcpListener::bind(addr).with_context(|| format!("binding {addr}"))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the binding thread panicked"))?
}

fn serve_http(
    listener: TcpListener,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
    body: Vec<u8>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let body = Arc::new(body);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        connections.fetch_add(1, Ordering::SeqCst);
        let body = body.clone();
        let heads = heads.clone();
        let tls = tls.clone();
        std::thread::spawn(move || {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            match tls {
                Some(config) => {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    let mut tls = rustls::StreamOwned::new(conn, stream);
                    answer(&mut tls, &heads, &body);
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                }
                None => answer(&mut { stream }, &heads, &body),
            }
        });
    }
}

/// A connection a [`ConnectionHandler`] is given: plain TCP or TLS.
pub trait ReadWrite: Read + Write + Send {}

impl<T: Read + Write + Send> ReadWrite for T {}

/// What [`TestHost::start_service`] runs on each connection.
pub type ConnectionHandler = Arc<dyn Fn(Box<dyn ReadWrite>) + Send + Sync>;

/// A server-side TLS stream that sends its close notification when dropped.
struct ClosingTls(rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>);

impl Read for ClosingTls {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for ClosingTls {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for ClosingTls {
    fn drop(&mut self) {
        self.0.conn.send_close_notify();
        let _ = self.0.flush();
    }
}

fn serve_service(
    listener: TcpListener,
    connections: Arc<AtomicUsize>,
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: ConnectionHandler,
) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        connections.fetch_add(1, Ordering::SeqCst);
        let tls = tls.clone();
        let handler = handler.clone();
        std::thread::spawn(move || {
            // Long enough for a client's idle keep-alive connection.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(300)));
            let _ = stream.set_nodelay(true);
            let conn: Box<dyn ReadWrite> = match tls {
                Some(config) => {
                    let Ok(conn) = rustls::ServerConnection::new(config) else {
                        return;
                    };
                    Box::new(ClosingTls(rustls::StreamOwned::new(conn, stream)))
                }
                None => Box::new(stream),
            };
            handler(conn);
        });
    }
}

fn answer(stream: &mut (impl Read + Write), heads: &Mutex<Vec<String>>, body: &[u8]) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    if let Ok(mut heads) = heads.lock() {
        heads.push(text.clone());
    }
    // As an ordinary server does: the Host and path back in
    // Content-Location, the Origin back in a CORS answer.
    let header = |name: &str| {
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut echoed = String::new();
    if let Some(host) = header("host") {
        echoed.push_str(&format!("Content-Location: https://{host}{path}\r\n"));
    }
    if let Some(origin) = header("origin") {
        echoed.push_str(&format!("Access-Control-Allow-Origin: {origin}\r\n"));
    }
    let response = format!(
        "HTTP/1.1 200 OK\r\n{echoed}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

/// A DNS server on 127.0.0.1 answering A queries from a table; a name with
/// several answers gets them in turn, then keeps the last.
#[derive(Debug)]
pub struct TestDns {
    pub addr: SocketAddr,
    table: Arc<Mutex<HashMap<String, VecDeque<Ipv4Addr>>>>,
}

impl TestDns {
    pub fn start() -> anyhow::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let addr = socket.local_addr()?;
        let table: Arc<Mutex<HashMap<String, VecDeque<Ipv4Addr>>>> = Arc::default();
        let answers = table.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(reply) = dns_answer(&answers, &buf[..n]) {
                    let _ = socket.send_to(&reply, from);
                }
            }
        });
        Ok(Self { addr, table })
    }

    /// `name` answers these addresses, one per look-up, then the last.
    pub fn set(&self, name: &str, answers: &[Ipv4Addr]) {
        if let Ok(mut table) = self.table.lock() {
            table.insert(name.to_owned(), answers.iter().copied().collect());
        }
    }

    /// The `--egress-resolver` option naming this server.
    pub fn option(&self) -> String {
        format!("--egress-resolver={}", self.addr)
    }
}

fn dns_answer(table: &Mutex<HashMap<String, VecDeque<Ipv4Addr>>>, bytes: &[u8]) -> Option<Vec<u8>> {
    let request = Message::from_vec(bytes).ok()?;
    let query = request.queries.first()?.clone();
    let name = query.name().to_ascii().trim_end_matches('.').to_owned();
    let mut reply = Message::response(request.metadata.id, request.metadata.op_code);
    reply.metadata.message_type = MessageType::Response;
    reply.add_query(query.clone());
    let found = table.lock().ok().and_then(|mut t| {
        let answers = t.get_mut(&name)?;
        if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().copied()
        }
    });
    match found {
        Some(ip) if query.query_type() == RecordType::A => {
            let owner = Name::from_str(&format!("{name}.")).ok()?;
            reply.add_answer(Record::from_rdata(owner, 0, RData::A(A(ip))));
        }
        Some(_) => {}
        None => reply.metadata.response_code = ResponseCode::NXDomain,
    }
    reply.to_vec().ok()
}

/// Removes the test hosts of test processes that died without dropping
/// them (a killed run): they hold the same addresses this process takes.
/// Deleting a namespace removes its veth pair.
fn reap_dead_processes_hosts() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix("pdk-th-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            eprintln!("removing {name}, left by the dead test process {pid}");
            let _ = ip(&["netns", "del", name]);
        }
    }
}
