//! Issue 27: runs are admitted like sandboxes. A run's and a subagent's
//! sandbox pass the same slot and quota check as `POST /v1/sandboxes` (one
//! ledger: the tenant's sandboxes and runs, the node's `max_sandboxes`); a
//! refused run is a 429 naming the quota and leaves no run behind, a
//! refused subagent is a tool error its parent reads, and a run that ends
//! gives its slot back. Steering is capped per run, and budgets are bounded
//! by the server's config. Real jailed sandboxes, a local model server in
//! OpenAI's wire format, SQLite and Postgres.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send, wait_run_ended};
use paddock_api::service::{Quota, Quotas};
use paddock_core::store::Budgets;
use paddock_test_support::model_server::{ModelServer, Turn};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    a_tenant_at_its_cap_is_refused_a_run_and_a_subagent_until_a_run_ends,
    the_node_cap_holds_across_tenants_and_concurrent_runs_are_capped,
    steering_is_capped_per_run_and_budgets_are_bounded,
);

const WAIT: Duration = Duration::from_secs(90);

async fn session(server: &TestServer, name: &str) -> Result<String> {
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": name})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws["id"], "title": name})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    Ok(session["id"].as_str().context("session id")?.to_owned())
}

fn run_body(model: &ModelServer) -> Value {
    json!({
        "goal": "hold a sandbox",
        "model": {"spec": "openai:scripted", "base_url": model.base_url},
    })
}

async fn wait_run(server: &TestServer, id: &str) -> Result<Value> {
    wait_run_ended(server, id, WAIT).await
}

/// The runs of a session, as listed.
async fn runs_of(server: &TestServer, session: &str) -> Result<Vec<Value>> {
    let (status, runs) =
        send(server.a(Method::GET, &format!("/v1/sessions/{session}/runs"))).await?;
    ensure!(status == StatusCode::OK, "{status} {runs}");
    Ok(runs["runs"].as_array().cloned().unwrap_or_default())
}

fn model_setup(db: Db, data: &std::path::Path, models: &[&ModelServer]) -> Setup {
    let mut setup = Setup::new(db, data);
    setup.model_base_urls = models.iter().map(|m| m.base_url.clone()).collect();
    setup
}

