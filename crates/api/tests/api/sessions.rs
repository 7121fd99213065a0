//! Agent sessions and runs over real HTTP, a real database and real jailed
//! sandboxes: session CRUD, runs driven by inline scripted models, fork,
//! cancel, tenant isolation, model choices refused, and the SSE event stream
//! resumed after a disconnect with every event exactly once, in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::events::EventReader;
use common::{Db, Setup, TestServer, expect_error, guest_processes, send, wait_run_ended};
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::Store;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    sessions_are_created_listed_renamed_and_archived,
    a_scripted_run_fixes_code_and_a_fork_restores_its_end,
    a_cancelled_run_ends_and_leaves_no_sandbox,
    tenants_never_see_each_others_sessions,
    model_choices_that_reach_the_servers_files_or_keys_are_refused,
    a_reconnecting_client_gets_every_event_exactly_once_in_order,
    a_graceful_shutdown_cancels_runs_in_progress,
    a_runs_children_and_its_own_events_are_readable,
    a_workspace_has_one_writer_among_sandboxes_and_runs,
    a_console_sandbox_lives_with_its_page_and_yields_to_a_run,
    a_runs_snapshot_limits_are_asked_bounded_and_reported,
    subagent_scripts_drive_each_child_and_usage_adds_up,
    a_person_applies_one_childs_changes_and_rejects_anothers,
    an_interrupted_run_is_resumed_as_a_new_run_once,
    a_rewind_over_an_edit_is_refused_then_kept_and_undone,
    a_run_names_its_driver_and_one_not_enabled_is_refused,
);

/// Longest a scripted run may take here.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

fn demo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

/// The demo trajectory: plan, write buggy code, test (fails), fix, test (passes), complete.
fn demo_script() -> Result<Value> {
    let text = std::fs::read_to_string(demo_dir().join("trajectory.json"))?;
    Ok(serde_json::from_str(&text)?)
}

/// A script of `turns` as the API takes it inline.
pub(crate) fn script(turns: Value) -> Value {
    json!({"scripted": {"turns": turns}})
}

pub(crate) fn complete_turn() -> Value {
    json!({"tool_calls": [{"name": "complete_task", "arguments": {
        "verdict": "met", "summary": "done", "evidence": ["nothing to show"]}}]})
}

/// A workspace of tenant a holding the demo's test.sh; answers its id.
async fn demo_workspace(server: &TestServer) -> Result<String> {
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "demo"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let id = ws["id"].as_str().context("workspace id")?.to_owned();
    let dir = workspace_dir(server, &id);
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(demo_dir().join("test.sh"), dir.join("test.sh"))?;
    Ok(id)
}

fn workspace_dir(server: &TestServer, id: &str) -> PathBuf {
    server.setup.data_dir.join("workspaces").join(id)
}

pub(crate) async fn create_session(
    server: &TestServer,
    workspace: &str,
    title: &str,
) -> Result<Value> {
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": workspace, "title": title})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    Ok(session)
}

pub(crate) async fn start_run(server: &TestServer, session: &str, body: Value) -> Result<Value> {
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/runs"))
            .json(&body),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    Ok(run)
}

/// Polls the run until it ended.
pub(crate) async fn wait_run(server: &TestServer, id: &str) -> Result<Value> {
    wait_run_ended(server, id, RUN_TIMEOUT).await
}

