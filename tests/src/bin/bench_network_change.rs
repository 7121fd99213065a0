//! `paddock-bench-network-change`: how long a change of a running
//! sandbox's allowlist takes to apply, beside a baseline measured in the
//! same run. Not a test: it prints a table. Needs root (test hosts in their
//! own network namespaces) and the binaries built.
//!
//!   cargo build -p paddock -p paddock-guest -p paddock-tests
//!   target/x86_64-unknown-linux-gnu/debug/paddock-bench-network-change [--changes 50]
//!
//! A `paddock serve` runs a native sandbox whose allowlist flips between
//! test host A and test host B. Each change is timed from the start of its
//! `PUT /v1/sandboxes/{id}/network` until a CONNECT to the newly allowed
//! host through the sandbox's proxy succeeds (made from inside the
//! sandbox's namespace, as its programs do), and the host just removed is
//! checked refused. The baseline is one CONNECT to an allowed host through
//! the same proxy with no change. The floor: a change applies in < 100 ms.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use paddock_bench_support::figures::percentile;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};

const TOKEN: &str = "bench-network-change-token";
/// How long one change may take before the bench gives up.
const APPLY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Parser)]
#[command(about = "Time for a live allowlist change to apply, beside a plain proxied connect")]
struct Args {
    /// Timed changes (alternating A -> B and B -> A).
    #[arg(long, default_value_t = 50)]
    changes: usize,
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request to the server (closed after its answer): status and body.
fn http(server: &str, method: &str, path: &str, body: &str) -> anyhow::Result<(u16, String)> {
    let addr = server.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).context("connecting to the server")?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status in {answer:?}"))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// A CONNECT to `host:8080` through the proxy at 127.0.0.1:3128 of the
/// namespace `netns`, from a thread that joins it: whether it was admitted.
fn connect_through(netns: &str, host: &str) -> anyhow::Result<bool> {
    let path = format!("/run/netns/{netns}");
    let host = host.to_owned();
    std::thread::spawn(move || -> anyhow::Result<bool> {
        let ns = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
        let mut proxy = TcpStream::connect("127.0.0.1:3128").context("connecting to the proxy")?;
        proxy.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            proxy,
            "CONNECT {host}:8080 HTTP/1.1\r\nHost: {host}:8080\r\n\r\n"
        )?;
        let mut line = String::new();
        BufReader::new(&proxy).read_line(&mut line)?;
        match line.split_whitespace().nth(1) {
            Some("200") => Ok(true),
            Some("403") => Ok(false),
            _ => bail!("the proxy answered {line:?}"),
        }
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the probing thread panicked"))?
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let a = TestHost::start("cha", DocRange::Net2, 8080, None)?;
    let b = TestHost::start("chb", DocRange::Net3, 8080, None)?;
    let dns = TestDns::start()?;
    dns.set("a.test", &[a.ip]);
    dns.set("b.test", &[b.ip]);
    let dir = tempfile::tempdir()?;
    let mut command =
        paddock_tests::serve::command("bench-netchange", dir.path(), &format!("tenant-a:{TOKEN}"));
    command
        .arg(dns.option())
        .arg(a.allow_option())
        .arg(b.allow_option())
        .stderr(Stdio::null());
    let (child, url) = paddock_tests::serve::spawn(command)?;
    let server = Server(child, url);

    let (status, body) = http(
        &server.1,
        "POST",
        "/v1/sandboxes",
        r#"{"network": {"allowlist": ["a.test:8080"]}}"#,
    )?;
    if status != 201 {
        bail!("creating the sandbox: {status} {body}");
    }
    let created: serde_json::Value = serde_json::from_str(&body)?;
    let id = created["id"].as_str().context("no id")?.to_owned();
    let netns = format!("paddock-{id}");

    // baseline: a CONNECT to the allowed host, nothing changing
    let mut baseline = Vec::with_capacity(args.changes);
    for _ in 0..args.changes {
        let started = Instant::now();
        if !connect_through(&netns, "a.test")? {
            bail!("a.test refused before any change");
        }
        baseline.push(started.elapsed());
    }

    let mut changes = Vec::with_capacity(args.changes);
    let mut puts = Vec::with_capacity(args.changes);
    let mut allowed = "a.test";
    for _ in 0..args.changes {
        let next = if allowed == "a.test" {
            "b.test"
        } else {
            "a.test"
        };
        let body = format!(r#"{{"network": {{"allowlist": ["{next}:8080"]}}}}"#);
        let started = Instant::now();
        let (status, answer) = http(
            &server.1,
            "PUT",
            &format!("/v1/sandboxes/{id}/network"),
            &body,
        )?;
        if status != 200 {
            bail!("changing the network: {status} {answer}");
        }
        puts.push(started.elapsed());
        while !connect_through(&netns, next)? {
            if started.elapsed() > APPLY_TIMEOUT {
                bail!("{next} still refused {APPLY_TIMEOUT:?} after the change");
            }
        }
        changes.push(started.elapsed());
        if connect_through(&netns, allowed)? {
            bail!("{allowed} still admitted after it was removed");
        }
        allowed = next;
    }
    let _ = http(&server.1, "DELETE", &format!("/v1/sandboxes/{id}"), "")?;

    for times in [&mut baseline, &mut changes, &mut puts] {
        times.sort();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "live allowlist change, {} changes (floor: < 100 ms)",
        args.changes
    );
    println!("{:<58} {:>9} {:>9} {:>9}", "", "p50 ms", "p90 ms", "max ms");
    for (name, times) in [
        (
            "baseline: CONNECT to an allowed host through the proxy",
            &baseline,
        ),
        ("PUT /network answered", &puts),
        (
            "PUT start -> CONNECT to the newly allowed host admitted",
            &changes,
        ),
    ] {
        println!(
            "{name:<58} {:>9.2} {:>9.2} {:>9.2}",
            ms(percentile(times, 0.5)),
            ms(percentile(times, 0.9)),
            ms(times.last().copied().unwrap_or_default()),
        );
    }
    Ok(())
}
