//! Issue 27 item 1, queueing: where the operator asks for it (`[runs]
//! when_full = "queue"`), a run whose sandbox finds its tenant's slots full
//! is recorded `queued` (the answer, GET, the session's `run.queued`
//! event) and starts first in first out when a slot frees; it can be
//! cancelled while queued, fails `queue_timeout` past the longest wait, a
//! full queue is a 429 naming it, and a restart keeps the queue. A
//! subagent is never queued (its parent holds a slot: it could wait for
//! ever): it is refused at once, as without queueing. Real jailed
//! sandboxes, a local model server in OpenAI's wire format, SQLite and
//! Postgres.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::events::EventReader;
use common::{Db, Setup, TestServer, expect_error, send, wait_run_ended};
use paddock_api::service::{Quota, Quotas};
use paddock_runtime::{QueueSettings, WhenFull};
use paddock_test_support::model_server::{ModelServer, Turn};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    a_queued_run_starts_when_the_slot_frees_and_a_subagent_is_not_queued,
    a_queued_run_is_cancelled_and_a_full_queue_is_refused,
    a_queued_run_fails_past_the_longest_wait,
    a_restart_keeps_the_queue_in_order,
);

const WAIT: Duration = Duration::from_secs(90);

/// Tenant a runs one run at a time; the rest queue.
fn queue_setup(db: Db, data: &std::path::Path, model: &ModelServer, queue: QueueSettings) -> Setup {
    let mut setup = Setup::new(db, data);
    setup.model_base_urls = vec![model.base_url.clone()];
    setup.quotas = Some(Quotas {
        tenant: Quota {
            runs: Some(1),
            ..Quota::tenant_default()
        },
        ..Quotas::default()
    });
    setup.queue = Some(queue);
    setup
}

fn queueing(max_queued: usize, max_wait: Duration) -> QueueSettings {
    QueueSettings {
        when_full: WhenFull::Queue,
        max_queued_per_tenant: max_queued,
        max_wait,
    }
}

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

/// Starts a run in `session`; answers it as the API did (202).
async fn start(server: &TestServer, session: &str, model: &ModelServer) -> Result<Value> {
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/runs"))
            .json(&json!({
                "goal": "hold a sandbox",
                "model": {"spec": "openai:scripted", "base_url": model.base_url},
            })),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    Ok(run)
}

fn id(run: &Value) -> String {
    run["id"].as_str().unwrap_or_default().to_owned()
}

async fn get_run(server: &TestServer, id: &str) -> Result<Value> {
    let (status, run) = send(server.a(Method::GET, &format!("/v1/runs/{id}"))).await?;
    ensure!(status == StatusCode::OK, "{status} {run}");
    Ok(run)
}

/// The kinds and payloads of a session's stored events, in order.
async fn events(server: &TestServer, session: &str) -> Result<Vec<(String, Value)>> {
    let mut reader = EventReader::open(server.a(
        Method::GET,
        &format!("/v1/sessions/{session}/events?until=caught_up"),
    ))
    .await?;
    let mut events = Vec::new();
    while let Some(frame) = reader.next().await? {
        events.push((frame.event, frame.data["payload"].clone()));
    }
    Ok(events)
}

async fn kinds(server: &TestServer, session: &str) -> Result<Vec<String>> {
    Ok(events(server, session)
        .await?
        .into_iter()
        .map(|(kind, _)| kind)
        .collect())
}