async fn sessions_are_created_listed_renamed_and_archived(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let other_ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "  first  ").await?;
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(session["title"], "first");
    assert_eq!(session["status"], "active");
    assert_eq!(session["workspace"], json!(ws));
    assert_eq!(session["forked_from"], Value::Null);
    let second = create_session(&server, &other_ws, "second").await?;

    let (_, got) = send(server.a(Method::GET, &format!("/v1/sessions/{id}"))).await?;
    assert_eq!(got, session);
    let (_, all) = send(server.a(Method::GET, "/v1/sessions")).await?;
    assert_eq!(all["sessions"], json!([session, second]));
    let (_, by_ws) = send(server.a(Method::GET, &format!("/v1/sessions?workspace={ws}"))).await?;
    assert_eq!(by_ws["sessions"], json!([session]));
    let (_, paged) = send(server.a(Method::GET, "/v1/sessions?limit=1")).await?;
    assert_eq!(paged["sessions"], json!([session]));
    assert_eq!(paged["next_after"], json!(id));
    let (_, rest) = send(server.a(Method::GET, &format!("/v1/sessions?after={id}"))).await?;
    assert_eq!(rest["sessions"], json!([second]));

    let (status, renamed) = send(
        server
            .a(Method::PATCH, &format!("/v1/sessions/{id}"))
            .json(&json!({"title": "renamed"})),
    )
    .await?;
    assert_eq!(
        (status, &renamed["title"]),
        (StatusCode::OK, &json!("renamed"))
    );
    let (status, archived) = send(
        server
            .a(Method::PATCH, &format!("/v1/sessions/{id}"))
            .json(&json!({"archived": true})),
    )
    .await?;
    assert_eq!(
        (status, &archived["status"]),
        (StatusCode::OK, &json!("archived"))
    );
    expect_error(
        server
            .a(Method::PATCH, &format!("/v1/sessions/{id}"))
            .json(&json!({"archived": false})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    // An archived session takes no new run.
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{id}/runs"))
            .json(&json!({"goal": "g", "model": script(json!([complete_turn()]))})),
        StatusCode::CONFLICT,
        "session_archived",
    )
    .await?;
    // DELETE archives (and is idempotent).
    let second_id = second["id"].as_str().unwrap();
    for _ in 0..2 {
        let (status, deleted) =
            send(server.a(Method::DELETE, &format!("/v1/sessions/{second_id}"))).await?;
        assert_eq!(
            (status, &deleted["status"]),
            (StatusCode::OK, &json!("archived"))
        );
    }
    let (_, still) = send(server.a(Method::GET, &format!("/v1/sessions/{second_id}"))).await?;
    assert_eq!(still["title"], "second");

    // Mistakes.
    expect_error(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": format!("ws_{}", "0".repeat(32))})),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws, "colour": "red"})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws, "title": "a\nb"})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/sessions/sb-1"),
        StatusCode::BAD_REQUEST,
        "invalid_id",
    )
    .await?;
    expect_error(
        server.a(Method::GET, &format!("/v1/sessions/ses_{}", "0".repeat(32))),
        StatusCode::NOT_FOUND,
        "session_not_found",
    )
    .await?;
    expect_error(
        server.a(Method::GET, &format!("/v1/runs/run_{}", "0".repeat(32))),
        StatusCode::NOT_FOUND,
        "run_not_found",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

async fn a_scripted_run_fixes_code_and_a_fork_restores_its_end(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "demo").await?;
    let sid = session["id"].as_str().unwrap().to_owned();

    let run = start_run(
        &server,
        &sid,
        json!({
            "goal": "Write fizzbuzz.sh so that sh test.sh passes",
            "success_criteria": ["sh test.sh passes"],
            "mode": "build",
            "budgets": {"max_turns": 10},
            "model": {"scripted": demo_script()?},
        }),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    assert_eq!(run["session"], json!(sid));
    assert_eq!(run["goal"], "Write fizzbuzz.sh so that sh test.sh passes");
    assert_eq!(run["budgets"]["max_turns"], 10);
    // Missing budget fields keep their defaults.
    assert_eq!(run["budgets"]["max_tool_calls"], 200);

    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(ended["end_reason"], "completed");
    assert_eq!(ended["review"]["verdict"], "met", "{ended}");
    assert_eq!(ended["review"]["criteria"][0]["verdict"], "met");
    assert_eq!(ended["usage"]["turns"], 6);
    assert!(ended["end_snapshot"].is_string(), "{ended}");
    // The fix is really in the workspace, and the tests really pass there.
    let fixed = std::fs::read_to_string(workspace_dir(&server, &ws).join("fizzbuzz.sh"))?;
    assert!(fixed.contains("-le \"$n\""), "{fixed}");
    // The failing and the passing test runs both happened in the sandbox.
    let invocations = server
        .store
        .list_tool_invocations(&server.setup.tenants.a, &RunId::parse(&run_id)?)
        .await?;
    let outputs: Vec<String> = invocations
        .iter()
        .filter(|i| i.tool == "run_command")
        .map(|i| i.output.clone().unwrap_or_default())
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(outputs[0].contains("3 of 3 tests failed"), "{}", outputs[0]);
    assert!(outputs[1].contains("all 3 tests passed"), "{}", outputs[1]);

    let (_, runs) = send(server.a(Method::GET, &format!("/v1/sessions/{sid}/runs"))).await?;
    assert_eq!(runs["runs"], json!([ended]));

    // A second run in the same session changes the workspace again ...
    let second = start_run(
        &server,
        &sid,
        json!({"goal": "break it", "model": script(json!([
            {"tool_calls": [{"name": "write_file",
                             "arguments": {"path": "fizzbuzz.sh", "content": "exit 1\n"}}]},
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "true"}}]},
            complete_turn(),
        ]))}),
    )
    .await?;
    let second = wait_run(&server, second["id"].as_str().unwrap()).await?;
    assert_eq!(second["state"], "completed", "{second}");

    // ... and a fork at the first run's end gets the fixed file back, in a
    // workspace of its own; a fork from now gets the broken one.
    let (status, fork) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/fork"))
            .json(&json!({"at_run": run_id, "title": "from the fix"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{fork}");
    assert_eq!(fork["forked_from"], json!(sid));
    assert_eq!(fork["forked_at_run"], json!(run_id));
    assert_eq!(fork["title"], "from the fix");
    let fork_ws = fork["workspace"].as_str().unwrap();
    assert_ne!(fork_ws, ws);
    let restored = std::fs::read_to_string(workspace_dir(&server, fork_ws).join("fizzbuzz.sh"))?;
    assert_eq!(restored, fixed);

    let (status, now) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/fork"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{now}");
    assert_eq!(now["title"], "demo (fork)");
    let now_ws = now["workspace"].as_str().unwrap();
    let current = std::fs::read_to_string(workspace_dir(&server, now_ws).join("fizzbuzz.sh"))?;
    assert_eq!(current, "exit 1\n");

    // The fork continues: its next run sees the restored file.
    let fork_id = fork["id"].as_str().unwrap();
    let check = start_run(
        &server,
        fork_id,
        json!({"goal": "check", "model": script(json!([
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "sh test.sh"}}]},
            complete_turn(),
        ]))}),
    )
    .await?;
    let check_id = check["id"].as_str().unwrap();
    wait_run(&server, check_id).await?;
    let invocations = server
        .store
        .list_tool_invocations(&server.setup.tenants.a, &RunId::parse(check_id)?)
        .await?;
    let output = invocations[0].output.clone().unwrap_or_default();
    assert!(output.contains("all 3 tests passed"), "{output}");

    // A run of another session is not a fork point of this one.
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/fork"))
            .json(&json!({"at_run": check_id})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

/// The one sandbox `/v1/sandboxes` lists as the run's.
async fn run_sandbox(server: &TestServer, run_id: &str) -> Result<Value> {
    let (status, list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    ensure!(status == StatusCode::OK, "{status} {list}");
    let owned: Vec<&Value> = list["sandboxes"]
        .as_array()
        .context("sandboxes")?
        .iter()
        .filter(|s| s["run"] == run_id)
        .collect();
    ensure!(owned.len() == 1, "{list}");
    Ok(owned[0].clone())
}

/// A run whose second turn runs a command that takes a long time.
fn slow_script(seconds: u32) -> Value {
    script(json!([
        {"tool_calls": [{"name": "report_progress", "arguments": {"message": "starting"}}]},
        {"tool_calls": [{"name": "run_command",
                         "arguments": {"command": format!("sleep {seconds}"), "timeout_secs": 600}}]},
        complete_turn(),
    ]))
}

async fn a_cancelled_run_ends_and_leaves_no_sandbox(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "slow").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "wait", "model": slow_script(300)}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();

    // Wait until the command runs in the sandbox.
    let mut events =
        EventReader::open(server.a(Method::GET, &format!("/v1/sessions/{sid}/events"))).await?;
    loop {
        let frame = events.next().await?.context("stream ended")?;
        if frame.event == "tool.call" && frame.data["payload"]["tool"] == "run_command" {
            break;
        }
    }
    drop(events);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !guest_processes(&server.setup.cgroup_parent()).is_empty(),
        "the run's sandbox should be running"
    );
    // The run's sandbox is listed as running, owned by the run, with no
    // idle expiry (it lives as long as the run).
    let sandbox = run_sandbox(&server, &run_id).await?;
    let sandbox_id = sandbox["id"].as_str().unwrap().to_owned();
    assert_eq!(sandbox["state"], "running", "{sandbox}");
    assert_eq!(sandbox["workspace"], ws.as_str(), "{sandbox}");
    assert_eq!(sandbox["idle_expires_at"], Value::Null, "{sandbox}");
    // Deleting it or driving it through the sandbox routes is refused,
    // naming the run; the run goes on.
    for request in [
        server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox_id}")),
        server
            .a(Method::POST, &format!("/v1/sandboxes/{sandbox_id}/exec"))
            .json(&json!({"argv": ["true"]})),
    ] {
        let refused = expect_error(request, StatusCode::CONFLICT, "sandbox_owned_by_run").await?;
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&run_id) && message.contains("cancel the run"),
            "{message}"
        );
    }
    assert!(!guest_processes(&server.setup.cgroup_parent()).is_empty());
    let (_, still) = send(server.a(Method::GET, &format!("/v1/runs/{run_id}"))).await?;
    assert_eq!(still["finished_at"], Value::Null, "{still}");
    // Archiving a session with a run in progress is refused.
    expect_error(
        server.a(Method::DELETE, &format!("/v1/sessions/{sid}")),
        StatusCode::CONFLICT,
        "session_busy",
    )
    .await?;
    // So is a second run in it.
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/runs"))
            .json(&json!({"goal": "g", "model": script(json!([complete_turn()]))})),
        StatusCode::CONFLICT,
        "session_busy",
    )
    .await?;

    let started = tokio::time::Instant::now();
    let (status, cancelled) =
        send(server.a(Method::POST, &format!("/v1/runs/{run_id}/cancel"))).await?;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["end_reason"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        common::eventually(Duration::from_secs(5), || guest_processes(
            &server.setup.cgroup_parent()
        )
        .is_empty())
        .await,
        "the sandbox outlived its cancelled run"
    );
    // Its sandbox is recorded stopped, still naming the run; deleting it
    // now just answers that record.
    let ended = run_sandbox(&server, &run_id).await?;
    assert_eq!(ended["id"], sandbox_id.as_str());
    assert_eq!(ended["state"], "stopped", "{ended}");
    let (status, deleted) =
        send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox_id}"))).await?;
    assert_eq!((status, &deleted), (StatusCode::OK, &ended));
    // Cancelling again answers the run as it ended.
    let (status, again) =
        send(server.a(Method::POST, &format!("/v1/runs/{run_id}/cancel"))).await?;
    assert_eq!((status, &again), (StatusCode::OK, &cancelled));
    // The session is free again.
    let (status, _) = send(server.a(Method::DELETE, &format!("/v1/sessions/{sid}"))).await?;
    assert_eq!(status, StatusCode::OK);
    server.stop().await?;
    Ok(())
}

