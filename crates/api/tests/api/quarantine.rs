//! Corrupt records over real HTTP, a real database and real sandboxes: a
//! message row and an event row of a finished run are damaged with SQL; the
//! session's next run still starts and completes, the damaged rows are moved
//! to the quarantine and skipped by every reader, and
//! `GET /v1/doctor/quarantine` lists them for their tenant only. Sandbox
//! rows in the two shapes the sandbox API and the runtime wrote their spec
//! in still read over HTTP as they were meant; one whose spec does not read
//! is left out of the listing, a loud error by id, and quarantined.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, send, wait_run_ended};
use paddock_core::ids::SessionId;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    a_session_with_corrupt_rows_goes_on_and_the_doctor_lists_them,
    old_sandbox_records_read_and_a_bad_one_is_quarantined,
);

const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn script(text: &str) -> Value {
    json!({"scripted": {"turns": [
        {"text": text, "tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "done", "evidence": ["nothing to change"]}}]}
    ]}})
}

async fn finished_run(server: &TestServer, session: &str, goal: &str) -> Result<Value> {
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/runs"))
            .json(&json!({"goal": goal, "model": script("Looked; nothing to do.")})),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    let id = run["id"].as_str().context("run id")?.to_owned();
    wait_run_ended(server, &id, RUN_TIMEOUT).await
}

/// The sequence numbers of the session's stored events, read over SSE.
async fn event_seqs(server: &TestServer, session: &str) -> Result<Vec<u64>> {
    let response = server
        .a(
            Method::GET,
            &format!("/v1/sessions/{session}/events?until=caught_up"),
        )
        .header("accept", "text/event-stream")
        .send()
        .await?;
    ensure!(response.status() == StatusCode::OK);
    let body = tokio::time::timeout(RUN_TIMEOUT, response.text()).await??;
    ensure!(!body.contains("event: error"), "{body}");
    Ok(body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|id| id.parse())
        .collect::<Result<_, _>>()?)
}

async fn a_session_with_corrupt_rows_goes_on_and_the_doctor_lists_them(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "corrupt"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws["id"], "title": "corrupt rows"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    let session = session["id"].as_str().context("session id")?.to_owned();
    let first = finished_run(&server, &session, "Look around").await?;
    assert_eq!(first["state"], "completed", "{first}");

    let (_, empty) = send(server.a(Method::GET, "/v1/doctor/quarantine")).await?;
    assert_eq!(empty, json!({"rows": []}));
    let tenant = server.setup.tenants.a.clone();
    let sid = SessionId::parse(&session)?;
    let messages = server.store.list_messages(&tenant, &sid, None).await?;
    ensure!(messages.len() >= 2, "{messages:?}");
    let seqs_before = event_seqs(&server, &session).await?;
    ensure!(seqs_before.len() >= 3, "{seqs_before:?}");

    // damage the first run's goal message and its second event, in the database
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&server.setup.database_url()).await?;
    let done = sqlx::query("UPDATE messages SET content = $1 WHERE session_id = $2 AND seq = 1")
        .bind("[{\"type\": \"hologram\"}")
        .bind(&session)
        .execute(&pool)
        .await?;
    assert_eq!(done.rows_affected(), 1);
    let done = sqlx::query("UPDATE run_events SET payload = $1 WHERE session_id = $2 AND seq = 2")
        .bind("{\"truncated\": ")
        .bind(&session)
        .execute(&pool)
        .await?;
    assert_eq!(done.rows_affected(), 1);
    pool.close().await;

    // the session goes on: a new run reads the history and completes
    let second = finished_run(&server, &session, "Look again").await?;
    assert_eq!(second["state"], "completed", "{second}");
    assert_eq!(second["end_reason"], "completed", "{second}");
    // the run's own read of the history moved the message (nothing else read it)
    let (_, doctor) = send(server.a(Method::GET, "/v1/doctor/quarantine")).await?;
    assert_eq!(doctor["rows"][0]["table"], "messages", "{doctor}");
    // every reader skips the damaged rows: the history, the event stream
    let history = server.store.list_messages(&tenant, &sid, None).await?;
    assert!(history.iter().all(|m| m.seq != 1), "{history:?}");
    assert!(history.len() > messages.len() - 1);
    let seqs = event_seqs(&server, &session).await?;
    assert!(!seqs.contains(&2), "{seqs:?}");
    assert!(
        seqs.len() > seqs_before.len() - 1,
        "the second run's events too"
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // the doctor lists both, for their tenant only
    let (status, doctor) = send(server.a(Method::GET, "/v1/doctor/quarantine")).await?;
    assert_eq!(status, StatusCode::OK, "{doctor}");
    let rows = doctor["rows"].as_array().context("rows")?;
    let mut found: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["table"].as_str().unwrap_or_default().to_owned(),
                r["key"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("messages".to_owned(), format!("session_id={session} seq=1")),
            (
                "run_events".to_owned(),
                format!("session_id={session} seq=2")
            ),
        ]
    );
    for row in rows {
        assert_eq!(row["tenant"], tenant.as_str(), "{row}");
        assert!(
            row["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{row}"
        );
        assert_eq!(row["raw"]["session_id"], session.as_str(), "{row}");
    }
    let message = rows.iter().find(|r| r["table"] == "messages").unwrap();
    assert_eq!(message["raw"]["content"], "[{\"type\": \"hologram\"}");
    assert!(message["reason"].as_str().unwrap().contains("content"));
    let event = rows.iter().find(|r| r["table"] == "run_events").unwrap();
    assert_eq!(event["raw"]["payload"], "{\"truncated\": ");
    let (_, theirs) = send(server.b(Method::GET, "/v1/doctor/quarantine")).await?;
    assert_eq!(theirs, json!({"rows": []}));
    server.stop().await?;
    Ok(())
}

