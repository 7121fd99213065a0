//! `paddock sandbox port-forward`: a server started in a server's sandbox
//! (network `none`) reached from this host through a local port, one
//! tunnel per connection; and its refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use common::{PADDOCK, ServerProcess, unique};

struct Cli {
    url: String,
    token: String,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(PADDOCK);
        command
            .args(args)
            .env("PADDOCK_SERVER", &self.url)
            .env("PADDOCK_TOKEN", &self.token)
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Result<Output> {
        Ok(self.command(args).output()?)
    }

    fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.run(args)?;
        assert!(
            out.status.success(),
            "paddock {args:?}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    }
}

/// Kills the forwarder however the test ends.
struct Forwarder(Child);

impl Drop for Forwarder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.0 GET through the forwarded port; None while the tunnel
/// cannot reach the server yet (the forwarder closes that connection).
fn get(addr: &str, path: &str) -> Option<String> {
    let mut tcp = TcpStream::connect(addr).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(tcp, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).ok()?;
    (!answer.is_empty()).then_some(answer)
}

#[test]
fn port_forward_reaches_a_server_in_a_sandbox() -> Result<()> {
    let data = tempfile::tempdir()?;
    let token = format!("pf-token-{}", unique("t"));
    let server = ServerProcess::start(data.path(), &unique("pf"), &format!("cli:{token}"))?;
    let cli = Cli {
        url: server.url.clone(),
        token,
    };
    let id = cli
        .ok(&["sandbox", "create", "--network", "none"])?
        .trim()
        .to_owned();
    cli.ok(&[
        "process",
        "start",
        &id,
        "--",
        "python3",
        "-m",
        "http.server",
        "8000",
        "--bind",
        "127.0.0.1",
    ])?;

    let mut child = cli
        .command(&["sandbox", "port-forward", &id, "8000", "--local-port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().unwrap();
    let forwarder = Forwarder(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    // "paddock: forwarding 127.0.0.1:PORT to port 8000 of sb-... (Ctrl-C stops)"
    let Some(addr) = line.split_whitespace().nth(2) else {
        bail!("no address in {line:?}");
    };
    assert!(line.contains(&format!("to port 8000 of {id}")), "{line}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let answer = loop {
        match get(addr, "/") {
            Some(answer) => break answer,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            None => bail!("nothing came through {addr}"),
        }
    };
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.contains("Directory listing"), "{answer}");
    // Each connection is its own tunnel: several at once.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.to_owned();
            std::thread::spawn(move || get(&addr, "/"))
        })
        .collect();
    for thread in threads {
        let answer = thread.join().unwrap().expect("no answer");
        assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    }
    drop(forwarder);

    // Refusals: a port out of range, a sandbox that is not there.
    let out = cli.run(&["sandbox", "port-forward", &id, "70000"])?;
    assert_eq!(out.status.code(), Some(2), "usage");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("out of range"),
        "{out:?}"
    );
    let out = cli.run(&["sandbox", "port-forward", "sb-nope", "8000"])?;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sandbox_not_found"),
        "{out:?}"
    );
    Ok(())
}