async fn tenants_never_see_each_others_sessions(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "a's").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "g", "model": script(json!([complete_turn()]))}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    wait_run(&server, &run_id).await?;

    let session_routes = [
        (Method::GET, format!("/v1/sessions/{sid}"), None),
        (
            Method::PATCH,
            format!("/v1/sessions/{sid}"),
            Some(json!({"title": "mine"})),
        ),
        (Method::DELETE, format!("/v1/sessions/{sid}"), None),
        (
            Method::POST,
            format!("/v1/sessions/{sid}/fork"),
            Some(json!({})),
        ),
        (Method::GET, format!("/v1/sessions/{sid}/runs"), None),
        (
            Method::POST,
            format!("/v1/sessions/{sid}/runs"),
            Some(json!({"goal": "g", "model": script(json!([complete_turn()]))})),
        ),
        (Method::GET, format!("/v1/sessions/{sid}/events"), None),
    ];
    for (method, path, body) in session_routes {
        let mut request = server.b(method.clone(), &path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let (status, body) = send(request).await?;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_eq!(
            body["error"]["code"], "session_not_found",
            "{method} {path}"
        );
    }
    for (method, path) in [
        (Method::GET, format!("/v1/runs/{run_id}")),
        (Method::POST, format!("/v1/runs/{run_id}/cancel")),
    ] {
        expect_error(
            server.b(method, &path),
            StatusCode::NOT_FOUND,
            "run_not_found",
        )
        .await?;
    }
    // b cannot start a session in a's workspace, and lists none of a's.
    expect_error(
        server
            .b(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": ws})),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    let (_, listed) = send(server.b(Method::GET, "/v1/sessions")).await?;
    assert_eq!(listed["sessions"], json!([]));
    let (_, listed) = send(server.b(Method::GET, &format!("/v1/sessions?workspace={ws}"))).await?;
    assert_eq!(listed["sessions"], json!([]));
    // Nothing b tried changed a's session (its memory is what a's own run
    // left when it ended).
    let (_, mut after) = send(server.a(Method::GET, &format!("/v1/sessions/{sid}"))).await?;
    let mut before = session.clone();
    for view in [&mut after, &mut before] {
        view.as_object_mut()
            .context("a session object")?
            .remove("memory");
    }
    assert_eq!(after, before);
    let (_, runs) = send(server.a(Method::GET, &format!("/v1/sessions/{sid}/runs"))).await?;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1));
    server.stop().await?;
    Ok(())
}

async fn model_choices_that_reach_the_servers_files_or_keys_are_refused(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "models").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let runs = format!("/v1/sessions/{sid}/runs");
    let refused = [
        (json!({"spec": "scripted:/etc/passwd"}), "only inline"),
        (
            json!({"spec": "scripted:examples/demo/trajectory.json"}),
            "only inline",
        ),
        (
            json!({"spec": "openai:gpt-4o", "base_url": "http://169.254.169.254/v1"}),
            "not one this server allows",
        ),
        (json!({"spec": "gemini:pro"}), "unknown provider"),
        (
            json!({"scripted": {"turns": [{"tool_calls": [{"name": ""}]}]}}),
            "not a valid script",
        ),
        (
            json!({"scripted": {"turns": []}, "spec": "openai:x"}),
            "not both",
        ),
        (json!({}), "give `spec`"),
    ];
    for (model, message) in refused {
        let body = expect_error(
            server
                .a(Method::POST, &runs)
                .json(&json!({"goal": "g", "model": model})),
            StatusCode::BAD_REQUEST,
            "model_not_allowed",
        )
        .await?;
        let text = body["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{model}: {text}");
    }
    // Naming the key variable is not even part of the request's shape.
    expect_error(
        server
            .a(Method::POST, &runs)
            .json(&json!({"goal": "g", "model": {"spec": "openai:gpt-4o", "api_key_env": "HOME"}})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    if std::env::var("ANTHROPIC_API_KEY").is_err() {
        let body = expect_error(
            server
                .a(Method::POST, &runs)
                .json(&json!({"goal": "g", "model": {"spec": "anthropic:claude-x"}})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "model_unavailable",
        )
        .await?;
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("ANTHROPIC_API_KEY")
        );
    }
    for (body, field) in [
        (json!({"goal": " ", "model": script(json!([]))}), "goal"),
        (
            json!({"goal": "g", "budgets": {"max_turns": 0}, "model": script(json!([]))}),
            "budgets",
        ),
        (
            json!({"goal": "g", "success_criteria": [""], "model": script(json!([]))}),
            "success_criteria",
        ),
    ] {
        let error = expect_error(
            server.a(Method::POST, &runs).json(&body),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(field)
        );
    }
    // None of it started a run.
    let (_, listed) = send(server.a(Method::GET, &runs)).await?;
    assert_eq!(listed["runs"], json!([]));

    // An inline script that runs out of turns fails the run, naming no server path.
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "g", "model": script(json!([
            {"tool_calls": [{"name": "report_progress", "arguments": {"message": "one"}}]}
        ]))}),
    )
    .await?;
    let ended = wait_run(&server, run["id"].as_str().unwrap()).await?;
    assert_eq!(ended["state"], "failed", "{ended}");
    assert_eq!(ended["end_reason"], "model_error");
    let error = ended["error"].as_str().unwrap_or_default();
    assert!(error.contains("inline"), "{error}");
    assert!(
        !error.contains(&*server.setup.data_dir.to_string_lossy()),
        "{error}"
    );
    server.stop().await?;
    Ok(())
}

