//! `paddock-test-probe`: small, harmless helpers the scenario tests run inside a
//! sandbox, where the root filesystem may lack tools like nc or python.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

#[path = "test_probe/http.rs"]
mod http;

#[derive(Debug, Parser)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Allocates and touches BYTES of memory, then prints "allocated BYTES".
    Alloc { bytes: u64 },
    /// Spawns `sleep` children until spawning fails (at most MAX), prints how
    /// many ran, then kills them.
    SpawnUntilFail { max: usize },
    /// A TCP round trip over 127.0.0.1 inside the sandbox.
    Loopback,
    /// Connects to ADDR (ip:port); exit 0 when connected, 1 when not.
    Connect { addr: SocketAddr },
    /// Sends one UDP datagram to ADDR and waits 2 s for the echo; exit 0
    /// ("udp echo ADDR") when it came back, 1 when not.
    Udp { addr: SocketAddr },
    /// One ICMP echo to IP over an unprivileged ICMP socket; exit 0 ("ping
    /// IP") when the reply came within 2 s, 1 when not.
    Ping { ip: Ipv4Addr },
    /// Prints the network interfaces, one per line.
    Interfaces,
    /// Serves TCP on 127.0.0.1:PORT until killed, echoing every
    /// connection's bytes back (one thread per connection).
    EchoServer { port: u16 },
    /// Creates inotify instances until that fails (at most MAX), prints
    /// "inotify N errno E" (E 0 when none failed), then keeps them open for
    /// HOLD_SECS.
    Inotify {
        max: usize,
        #[arg(long, default_value_t = 0)]
        hold_secs: u64,
    },
    /// One GET of URL (http or https; through HTTP_PROXY when set), with
    /// each HEADER ("Name: value"); prints the answer, exit 1 when none.
    Get {
        url: String,
        #[arg(long = "header")]
        headers: Vec<String>,
    },
    /// GETs URL and prints "downloaded BYTES in SECONDS".
    Download { url: String },
    /// Resolves NAME; prints "resolved NAME IP", exit 1 when unanswered.
    Resolve { name: String },
}

fn main() -> anyhow::Result<()> {
    match Args::parse().cmd {
        Cmd::Alloc { bytes } => alloc(bytes),
        Cmd::SpawnUntilFail { max } => spawn_until_fail(max),
        Cmd::Loopback => loopback(),
        Cmd::Connect { addr } => connect(addr),
        Cmd::Udp { addr } => udp(addr),
        Cmd::Ping { ip } => ping(ip),
        Cmd::Interfaces => interfaces(),
        Cmd::EchoServer { port } => echo_server(port),
        Cmd::Inotify { max, hold_secs } => inotify(max, hold_secs),
        Cmd::Get { url, headers } => http::run_get(&url, &headers),
        Cmd::Download { url } => http::run_download(&url),
        Cmd::Resolve { name } => http::run_resolve(&name),
    }
}

fn alloc(bytes: u64) -> anyhow::Result<()> {
    const CHUNK: usize = 4 << 20;
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut total = 0u64;
    while total < bytes {
        let mut chunk = vec![0u8; CHUNK];
        // Touch every page so the memory is really charged.
        for i in (0..CHUNK).step_by(4096) {
            chunk[i] = 1;
        }
        chunks.push(chunk);
        total += CHUNK as u64;
    }
    println!("allocated {total}");
    Ok(())
}

fn spawn_until_fail(max: usize) -> anyhow::Result<()> {
    let mut children: Vec<Child> = Vec::new();
    let mut error = None;
    while children.len() < max {
        match Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => children.push(c),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let n = children.len();
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
    match error {
        Some(e) => println!("spawned {n} then failed: {e}"),
        None => println!("spawned {n} without failing"),
    }
    Ok(())
}

fn loopback() -> anyhow::Result<()> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("bind 127.0.0.1")?;
    let addr = listener.local_addr()?;
    let mut client = TcpStream::connect(addr).context("connect")?;
    let (mut server, _) = listener.accept().context("accept")?;
    client.write_all(b"ping")?;
    let mut buf = [0u8; 4];
    server.read_exact(&mut buf)?;
    if &buf != b"ping" {
        bail!("bytes changed in transit");
    }
    println!("loopback ok {addr}");
    Ok(())
}

