//! Queued runs under a flood (issue 27 item 1, `[runs] when_full =
//! "queue"`): the attacking tenant, allowed one run at a time, asks for 40
//! runs at once. One starts, its queue takes `max_queued_per_tenant` and
//! the rest are refused with 429 `queue_full`; another tenant's run starts
//! at once (not queued behind the attacker's line) and its health answers
//! in under a second; the server's RSS stays under 512 MiB.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_test_support::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{Server, local, mib, runtime};

const MAX_QUEUED: usize = 8;
const FLOOD: usize = 40;

async fn json_as(
    server: &Server,
    token: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> Result<(u16, Value)> {
    let (status, text) = server
        .request_as(token, local(1), method, path, &body.to_string())
        .await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

async fn new_session(server: &Server, token: &str, name: &str) -> Result<String> {
    let (status, ws) = json_as(
        server,
        token,
        "POST",
        "/v1/workspaces",
        &json!({"name": name}),
    )
    .await?;
    ensure!(status == 201, "workspace: {status} {ws}");
    let (status, session) = json_as(
        server,
        token,
        "POST",
        "/v1/sessions",
        &json!({"workspace": ws["id"], "title": name}),
    )
    .await?;
    ensure!(status == 201, "session: {status} {session}");
    Ok(session["id"].as_str().context("session id")?.to_owned())
}

#[test]
fn a_queue_flood_is_bounded_and_holds_no_other_tenant_back() -> Result<()> {
    runtime().block_on(async {
        let model = ModelServer::start((0..FLOOD + 2).map(|_| Turn::text("done").held()).collect())
            .await?;
        let data = tempfile::tempdir()?;
        let server = Server::start(
            data.path(),
            &format!(
                "model_base_urls = [\"{}\"]\n[quotas.tenant]\nruns = 1\n\
                 [runs]\nwhen_full = \"queue\"\nmax_queued_per_tenant = {MAX_QUEUED}\n",
                model.base_url
            ),
        )?;
        let token = server.token.clone();
        let mut sessions = Vec::new();
        for n in 0..FLOOD {
            sessions.push(new_session(&server, &token, &format!("flood-{n}")).await?);
        }
        let body = json!({
            "goal": "wait in line",
            "model": {"spec": "openai:scripted", "base_url": model.base_url},
        });
        let started = Instant::now();
        let posts = sessions.iter().map(|sid| {
            let path = format!("/v1/sessions/{sid}/runs");
            let (server, token, body) = (&server, &token, &body);
            async move { json_as(server, token, "POST", &path, body).await }
        });
        let answers = futures_util::future::join_all(posts).await;
        let (mut running, mut queued, mut refused) = (0usize, 0usize, 0usize);
        for answer in answers {
            let (status, run) = answer?;
            match (status, run["state"].as_str()) {
                (202, Some("queued")) => queued += 1,
                (202, _) => running += 1,
                (429, _) if run["error"]["code"] == "queue_full" => refused += 1,
                other => anyhow::bail!("a flooded run: {other:?} {run}"),
            }
        }
        println!(
            "queue flood: {running} started, {queued} queued, {refused} refused (429 queue_full) of {FLOOD} in {:?}",
            started.elapsed()
        );
        ensure!(running == 1, "{running} runs started");
        ensure!(queued == MAX_QUEUED, "{queued} runs queued");
        ensure!(refused == FLOOD - 1 - MAX_QUEUED, "{refused} refused");

        // the victim's run starts at once, beside the attacker's line
        let victim_session = new_session(&server, &server.victim, "victim").await?;
        let asked = Instant::now();
        let (status, run) = json_as(
            &server,
            &server.victim,
            "POST",
            &format!("/v1/sessions/{victim_session}/runs"),
            &body,
        )
        .await?;
        let answered = asked.elapsed();
        ensure!(status == 202, "the victim's run: {status} {run}");
        ensure!(run["state"] == "preparing", "the victim's run: {run}");
        let mut worst = answered;
        for _ in 0..20 {
            worst = worst.max(server.victim_health_latency().await?);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let rss = server.rss_bytes();
        println!(
            "victim: run answered in {answered:?}, worst answer {worst:?}; server RSS {:.1} MiB",
            mib(rss)
        );
        ensure!(worst < Duration::from_secs(1), "the victim waited {worst:?}");
        ensure!(rss < 512 << 20, "server RSS {:.1} MiB", mib(rss));
        for i in 0..FLOOD + 2 {
            model.release(i);
        }
        Ok(())
    })
}