async fn a_reconnecting_client_gets_every_event_exactly_once_in_order(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "sse").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    // Many events before and after a pause, so the disconnect falls mid-run.
    let mut turns: Vec<Value> = (0..8)
        .map(|n| {
            json!({"text": format!("step {n}"), "tool_calls": [
            {"name": "report_progress", "arguments": {"message": format!("before {n}")}}]})
        })
        .collect();
    turns.push(
        json!({"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 2"}}]}),
    );
    turns.extend((0..8).map(|n| {
        json!({"tool_calls": [
        {"name": "report_progress", "arguments": {"message": format!("after {n}")}}]})
    }));
    turns.push(complete_turn());
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "talk", "model": script(json!(turns))}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/sessions/{sid}/events");

    // First connection: read until the command starts, then hang up.
    let mut seen = Vec::new();
    let mut first = EventReader::open(server.a(Method::GET, &path)).await?;
    loop {
        let frame = first.next().await?.context("stream ended early")?;
        seen.push(frame.clone());
        if frame.event == "tool.call" && frame.data["payload"]["tool"] == "run_command" {
            break;
        }
    }
    drop(first);
    let (_, now) = send(server.a(Method::GET, &format!("/v1/runs/{run_id}"))).await?;
    assert!(
        !matches!(now["state"].as_str(), Some("completed" | "failed")),
        "the run ended before the disconnect: {now}"
    );
    let last = seen.last().and_then(|f| f.id).context("no id")?;

    // Reconnect as EventSource does: the same URL, with Last-Event-ID (which
    // wins over a stale ?after).
    let mut second = EventReader::open(
        server
            .a(Method::GET, &format!("{path}?after=0&until=run_finished"))
            .header("last-event-id", last.to_string()),
    )
    .await?;
    while let Some(frame) = second.next().await? {
        seen.push(frame);
    }
    // live-only frames (model.delta) carry no id and are not in the store
    let (seen, transient): (Vec<_>, Vec<_>) = seen.into_iter().partition(|f| f.id.is_some());
    assert!(
        transient.iter().all(|f| f.data["seq"] == 0),
        "{transient:?}"
    );

    let stored = server
        .store
        .list_events(&server.setup.tenants.a, &SessionId::parse(&sid)?, 0, 10_000)
        .await?;
    let stored_seqs: Vec<u64> = stored.iter().map(|e| e.seq).collect();
    let seen_seqs: Vec<u64> = seen.iter().filter_map(|f| f.id).collect();
    assert_eq!(seen_seqs, stored_seqs);
    assert_eq!(stored_seqs, (1..=stored.len() as u64).collect::<Vec<_>>());
    assert_eq!(seen.last().map(|f| f.event.as_str()), Some("run.finished"));
    // Every frame is the stored event: kind, run and payload.
    for (frame, event) in seen.iter().zip(&stored) {
        assert_eq!(frame.event, event.kind);
        assert_eq!(frame.data["seq"], event.seq);
        assert_eq!(frame.data["run"], json!(event.run));
        let payload: Value = serde_json::from_str(&event.payload)?;
        assert_eq!(frame.data["payload"], payload);
    }
    let progress: Vec<&str> = seen
        .iter()
        .filter(|f| f.event == "progress")
        .filter_map(|f| f.data["payload"]["message"].as_str())
        .collect();
    let expected: Vec<String> = (0..8)
        .map(|n| format!("before {n}"))
        .chain((0..8).map(|n| format!("after {n}")))
        .collect();
    assert_eq!(progress, expected);

    // ?after=N resumes the same way; until=caught_up ends after what is stored.
    let middle = stored[stored.len() / 2].seq;
    let mut reader = EventReader::open(server.a(
        Method::GET,
        &format!("{path}?after={middle}&until=caught_up"),
    ))
    .await?;
    let mut tail = Vec::new();
    while let Some(frame) = reader.next().await? {
        tail.extend(frame.id);
    }
    assert_eq!(tail, stored_seqs[middle as usize..].to_vec());
    expect_error(
        server
            .a(Method::GET, &path)
            .header("last-event-id", "yesterday"),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

async fn a_graceful_shutdown_cancels_runs_in_progress(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "shutdown").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "wait", "model": slow_script(300)}),
    )
    .await?;
    let run_id = RunId::parse(run["id"].as_str().unwrap())?;
    // An open event stream must not hold the shutdown up.
    let mut events =
        EventReader::open(server.a(Method::GET, &format!("/v1/sessions/{sid}/events"))).await?;
    loop {
        let frame = events.next().await?.context("stream ended")?;
        if frame.event == "tool.call" && frame.data["payload"]["tool"] == "run_command" {
            break;
        }
    }
    let tenant: TenantId = server.setup.tenants.a.clone();
    let parent = server.setup.cgroup_parent();
    let started = tokio::time::Instant::now();
    let setup = server.stop().await?;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // The stream ended with the server.
    assert!(matches!(events.next().await, Ok(None) | Err(_)));
    assert!(
        guest_processes(&parent).is_empty(),
        "a sandbox outlived the server"
    );
    let store = paddock_store::SqlStore::open(&setup.database_url()).await?;
    let run = store.get_run(&tenant, &run_id).await?;
    assert_eq!(run.state.as_str(), "cancelled", "{run:?}");
    store.close().await;
    Ok(())
}

/// A root run spawns one explore subagent: `GET /v1/runs/{id}/children`
/// lists it, `GET /v1/runs/{id}/events` streams its events only and ends
/// after its `run.finished`, and the parent's session carries its status.
/// (Parent and child share the inline script's turns, in whichever order
/// they ask; the checks hold either way.)
async fn a_runs_children_and_its_own_events_are_readable(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "fan out").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "look around", "model": script(json!([
            {"tool_calls": [{"name": "spawn_subagent", "arguments": {
                "task_id": "look", "profile": "explore", "prompt": "list the files"}}]},
            {"tool_calls": [{"name": "wait_subagents", "arguments": {"timeout": 60}}]},
            complete_turn(),
            complete_turn(),
        ]))}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");

    let (status, children) =
        send(server.a(Method::GET, &format!("/v1/runs/{run_id}/children"))).await?;
    assert_eq!(status, StatusCode::OK, "{children}");
    let children = children["runs"].as_array().context("runs")?.clone();
    assert_eq!(children.len(), 1, "{children:?}");
    let child = &children[0];
    assert_eq!(child["parent_run"], json!(run_id));
    assert_eq!(child["profile"], "explore");
    assert_eq!(child["task_key"], "look");
    assert_eq!(child["mode"], "plan");
    assert_ne!(child["session"], json!(sid));
    let child_id = child["id"].as_str().unwrap().to_owned();
    wait_run(&server, &child_id).await?;

    let mut events =
        EventReader::open(server.a(Method::GET, &format!("/v1/runs/{child_id}/events"))).await?;
    let mut kinds = Vec::new();
    while let Some(frame) = events.next().await? {
        assert_eq!(frame.data["run"], json!(child_id), "{frame:?}");
        kinds.push(frame.event);
    }
    assert_eq!(kinds.first().map(String::as_str), Some("run.started"));
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run.finished"),
        "{kinds:?}"
    );
    // resuming after the first event skips it
    let mut resumed = EventReader::open(
        server
            .a(Method::GET, &format!("/v1/runs/{child_id}/events"))
            .header("last-event-id", "1"),
    )
    .await?;
    let first = resumed.next().await?.context("an event after 1")?;
    assert_eq!(first.id, Some(2));

    let stored = server
        .store
        .list_events(&server.setup.tenants.a, &SessionId::parse(&sid)?, 0, 10_000)
        .await?;
    let statuses: Vec<Value> = stored
        .iter()
        .filter(|e| e.kind == "subagent.status")
        .map(|e| serde_json::from_str(&e.payload))
        .collect::<Result<_, _>>()?;
    assert!(
        statuses
            .iter()
            .any(|s| s["status"] == "finished" && s["run_id"] == json!(child_id)),
        "{statuses:?}"
    );
    assert!(
        stored
            .iter()
            .all(|e| e.run.as_ref().map(RunId::as_str) == Some(run_id.as_str()))
    );

    let (status, _) = send(server.a(Method::GET, "/v1/runs/run_nope/children")).await?;
    assert!(status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST);
    Ok(())
}

