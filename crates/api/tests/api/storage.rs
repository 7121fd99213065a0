//! Storage counted by what it uses, and bounded, over real HTTP, a real
//! database and real jailed sandboxes: a run rewriting a big file stays
//! under the tenant disk quota on disk (checkpoints refused past it, said
//! in events); a session keeps its last checkpoints only (pruned with an
//! event, their blobs removed); an import of tiny files is refused by the
//! blocks it would take and leaves nothing; a snapshot over the quota is
//! refused and keeps nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, send, wait_run_ended};
use paddock_core::ids::{RunId, SessionId};
use paddock_core::store::RunEvent;
use paddock_test_support::disk_use::du;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    a_run_rewriting_a_big_file_stays_under_the_quota,
    a_session_keeps_its_last_checkpoints_and_their_blobs_only,
    an_import_of_tiny_files_is_refused_by_its_blocks_and_leaves_nothing,
    a_snapshot_over_the_quota_is_refused_and_keeps_nothing,
);

const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// Everything of tenant a's on disk: its workspace and its blob part.
fn tenant_du(server: &TestServer, workspace: &str) -> u64 {
    let data = &server.setup.data_dir;
    du(&data.join("workspaces").join(workspace))
        + du(&data
            .join("blobs/tenants")
            .join(server.setup.tenants.a.as_str()))
}

async fn create_workspace(server: &TestServer) -> Result<String> {
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "storage"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    Ok(ws["id"].as_str().context("workspace id")?.to_owned())
}

/// A run in a new session of `workspace` that runs each of `commands` in
/// its own tool batch, then completes; waits for its end.
async fn run_commands(server: &TestServer, workspace: &str, commands: &[String]) -> Result<Value> {
    let (status, session) = send(
        server
            .a(Method::POST, "/v1/sessions")
            .json(&json!({"workspace": workspace, "title": "storage"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    let sid = session["id"].as_str().unwrap();
    let mut turns: Vec<Value> = commands
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "run_command", "arguments": {"command": c}}]}))
        .collect();
    turns.push(
        json!({"tool_calls": [{"name": "complete_task", "arguments": {
        "verdict": "met", "summary": "done", "evidence": ["nothing to show"]}}]}),
    );
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{sid}/runs"))
            .json(&json!({
                "goal": "rewrite a file",
                "mode": "build",
                "budgets": {"max_turns": commands.len() + 4},
                "model": {"scripted": {"turns": turns}},
            })),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    let id = run["id"].as_str().unwrap().to_owned();
    wait_run_ended(server, &id, RUN_TIMEOUT).await
}

async fn events_of(server: &TestServer, run: &Value, kind: &str) -> Result<Vec<Value>> {
    let id = RunId::parse(run["id"].as_str().unwrap())?;
    let events: Vec<RunEvent> = server
        .store
        .list_run_events(&server.setup.tenants.a, &id, 0, 10_000)
        .await?;
    Ok(events
        .into_iter()
        .filter(|e| e.kind == kind)
        .map(|e| serde_json::from_str(&e.payload).unwrap())
        .collect())
}

/// `count` commands, each writing `bytes` of content no other one has.
fn rewrites(count: usize, bytes: u64) -> Vec<String> {
    (0..count)
        .map(|i| format!("yes 'round {i}' | head -c {bytes} > big.bin"))
        .collect()
}

