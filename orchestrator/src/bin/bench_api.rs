//! Exec round-trip latency of `true`: through the HTTP API (JSON and SSE) of
//! an in-process server on 127.0.0.1, beside a direct exec over the guest
//! connection, in one run on one host. Not a test; needs root and
//! `paddock-guest` built.
//!
//!     cargo run --release -p paddock --bin paddock-bench-api -- [--iterations N]

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_api::http::HttpOptions;
use paddock_api::{SandboxService, ServiceConfig, Tokens};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::{GuestOps, SandboxSpec};
use paddock_core::store::Store;
use paddock_proto::ExecSpec;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_store::SqlStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WARM_UP: usize = 20;

const USAGE: &str = "\
usage: paddock-bench-api [--iterations N]

Exec round-trip latency through the HTTP API beside a direct guest exec, in
one run. Needs root and paddock-guest built (cargo build --release -p
paddock-guest).
  --iterations N  timed execs per line (default 500, after 20 untimed)";

fn main() -> anyhow::Result<()> {
    if paddock_bench_support::wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    let iterations = parse_iterations()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(bench(iterations))
}

fn parse_iterations() -> anyhow::Result<usize> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(500),
        [flag, n] if flag == "--iterations" => {
            let n: usize = n.parse().context("--iterations takes a number")?;
            if n == 0 {
                bail!("--iterations must be more than 0");
            }
            Ok(n)
        }
        _ => bail!("unknown arguments {args:?}\n{USAGE}"),
    }
}

async fn bench(iterations: usize) -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let node = format!("bench-{}", std::process::id());
    let guest_bin = locate_guest_bin(None).context("build paddock-guest first")?;
    let mut native = NativeConfig::new(guest_bin);
    let cgroup_parent = format!("paddock/{node}");
    native.cgroup_parent = cgroup_parent.clone();
    native.temp_root = Some(data.path().to_path_buf());
    let backend = Arc::new(NativeBackend::new(native));

    // The API path: a server with its store, on a loopback port.
    let url = format!("sqlite://{}", data.path().join("paddock.db").display());
    let store: Arc<dyn Store> = Arc::new(SqlStore::open(&url).await?);
    let tenant = TenantId::parse("bench")?;
    let token = "bench-token-0123456789".to_owned();
    let tokens = Tokens::new(vec![(token.clone(), tenant.clone())])?;
    let shutdown = CancellationToken::new();
    let config = ServiceConfig::new(node, data.path().join("workspaces"));
    let service = SandboxService::new(
        store.clone(),
        backend.clone() as Arc<dyn paddock_core::sandbox::SandboxBackend>,
        config,
        shutdown.child_token(),
    );
    service.register_tenants(&[tenant]).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(paddock_api::run(
        listener,
        service,
        tokens,
        HttpOptions::default(),
        shutdown.clone(),
    ));
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/v1/sandboxes"))
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = created["id"].as_str().context("no sandbox id")?.to_owned();
    let exec_url = format!("{base}/v1/sandboxes/{id}/exec");
    let body = json!({"argv": ["true"]});

    // The direct path: the same backend, the guest connection, no HTTP, no store.
    let sandbox = backend.create_native(SandboxSpec::default()).await?;
    let guest = sandbox.client().clone();
    let spec = ExecSpec {
        argv: vec!["true".into()],
        ..ExecSpec::default()
    };

    let api_json = || async {
        let out: Value = http
            .post(&exec_url)
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if out["exit_code"] != 0 {
            bail!("true failed: {out}");
        }
        Ok(())
    };
    let api_sse = || async {
        let text = http
            .post(&exec_url)
            .bearer_auth(&token)
            .header("accept", "text/event-stream")
            .json(&body)
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        if !text.contains("event: exit") {
            bail!("no exit event: {text}");
        }
        Ok(())
    };
    let direct = || async {
        let out = guest.exec_output(spec.clone(), &[]).await?;
        if out.exit.code != Some(0) {
            bail!("true failed: {:?}", out.exit);
        }
        Ok(())
    };
    // Round-robin, so a busy moment of the host weighs on every path alike.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for round in 0..WARM_UP + iterations {
        let timings = [
            time(direct).await?,
            time(api_json).await?,
            time(api_sse).await?,
        ];
        if round >= WARM_UP {
            for (kept, t) in samples.iter_mut().zip(timings) {
                kept.push(t);
            }
        }
    }
    let [direct, api_json, api_sse] = samples;
    sandbox.destroy().await?;
    shutdown.cancel();
    server.await??;
    store.close().await;
    for hierarchy in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_dir(hierarchy.path().join(&cgroup_parent));
    }

    println!("exec round trip of `true`, {iterations} runs each after {WARM_UP} warm-up runs");
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "path", "median", "p99", "mean"
    );
    for (name, samples) in [
        ("direct guest exec", &direct),
        ("API exec (JSON)", &api_json),
        ("API exec (SSE)", &api_sse),
    ] {
        let s = Stats::of(samples);
        println!(
            "{name:<28} {:>10} {:>10} {:>10}",
            ms(s.median),
            ms(s.p99),
            ms(s.mean)
        );
    }
    let overhead = Stats::of(&api_json)
        .median
        .saturating_sub(Stats::of(&direct).median);
    println!(
        "API overhead at the median (JSON - direct): {}",
        ms(overhead)
    );
    Ok(())
}

async fn time<F, Fut>(run: F) -> anyhow::Result<Duration>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let started = Instant::now();
    run().await?;
    Ok(started.elapsed())
}

struct Stats {
    median: Duration,
    p99: Duration,
    mean: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
            sorted.get(index).copied().unwrap_or_default()
        };
        let total: Duration = sorted.iter().sum();
        Self {
            median: at(0.5),
            p99: at(0.99),
            mean: total / u32::try_from(sorted.len().max(1)).unwrap_or(u32::MAX),
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