fn subagents_example(name: &str) -> Result<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/subagents")
        .join(name);
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// turns, input tokens, output tokens, tool calls
type Counts = (u64, u64, u64, u64);

fn usage(turns: u64, input: u64, output: u64, calls: u64) -> Counts {
    (turns, input, output, calls)
}

fn usage_of(value: &Value) -> Counts {
    let n = |field: &str| value[field].as_u64().unwrap_or(u64::MAX);
    (
        n("turns"),
        n("input_tokens"),
        n("output_tokens"),
        n("tool_calls"),
    )
}

/// examples/subagents over the API: the parent's script spawns three
/// children, each driven by its own inline script (two keyed by profile,
/// one by task id): an explore child lists and reads, a review child reads
/// and searches, a build child writes bin/hello.sh and runs the test; the
/// parent applies the change and passes the test. The run's `usage` is its
/// own, `total_usage` adds the children's, to the token.
async fn subagent_scripts_drive_each_child_and_usage_adds_up(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let dir = workspace_dir(&server, &ws);
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/subagents/workspace/test.sh"),
        dir.join("test.sh"),
    )?;
    let session = create_session(&server, &ws, "three children").await?;
    let sid = session["id"].as_str().unwrap().to_owned();

    // Keys are checked before anything runs, and each choice is under the
    // same policy as `model`.
    let goal = "Make sh test.sh pass, with subagents";
    for (models, wanted) in [
        (
            json!({" explore": script(json!([complete_turn()]))}),
            "subagent_models",
        ),
        (
            json!({"build": {"spec": "scripted:examples/subagents/build.json"}}),
            "subagent_models.build",
        ),
    ] {
        let (status, body) = send(server.a(Method::POST, &format!("/v1/sessions/{sid}/runs")).json(
            &json!({"goal": goal, "model": script(json!([complete_turn()])), "subagent_models": models}),
        ))
        .await?;
        assert!(status.is_client_error(), "{status} {body}");
        assert!(body.to_string().contains(wanted), "{body}");
    }

    let run = start_run(
        &server,
        &sid,
        json!({
            "goal": goal,
            "model": {"scripted": subagents_example("parent.json")?},
            "subagent_models": {
                "explore": {"scripted": subagents_example("explore.json")?},
                "review": {"scripted": subagents_example("review.json")?},
                "hello": {"scripted": subagents_example("build.json")?},
            },
        }),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(ended["review"]["verdict"], "met", "{ended}");
    assert_eq!(
        std::fs::read_to_string(dir.join("bin/hello.sh"))?,
        "#!/bin/sh\necho \"hello, $1\"\n"
    );
    // own: 5 turns, 7 calls; with the children's 2 + 3 + 3 turns and 9 calls
    assert_eq!(usage_of(&ended["usage"]), usage(5, 4300, 145, 7), "{ended}");
    assert_eq!(
        usage_of(&ended["total_usage"]),
        usage(13, 5480, 285, 16),
        "{ended}"
    );

    let (status, children) =
        send(server.a(Method::GET, &format!("/v1/runs/{run_id}/children"))).await?;
    assert_eq!(status, StatusCode::OK, "{children}");
    let mut seen: Vec<(String, String, Counts)> = children["runs"]
        .as_array()
        .context("runs")?
        .iter()
        .map(|child| {
            assert_eq!(child["state"], "completed", "{child}");
            assert_eq!(child["review"]["verdict"], "met", "{child}");
            assert_eq!(child["usage"], child["total_usage"], "{child}");
            (
                child["task_key"].as_str().unwrap_or_default().to_owned(),
                child["profile"].as_str().unwrap_or_default().to_owned(),
                usage_of(&child["usage"]),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("audit".into(), "review".into(), usage(3, 450, 40, 3)),
            ("hello".into(), "build".into(), usage(3, 450, 60, 3)),
            ("survey".into(), "explore".into(), usage(2, 280, 40, 3)),
        ]
    );

    // The tools each child's own script called, from its session's events.
    for child in children["runs"].as_array().context("runs")? {
        let session = SessionId::parse(child["session"].as_str().unwrap())?;
        let events = server
            .store
            .list_events(&server.setup.tenants.a, &session, 0, 10_000)
            .await?;
        let mut tools = Vec::new();
        for event in events.iter().filter(|e| e.kind == "tool.result") {
            let payload: Value = serde_json::from_str(&event.payload)?;
            assert_eq!(payload["status"], "succeeded", "{payload}");
            tools.push(payload["tool"].as_str().unwrap_or_default().to_owned());
        }
        let expected: &[&str] = match child["task_key"].as_str() {
            Some("survey") => &["workspace_tree", "read_file", "complete_task"],
            Some("audit") => &["read_file", "search", "complete_task"],
            _ => &["write_file", "run_command", "complete_task"],
        };
        assert_eq!(tools, expected, "{child}");
    }
    Ok(())
}

/// One writer per workspace: a read-write sandbox holds the workspace, so a
/// second read-write sandbox and a build run are refused naming it, while a
/// read-only sandbox and a plan-mode run go on; once it is gone, a build
/// run holds the workspace and refuses a read-write sandbox in turn.
async fn a_workspace_has_one_writer_among_sandboxes_and_runs(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let writer = server.create_sandbox(json!({"workspace": ws})).await?;

    let refused = expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": ws})),
        StatusCode::CONFLICT,
        "workspace_busy",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains(&writer), "{message}");
    assert!(message.contains(&ws), "{message}");
    // who holds it, since when, and how to free it
    assert!(
        message.contains("sandbox") && message.contains("since"),
        "{message}"
    );
    assert!(
        message.contains(&format!("DELETE /v1/sandboxes/{writer}")),
        "{message}"
    );
    let reader = server
        .create_sandbox(json!({"workspace": ws, "read_only": true}))
        .await?;

    let session = create_session(&server, &ws, "writer").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let refused = expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/runs"))
            .json(&json!({"goal": "g", "model": script(json!([complete_turn()]))})),
        StatusCode::CONFLICT,
        "workspace_busy",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains(&writer), "{message}");
    assert!(
        message.contains(&format!("DELETE /v1/sandboxes/{writer}")),
        "an ordinary sandbox is never taken over, and the refusal says how to free it: {message}"
    );
    // a refused run leaves no trace and the session stays usable
    let (_, runs) = send(server.a(Method::GET, &format!("/v1/sessions/{sid}/runs"))).await?;
    assert_eq!(runs["runs"], json!([]), "{runs}");
    let plan = start_run(
        &server,
        &sid,
        json!({"goal": "look", "mode": "plan", "model": script(json!([complete_turn()]))}),
    )
    .await?;
    let plan = wait_run(&server, plan["id"].as_str().unwrap()).await?;
    assert_eq!(plan["state"], "completed", "{plan}");

    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{writer}"))).await?;
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "wait", "model": slow_script(300)}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let refused = expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": ws})),
        StatusCode::CONFLICT,
        "workspace_busy",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains(&run_id), "{message}");
    assert!(
        message.contains(&format!("POST /v1/runs/{run_id}/cancel")),
        "{message}"
    );
    send(server.a(Method::POST, &format!("/v1/runs/{run_id}/cancel"))).await?;
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "cancelled", "{ended}");
    // the run gave the workspace up when it ended
    let again = server.create_sandbox(json!({"workspace": ws})).await?;
    for id in [reader, again] {
        send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    }
    Ok(())
}

