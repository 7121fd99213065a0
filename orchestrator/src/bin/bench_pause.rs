//! Pause + resume beside a fresh create, against a running `paddock serve`
//! (`--server URL`, token in PADDOCK_TOKEN), for one backend, in one run.
//! Fresh: create a sandbox and run `true` in it (its first exec). Resume:
//! pause it (`filesystem` mode, a file in its temporary workspace), resume
//! it and run `cat` of that file (the resume's first exec). Prints the
//! medians and the resume's ratio to the fresh create (floor: < 2x). Not a
//! test.
//!
//!     cargo run -p paddock --bin paddock-bench-pause -- --server URL --backend docker [--iterations N]

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_bench_support::figures::median;
use serde_json::{Value, json};

const USAGE: &str = "\
usage: paddock-bench-pause --server URL --backend NAME [--iterations N]

Pause + resume (to the first exec) beside a fresh create (to the first
exec) of the same backend on a running server; token in PADDOCK_TOKEN.
  --iterations N  timed rounds of each (default 5)";

struct Api {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Api {
    async fn post(&self, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let mut request = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("POST {path}: {status} {body}");
        }
        Ok(body)
    }

    async fn delete(&self, id: &str) -> anyhow::Result<()> {
        self.http
            .delete(format!("{}/v1/sandboxes/{id}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await?;
        Ok(())
    }

    async fn exec(&self, id: &str, script: &str) -> anyhow::Result<Value> {
        let out = self
            .post(
                &format!("/v1/sandboxes/{id}/exec"),
                Some(json!({"argv": ["sh", "-c", script]})),
            )
            .await?;
        if out["exit_code"] != 0 {
            bail!("exec {script}: {out}");
        }
        Ok(out)
    }
}

fn main() -> anyhow::Result<()> {
    if paddock_bench_support::wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut server, mut backend, mut iterations) = (None, None, 5usize);
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .with_context(|| format!("{flag} takes a value"))?;
        match flag.as_str() {
            "--server" => server = Some(value.clone()),
            "--backend" => backend = Some(value.clone()),
            "--iterations" => iterations = value.parse().context("--iterations takes a number")?,
            _ => bail!("unknown argument {flag}\n{USAGE}"),
        }
    }
    let (Some(url), Some(backend)) = (server, backend) else {
        bail!("--server and --backend are needed\n{USAGE}");
    };
    if iterations == 0 {
        bail!("--iterations must be more than 0");
    }
    let api = Api {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()?,
        url,
        token: std::env::var("PADDOCK_TOKEN").context("PADDOCK_TOKEN")?,
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(bench(&api, &backend, iterations))
}

async fn bench(api: &Api, backend: &str, iterations: usize) -> anyhow::Result<()> {
    let mut fresh = Vec::new();
    let mut resumed = Vec::new();
    let mut pauses = Vec::new();
    for _ in 0..iterations {
        let started = Instant::now();
        let created = api
            .post("/v1/sandboxes", Some(json!({"backend": backend})))
            .await?;
        let id = created["id"].as_str().context("no id")?.to_owned();
        api.exec(&id, "true").await?;
        fresh.push(started.elapsed());
        api.exec(&id, "echo kept > /workspace/kept.txt").await?;

        let started = Instant::now();
        let paused = api
            .post(&format!("/v1/sandboxes/{id}/pause"), Some(json!({})))
            .await?;
        pauses.push(started.elapsed());
        if paused["state"] != "paused" {
            bail!("not paused: {paused}");
        }
        let started = Instant::now();
        api.post(&format!("/v1/sandboxes/{id}/resume"), None)
            .await?;
        let out = api.exec(&id, "cat /workspace/kept.txt").await?;
        resumed.push(started.elapsed());
        if out["stdout"] != "kept\n" {
            bail!("the file did not survive: {out}");
        }
        api.delete(&id).await?;
    }
    let (fresh, resumed, pauses) = (median(&fresh), median(&resumed), median(&pauses));
    println!("backend {backend}, {iterations} rounds, medians:");
    println!("  fresh create to first exec (baseline)  {fresh:>10.1?}");
    println!("  pause (filesystem)                     {pauses:>10.1?}");
    println!("  resume to first exec                   {resumed:>10.1?}");
    println!(
        "  resume / fresh create                  {:>10.2}x  (floor < 2x)",
        resumed.as_secs_f64() / fresh.as_secs_f64()
    );
    Ok(())
}