/// Tenant a may hold 2 sandboxes: one of the API's and one run's fill it.
/// A second run is a 429 naming the tenant quota (as a sandbox is) and no
/// run is recorded; the run's subagent is refused with a tool error the
/// model reads in its next request; tenant b is not held back; once the
/// run ended its slot is free again.
async fn a_tenant_at_its_cap_is_refused_a_run_and_a_subagent_until_a_run_ends(
    db: Db,
) -> Result<()> {
    let model = ModelServer::start(vec![
        Turn::call(
            "spawn_subagent",
            json!({"task_id": "look", "profile": "explore", "prompt": "list the files"}),
        )
        .held(),
        Turn::call(
            "complete_task",
            json!({"verdict": "met", "summary": "done", "evidence": ["none"]}),
        )
        .held(),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let mut setup = model_setup(db, data.path(), &[&model]);
    setup.quotas = Some(Quotas {
        tenant: Quota {
            sandboxes: Some(2),
            ..Quota::tenant_default()
        },
        ..Quotas::default()
    });
    let server = TestServer::start(setup).await?;
    server.create_sandbox(json!({})).await?;
    let first = session(&server, "first").await?;
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{first}/runs"))
            .json(&run_body(&model)),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    let run_id = run["id"].as_str().context("run id")?.to_owned();
    // its sandbox is up once the model is asked
    model.wait_requests(1, WAIT).await?;

    let second = session(&server, "second").await?;
    let refused = expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{second}/runs"))
            .json(&run_body(&model)),
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await?;
    assert_eq!(
        refused["error"]["message"],
        "tenant quota sandboxes exceeded: 2 in use of 2, 1 asked"
    );
    assert!(runs_of(&server, &second).await?.is_empty());
    expect_error(
        server.a(Method::POST, "/v1/sandboxes").json(&json!({})),
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await?;
    let (status, other) = send(server.b(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED, "tenant b: {other}");

    // the subagent's sandbox is refused: its parent's model reads why
    model.release(0);
    let requests = model.wait_requests(2, WAIT).await?;
    let result = requests[1].last_tool_result().unwrap_or_default();
    assert!(
        result.contains("no sandbox slot for a subagent")
            && result.contains("tenant quota sandboxes exceeded: 2 in use of 2"),
        "{result}"
    );
    let (status, children) =
        send(server.a(Method::GET, &format!("/v1/runs/{run_id}/children"))).await?;
    assert_eq!(status, StatusCode::OK, "{children}");
    assert_eq!(children["runs"], json!([]), "{children}");

    model.release(1);
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    // the run's slot is free again
    server.create_sandbox(json!({})).await?;
    server.stop().await?;
    Ok(())
}

/// The node runs at most 2 sandboxes whoever holds them: tenant b's run
/// and tenant a's sandbox fill it, and then neither a run of a nor a
/// sandbox of b gets one (429 `too_many_sandboxes`). A tenant capped at
/// one concurrent run is refused a second (429 naming `runs`).
async fn the_node_cap_holds_across_tenants_and_concurrent_runs_are_capped(db: Db) -> Result<()> {
    let held = ModelServer::start(vec![Turn::text("done").held()]).await?;
    let data = tempfile::tempdir()?;
    let mut setup = model_setup(db, data.path(), &[&held]);
    setup.max_sandboxes = Some(2);
    setup.quotas = Some(Quotas {
        tenant: Quota {
            runs: Some(1),
            ..Quota::tenant_default()
        },
        ..Quotas::default()
    });
    let server = TestServer::start(setup).await?;

    // tenant b's run
    let (status, ws) = send(
        server
            .b(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "b"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let (status, b_session) = send(
        server
            .b(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws["id"], "title": "b"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {b_session}");
    let b_session = b_session["id"].as_str().context("id")?.to_owned();
    let (status, b_run) = send(
        server
            .b(Method::POST, &format!("/v1/sessions/{b_session}/runs"))
            .json(&run_body(&held)),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {b_run}");
    held.wait_requests(1, WAIT).await?;

    // tenant b has its one run: a second is refused by its runs quota
    let (status, ws2) = send(
        server
            .b(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "b2"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws2}");
    let (_, b_second) = send(
        server
            .b(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws2["id"], "title": "b2"})),
    )
    .await?;
    let b_second = b_second["id"].as_str().context("id")?.to_owned();
    let refused = expect_error(
        server
            .b(Method::POST, &format!("/v1/sessions/{b_second}/runs"))
            .json(&run_body(&held)),
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await?;
    assert_eq!(
        refused["error"]["message"],
        "tenant quota runs exceeded: 1 in use of 1, 1 asked"
    );

    // tenant a's sandbox takes the node's last slot
    server.create_sandbox(json!({})).await?;
    let a_session = session(&server, "a").await?;
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{a_session}/runs"))
            .json(&run_body(&held)),
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_sandboxes",
    )
    .await?;
    assert!(runs_of(&server, &a_session).await?.is_empty());
    expect_error(
        server.b(Method::POST, "/v1/sandboxes").json(&json!({})),
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_sandboxes",
    )
    .await?;

    held.release(0);
    let b_run_id = b_run["id"].as_str().context("run id")?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (_, run) = send(server.b(Method::GET, &format!("/v1/runs/{b_run_id}"))).await?;
        if run["state"] == "completed" {
            break;
        }
        ensure!(tokio::time::Instant::now() < deadline, "{run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // b's run gave its slot back to the node
    let (status, got) = send(server.b(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{got}");
    server.stop().await?;
    Ok(())
}

/// A run takes 2 steering messages of at most 10 characters, 15 in all:
/// the third is a 429 `steering_limit` naming the cap, a longer one a 400
/// naming the size. A run asking more turns than the server's bound is a
/// 400 naming both; one asking none gets the bound.
async fn steering_is_capped_per_run_and_budgets_are_bounded(db: Db) -> Result<()> {
    let held = ModelServer::start(vec![Turn::text("done").held()]).await?;
    let data = tempfile::tempdir()?;
    let mut setup = model_setup(db, data.path(), &[&held]);
    setup.steering = Some(paddock_runtime::SteeringSettings {
        max_messages: 2,
        max_message_chars: 10,
        max_total_chars: 15,
    });
    setup.budget_max = Some(Budgets {
        max_turns: 10,
        ..paddock_runtime::DEFAULT_BUDGET_MAX
    });
    let server = TestServer::start(setup).await?;
    let sid = session(&server, "steer").await?;
    let runs = format!("/v1/sessions/{sid}/runs");

    let mut over = run_body(&held);
    over["budgets"] = json!({"max_turns": 11});
    let refused = expect_error(
        server.a(Method::POST, &runs).json(&over),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    assert_eq!(
        refused["error"]["message"],
        "budgets: max_turns 11 is over this server's bound of 10"
    );
    assert!(runs_of(&server, &sid).await?.is_empty());

    let (status, run) = send(server.a(Method::POST, &runs).json(&run_body(&held))).await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    assert_eq!(run["budgets"]["max_turns"], 10, "{run}");
    let run_id = run["id"].as_str().context("run id")?.to_owned();
    held.wait_requests(1, WAIT).await?;

    let messages = format!("/v1/runs/{run_id}/messages");
    let long = expect_error(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": "x".repeat(11)})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    assert!(
        long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 10 characters"),
        "{long}"
    );
    for text in ["0123456789", "abcde"] {
        let (status, got) = send(
            server
                .a(Method::POST, &messages)
                .json(&json!({"text": text})),
        )
        .await?;
        assert_eq!(status, StatusCode::ACCEPTED, "{got}");
    }
    let full = expect_error(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": "f"})),
        StatusCode::TOO_MANY_REQUESTS,
        "steering_limit",
    )
    .await?;
    assert!(
        full["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the most one run takes (2)"),
        "{full}"
    );

    held.release(0);
    wait_run(&server, &run_id).await?;
    server.stop().await?;
    Ok(())
}
