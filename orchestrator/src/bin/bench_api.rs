//! Exec round-trip latency of `true`: through the HTTP API (JSON and SSE) of
//! an in-process server on 127.0.0.1, beside a direct exec over the guest
//! connection, in one run on one host. Not a test; needs root and
//! `paddock-guest` built.
//!
//!     cargo run --release -p paddock --bin paddock-bench-api -- [--iterations N]

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_core::sandbox::{GuestOps, SandboxSpec};
use paddock_proto::ExecSpec;
use serde_json::{Value, json};

#[path = "common/bench_server.rs"]
mod bench_server;
use bench_server::{BenchServer, parse_iterations};

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
    let iterations = parse_iterations(500, USAGE)?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(bench(iterations))
}

async fn bench(iterations: usize) -> anyhow::Result<()> {
    // The API path: a server with its store, on a loopback port.
    let served = BenchServer::start().await?;
    let (base, token) = (served.base.clone(), served.token.clone());
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
    let sandbox = served.backend.create_native(SandboxSpec::default()).await?;
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
    served.stop().await?;

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