async fn sandbox_view(server: &TestServer, id: &str) -> Result<Value> {
    let (status, view) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    ensure!(status == StatusCode::OK, "{status} {view}");
    Ok(view)
}

/// A console sandbox (the web console's Files/Terminal) is tied to its
/// page: it ends once its keep-alive lapsed (a closed tab), a run takes
/// its workspace over while nothing uses it, and while a command runs in
/// it a run is refused with a message naming it and how to free it.
async fn a_console_sandbox_lives_with_its_page_and_yields_to_a_run(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let (status, view) = send(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": ws, "console": true})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {view}");
    assert_eq!(view["console"], true, "{view}");
    assert!(view["keepalive_until"].is_string(), "{view}");
    let console = view["id"].as_str().unwrap().to_owned();
    let session = create_session(&server, &ws, "console").await?;
    let sid = session["id"].as_str().unwrap().to_owned();

    // in use (a command runs in it): the run is refused, naming it
    let exec = {
        let request = server
            .a(Method::POST, &format!("/v1/sandboxes/{console}/exec"))
            .json(&json!({"argv": ["sleep", "4"]}));
        tokio::spawn(send(request))
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let refused = expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/runs"))
            .json(&json!({"goal": "g", "model": script(json!([complete_turn()]))})),
        StatusCode::CONFLICT,
        "workspace_busy",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap();
    for part in [
        console.as_str(),
        "console",
        "since",
        "in use now",
        &format!("DELETE /v1/sandboxes/{console}"),
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let (_, out) = exec.await??;
    assert_eq!(out["exit_code"], 0, "{out}");

    // idle: the run takes the workspace over and the console sandbox ends
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "g", "model": script(json!([complete_turn()]))}),
    )
    .await?;
    assert_eq!(sandbox_view(&server, &console).await?["state"], "stopped");
    let run = wait_run(&server, run["id"].as_str().unwrap()).await?;
    assert_eq!(run["state"], "completed", "{run}");

    // keep-alive: bounded, only for console sandboxes, only while running
    let ordinary = server.create_sandbox(json!({})).await?;
    for (path, code) in [
        (
            format!("/v1/sandboxes/{ordinary}/keepalive"),
            "invalid_request",
        ),
        (
            format!("/v1/sandboxes/{console}/keepalive"),
            "sandbox_not_running",
        ),
    ] {
        let status = if code == "invalid_request" {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::CONFLICT
        };
        expect_error(server.a(Method::POST, &path), status, code).await?;
    }
    let page = server
        .create_sandbox(json!({"workspace": ws, "console": true}))
        .await?;
    let made = sandbox_view(&server, &page).await?;
    for secs in ["0", "121"] {
        expect_error(
            server.a(
                Method::POST,
                &format!("/v1/sandboxes/{page}/keepalive?secs={secs}"),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
    }
    let (status, kept) =
        send(server.a(Method::POST, &format!("/v1/sandboxes/{page}/keepalive"))).await?;
    ensure!(status == StatusCode::OK, "{status} {kept}");
    assert!(
        kept["keepalive_until"].as_str() >= made["keepalive_until"].as_str(),
        "{made} then {kept}"
    );
    // kept alive, it outlives an expiry pass
    server.service.expire_once().await;
    assert_eq!(sandbox_view(&server, &page).await?["state"], "running");

    // the page goes away (it asks for 1 s more) and nobody takes it back:
    // the next expiry pass ends it and frees the workspace
    let (status, _) = send(server.a(
        Method::POST,
        &format!("/v1/sandboxes/{page}/keepalive?secs=1"),
    ))
    .await?;
    ensure!(status == StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    server.service.expire_once().await;
    assert_eq!(sandbox_view(&server, &page).await?["state"], "stopped");
    let again = server.create_sandbox(json!({"workspace": ws})).await?;
    for id in [ordinary, again] {
        send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    }
    Ok(())
}

async fn a_runs_snapshot_limits_are_asked_bounded_and_reported(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "limits").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    // Out of bounds: refused before any run, naming the field and the bound.
    for (limits, field) in [
        (json!({"max_files": 0}), "snapshot_limits.max_files"),
        (
            json!({"max_bytes": 9_000_000_000_u64}),
            "snapshot_limits.max_bytes",
        ),
    ] {
        let refused = expect_error(
            server
                .a(Method::POST, &format!("/v1/sessions/{sid}/runs"))
                .json(
                    &json!({"goal": "g", "model": script(json!([complete_turn()])),
                              "snapshot_limits": limits}),
                ),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(field) && message.contains("this server's maximum"),
            "{message}"
        );
    }
    // The demo workspace's test.sh is over 10 bytes.
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "g", "model": script(json!([complete_turn()])),
               "snapshot_limits": {"max_bytes": 10}}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(ended["end_snapshot"], Value::Null, "{ended}");
    let mut events =
        EventReader::open(server.a(Method::GET, &format!("/v1/runs/{run_id}/events"))).await?;
    let mut finished = None;
    while let Some(frame) = events.next().await? {
        if frame.event == "run.finished" {
            finished = Some(frame.data["payload"].clone());
        }
    }
    let finished = finished.context("no run.finished")?;
    let hit = &finished["snapshot_limit"];
    assert_eq!(hit["limit"], "max_bytes", "{finished}");
    assert_eq!(hit["value"], 10, "{finished}");
    let message = hit["message"].as_str().unwrap();
    assert!(
        message.contains("over the snapshot limit max_bytes = 10")
            && message.contains("`snapshot_limits.max_bytes` in the run request"),
        "{message}"
    );
    // No fork from that run, and the answer says where to look.
    let refused = expect_error(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/fork"))
            .json(&json!({"at_run": run_id})),
        StatusCode::CONFLICT,
        "no_end_snapshot",
    )
    .await?;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("snapshot_error says why"),
        "{refused}"
    );
    // Raised in the request, the same workspace keeps its end snapshot.
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "g", "model": script(json!([complete_turn()])),
               "snapshot_limits": {"max_files": 50, "max_bytes": 1048576}}),
    )
    .await?;
    let ended = wait_run(&server, run["id"].as_str().unwrap()).await?;
    assert!(ended["end_snapshot"].is_string(), "{ended}");
    server.stop().await?;
    Ok(())
}

fn build_child(file: &str) -> Value {
    script(json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": format!("bin/{file}"), "content": format!("echo {file}\n")}}]},
        complete_turn(),
    ]))
}

