//! Forks share their parent's history instead of copying it, and sessions
//! and workspaces can be deleted, over real HTTP, a real database and real
//! jailed sandboxes: 8 forks of a 12.8 MB history store no message, each
//! goes on and rewinds on its own; deleting a session removes its rows and
//! the checkpoint files only it used, and a workspace goes once its
//! sessions are archived.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send, wait_run_ended};
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::model::Message;
use paddock_core::store::{HistoryPoint, Lease, StoredMessage, visible_messages};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    eight_forks_of_a_big_history_share_it_and_go_on_apart,
    deleting_a_session_frees_what_only_it_used_and_a_workspace_goes_when_archived,
);

const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Messages seeded into the parent's history, 64 KiB each: 12.8 MB.
const SEEDED: usize = 200;
const MESSAGE_BYTES: usize = 64 * 1024;

fn script(turns: Value) -> Value {
    json!({"scripted": {"turns": turns}})
}

fn write_and_complete(path: &str, content: &str) -> Value {
    script(json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]},
        {"tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "done", "evidence": ["written"]}}]},
    ]))
}

async fn workspace(server: &TestServer, name: &str) -> Result<String> {
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({ "name": name })),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let id = ws["id"].as_str().context("workspace id")?.to_owned();
    std::fs::create_dir_all(workspace_dir(server, &id))?;
    Ok(id)
}

fn workspace_dir(server: &TestServer, id: &str) -> PathBuf {
    server.setup.data_dir.join("workspaces").join(id)
}

async fn create_session(server: &TestServer, workspace: &str) -> Result<String> {
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": workspace, "title": "parent"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    Ok(session["id"].as_str().context("session id")?.to_owned())
}

/// Starts a run in `session` and waits until it ended; answers it.
async fn run(server: &TestServer, session: &str, model: Value) -> Result<Value> {
    let id = start(server, session, model).await?;
    wait_run(server, &id).await
}

/// A server whose runs may ask the tokens a big history's turns take.
fn big_history_setup(db: Db, data: &std::path::Path) -> Setup {
    let mut setup = Setup::new(db, data);
    setup.budget_max = Some(paddock_core::store::Budgets {
        max_tokens: 40_000_000,
        ..paddock_runtime::DEFAULT_BUDGET_MAX
    });
    setup
}

async fn start(server: &TestServer, session: &str, model: Value) -> Result<String> {
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/runs"))
            // every turn reads the whole (big) history
            .json(&json!({"goal": "write it", "model": model,
                          "budgets": {"max_tokens": 40_000_000}})),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    Ok(run["id"].as_str().context("run id")?.to_owned())
}

async fn wait_run(server: &TestServer, id: &str) -> Result<Value> {
    wait_run_ended(server, id, RUN_TIMEOUT).await
}

async fn fork(server: &TestServer, session: &str) -> Result<String> {
    let (status, fork) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/fork"))
            .json(&json!({})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {fork}");
    Ok(fork["id"].as_str().context("fork id")?.to_owned())
}

/// The session's history as a run reads it (its own rewinds applied).
async fn history(server: &TestServer, session: &str) -> Result<Vec<String>> {
    let store = &server.store;
    let tenant = &server.setup.tenants.a;
    let id = SessionId::parse(session)?;
    let rewinds = store.list_rewinds(tenant, &id).await?;
    Ok(store
        .list_messages(tenant, &id, None)
        .await?
        .iter()
        .filter(|m| visible_messages(&rewinds, HistoryPoint::NOW, m.seq))
        .map(|m| serde_json::to_string(&m.message.content).unwrap_or_default())
        .collect())
}

async fn rewind_to_first(server: &TestServer, session: &str) -> Result<()> {
    let (status, list) =
        send(server.a(Method::GET, &format!("/v1/sessions/{session}/checkpoints"))).await?;
    ensure!(status == StatusCode::OK, "{status} {list}");
    rewind(server, session, list["checkpoints"][0]["id"].clone()).await
}

/// Rewinds to `checkpoint` (forced); a run that just ended may hold its
/// session a moment longer (`session_busy`), so that is tried again.
async fn rewind(server: &TestServer, session: &str, checkpoint: Value) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, rewound) = send(
            server
                .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
                .json(&json!({"checkpoint": checkpoint, "force": true})),
        )
        .await?;
        if status == StatusCode::OK {
            return Ok(());
        }
        ensure!(
            rewound["error"]["code"] == "session_busy" && tokio::time::Instant::now() < deadline,
            "{status} {rewound}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn raw(server: &TestServer) -> Result<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    Ok(sqlx::AnyPool::connect(&server.setup.database_url()).await?)
}

/// The bytes of the tenant's stored messages, and (SQLite) of the database
/// file after a checkpoint of its log.
async fn stored(server: &TestServer, pool: &sqlx::AnyPool) -> Result<(i64, u64)> {
    use sqlx::Row;
    let tenant = server.setup.tenants.a.as_str();
    let bytes: i64 = sqlx::query(
        "SELECT COALESCE(SUM(LENGTH(content)), 0) AS n FROM messages WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_one(pool)
    .await?
    .try_get("n")?;
    let file = match server.setup.db {
        Db::Sqlite => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await?;
            std::fs::metadata(server.setup.data_dir.join("paddock.db"))?.len()
        }
        Db::Postgres => 0,
    };
    Ok((bytes, file))
}