/// Tenant a's first run holds its one run (and sandbox) slot: the second
/// is answered `queued`, reads back queued with a `run.queued` naming the
/// quota, and its model is not asked. The first run's subagent is refused
/// at once (not queued). The first run ends: the second starts by itself and ends too.
async fn a_queued_run_starts_when_the_slot_frees_and_a_subagent_is_not_queued(
    db: Db,
) -> Result<()> {
    let model = ModelServer::start(vec![
        Turn::call(
            "spawn_subagent",
            json!({"task_id": "look", "profile": "explore", "prompt": "list the files"}),
        )
        .held(),
        Turn::text("first done").held(),
        Turn::text("second done").held(),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let mut setup = queue_setup(db, data.path(), &model, queueing(4, WAIT));
    setup.quotas = Some(Quotas {
        tenant: Quota {
            runs: Some(1),
            sandboxes: Some(1),
            ..Quota::tenant_default()
        },
        ..Quotas::default()
    });
    let server = TestServer::start(setup).await?;
    let first_session = session(&server, "first").await?;
    let first = start(&server, &first_session, &model).await?;
    assert_eq!(first["state"], "preparing", "{first}");
    model.wait_requests(1, WAIT).await?;

    let second_session = session(&server, "second").await?;
    let second = start(&server, &second_session, &model).await?;
    assert_eq!(second["state"], "queued", "{second}");
    assert_eq!(get_run(&server, &id(&second)).await?["state"], "queued");
    let queued = events(&server, &second_session).await?;
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0].0, "run.queued");
    let reason = queued[0].1["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("tenant quota ")
            && reason.ends_with(" exceeded: 1 in use of 1, 1 asked"),
        "{reason}"
    );
    assert_eq!(queued[0].1["ahead"], 0);
    assert_eq!(queued[0].1["max_wait_ms"], 90_000);
    // the request is kept for a restart, its goal among it
    assert_eq!(queued[0].1["request"]["command"]["goal"], "hold a sandbox");

    // the subagent finds the tenant's one sandbox taken by its parent: it
    // is refused at once (its parent's model reads why), never queued
    model.release(0);
    let requests = model.wait_requests(2, WAIT).await?;
    let result = requests[1].last_tool_result().unwrap_or_default();
    assert!(
        result.contains("no sandbox slot for a subagent")
            && result.contains("tenant quota sandboxes exceeded: 1 in use of 1"),
        "{result}"
    );
    let (status, children) =
        send(server.a(Method::GET, &format!("/v1/runs/{}/children", id(&first)))).await?;
    assert_eq!(status, StatusCode::OK, "{children}");
    assert_eq!(children["runs"], json!([]), "{children}");
    // still queued while the first run holds the slot
    assert_eq!(get_run(&server, &id(&second)).await?["state"], "queued");
    assert_eq!(model.requests().len(), 2);

    model.release(1);
    let ended = wait_run_ended(&server, &id(&first), WAIT).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    // the slot freed: the queued run starts by itself
    model.wait_requests(3, WAIT).await?;
    let started = get_run(&server, &id(&second)).await?;
    assert_ne!(started["state"], "queued", "{started}");
    model.release(2);
    let ended = wait_run_ended(&server, &id(&second), WAIT).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    let kinds = kinds(&server, &second_session).await?;
    assert_eq!(kinds[0], "run.queued", "{kinds:?}");
    assert_eq!(kinds[1], "run.started", "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("run.finished"));
    server.stop().await?;
    Ok(())
}

/// A queue of one: the second run queues, the third is a 429 naming the
/// queue and leaves no run. The queued run is cancelled: it ends
/// `cancelled` without ever asking its model, and the queue has room again.
async fn a_queued_run_is_cancelled_and_a_full_queue_is_refused(db: Db) -> Result<()> {
    let model = ModelServer::start(vec![Turn::text("done").held()]).await?;
    let data = tempfile::tempdir()?;
    let setup = queue_setup(db, data.path(), &model, queueing(1, WAIT));
    let server = TestServer::start(setup).await?;
    let first = start(&server, &session(&server, "first").await?, &model).await?;
    model.wait_requests(1, WAIT).await?;
    let second_session = session(&server, "second").await?;
    let second = start(&server, &second_session, &model).await?;
    assert_eq!(second["state"], "queued", "{second}");

    let third_session = session(&server, "third").await?;
    let refused = expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{third_session}/runs"))
            .json(&json!({
                "goal": "hold a sandbox",
                "model": {"spec": "openai:scripted", "base_url": model.base_url},
            })),
        StatusCode::TOO_MANY_REQUESTS,
        "queue_full",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("run queue is full") && message.contains("max_queued_per_tenant"),
        "{refused}"
    );
    let (_, runs) =
        send(server.a(Method::GET, &format!("/v1/sessions/{third_session}/runs"))).await?;
    assert_eq!(runs["runs"], json!([]), "{runs}");
    // a session with a queued run is busy
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{second_session}/runs"))
            .json(&json!({
                "goal": "again",
                "model": {"spec": "openai:scripted", "base_url": model.base_url},
            })),
        StatusCode::CONFLICT,
        "session_busy",
    )
    .await?;

    let (status, cancelled) =
        send(server.a(Method::POST, &format!("/v1/runs/{}/cancel", id(&second)))).await?;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["end_reason"], "cancelled", "{cancelled}");
    assert_eq!(
        kinds(&server, &second_session).await?,
        ["run.queued", "run.finished"]
    );
    // the queue has room again
    let third = start(&server, &third_session, &model).await?;
    assert_eq!(third["state"], "queued", "{third}");
    let (status, _) =
        send(server.a(Method::POST, &format!("/v1/runs/{}/cancel", id(&third)))).await?;
    assert_eq!(status, StatusCode::OK);
    model.release(0);
    let ended = wait_run_ended(&server, &id(&first), WAIT).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(model.requests().len(), 1, "no queued run asked the model");
    server.stop().await?;
    Ok(())
}

