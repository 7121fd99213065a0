//! Pause and resume through the API (native backend, `filesystem` mode):
//! the routes' answers and state errors, files kept across a pause and a
//! restart of the server, nothing left on the host while paused, and idle
//! sandboxes paused then resumed by their next request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::Result;
use common::{
    Db, Setup, TestServer, cgroups_under, eventually, expect_error, guest_processes, send,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    pause_and_resume_answer_their_states_and_errors,
    a_paused_sandbox_keeps_its_files_across_a_server_restart,
    an_idle_sandbox_is_paused_and_its_next_request_resumes_it,
);

async fn post(server: &TestServer, path: &str, body: Option<Value>) -> Result<(StatusCode, Value)> {
    let request = server.a(Method::POST, path);
    send(match body {
        Some(body) => request.json(&body),
        None => request,
    })
    .await
}

async fn exec(server: &TestServer, id: &str, script: &str) -> Result<Value> {
    let (status, out) = post(
        server,
        &format!("/v1/sandboxes/{id}/exec"),
        Some(json!({"argv": ["sh", "-c", script]})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{out}");
    Ok(out)
}

async fn pause_and_resume_answer_their_states_and_errors(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let missing = "sb_00000000000000000000000000";
    for route in ["pause", "resume"] {
        let (status, body) = post(
            &server,
            &format!("/v1/sandboxes/{missing}/{route}"),
            Some(json!({})).filter(|_| route == "pause"),
        )
        .await?;
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST,
            "{route}: {status} {body}"
        );
    }
    let id = server.create_sandbox(json!({})).await?;
    // Resuming a running sandbox is a state error.
    expect_error(
        server.a(Method::POST, &format!("/v1/sandboxes/{id}/resume")),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    // `full` is refused on native, naming why.
    let (status, refused) = post(
        &server,
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({"mode": "full"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "pause_mode_unsupported");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("native sandbox"),
        "{refused}"
    );
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/pause"))
            .json(&json!({"mode": "memory"})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;

    // No mode: the strongest native can do, which is the files.
    let (status, paused) = post(
        &server,
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["state"], "paused");
    assert_eq!(paused["pause"]["mode"], "filesystem");
    assert_eq!(paused["pause"]["processes_kept"], false);
    assert_eq!(paused["pause"]["reason"], "requested");
    // Pausing a paused one is a state error.
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/pause"))
            .json(&json!({})),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    let (_, list) = send(server.a(Method::GET, "/v1/sandboxes?state=paused")).await?;
    let listed = list["sandboxes"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{list}");
    assert_eq!(listed[0]["pause"]["mode"], "filesystem");
    // Another tenant sees nothing.
    let (status, _) = send(server.b(Method::POST, &format!("/v1/sandboxes/{id}/resume"))).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, resumed) = post(&server, &format!("/v1/sandboxes/{id}/resume"), None).await?;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["state"], "running");
    assert_eq!(resumed["id"], id.as_str());
    assert!(resumed["pause"].is_null(), "{resumed}");

    // Deleting a paused sandbox stops it and drops its kept files.
    post(
        &server,
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({})),
    )
    .await?;
    let (status, deleted) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["state"], "stopped");
    let (_, snapshots) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(
        snapshots["snapshots"].as_array().unwrap().len(),
        0,
        "{snapshots}"
    );
    server.stop().await?;
    Ok(())
}

async fn a_paused_sandbox_keeps_its_files_across_a_server_restart(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    exec(&server, &id, "echo kept > /workspace/note.txt").await?;
    let (status, paused) = post(
        &server,
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{paused}");
    // Nothing of it is left on the host: no process, no cgroup.
    let parent = server.setup.cgroup_parent();
    assert!(
        eventually(Duration::from_secs(10), || guest_processes(&parent)
            .is_empty())
        .await
    );
    assert!(
        cgroups_under(&parent).is_empty(),
        "{:?}",
        cgroups_under(&parent)
    );

    // A crash of the server: the paused sandbox is neither lost nor reaped.
    let setup = server.crash().await;
    let server = TestServer::start(setup).await?;
    assert!(server.reconciled.lost.is_empty(), "{:?}", server.reconciled);
    let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(got["state"], "paused", "{got}");
    let (status, resumed) = post(&server, &format!("/v1/sandboxes/{id}/resume"), None).await?;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    let out = exec(&server, &id, "cat /workspace/note.txt").await?;
    assert_eq!(out["stdout"], "kept\n", "{out}");
    server.stop().await?;
    Ok(())
}

async fn an_idle_sandbox_is_paused_and_its_next_request_resumes_it(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.idle_timeout = Duration::from_millis(1500);
    setup.on_idle = paddock_api::service::OnIdle::Pause;
    let server = TestServer::start(setup).await?;
    let id = server.create_sandbox(json!({})).await?;
    // its own choice over the server's
    let stopping = server.create_sandbox(json!({"on_idle": "stop"})).await?;
    exec(&server, &id, "echo before > /workspace/f").await?;
    let mut state = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
        state = got;
        if state["state"] == "paused" {
            break;
        }
    }
    assert_eq!(state["state"], "paused", "{state}");
    assert_eq!(state["pause"]["reason"], "idle");
    assert_eq!(state["on_idle"], "pause", "the server's: {state}");
    // the same expiry pass may retire it after pausing the other
    let mut stopped = Value::Null;
    for _ in 0..100 {
        let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{stopping}"))).await?;
        stopped = got;
        if stopped["state"] == "stopped" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(stopped["state"], "stopped", "{stopped}");
    assert_eq!(stopped["on_idle"], "stop", "{stopped}");
    // The next request resumes it, files and all.
    let out = exec(&server, &id, "cat /workspace/f").await?;
    assert_eq!(out["stdout"], "before\n", "{out}");
    let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(got["state"], "running", "{got}");
    server.stop().await?;
    Ok(())
}