/// Appends the big history to `session` under its lease, as a run would.
async fn seed(server: &TestServer, session: &str, run: &str) -> Result<()> {
    let store = &server.store;
    let tenant: &TenantId = &server.setup.tenants.a;
    let id = SessionId::parse(session)?;
    let lease = store
        .acquire_lease(
            &Lease::session_resource(&id),
            "seed",
            Duration::from_secs(60),
        )
        .await?;
    let filler = "h".repeat(MESSAGE_BYTES);
    for n in 0..SEEDED {
        let message = StoredMessage {
            tenant: tenant.clone(),
            session: id.clone(),
            run: RunId::parse(run)?,
            seq: 0,
            message: Message::user(format!("{n} {filler}")),
            created_at: store.now(),
        };
        store.append_message(&lease, &message).await?;
    }
    store.release_lease(&lease).await?;
    Ok(())
}

async fn eight_forks_of_a_big_history_share_it_and_go_on_apart(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(big_history_setup(db, data.path())).await?;
    let pool = raw(&server).await?;
    let ws = workspace(&server, "big").await?;
    let parent = create_session(&server, &ws).await?;
    let first = run(&server, &parent, write_and_complete("a.txt", "one\n")).await?;
    ensure!(first["state"] == "completed", "{first}");
    seed(&server, &parent, first["id"].as_str().context("run id")?).await?;
    let before = history(&server, &parent).await?;
    assert!(before.len() > SEEDED);
    let (bytes, file) = stored(&server, &pool).await?;
    assert!(bytes > (SEEDED * MESSAGE_BYTES) as i64, "{bytes}");

    let mut forks = Vec::new();
    for _ in 0..8 {
        forks.push(fork(&server, &parent).await?);
    }
    let (bytes_after, file_after) = stored(&server, &pool).await?;
    assert_eq!(
        bytes_after, bytes,
        "8 forks store no message of the history"
    );
    if db == Db::Sqlite {
        // copying it 8 times stored 8 x 12.8 MB
        let grown = file_after.saturating_sub(file);
        assert!(
            grown < 2 << 20,
            "the database grew by {grown} bytes for 8 forks"
        );
    }
    for fork in &forks {
        assert_eq!(
            history(&server, fork).await?,
            before,
            "{fork} reads the whole history"
        );
    }

    // each goes on on its own ...
    let (one, two) = (&forks[0], &forks[1]);
    let went_on = run(&server, one, write_and_complete("b.txt", "fork one\n")).await?;
    ensure!(went_on["state"] == "completed", "{went_on}");
    let one_history = history(&server, one).await?;
    assert_eq!(one_history[..before.len()], before[..]);
    assert!(one_history.len() > before.len());
    assert_eq!(history(&server, two).await?, before);
    assert_eq!(history(&server, &parent).await?, before);
    let content = std::fs::read_to_string(
        workspace_dir(&server, &went_on_workspace(&server, one).await?).join("b.txt"),
    )?;
    assert_eq!(content, "fork one\n");

    // ... and rewinds on its own: a rewind of the parent changes no fork,
    // one of a fork changes neither the parent nor its siblings
    let went_on_parent = run(&server, &parent, write_and_complete("c.txt", "parent\n")).await?;
    ensure!(went_on_parent["state"] == "completed", "{went_on_parent}");
    let parent_on = history(&server, &parent).await?;
    assert!(parent_on.len() > before.len());
    rewind_to_first(&server, &parent).await?;
    let parent_rewound = history(&server, &parent).await?;
    assert!(parent_rewound.len() < before.len(), "the parent went back");
    assert_eq!(history(&server, one).await?, one_history);
    assert_eq!(history(&server, two).await?, before);
    rewind_to_first(&server, one).await?;
    assert!(history(&server, one).await?.len() <= before.len());
    assert_eq!(history(&server, &parent).await?, parent_rewound);
    assert_eq!(history(&server, two).await?, before);
    server.stop().await?;
    Ok(())
}

async fn went_on_workspace(server: &TestServer, session: &str) -> Result<String> {
    let (status, s) = send(server.a(Method::GET, &format!("/v1/sessions/{session}"))).await?;
    ensure!(status == StatusCode::OK, "{status} {s}");
    Ok(s["workspace"].as_str().context("workspace")?.to_owned())
}

/// Whether the tenant's checkpoint files hold one with exactly `content`.
fn blob_holding(dir: &Path, content: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            blob_holding(&path, content)
        } else {
            std::fs::read(&path).is_ok_and(|bytes| bytes == content)
        }
    })
}

