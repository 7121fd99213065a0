//! Request latency through a port URL (`/v1/sandboxes/{id}/ports/{P}/...`
//! of an in-process `paddock serve` on 127.0.0.1) beside a direct
//! connection to the same server in the same sandbox (made from inside the
//! sandbox's network namespace), in one run on one host. The server is
//! `python3 -m http.server` in a native sandbox with network `none`; each
//! request is an HTTP GET of a small file on a new connection to it (that
//! server closes after each answer). Not a test; needs root and
//! `paddock-guest` built.
//!
//!     cargo run --release -p paddock --bin paddock-bench-ports -- [--iterations N]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_bench_support::figures::{median, percentile};
use serde_json::{Value, json};

#[path = "common/bench_server.rs"]
mod bench_server;
use bench_server::{BenchServer, parse_iterations};

const WARM_UP: usize = 20;
/// The port the server listens on in the sandbox (unusual, so the
/// process is found by it).
const PORT: u16 = 18_731;
const BODY: &str = "hello from the sandbox\n";

const USAGE: &str = "\
usage: paddock-bench-ports [--iterations N]

HTTP GET latency through a port URL beside a direct connection to the same
server in the sandbox, in one run. Needs root and paddock-guest built
(cargo build --release -p paddock-guest).
  --iterations N  timed requests per line (default 500, after 20 untimed)";

fn main() -> anyhow::Result<()> {
    if paddock_bench_support::wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    let iterations = parse_iterations(500, USAGE)?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(bench(iterations))
}

async fn bench(iterations: usize) -> anyhow::Result<()> {
    let served = BenchServer::start().await?;
    let (base, token) = (served.base.clone(), served.token.clone());
    let http = reqwest::Client::new();
    let api = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{base}{path}"))
            .bearer_auth(&token)
    };
    let created: Value = api(reqwest::Method::POST, "/v1/sandboxes")
        .json(&json!({"network": "none"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = created["id"].as_str().context("no sandbox id")?.to_owned();
    api(
        reqwest::Method::PUT,
        &format!("/v1/sandboxes/{id}/files/hello.txt"),
    )
    .body(BODY)
    .send()
    .await?
    .error_for_status()?;
    api(
        reqwest::Method::POST,
        &format!("/v1/sandboxes/{id}/processes"),
    )
    .json(
        &json!({"argv": ["python3", "-m", "http.server", PORT.to_string(), "--bind", "127.0.0.1"]}),
    )
    .send()
    .await?
    .error_for_status()?;
    let port_url = format!("{base}/v1/sandboxes/{id}/ports/{PORT}/hello.txt");
    let through_port_url = || async {
        let response = http.get(&port_url).bearer_auth(&token).send().await?;
        if !response.status().is_success() {
            bail!("port URL answered {}", response.status());
        }
        let body = response.text().await?;
        if body != BODY {
            bail!("port URL answered {body:?}");
        }
        Ok(())
    };
    // Until the server listens.
    let deadline = Instant::now() + Duration::from_secs(20);
    while through_port_url().await.is_err() {
        if Instant::now() > deadline {
            bail!("the server in the sandbox never answered");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let direct = Direct::start(server_pid()?)?;

    // Round-robin, so a busy moment of the host weighs on both paths alike.
    let (mut direct_times, mut port_times) = (Vec::new(), Vec::new());
    for round in 0..WARM_UP + iterations {
        let d = direct.request().await?;
        let started = Instant::now();
        through_port_url().await?;
        let p = started.elapsed();
        if round >= WARM_UP {
            direct_times.push(d);
            port_times.push(p);
        }
    }
    drop(direct);
    served.stop().await?;

    println!(
        "HTTP GET of a {}-byte file from python3 -m http.server in a native sandbox (network none), \
         {iterations} requests each after {WARM_UP} warm-up requests",
        BODY.len()
    );
    println!("{:<44} {:>10} {:>10} {:>10}", "path", "p50", "p90", "p99");
    for (name, times) in [
        ("direct (in the sandbox's netns)", &mut direct_times),
        ("port URL through paddock serve", &mut port_times),
    ] {
        times.sort();
        println!(
            "{name:<44} {:>10} {:>10} {:>10}",
            ms(median(times)),
            ms(percentile(times, 0.9)),
            ms(percentile(times, 0.99))
        );
    }
    let added = median(&port_times).saturating_sub(median(&direct_times));
    println!(
        "added at p50 (port URL - direct): {} (floor: < 1 ms)",
        ms(added)
    );
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// The host pid of the server process (in the sandbox's namespaces), found
/// by its port on its command line.
fn server_pid() -> anyhow::Result<u32> {
    let needle = format!("http.server\0{PORT}\0");
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            return Ok(pid);
        }
    }
    bail!("no process serves port {PORT}")
}

/// A thread in the sandbox's network namespace that makes the direct
/// requests, timing each itself (connect, request, whole answer).
struct Direct {
    ask: std::sync::mpsc::Sender<tokio::sync::oneshot::Sender<anyhow::Result<Duration>>>,
}

impl Direct {
    fn start(pid: u32) -> anyhow::Result<Self> {
        let netns = std::fs::File::open(format!("/proc/{pid}/ns/net"))
            .with_context(|| format!("opening the network namespace of {pid}"))?;
        let (ask, asks) =
            std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<anyhow::Result<Duration>>>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let entered = nix::sched::setns(&netns, nix::sched::CloneFlags::CLONE_NEWNET)
                .context("entering the sandbox's network namespace");
            let failed = entered.is_err();
            let _ = ready_tx.send(entered);
            if failed {
                return;
            }
            for answer in asks {
                let _ = answer.send(direct_get());
            }
        });
        ready_rx.recv().context("the direct thread died")??;
        Ok(Self { ask })
    }

    async fn request(&self) -> anyhow::Result<Duration> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.ask.send(tx).context("the direct thread died")?;
        rx.await.context("the direct thread died")?
    }
}

fn direct_get() -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut tcp = TcpStream::connect(("127.0.0.1", PORT))?;
    tcp.set_nodelay(true)?;
    tcp.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer)?;
    let elapsed = started.elapsed();
    if !answer.ends_with(BODY.as_bytes()) {
        bail!("direct answer: {}", String::from_utf8_lossy(&answer));
    }
    Ok(elapsed)
}