/// A person decides on two build children's change sets through the API
/// while their parent runs (the parent waits for the file the applied one
/// brings): one applied, one rejected, a second decision refused, and
/// nothing decidable once the parent ended.
async fn a_person_applies_one_childs_changes_and_rejects_anothers(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let dir = workspace_dir(&server, &ws);
    let session = create_session(&server, &ws, "decide").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let spawn = |task: &str| {
        json!({"name": "spawn_subagent", "arguments": {"task_id": task, "profile": "build",
            "prompt": format!("write bin/{task}.sh"), "write_scope": ["bin"]}})
    };
    let parent = script(json!([
        {"tool_calls": [spawn("keep"), spawn("drop")]},
        {"tool_calls": [{"name": "wait_subagents", "arguments": {"timeout": 300}}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"timeout_secs": 120,
            "command": "for i in $(seq 1200); do [ -f bin/keep.sh ] && break; sleep 0.1; done; ls bin"}}]},
        complete_turn(),
    ]));
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "two children", "model": parent, "subagent_models": {
            "keep": build_child("keep.sh"), "drop": build_child("drop.sh")}}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();

    // The children, once both ran.
    let deadline = tokio::time::Instant::now() + RUN_TIMEOUT;
    let children = loop {
        let (_, children) =
            send(server.a(Method::GET, &format!("/v1/runs/{run_id}/children"))).await?;
        let runs = children["runs"].as_array().cloned().unwrap_or_default();
        if runs.len() == 2 && runs.iter().all(|r| r["state"] == "completed") {
            break runs;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "children: {children}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let id_of = |task: &str| {
        children
            .iter()
            .find(|c| c["task_key"] == task)
            .and_then(|c| c["id"].as_str())
            .unwrap()
            .to_owned()
    };
    let (keep, drop) = (id_of("keep"), id_of("drop"));
    let decide = |child: &str, decision: &str| {
        server
            .a(
                Method::POST,
                &format!("/v1/runs/{run_id}/children/{child}/changes"),
            )
            .json(&json!({"decision": decision}))
    };
    // A child's change set is known a moment after its run is recorded ended.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let applied = loop {
        let (status, body) = send(decide(&keep, "apply")).await?;
        if status == StatusCode::OK {
            break body;
        }
        ensure!(
            status == StatusCode::CONFLICT
                && body.to_string().contains("still running")
                && tokio::time::Instant::now() < deadline,
            "{status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(applied["applied"], true, "{applied}");
    assert_eq!(applied["written"], json!(["bin/keep.sh"]), "{applied}");
    let (status, rejected) = send(decide(&drop, "reject")).await?;
    assert_eq!(status, StatusCode::OK, "{rejected}");
    assert_eq!(rejected["rejected"], true, "{rejected}");
    for (child, decision, why) in [
        (&drop, "apply", "rejected"),
        (&keep, "apply", "already applied"),
    ] {
        let (status, body) = send(decide(child, decision)).await?;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"]["code"], "change_set_refused", "{body}");
        assert!(body.to_string().contains(why), "{body}");
    }
    let (status, body) = send(decide(&keep, "maybe")).await?;
    assert!(status.is_client_error(), "{status} {body}");

    // The parent saw the applied file and finished; the rejected one never came.
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(
        std::fs::read_to_string(dir.join("bin/keep.sh"))?,
        "echo keep.sh\n"
    );
    assert!(!dir.join("bin/drop.sh").exists());
    let (status, body) = send(decide(&drop, "reject")).await?;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "run_not_active", "{body}");
    server.stop().await?;
    Ok(())
}

/// A run whose driver died mid-command (another node's lease, expired): the
/// resume route recovers it and continues it as a new run, whose first step
/// reports the command's outcome unknown; a second resume, a finished run,
/// an unknown run and a bad body are refused with their codes.
/// The lease of a driver that dies after writing a run's first steps: long
/// enough for those writes (a shorter one can expire in between on a busy
/// machine, and then a recovery elsewhere in the server takes the session
/// over and the writes are refused as stale), waited out before the resume.
const DEAD_DRIVER_LEASE: Duration = Duration::from_secs(1);