async fn a_run_rewriting_a_big_file_stays_under_the_quota(db: Db) -> Result<()> {
    // The figures: a 20 MiB file rewritten 12 times, 50 MB quota.
    const QUOTA: u64 = 50_000_000;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.disk_quota = Some(QUOTA);
    let server = TestServer::start(setup).await?;
    let ws = create_workspace(&server).await?;

    let run = run_commands(&server, &ws, &rewrites(12, 20 << 20)).await?;
    assert_eq!(run["state"], "completed", "{run}");

    // The file is there, rewritten 12 times; the checkpoints that did not
    // fit were refused, each saying why, and the run went on.
    let big = std::fs::metadata(data.path().join("workspaces").join(&ws).join("big.bin"))?;
    assert_eq!(big.len(), 20 << 20);
    let created = events_of(&server, &run, "checkpoint.created").await?;
    let failed = events_of(&server, &run, "checkpoint.failed").await?;
    assert!(!failed.is_empty(), "no checkpoint was refused: {created:?}");
    for event in &failed {
        let error = event["error"].as_str().unwrap();
        assert!(error.contains("disk quota of 50000000 bytes"), "{error}");
    }
    assert!(
        created.len() + failed.len() >= 12,
        "{} + {}",
        created.len(),
        failed.len()
    );

    // On disk, as du counts it, and as the server counts it: under the
    // quota plus 10% (before: 252 MB).
    let on_disk = tenant_du(&server, &ws);
    assert!(on_disk < QUOTA + QUOTA / 10, "{on_disk} bytes on disk");
    let counted = server.service.measure_disk(&server.setup.tenants.a).await?;
    assert!(counted.total() < QUOTA + QUOTA / 10, "{counted:?}");
    assert!(counted.workspaces >= 20 << 20, "{counted:?}");
    assert!(counted.rows > 0, "{counted:?}");

    // A file write over the API is held to the same quota.
    let (status, body) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({
        "workspace": ws})))
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let sandbox = body["id"].as_str().unwrap().to_owned();
    let mut refused = None;
    for i in 0..20 {
        let (status, body) = send(
            server
                .a(
                    Method::PUT,
                    &format!("/v1/sandboxes/{sandbox}/files/more{i}.bin"),
                )
                .body(vec![7u8; 900 << 10]),
        )
        .await?;
        if status != StatusCode::OK {
            refused = Some((status, body));
            break;
        }
    }
    let (status, body) = refused.context("20 writes of 900 KiB all fitted")?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let on_disk = tenant_du(&server, &ws);
    assert!(on_disk < QUOTA + QUOTA / 10, "{on_disk} bytes on disk");
    server.stop().await?;
    Ok(())
}

async fn a_session_keeps_its_last_checkpoints_and_their_blobs_only(db: Db) -> Result<()> {
    const KEEP: u32 = 3;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.max_checkpoints = Some(KEEP);
    let server = TestServer::start(setup).await?;
    let ws = create_workspace(&server).await?;

    let run = run_commands(&server, &ws, &rewrites(8, 1 << 20)).await?;
    assert_eq!(run["state"], "completed", "{run}");
    let session = SessionId::parse(run["session"].as_str().unwrap())?;
    let tenant = &server.setup.tenants.a;

    // 1 start + 8 batches taken, 6 pruned: each prune said so.
    let pruned = events_of(&server, &run, "checkpoints.pruned").await?;
    let ids: Vec<String> = pruned
        .iter()
        .flat_map(|e| e["checkpoints"].as_array().unwrap().clone())
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 6, "{pruned:?}");
    assert!(
        pruned
            .iter()
            .all(|e| e["kept"] == KEEP && e["max_per_session"] == KEEP)
    );
    assert!(
        pruned
            .iter()
            .any(|e| e["bytes_freed"].as_u64().unwrap() >= 1 << 20)
    );
    let kept = server.store.list_checkpoints(tenant, &session).await?;
    assert_eq!(kept.len(), KEEP as usize, "{kept:?}");
    // the run's start is never pruned
    assert_eq!(kept[0].reason.as_str(), "run_start");
    assert!(kept.iter().all(|c| !ids.contains(&c.id.to_string())));

    // Only the kept checkpoints' file blobs are left: the two last contents.
    let part = data.path().join("blobs/tenants").join(tenant.as_str());
    let big_blobs = blobs_of_size(&part, 1 << 20);
    assert_eq!(big_blobs, 2, "file blobs of 1 MiB in {}", part.display());

    // A pruned checkpoint is gone for a rewind; a kept one still works.
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
            .json(&json!({"checkpoint": ids[0]})),
    )
    .await?;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session}/rewind"))
            .json(&json!({"checkpoint": kept[1].id})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    let content = std::fs::read(data.path().join("workspaces").join(&ws).join("big.bin"))?;
    assert!(content.starts_with(b"round 6\n"), "{:?}", &content[..16]);
    server.stop().await?;
    Ok(())
}

