//! Runs past the quotas (issue 27): the attacking tenant floods agent runs
//! whose model spawns subagents at every turn, then floods one run with
//! steering. Its sandboxes (API, runs' and subagents') never pass its cap,
//! its concurrent runs never pass theirs, the steering it gets stored stays
//! within the run's caps, and meanwhile another tenant still gets a
//! sandbox and its health answer in under a second; the server's RSS stays
//! under 512 MiB.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_test_support::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{Server, local, mib, runtime};

const SANDBOX_CAP: usize = 3;
const RUN_CAP: usize = 2;
/// Runs the attacker asks for at once.
const FLOOD: usize = 16;
/// Turns that spawn before every later request is held.
const SPAWN_TURNS: usize = 30;
const HELD_TURNS: usize = 200;

async fn json_of(server: &Server, method: &str, path: &str, body: &Value) -> Result<(u16, Value)> {
    let (status, text) = server.request(method, path, &body.to_string()).await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

async fn new_session(server: &Server, n: usize) -> Result<String> {
    let (status, ws) = json_of(
        server,
        "POST",
        "/v1/workspaces",
        &json!({"name": format!("flood-{n}")}),
    )
    .await?;
    ensure!(status == 201, "workspace: {status} {ws}");
    let (status, session) = json_of(
        server,
        "POST",
        "/v1/sessions",
        &json!({"workspace": ws["id"], "title": format!("flood {n}")}),
    )
    .await?;
    ensure!(status == 201, "session: {status} {session}");
    Ok(session["id"].as_str().context("session id")?.to_owned())
}

/// The attacker's sandboxes recorded running (runs' and subagents' too).
async fn running_sandboxes(server: &Server) -> Result<usize> {
    let (status, body) = server
        .request("GET", "/v1/sandboxes?state=running&limit=1000", "")
        .await?;
    ensure!(status == 200, "listing sandboxes: {status} {body}");
    let value: Value = serde_json::from_str(&body)?;
    Ok(value["sandboxes"].as_array().map_or(0, Vec::len))
}

#[test]
fn a_run_flood_stays_within_the_tenant_caps() -> Result<()> {
    runtime().block_on(async {
        let mut turns: Vec<Turn> = (0..SPAWN_TURNS)
            .map(|i| {
                (0..3).fold(Turn::default(), |turn, j| {
                    turn.and_call(
                        "spawn_subagent",
                        json!({"task_id": format!("t{i}-{j}"), "profile": "explore",
                               "prompt": "look around"}),
                    )
                })
            })
            .collect();
        turns.extend((0..HELD_TURNS).map(|_| Turn::text("done").held()));
        let model = ModelServer::start(turns).await?;
        let data = tempfile::tempdir()?;
        let server = Server::start(
            data.path(),
            &format!(
                "model_base_urls = [\"{}\"]\n[quotas.tenant]\nsandboxes = {SANDBOX_CAP}\nruns = {RUN_CAP}\n",
                model.base_url
            ),
        )?;

        let mut sessions = Vec::new();
        for n in 0..FLOOD {
            sessions.push(new_session(&server, n).await?);
        }
        let body = json!({
            "goal": "take the node",
            "model": {"spec": "openai:scripted", "base_url": model.base_url},
        })
        .to_string();
        let started = Instant::now();
        let posts = sessions.iter().map(|sid| {
            let path = format!("/v1/sessions/{sid}/runs");
            let body = body.clone();
            let server = &server;
            async move { server.request("POST", &path, &body).await }
        });
        let answers = futures_util::future::join_all(posts).await;
        let mut accepted = Vec::new();
        let mut refused = 0;
        for answer in answers {
            let (status, text) = answer?;
            match status {
                202 => {
                    let run: Value = serde_json::from_str(&text)?;
                    accepted.push(run["id"].as_str().context("run id")?.to_owned());
                }
                429 => {
                    ensure!(text.contains("quota_exceeded"), "{text}");
                    refused += 1;
                }
                other => anyhow::bail!("a flooded run: {other} {text}"),
            }
        }
        println!(
            "runs: {} accepted, {refused} refused (429) of {FLOOD} in {:?}",
            accepted.len(),
            started.elapsed()
        );
        ensure!(accepted.len() <= RUN_CAP, "{} runs accepted", accepted.len());
        ensure!(!accepted.is_empty(), "no run accepted at all");

        // while its runs spawn subagents at every turn: never more
        // sandboxes than its cap; the victim still gets one and its health
        let mut most = 0;
        let mut worst_latency = Duration::ZERO;
        let mut victim_sandbox = false;
        let watch_until = Instant::now() + Duration::from_secs(8);
        while Instant::now() < watch_until {
            most = most.max(running_sandboxes(&server).await?);
            worst_latency = worst_latency.max(server.victim_health_latency().await?);
            if !victim_sandbox {
                let (status, body) = server
                    .request_as(&server.victim, local(9), "POST", "/v1/sandboxes", "{}")
                    .await?;
                ensure!(status == 201, "the victim's sandbox: {status} {body}");
                victim_sandbox = true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let requests = model.wait_requests(1, Duration::from_secs(5)).await?.len();
        println!(
            "sandboxes of the attacker: at most {most} (cap {SANDBOX_CAP}); model requests {requests}; \
             victim health worst {worst_latency:?}"
        );
        ensure!(most <= SANDBOX_CAP, "the attacker held {most} sandboxes");
        ensure!(
            worst_latency < Duration::from_secs(1),
            "victim health took {worst_latency:?}"
        );

        // steering flood on one run: 100 messages of 32,000 characters
        let run = &accepted[0];
        let text = "s".repeat(32_000);
        let message = json!({ "text": text }).to_string();
        let mut stored = 0usize;
        let mut capped = 0usize;
        for _ in 0..100 {
            let (status, body) = server
                .request("POST", &format!("/v1/runs/{run}/messages"), &message)
                .await?;
            match status {
                202 => stored += 1,
                429 if body.contains("steering_limit") => capped += 1,
                // the run may have ended: nothing more is taken then
                409 if body.contains("run_finished") => {}
                other => anyhow::bail!("a steering message: {other} {body}"),
            }
        }
        println!("steering: {stored} stored, {capped} refused by a cap");
        // the defaults: 50 messages, 100,000 characters per run
        ensure!(
            stored * 32_000 <= 100_000,
            "{stored} messages of 32,000 characters stored"
        );
        let latency = server.victim_health_latency().await?;
        ensure!(latency < Duration::from_secs(1), "victim health took {latency:?}");
        let rss = server.rss_bytes();
        println!("server RSS {:.1} MiB", mib(rss));
        ensure!(rss < 512 << 20, "server RSS {:.1} MiB", mib(rss));

        for i in 0..SPAWN_TURNS + HELD_TURNS {
            model.release(i);
        }
        Ok(())
    })
}