async fn an_interrupted_run_is_resumed_as_a_new_run_once(db: Db) -> Result<()> {
    use paddock_core::model::{Message, ToolCall};
    use paddock_core::store::{Lease, NewEvent, Run, RunState, StoredMessage, ToolInvocation};

    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let workspace = demo_workspace(&server).await?;
    let session = create_session(&server, &workspace, "resume").await?;
    let session = SessionId::parse(session["id"].as_str().context("session id")?)?;
    let tenant = server.setup.tenants.a.clone();
    let store = &server.store;
    let lease = store
        .acquire_lease(
            &Lease::session_resource(&session),
            "gone-node/run_dead",
            DEAD_DRIVER_LEASE,
        )
        .await?;
    let mut dead = Run::new(tenant.clone(), session.clone(), "count to two", store.now());
    dead.state = RunState::Acting;
    store.create_run(&lease, &dead).await?;
    let command = ToolCall {
        id: "call_1_1".into(),
        name: "run_command".into(),
        arguments: json!({"command": "echo 1 >> count"}),
    };
    for message in [
        Message::user("Goal: count to two"),
        Message::assistant("", vec![command.clone()]),
    ] {
        let stored = StoredMessage {
            tenant: tenant.clone(),
            session: session.clone(),
            run: dead.id.clone(),
            seq: 0,
            message,
            created_at: store.now(),
        };
        store.append_message(&lease, &stored).await?;
    }
    let invocation = ToolInvocation::start(&dead, "run_command", "{}", store.now());
    store.record_tool_invocation(&lease, &invocation).await?;
    let call_event = paddock_runtime::events::ToolCallEvent {
        call_id: command.id.clone(),
        tool: command.name.clone(),
        arguments: command.arguments.clone(),
        invocation_id: invocation.id.clone(),
        idempotency_key: None,
    };
    let event = NewEvent {
        session: session.clone(),
        run: Some(dead.id.clone()),
        kind: "tool.call".into(),
        payload: serde_json::to_string(&call_event)?,
    };
    store.append_event(&lease, &tenant, &event).await?;
    tokio::time::sleep(DEAD_DRIVER_LEASE + Duration::from_millis(100)).await;

    let path = format!("/v1/runs/{}/resume", dead.id);
    expect_error(
        server.a(Method::POST, &path).json(&json!({"model": 1})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    let body = json!({"model": script(json!([complete_turn()]))});
    let (status, resumed) = send(server.a(Method::POST, &path).json(&body)).await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {resumed}");
    assert_eq!(resumed["resumed_from"], dead.id.as_str(), "{resumed}");
    assert_eq!(resumed["session"], session.as_str());
    let id = resumed["id"].as_str().context("run id")?.to_owned();
    let ended = wait_run(&server, &id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    assert_eq!(ended["resumed_from"], dead.id.as_str());
    let (_, old) = send(server.a(Method::GET, &format!("/v1/runs/{}", dead.id))).await?;
    assert_eq!(old["state"], "interrupted", "{old}");
    let results: Vec<Value> = store
        .list_run_events(&tenant, &RunId::parse(&id)?, 0, 1000)
        .await?
        .into_iter()
        .filter(|e| e.kind == "tool.result")
        .map(|e| serde_json::from_str(&e.payload))
        .collect::<Result<_, _>>()?;
    let unknown = &results[0];
    assert_eq!(unknown["call_id"], "call_1_1", "{results:?}");
    assert_eq!(unknown["invocation_id"], invocation.id.as_str());
    assert!(
        unknown["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Outcome unknown")),
        "{unknown}"
    );
    // the command was not run again
    assert!(!workspace_dir(&server, &workspace).join("count").exists());

    expect_error(
        server.a(Method::POST, &path).json(&body),
        StatusCode::CONFLICT,
        "run_not_resumable",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, &format!("/v1/runs/{id}/resume"))
            .json(&body),
        StatusCode::CONFLICT,
        "run_not_resumable",
    )
    .await?;
    expect_error(
        server
            .a(
                Method::POST,
                &format!("/v1/runs/{}/resume", RunId::generate()),
            )
            .json(&body),
        StatusCode::NOT_FOUND,
        "run_not_found",
    )
    .await?;
    // another tenant cannot resume it
    expect_error(
        server.b(Method::POST, &path).json(&body),
        StatusCode::NOT_FOUND,
        "run_not_found",
    )
    .await?;

    // a run on a backend this server does not enable is not resumed on another
    let other = create_session(&server, &workspace, "resume elsewhere").await?;
    let other = SessionId::parse(other["id"].as_str().context("session id")?)?;
    let lease = store
        .acquire_lease(
            &Lease::session_resource(&other),
            "gone-node/run_dead2",
            DEAD_DRIVER_LEASE,
        )
        .await?;
    let mut gvisor = Run::new(tenant.clone(), other.clone(), "count to three", store.now());
    gvisor.state = RunState::Acting;
    store.create_run(&lease, &gvisor).await?;
    let started = json!({
        "goal": "count to three", "success_criteria": [], "mode": "build",
        "budgets": {"max_turns": 5, "max_tokens": 1000, "max_tool_calls": 5,
                    "max_wall_clock_ms": 60000},
        "model": "scripted:inline", "parent_run": null, "profile": null,
        "task_key": null, "backend": "gvisor", "image": "paddock-sandbox"
    });
    let event = NewEvent {
        session: other.clone(),
        run: Some(gvisor.id.clone()),
        kind: "run.started".into(),
        payload: started.to_string(),
    };
    store.append_event(&lease, &tenant, &event).await?;
    tokio::time::sleep(DEAD_DRIVER_LEASE + Duration::from_millis(100)).await;
    let (status, refused) = send(
        server
            .a(Method::POST, &format!("/v1/runs/{}/resume", gvisor.id))
            .json(&body),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "run_not_resumable", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("gvisor"), "{refused}");
    server.stop().await?;
    Ok(())
}

/// A rewind over the workspace's own edits: 409 `workspace_changed` naming
/// them; forced, the answer carries the checkpoint that kept them and the
/// undo; the rewind to it brings them back.
async fn a_rewind_over_an_edit_is_refused_then_kept_and_undone(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "edited").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let run = start_run(
        &server,
        &sid,
        json!({"goal": "write notes", "model": script(json!([
            {"tool_calls": [{"name": "write_file",
                             "arguments": {"path": "notes.txt", "content": "v1\n"}}]},
            complete_turn(),
        ]))}),
    )
    .await?;
    let run = wait_run(&server, run["id"].as_str().unwrap()).await?;
    assert_eq!(run["state"], "completed", "{run}");
    let (status, list) =
        send(server.a(Method::GET, &format!("/v1/sessions/{sid}/checkpoints"))).await?;
    ensure!(status == StatusCode::OK, "{status} {list}");
    let start = list["checkpoints"][0]["id"].as_str().unwrap().to_owned();

    // someone edits the workspace outside paddock
    let dir = workspace_dir(&server, &ws);
    std::fs::write(dir.join("test.sh"), "echo my own edit\n")?;
    std::fs::write(dir.join("mine.txt"), "mine\n")?;

    let path = format!("/v1/sessions/{sid}/rewind");
    let (status, refused) = send(
        server
            .a(Method::POST, &path)
            .json(&json!({"checkpoint": start})),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "workspace_changed", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("mine.txt, test.sh") && message.contains("force"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("mine.txt"))?, "mine\n");

    let (status, rewound) = send(
        server
            .a(Method::POST, &path)
            .json(&json!({"checkpoint": start, "force": true})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{rewound}");
    assert_eq!(
        rewound["changed"],
        json!(["mine.txt", "test.sh"]),
        "{rewound}"
    );
    let safety = rewound["safety_checkpoint"].as_str().unwrap().to_owned();
    assert_eq!(
        rewound["undo"],
        format!("paddock session rewind {sid} --to {safety}"),
        "{rewound}"
    );
    assert!(!dir.join("mine.txt").exists());
    assert!(!dir.join("notes.txt").exists());

    // the undo: nothing changed since, so no force is needed
    let (status, undone) = send(
        server
            .a(Method::POST, &path)
            .json(&json!({"checkpoint": safety})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{undone}");
    assert_eq!(std::fs::read_to_string(dir.join("mine.txt"))?, "mine\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("test.sh"))?,
        "echo my own edit\n"
    );
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt"))?, "v1\n");
    server.stop().await?;
    Ok(())
}

/// A run names its driver: the built-in loop by default or by name (the
/// run, its view and `run.started` say so, with what it can do); a driver
/// the server does not enable, or one that does not exist, is refused
/// before anything is recorded.
async fn a_run_names_its_driver_and_one_not_enabled_is_refused(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ws = demo_workspace(&server).await?;
    let session = create_session(&server, &ws, "drivers").await?;
    let sid = session["id"].as_str().unwrap().to_owned();
    let runs = format!("/v1/sessions/{sid}/runs");

    for driver in ["claude-code", "codex", "opencode"] {
        let body = expect_error(
            server.a(Method::POST, &runs).json(&json!({
                "goal": "g", "driver": driver, "model": script(json!([complete_turn()]))})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
        let text = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!(
                "the {driver} driver is not enabled on this server (its operator lists it in \
                 [drivers] enabled)"
            )),
            "{text}"
        );
    }
    expect_error(
        server.a(Method::POST, &runs).json(&json!({
            "goal": "g", "driver": "gemini-cli", "model": script(json!([complete_turn()]))})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    let (status, listed) = send(server.a(Method::GET, &format!("/v1/sessions/{sid}/runs"))).await?;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(0), "{listed}");

    for asked in [None, Some("builtin")] {
        let mut body = json!({"goal": "finish", "model": script(json!([complete_turn()]))});
        if let Some(driver) = asked {
            body["driver"] = json!(driver);
        }
        let (status, run) = send(server.a(Method::POST, &runs).json(&body)).await?;
        assert_eq!(status, StatusCode::ACCEPTED, "{run}");
        assert_eq!(run["driver"], "builtin", "{run}");
        let id = run["id"].as_str().unwrap().to_owned();
        let ended = wait_run_ended(&server, &id, RUN_TIMEOUT).await?;
        assert_eq!(ended["state"], "completed", "{ended}");
        assert_eq!(ended["driver"], "builtin", "{ended}");
        let mut events =
            EventReader::open(server.a(Method::GET, &format!("/v1/runs/{id}/events"))).await?;
        let first = events.next().await?.context("run.started")?;
        assert_eq!(first.event, "run.started");
        let driver = &first.data["payload"]["driver"];
        assert_eq!(driver["kind"], "builtin", "{first:?}");
        assert_eq!(
            driver["capabilities"],
            json!({"steer": true, "subagents": true, "tool_checkpoints": true,
                   "memory": true, "resume": "history"}),
            "{first:?}"
        );
    }
    server.stop().await?;
    Ok(())
}
