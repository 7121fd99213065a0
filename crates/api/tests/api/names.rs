//! Names not in UTF-8 over real HTTP, a real database and real jailed
//! sandboxes: a file a command made under such a name is listed, read and
//! deleted through the file API (display form plus base64, named back by
//! percent-encoded bytes), recorded by a run's checkpoint, shown in a diff,
//! and taken back or brought back by a rewind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Db, Setup, TestServer, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(names_not_in_utf8_are_listed_checkpointed_diffed_and_rewound);

const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn complete_run() -> Value {
    json!({"goal": "look", "model": {"scripted": {"turns": [
        {"tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "done", "evidence": ["nothing to show"]}}]}
    ]}}})
}

/// Runs a scripted run on the session to its end; answers the checkpoint it
/// took when it started (of the workspace as it was then).
async fn run_and_checkpoint(server: &TestServer, session: &str) -> Result<String> {
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/runs"))
            .json(&complete_run()),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    let id = run["id"].as_str().context("run id")?.to_owned();
    let deadline = tokio::time::Instant::now() + RUN_TIMEOUT;
    loop {
        let (_, run) = send(server.a(Method::GET, &format!("/v1/runs/{id}"))).await?;
        if run["state"] == "completed" {
            break;
        }
        ensure!(
            !matches!(
                run["state"].as_str(),
                Some("cancelled" | "failed" | "interrupted")
            ),
            "{run}"
        );
        ensure!(tokio::time::Instant::now() < deadline, "run {id}: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, list) =
        send(server.a(Method::GET, &format!("/v1/sessions/{session}/checkpoints"))).await?;
    let start = list["checkpoints"]
        .as_array()
        .context("checkpoints")?
        .iter()
        .find(|c| c["run"] == id.as_str() && c["reason"] == "run_start")
        .with_context(|| format!("no run_start checkpoint of {id}: {list}"))?;
    Ok(start["id"].as_str().context("checkpoint id")?.to_owned())
}

/// Runs `shell` in a new sandbox on the workspace; answers the sandbox.
async fn sandbox_running(server: &TestServer, ws: &str, shell: &str) -> Result<String> {
    let id = server.create_sandbox(json!({"workspace": ws})).await?;
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": shell})),
    )
    .await?;
    ensure!(
        status == StatusCode::OK && out["exit_code"] == 0,
        "{status} {out}"
    );
    Ok(id)
}

/// The listing of the workspace root: (display name, raw bytes).
async fn listing(server: &TestServer, sandbox: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let (status, list) =
        send(server.a(Method::GET, &format!("/v1/sandboxes/{sandbox}/files"))).await?;
    ensure!(status == StatusCode::OK, "{status} {list}");
    list["entries"]
        .as_array()
        .context("entries")?
        .iter()
        .map(|e| {
            let name = e["name"].as_str().context("name")?.to_owned();
            let bytes = match e["name_bytes"].as_str() {
                Some(b64) => STANDARD.decode(b64)?,
                None => name.clone().into_bytes(),
            };
            Ok((name, bytes))
        })
        .collect()
}

/// The file's bytes, named by its percent-encoded bytes.
async fn read(server: &TestServer, sandbox: &str, name: &[u8]) -> Result<(StatusCode, Vec<u8>)> {
    let encoded: String = name.iter().map(|b| format!("%{b:02X}")).collect();
    let response = server
        .a(
            Method::GET,
            &format!("/v1/sandboxes/{sandbox}/files/{encoded}"),
        )
        .send()
        .await?;
    Ok((response.status(), response.bytes().await?.to_vec()))
}

async fn names_not_in_utf8_are_listed_checkpointed_diffed_and_rewound(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "names"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let ws = ws["id"].as_str().context("workspace id")?.to_owned();
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws, "title": "names"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    let session = session["id"].as_str().context("session id")?.to_owned();
    let empty = run_and_checkpoint(&server, &session).await?;

    // a command makes a file whose name is not UTF-8 (`old` and byte 0xff)
    let sandbox = sandbox_running(&server, &ws, r#"printf kept > "$(printf 'old\377')""#).await?;
    let listed = listing(&server, &sandbox).await?;
    assert_eq!(
        listed,
        [("old\\xff".to_owned(), b"old\xff".to_vec())],
        "listed, escaped for display"
    );
    assert_eq!(
        read(&server, &sandbox, b"old\xff").await?,
        (StatusCode::OK, b"kept".to_vec())
    );
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;
    let with_old = run_and_checkpoint(&server, &session).await?;

    // after that checkpoint: one more such name, and the first one changed
    let sandbox = sandbox_running(
        &server,
        &ws,
        r#"printf new > "$(printf 'new\376')"; printf changed > "$(printf 'old\377')""#,
    )
    .await?;
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;
    let (status, diff) = send(server.a(
        Method::GET,
        &format!("/v1/sessions/{session}/diff?from={with_old}"),
    ))
    .await?;
    ensure!(status == StatusCode::OK, "{status} {diff}");
    let changes: Vec<(Value, Value, Value)> = diff["changes"]
        .as_array()
        .context("changes")?
        .iter()
        .map(|c| {
            (
                c["path"].clone(),
                c["path_bytes"].clone(),
                c["change"].clone(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            (
                json!("new\\xfe"),
                json!(STANDARD.encode(b"new\xfe")),
                json!("added")
            ),
            (
                json!("old\\xff"),
                json!(STANDARD.encode(b"old\xff")),
                json!("changed")
            ),
        ],
        "{diff}"
    );

    // the names changed since the last checkpoint are named, escaped, before
    // a rewind would overwrite them
    let (status, refused) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
            .json(&json!({"checkpoint": with_old})),
    )
    .await?;
    ensure!(status == StatusCode::CONFLICT, "{status} {refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("new\\xfe") && message.contains("old\\xff"),
        "{refused}"
    );

    // rewound to the checkpoint that had `old`: the later name is gone, `old` is back
    let (status, rewound) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
            .json(&json!({"checkpoint": with_old, "force": true})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {rewound}");
    let sandbox = server.create_sandbox(json!({"workspace": ws})).await?;
    let names: Vec<Vec<u8>> = listing(&server, &sandbox)
        .await?
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(
        names,
        [b"old\xff".to_vec()],
        "created after the checkpoint: removed"
    );
    assert_eq!(
        read(&server, &sandbox, b"old\xff").await?,
        (StatusCode::OK, b"kept".to_vec())
    );
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;

    // rewound to before it existed: gone too; and the API deletes one by its bytes
    let (status, rewound) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
            .json(&json!({"checkpoint": empty})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {rewound}");
    let sandbox = sandbox_running(&server, &ws, r#"printf x > "$(printf 'x\377')""#).await?;
    let names: Vec<Vec<u8>> = listing(&server, &sandbox)
        .await?
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(names, [b"x\xff".to_vec()], "old\\xff removed by the rewind");
    let response = server
        .a(
            Method::DELETE,
            &format!("/v1/sandboxes/{sandbox}/files/x%FF"),
        )
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(listing(&server, &sandbox).await?.is_empty());
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;
    Ok(())
}