/// A run queued behind a held one for longer than the server's longest
/// wait (1 s) fails `queue_timeout`, saying why.
async fn a_queued_run_fails_past_the_longest_wait(db: Db) -> Result<()> {
    let model = ModelServer::start(vec![Turn::text("done").held()]).await?;
    let data = tempfile::tempdir()?;
    let setup = queue_setup(db, data.path(), &model, queueing(4, Duration::from_secs(1)));
    let server = TestServer::start(setup).await?;
    let first = start(&server, &session(&server, "first").await?, &model).await?;
    model.wait_requests(1, WAIT).await?;
    let second_session = session(&server, "second").await?;
    let second = start(&server, &second_session, &model).await?;
    assert_eq!(second["state"], "queued", "{second}");
    let ended = wait_run_ended(&server, &id(&second), WAIT).await?;
    assert_eq!(ended["state"], "failed", "{ended}");
    assert_eq!(ended["end_reason"], "queue_timeout", "{ended}");
    let error = ended["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("runs.max_queue_wait_secs")
            && error.contains("tenant quota runs exceeded: 1 in use of 1"),
        "{ended}"
    );
    assert_eq!(
        kinds(&server, &second_session).await?,
        ["run.queued", "run.finished"]
    );
    model.release(0);
    wait_run_ended(&server, &id(&first), WAIT).await?;
    assert_eq!(model.requests().len(), 1);
    server.stop().await?;
    Ok(())
}

/// Two runs queued behind a held one, then the server stops: the held run
/// is cancelled by the stop, the queued ones stay `queued` (not
/// interrupted). At the next start the older takes the free slot, the
/// younger stays queued behind it, and starts when it ended.
async fn a_restart_keeps_the_queue_in_order(db: Db) -> Result<()> {
    let model = ModelServer::start(vec![
        Turn::text("held").held(),
        Turn::text("second done").held(),
        Turn::text("third done").held(),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let setup = queue_setup(db, data.path(), &model, queueing(4, WAIT));
    let server = TestServer::start(setup).await?;
    let first = start(&server, &session(&server, "first").await?, &model).await?;
    model.wait_requests(1, WAIT).await?;
    let second_session = session(&server, "second").await?;
    let second = start(&server, &second_session, &model).await?;
    let third = start(&server, &session(&server, "third").await?, &model).await?;
    assert_eq!(second["state"], "queued", "{second}");
    assert_eq!(third["state"], "queued", "{third}");
    let setup = server.stop().await?;

    let server = TestServer::start(setup).await?;
    let first_ended = get_run(&server, &id(&first)).await?;
    assert_eq!(first_ended["state"], "cancelled", "{first_ended}");
    // the older queued run takes the slot: its model is asked
    model.wait_requests(2, WAIT).await?;
    assert_ne!(get_run(&server, &id(&second)).await?["state"], "queued");
    assert_eq!(get_run(&server, &id(&third)).await?["state"], "queued");
    model.release(1);
    let ended = wait_run_ended(&server, &id(&second), WAIT).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    model.wait_requests(3, WAIT).await?;
    model.release(2);
    let ended = wait_run_ended(&server, &id(&third), WAIT).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    // the stop recorded nothing for it: its wait went on where it was
    assert_eq!(
        kinds(&server, &second_session).await?[..2],
        ["run.queued", "run.started"]
    );
    server.stop().await?;
    Ok(())
}