/// The limits both old shapes below carry.
const LIMITS: &str = r#"{"memory_bytes":268435456,"pids":64,"cpu_millis":500,"tmp_bytes":67108864,"open_files":1024,"workspace_bytes":null,"workspace_inodes":null}"#;

async fn old_sandbox_records_read_and_a_bad_one_is_quarantined(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let tenant = server.setup.tenants.a.clone();
    let snapshot = paddock_core::ids::SnapshotId::generate();
    // rows as the sandbox API (`StoredSpec`) and the runtime (a whole
    // `SandboxSpec` without its workspace) wrote them, and a damaged one
    let api_spec = format!(
        r#"{{"read_only":true,"network":{{"allowlist":["example.com:443"]}},"limits":{LIMITS},"restored_from":"{snapshot}","image":"alpine:3","console":true}}"#
    );
    let run_spec = format!(
        r#"{{"workspace":null,"read_only":false,"writable_paths":["src"],"network":"full","limits":{LIMITS},"allow_downgrade":[]}}"#
    );
    let bad_spec = r#"{"read_only":false,"network":"none"}"#;
    let ids: Vec<String> = (0..3)
        .map(|_| paddock_core::sandbox::SandboxId::generate().to_string())
        .collect();
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&server.setup.database_url()).await?;
    let now = 1_700_000_000_000_i64;
    for (id, spec) in ids
        .iter()
        .zip([api_spec.as_str(), run_spec.as_str(), bad_spec])
    {
        sqlx::query(
            "INSERT INTO sandboxes (id, tenant_id, workspace_id, backend, node, state, spec, pid, \
             created_at, updated_at, last_active_at, expires_at, run_id) \
             VALUES ($1, $2, NULL, 'native', 'gone-node', 'stopped', $3, NULL, $4, $4, $4, NULL, NULL)",
        )
        .bind(id.as_str())
        .bind(tenant.as_str())
        .bind(spec)
        .bind(now)
        .execute(&pool)
        .await?;
    }
    pool.close().await;
    let [api, run, bad] = [&ids[0], &ids[1], &ids[2]];

    let limits = json!({"memory_bytes": 268435456, "pids": 64, "cpu_millis": 500,
        "tmp_bytes": 67108864, "open_files": 1024, "workspace_bytes": null,
        "workspace_inodes": null});
    let (status, view) = send(server.a(Method::GET, &format!("/v1/sandboxes/{api}"))).await?;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["read_only"], true, "{view}");
    assert_eq!(
        view["network"],
        json!({"allowlist": ["example.com:443"]}),
        "{view}"
    );
    assert_eq!(view["limits"], limits, "{view}");
    assert_eq!(view["restored_from"], snapshot.as_str(), "{view}");
    assert_eq!(view["image"], "alpine:3", "{view}");
    assert_eq!(view["console"], true, "{view}");
    let (status, view) = send(server.a(Method::GET, &format!("/v1/sandboxes/{run}"))).await?;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["read_only"], false, "{view}");
    assert_eq!(view["network"], "full", "{view}");
    assert_eq!(view["limits"], limits, "{view}");
    assert_eq!(view["restored_from"], Value::Null, "{view}");
    assert_eq!(view["image"], Value::Null, "{view}");
    assert_eq!(view["console"], false, "{view}");

    // the bad row: left out of the listing, an error by id (not defaults)
    let (status, list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    assert_eq!(status, StatusCode::OK, "{list}");
    let listed: Vec<&str> = list["sandboxes"]
        .as_array()
        .context("sandboxes")?
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    let mut expected = vec![api.as_str(), run.as_str()];
    expected.sort();
    assert_eq!(listed, expected, "{list}");
    let (status, answer) = send(server.a(Method::GET, &format!("/v1/sandboxes/{bad}"))).await?;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{answer}");
    let (_, doctor) = send(server.a(Method::GET, "/v1/doctor/quarantine")).await?;
    let rows = doctor["rows"].as_array().context("rows")?;
    assert_eq!(rows.len(), 1, "{doctor}");
    assert_eq!(rows[0]["table"], "sandboxes", "{doctor}");
    assert_eq!(rows[0]["key"], format!("id={bad}"), "{doctor}");
    assert_eq!(rows[0]["raw"]["spec"], bad_spec, "{doctor}");
    assert!(
        rows[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("spec")),
        "{doctor}"
    );
    server.stop().await?;
    Ok(())
}