async fn deleting_a_session_frees_what_only_it_used_and_a_workspace_goes_when_archived(
    db: Db,
) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(big_history_setup(db, data.path())).await?;
    let blobs = server
        .setup
        .data_dir
        .join("blobs/tenants")
        .join(server.setup.tenants.a.as_str());
    let ws = workspace(&server, "shared").await?;
    let parent = create_session(&server, &ws).await?;
    let shared_text = format!(
        "shared by the parent and its fork {}\n",
        common::unique("s")
    );
    let ran = run(
        &server,
        &parent,
        write_and_complete("shared.txt", &shared_text),
    )
    .await?;
    ensure!(ran["state"] == "completed", "{ran}");
    let child = fork(&server, &parent).await?;
    let child_ws = went_on_workspace(&server, &child).await?;
    let own_text = format!("only the fork's {}\n", common::unique("f"));
    let ran = run(&server, &child, write_and_complete("own.txt", &own_text)).await?;
    ensure!(ran["state"] == "completed", "{ran}");
    assert!(blob_holding(&blobs, own_text.as_bytes()));
    assert!(blob_holding(&blobs, shared_text.as_bytes()));

    // the parent has a fork: refused, naming it
    let (status, refused) =
        send(server.a(Method::DELETE, &format!("/v1/sessions/{parent}?purge=true"))).await?;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "session_in_use", "{refused}");
    assert!(refused.to_string().contains(&child), "{refused}");
    // force cancels runs; it does not wait for forks to go
    let started = std::time::Instant::now();
    expect_error(
        server.a(
            Method::DELETE,
            &format!("/v1/sessions/{parent}?purge=true&force=true"),
        ),
        StatusCode::CONFLICT,
        "session_in_use",
    )
    .await?;
    assert!(started.elapsed() < Duration::from_secs(10));

    // a run in progress: refused, then cancelled and deleted with force
    let slow = start(
        &server,
        &child,
        script(json!([
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 60"}}]},
        ])),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    expect_error(
        server.a(Method::DELETE, &format!("/v1/sessions/{child}?purge=true")),
        StatusCode::CONFLICT,
        "session_in_use",
    )
    .await?;
    let (status, deleted) = send(server.a(
        Method::DELETE,
        &format!("/v1/sessions/{child}?purge=true&force=true"),
    ))
    .await?;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert_eq!(deleted["deleted"], json!([child]));
    assert!(deleted["blobs_removed"].as_u64() >= Some(2), "{deleted}");
    let (status, _) = send(server.a(Method::GET, &format!("/v1/runs/{slow}"))).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    expect_error(
        server.a(Method::GET, &format!("/v1/sessions/{child}")),
        StatusCode::NOT_FOUND,
        "session_not_found",
    )
    .await?;
    let child_id = SessionId::parse(&child)?;
    let tenant = &server.setup.tenants.a;
    assert!(server.store.list_runs(tenant, &child_id).await?.is_empty());
    assert!(
        server
            .store
            .list_checkpoints(tenant, &child_id)
            .await?
            .is_empty()
    );
    assert!(
        server
            .store
            .list_events(tenant, &child_id, 0, 10)
            .await?
            .is_empty()
    );
    // its own file went; the one its parent's checkpoints name stayed
    assert!(
        !blob_holding(&blobs, own_text.as_bytes()),
        "the fork's own file is gone"
    );
    assert!(
        blob_holding(&blobs, shared_text.as_bytes()),
        "the shared file stayed"
    );
    // the parent is whole: it rewinds to its first checkpoint and back
    std::fs::remove_file(workspace_dir(&server, &ws).join("shared.txt"))?;
    let (status, list) =
        send(server.a(Method::GET, &format!("/v1/sessions/{parent}/checkpoints"))).await?;
    assert_eq!(status, StatusCode::OK);
    let last = list["checkpoints"]
        .as_array()
        .and_then(|all| all.last())
        .context("a checkpoint")?["id"]
        .clone();
    rewind(&server, &parent, last).await?;
    assert_eq!(
        std::fs::read_to_string(workspace_dir(&server, &ws).join("shared.txt"))?,
        shared_text
    );

    // a workspace with a live session stays, naming it; archived, it goes
    let (status, refused) = send(server.a(Method::DELETE, &format!("/v1/workspaces/{ws}"))).await?;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "workspace_in_use", "{refused}");
    assert!(refused.to_string().contains(&parent), "{refused}");
    let (status, archived) =
        send(server.a(Method::DELETE, &format!("/v1/sessions/{parent}"))).await?;
    assert_eq!(status, StatusCode::OK, "{archived}");
    assert_eq!(archived["status"], "archived");
    let (status, gone) = send(server.a(Method::DELETE, &format!("/v1/workspaces/{ws}"))).await?;
    assert_eq!(status, StatusCode::OK, "{gone}");
    assert!(!workspace_dir(&server, &ws).exists());
    expect_error(
        server.a(Method::GET, &format!("/v1/sessions/{parent}")),
        StatusCode::NOT_FOUND,
        "session_not_found",
    )
    .await?;
    assert!(
        !blob_holding(&blobs, shared_text.as_bytes()),
        "nothing names it now"
    );
    // the fork's workspace has no session left
    let (status, gone) =
        send(server.a(Method::DELETE, &format!("/v1/workspaces/{child_ws}"))).await?;
    assert_eq!(status, StatusCode::OK, "{gone}");
    server.stop().await?;
    Ok(())
}
