//! Pause + resume beside a fresh create, against a running `paddock serve`
//! (`--server URL`, token in PADDOCK_TOKEN), for one backend, in one run.
//! Fresh: create a sandbox and run `true` in it (its first exec). Resume:
//! pause it (a file in its temporary workspace), resume it and run `cat` of
//! that file (the resume's first exec), in each mode: `filesystem`, and
//! `full` where the backend keeps memory (then a background shell's
//! variable is there too: the shell writes it to a file only after the
//! resume). Prints the medians and the resume's ratio to the fresh
//! create (floor: < 2x; a `full` microVM resume: < 1.5 s). Not a test.
//!
//!     cargo run -p paddock --bin paddock-bench-pause -- --server URL --backend docker [--iterations N] [--mode filesystem|full|both] [--memory-mib N]

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_bench_support::figures::median;
use serde_json::{Value, json};

const USAGE: &str = "\
usage: paddock-bench-pause --server URL --backend NAME [--iterations N] [--mode M] [--memory-mib N]

Pause + resume (to the first exec) beside a fresh create (to the first
exec) of the same backend on a running server; token in PADDOCK_TOKEN.
  --iterations N  timed rounds of each (default 5)
  --mode M        filesystem, full or both (default both; a backend that
                  refuses `full` is reported so, with its reason)
  --memory-mib N  the sandboxes' memory limit (default: the server's)";

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
    let mut modes = vec!["filesystem", "full"];
    let mut create = json!({});
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .with_context(|| format!("{flag} takes a value"))?;
        match flag.as_str() {
            "--server" => server = Some(value.clone()),
            "--backend" => backend = Some(value.clone()),
            "--iterations" => iterations = value.parse().context("--iterations takes a number")?,
            "--memory-mib" => {
                let mib: u64 = value.parse().context("--memory-mib takes a number")?;
                create["limits"] = json!({ "memory_bytes": mib << 20 });
            }
            "--mode" => {
                modes = match value.as_str() {
                    "both" => vec!["filesystem", "full"],
                    "filesystem" => vec!["filesystem"],
                    "full" => vec!["full"],
                    _ => bail!("--mode is filesystem, full or both"),
                }
            }
            _ => bail!("unknown argument {flag}\n{USAGE}"),
        }
    }
    let (Some(url), Some(backend)) = (server, backend) else {
        bail!("--server and --backend are needed\n{USAGE}");
    };
    create["backend"] = json!(backend);
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
        .block_on(async {
            for mode in modes {
                bench(&api, &create, mode, iterations).await?;
            }
            Ok(())
        })
}

/// The error of a pause the server refused for its mode, if that is what
/// `err` is.
fn mode_refusal(err: &anyhow::Error) -> Option<String> {
    let text = err.to_string();
    text.contains("pause_mode_unsupported").then_some(text)
}

async fn bench(api: &Api, create: &Value, mode: &str, iterations: usize) -> anyhow::Result<()> {
    let backend = create["backend"].as_str().unwrap_or_default();
    let mut fresh = Vec::new();
    let mut resumed = Vec::new();
    let mut pauses = Vec::new();
    let full = mode == "full";
    for _ in 0..iterations {
        let started = Instant::now();
        let created = api.post("/v1/sandboxes", Some(create.clone())).await?;
        let id = created["id"].as_str().context("no id")?.to_owned();
        api.exec(&id, "true").await?;
        fresh.push(started.elapsed());
        api.exec(&id, "echo kept > /workspace/kept.txt").await?;
        if full {
            // Memory the resume must bring back: a shell's variable, written
            // out by that shell once the file below appears.
            api.post(
                &format!("/v1/sandboxes/{id}/processes"),
                Some(
                    json!({"shell": "v=remembered; while [ ! -e /tmp/go ]; do sleep 0.05; done; \
                                      echo $v > /tmp/said"}),
                ),
            )
            .await?;
        }

        let started = Instant::now();
        let paused = match api
            .post(
                &format!("/v1/sandboxes/{id}/pause"),
                Some(json!({ "mode": mode })),
            )
            .await
        {
            Ok(paused) => paused,
            Err(err) => {
                api.delete(&id).await?;
                if let Some(reason) = mode_refusal(&err) {
                    println!("backend {backend}, pause {mode}: refused ({reason})");
                    return Ok(());
                }
                return Err(err);
            }
        };
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
        if full {
            let said = api
                .exec(
                    &id,
                    "touch /tmp/go; for i in $(seq 100); do [ -s /tmp/said ] && break; \
                     sleep 0.05; done; cat /tmp/said",
                )
                .await?;
            if said["stdout"] != "remembered\n" {
                bail!("the background shell's memory did not survive: {said}");
            }
        }
        api.delete(&id).await?;
    }
    let (fresh, resumed, pauses) = (median(&fresh), median(&resumed), median(&pauses));
    let memory = create["limits"]["memory_bytes"].as_u64().map_or_else(
        || "the server's default".to_owned(),
        |b| format!("{} MiB", b >> 20),
    );
    println!("backend {backend}, mode {mode}, memory {memory}, {iterations} rounds, medians:");
    println!("  fresh create to first exec (baseline)  {fresh:>10.1?}");
    println!("  pause ({mode:<10})                     {pauses:>10.1?}");
    println!("  resume ({mode:<10}) to first exec      {resumed:>10.1?}");
    let floor = if full {
        "floor < 2x; microVM < 1.5 s"
    } else {
        "floor < 2x"
    };
    println!(
        "  resume / fresh create                  {:>10.2}x  ({floor})",
        resumed.as_secs_f64() / fresh.as_secs_f64()
    );
    Ok(())
}