/// Blobs of exactly `size` bytes in a blob store part.
fn blobs_of_size(part: &Path, size: u64) -> usize {
    let Ok(shards) = std::fs::read_dir(part) else {
        return 0;
    };
    shards
        .flatten()
        .filter(|s| s.file_name().len() == 2)
        .flat_map(|s| std::fs::read_dir(s.path()).into_iter().flatten().flatten())
        .filter(|b| b.metadata().map(|m| m.len() == size).unwrap_or(false))
        .count()
}

/// An archive of `count` one-byte files (as `paddock run --server` packs).
fn tiny_files_archive(count: usize) -> Result<Vec<u8>> {
    let dir = tempfile::tempdir()?;
    for i in 0..count {
        let sub = dir.path().join(format!("d{}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir(&sub)?;
        }
        std::fs::write(sub.join(format!("f{i}")), b"x")?;
    }
    let options = paddock_snapshot::PackOptions {
        limits: paddock_snapshot::Limits {
            max_files: 100_000,
            max_bytes: 1 << 30,
        },
        ..paddock_snapshot::PackOptions::default()
    };
    let mut archive = Vec::new();
    paddock_snapshot::pack(dir.path(), &options, &mut archive)?;
    Ok(archive)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn an_import_of_tiny_files_is_refused_by_its_blocks_and_leaves_nothing(db: Db) -> Result<()> {
    const QUOTA: u64 = 10 << 20;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.disk_quota = Some(QUOTA);
    setup.max_body_bytes = 64 << 20;
    let server = TestServer::start(setup).await?;
    // 60,000 bytes declared, 60,000 blocks and inodes if unpacked (before:
    // 236 MB on disk under this quota).
    let archive = tiny_files_archive(60_000)?;
    let workspaces: PathBuf = data.path().join("workspaces");
    let before = names(&workspaces);

    let (status, body) = send(
        server
            .a(
                Method::POST,
                "/v1/workspaces/import?name=tiny&max_files=100000",
            )
            .header("content-type", "application/zstd")
            .body(archive.clone()),
    )
    .await?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("blocks and inode"), "{message}");
    assert!(message.contains("nothing kept"), "{message}");
    let (_, list) = send(server.a(Method::GET, "/v1/workspaces")).await?;
    assert_eq!(list["workspaces"], json!([]), "{list}");
    assert_eq!(names(&workspaces), before);

    // The same archive as a snapshot import: refused, nothing kept either.
    let (status, body) = send(
        server
            .a(Method::POST, "/v1/snapshots?max_files=100000")
            .header("content-type", "application/zstd")
            .body(archive),
    )
    .await?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([]), "{list}");
    assert_eq!(names(&workspaces), before);
    let used = server.service.measure_disk(&server.setup.tenants.a).await?;
    assert!(used.total() < 1 << 20, "{used:?}");
    server.stop().await?;
    Ok(())
}

async fn a_snapshot_over_the_quota_is_refused_and_keeps_nothing(db: Db) -> Result<()> {
    const QUOTA: u64 = 4 << 20;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.disk_quota = Some(QUOTA);
    let server = TestServer::start(setup).await?;
    let (status, body) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    // 6 MiB that do not compress, in the sandbox's temporary workspace
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": "head -c 6291456 /dev/urandom > /workspace/big"})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");

    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/snapshots"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([]), "{list}");
    // no archive, not even a half-written one
    let blobs = data.path().join("blobs");
    assert!(
        du(&blobs) < 1 << 20,
        "{} bytes in {}",
        du(&blobs),
        blobs.display()
    );

    // A small one still fits.
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": "rm /workspace/big && echo hi > /workspace/small"})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{out}");
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/snapshots"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    server.stop().await?;
    Ok(())
}