fn echo_server(port: u16) -> anyhow::Result<()> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).context("bind")?;
    for conn in listener.incoming() {
        let mut conn = conn.context("accept")?;
        std::thread::spawn(move || {
            let mut reader = match conn.try_clone() {
                Ok(reader) => reader,
                Err(_) => return,
            };
            let _ = std::io::copy(&mut reader, &mut conn);
        });
    }
    Ok(())
}

fn connect(addr: SocketAddr) -> anyhow::Result<()> {
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(_) => {
            println!("connected {addr}");
            Ok(())
        }
        Err(e) => {
            println!("failed {addr}: {e}");
            std::process::exit(1);
        }
    }
}

fn udp(addr: SocketAddr) -> anyhow::Result<()> {
    let socket = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).context("bind")?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    let sent = b"paddock udp probe";
    let mut buf = [0u8; 64];
    let echoed = socket
        .send_to(sent, addr)
        .and_then(|_| socket.recv_from(&mut buf));
    match echoed {
        Ok((n, _)) if &buf[..n] == sent => {
            println!("udp echo {addr}");
            Ok(())
        }
        Ok(_) => bail!("udp: a different answer from {addr}"),
        Err(e) => {
            println!("udp failed {addr}: {e}");
            std::process::exit(1);
        }
    }
}

fn ping(ip: Ipv4Addr) -> anyhow::Result<()> {
    use nix::sys::socket::{
        AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn, recv, sendto,
        setsockopt, socket, sockopt,
    };
    use std::os::fd::AsRawFd;
    let attempt = || -> nix::Result<bool> {
        let fd = socket(
            AddressFamily::Inet,
            SockType::Datagram,
            SockFlag::empty(),
            SockProtocol::Icmp,
        )?;
        setsockopt(
            &fd,
            sockopt::ReceiveTimeout,
            &nix::sys::time::TimeVal::new(2, 0),
        )?;
        // Echo request; the kernel fills the id and the checksum.
        let packet = [8u8, 0, 0, 0, 0, 0, 0, 1, b'p', b'd', b'k'];
        let to = SockaddrIn::from(std::net::SocketAddrV4::new(ip, 0));
        sendto(fd.as_raw_fd(), &packet, &to, MsgFlags::empty())?;
        let mut buf = [0u8; 64];
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())?;
        Ok(n >= 8 && buf[0] == 0)
    };
    match attempt() {
        Ok(true) => {
            println!("ping {ip}");
            Ok(())
        }
        Ok(false) => bail!("ping: not an echo reply from {ip}"),
        Err(e) => {
            println!("ping failed {ip}: {e}");
            std::process::exit(1);
        }
    }
}

fn interfaces() -> anyhow::Result<()> {
    let dev = std::fs::read_to_string("/proc/net/dev").context("reading /proc/net/dev")?;
    for name in dev.lines().skip(2).filter_map(|l| l.split(':').next()) {
        println!("{}", name.trim());
    }
    Ok(())
}

#[allow(unsafe_code)]
fn inotify(max: usize, hold_secs: u64) -> anyhow::Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut held: Vec<OwnedFd> = Vec::new();
    let mut errno = 0;
    while held.len() < max {
        // SAFETY: inotify_init1 takes no pointers; a non-negative return is a
        // new descriptor nothing else owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if fd < 0 {
            errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(-1);
            break;
        }
        // SAFETY: see above: the descriptor was just returned to us.
        held.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    println!("inotify {} errno {errno}", held.len());
    std::io::stdout().flush()?;
    std::thread::sleep(Duration::from_secs(hold_secs));
    Ok(())
}
