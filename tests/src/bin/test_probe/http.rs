//! A minimal HTTP/1.1 client for the network cases and the download bench:
//! the sandbox's image has no curl. Through the explicit proxy (the
//! `HTTP_PROXY` the guest gives every command; CONNECT for https) or
//! straight (names through the system resolver, which the sandbox's
//! resolv.conf points at the proxy's DNS; the connection redirected).
//! https trusts the bundle `SSL_CERT_FILE` names (the sandbox's CA when it
//! has secrets), else the system's.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

const TIMEOUT: Duration = Duration::from_secs(10);

/// scheme, host, port, path of `url`.
fn parse(url: &str) -> anyhow::Result<(bool, String, u16, String)> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        bail!("not an http(s) URL: {url}");
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.parse().context("port")?),
        None => (authority.to_owned(), if tls { 443 } else { 80 }),
    };
    Ok((tls, host, port, path))
}

/// A blocking socket that waits (poll, bounded) where a read or write says
/// EAGAIN: gVisor's host networking (runsc 20221219) answers a blocking
/// read that way when no data is there yet.
struct Patient(TcpStream);

impl Patient {
    fn wait(&self, events: nix::poll::PollFlags) -> std::io::Result<()> {
        use std::os::fd::AsFd;
        let mut fds = [nix::poll::PollFd::new(self.0.as_fd(), events)];
        let timeout = nix::poll::PollTimeout::try_from(TIMEOUT.as_millis() as i32)
            .map_err(std::io::Error::other)?;
        match nix::poll::poll(&mut fds, timeout) {
            Ok(0) => Err(std::io::ErrorKind::TimedOut.into()),
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Read for Patient {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wait(nix::poll::PollFlags::POLLIN)?;
                }
                other => return other,
            }
        }
    }
}

impl Write for Patient {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            match self.0.write(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wait(nix::poll::PollFlags::POLLOUT)?;
                }
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn connect(addr: &str) -> anyhow::Result<Patient> {
    let target = addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
        .next()
        .with_context(|| format!("{addr} has no address"))?;
    let stream = TcpStream::connect_timeout(&target, TIMEOUT)
        .with_context(|| format!("connecting to {addr}"))?;
    Ok(Patient(stream))
}

fn proxy() -> Option<String> {
    std::env::var("HTTP_PROXY").ok().and_then(|p| {
        p.strip_prefix("http://")
            .map(|a| a.trim_end_matches('/').to_owned())
    })
}

/// Reads a response head (up to the blank line).
fn read_head(stream: &mut impl Read) -> anyhow::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            bail!(
                "the connection closed in the head: {:?}",
                String::from_utf8_lossy(&head)
            );
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

fn roots() -> anyhow::Result<rustls::RootCertStore> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let file = std::env::var("SSL_CERT_FILE")
        .unwrap_or_else(|_| "/etc/ssl/certs/ca-certificates.crt".to_owned());
    let mut store = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&file).with_context(|| file.clone())? {
        let _ = store.add(cert.context("a certificate of the bundle")?);
    }
    Ok(store)
}

fn tls(
    stream: Patient,
    host: &str,
) -> anyhow::Result<rustls::StreamOwned<rustls::ClientConnection, Patient>> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots()?)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from(host.to_owned())?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)?;
    Ok(rustls::StreamOwned::new(conn, stream))
}

/// One GET of `url` with `headers`; writes the answer (head and body) to
/// `out` and returns the body's length.
pub fn get(url: &str, headers: &[String], out: &mut dyn Write) -> anyhow::Result<u64> {
    let (is_tls, host, port, path) = parse(url)?;
    let authority = format!("{host}:{port}");
    let through = proxy();
    let mut extra = String::new();
    for h in headers {
        extra.push_str(h);
        extra.push_str("\r\n");
    }
    let mut stream: Box<dyn ReadWrite> = match (&through, is_tls) {
        (Some(proxy), true) => {
            let mut s = connect(proxy)?;
            write!(
                s,
                "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
            )?;
            let head = read_head(&mut s)?;
            if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
                out.write_all(head.as_bytes())?;
                bail!("the proxy refused CONNECT {authority}");
            }
            Box::new(tls(s, &host)?)
        }
        (Some(proxy), false) => Box::new(connect(proxy)?),
        (None, true) => Box::new(tls(connect(&authority)?, &host)?),
        (None, false) => Box::new(connect(&authority)?),
    };
    let target = match (&through, is_tls) {
        (Some(_), false) => format!("http://{authority}{path}"),
        _ => path,
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
    )?;
    stream.flush()?;
    let head = read_head(&mut stream)?;
    out.write_all(head.as_bytes())?;
    let mut body = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                body += n as u64;
                if body <= 4096 {
                    out.write_all(&buf[..n])?;
                }
            }
            // a TLS peer that closes without close_notify
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(body)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// `get` URL: prints the answer; exit 1 (after "failed ...") when none came.
pub fn run_get(url: &str, headers: &[String]) -> anyhow::Result<()> {
    let mut out = std::io::stdout();
    if let Err(e) = get(url, headers, &mut out) {
        println!("\nfailed {url}: {e:#}");
        std::process::exit(1);
    }
    Ok(())
}

/// `download` URL: the body's bytes and seconds, "downloaded N in S".
pub fn run_download(url: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    let bytes = get(url, &[], &mut std::io::sink())?;
    println!(
        "downloaded {bytes} in {:.6}",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `resolve` NAME: its first address, exit 1 when the name is not answered.
pub fn run_resolve(name: &str) -> anyhow::Result<()> {
    match (name, 0u16).to_socket_addrs() {
        Ok(mut addrs) => match addrs.next() {
            Some(a) => println!("resolved {name} {}", a.ip()),
            None => {
                println!("unresolved {name}: no address");
                std::process::exit(1);
            }
        },
        Err(e) => {
            println!("unresolved {name}: {e}");
            std::process::exit(1);
        }
    }
    Ok(())
}
