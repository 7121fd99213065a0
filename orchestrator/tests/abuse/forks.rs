//! Fork flood: one tenant forks a session with a 12.8 MB history 32 times.
//! A fork shares its parent's history instead of copying it (copies grew
//! the data directory by 12.8 MB a fork), so the data directory grows by
//! little; another tenant keeps being answered in under a second, the
//! server stays under 512 MiB, and the forks and their parent are deleted
//! again.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures_util::future::join_all;
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::model::Message;
use paddock_core::store::{Lease, Store, StoredMessage};
use paddock_store::SqlStore;

use crate::support::*;

/// Messages seeded into the parent's history, 64 KiB each: 12.8 MB.
const SEEDED: usize = 200;
const MESSAGE_BYTES: usize = 64 * 1024;
const FORKS: usize = 32;
/// Forks asked for at once.
const AT_ONCE: usize = 8;
/// What 32 forks may add to the data directory: their rows, workspaces and
/// the snapshot each fork takes of the parent's workspace, not the history.
const GROWTH_BOUND: u64 = 16 << 20;
const RSS_FLOOR: u64 = 512 << 20;

#[test]
fn a_fork_flood_shares_the_history_and_leaves_the_others_answered() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = Server::start(data.path(), "")?;
    runtime().block_on(async {
        let ws = created(&server, "/v1/workspaces", r#"{"name": "flood"}"#).await?;
        std::fs::create_dir_all(data.path().join("workspaces").join(&ws))?;
        let session = created(
            &server,
            "/v1/sessions",
            &format!(r#"{{"workspace": "{ws}", "title": "big"}}"#),
        )
        .await?;
        let run = run_once(&server, &session).await?;
        let store = SqlStore::open(&format!(
            "sqlite://{}",
            data.path().join("paddock.db").display()
        ))
        .await?;
        seed(&store, &session, &run).await?;
        let before = settled_size(data.path()).await?;

        let mut worst = Duration::ZERO;
        let mut peak = server.rss_bytes();
        let mut forks = Vec::new();
        for _ in 0..FORKS / AT_ONCE {
            let path = format!("/v1/sessions/{session}/fork");
            let batch = (0..AT_ONCE).map(|_| server.request("POST", &path, "{}"));
            let (answers, latency) = tokio::join!(join_all(batch), server.victim_health_latency());
            worst = worst.max(latency?);
            peak = peak.max(server.rss_bytes());
            for answer in answers {
                let (status, body) = answer?;
                ensure!(status == 201, "fork: {status} {body}");
                let value: serde_json::Value = serde_json::from_str(&body)?;
                forks.push(value["id"].as_str().context("fork id")?.to_owned());
            }
        }
        let after = settled_size(data.path()).await?;
        let grown = after.saturating_sub(before);
        println!(
            "fork flood: {FORKS} forks of a {:.1} MiB history grew the data dir by {grown} bytes; \
             victim health worst {worst:?}; server RSS peak {:.1} MiB",
            mib((SEEDED * MESSAGE_BYTES) as u64),
            mib(peak)
        );
        assert!(
            grown < GROWTH_BOUND,
            "the data directory grew by {grown} bytes"
        );
        assert!(
            worst < Duration::from_secs(1),
            "the victim waited {worst:?}"
        );
        assert!(peak < RSS_FLOOR, "server RSS {peak} bytes");

        // every fork reads the whole history
        let tenant = TenantId::parse("abuse")?;
        let parent = store
            .list_messages(&tenant, &SessionId::parse(&session)?, None)
            .await?
            .len();
        for fork in forks.iter().step_by(7) {
            let shared = store
                .list_messages(&tenant, &SessionId::parse(fork)?, None)
                .await?
                .len();
            assert_eq!(shared, parent, "{fork}");
        }

        // the parent is kept while forks read it; the forks go, then it
        let parent_path = format!("/v1/sessions/{session}?purge=true");
        let (status, body) = server.request("DELETE", &parent_path, "").await?;
        ensure!(
            status == 409 && body.contains("session_in_use"),
            "{status} {body}"
        );
        for fork in &forks {
            let (status, body) = server
                .request("DELETE", &format!("/v1/sessions/{fork}?purge=true"), "")
                .await?;
            ensure!(status == 200, "deleting {fork}: {status} {body}");
        }
        let (status, body) = server.request("DELETE", &parent_path, "").await?;
        ensure!(status == 200, "deleting the parent: {status} {body}");
        let left = store
            .list_messages(&tenant, &SessionId::parse(&session)?, None)
            .await?;
        assert!(left.is_empty(), "{} messages left", left.len());
        store.close().await;
        Ok(())
    })
}

/// POSTs `body` to `path`; the id of what was made.
async fn created(server: &Server, path: &str, body: &str) -> Result<String> {
    let (status, answer) = server.request("POST", path, body).await?;
    ensure!(status == 201, "POST {path}: {status} {answer}");
    let value: serde_json::Value = serde_json::from_str(&answer)?;
    Ok(value["id"].as_str().context("no id")?.to_owned())
}

/// Runs a one-turn scripted run in the session; its id once it ended.
async fn run_once(server: &Server, session: &str) -> Result<String> {
    let body = r#"{"goal": "g", "model": {"scripted": {"turns": [{"tool_calls": [
        {"name": "complete_task", "arguments": {"verdict": "met", "summary": "done",
         "evidence": ["none"]}}]}]}}}"#;
    let (status, answer) = server
        .request("POST", &format!("/v1/sessions/{session}/runs"), body)
        .await?;
    ensure!(status == 202, "starting a run: {status} {answer}");
    let value: serde_json::Value = serde_json::from_str(&answer)?;
    let run = value["id"].as_str().context("no run id")?.to_owned();
    for _ in 0..600 {
        let (_, answer) = server
            .request("GET", &format!("/v1/runs/{run}"), "")
            .await?;
        if answer.contains(r#""state":"completed""#) {
            return Ok(run);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("run {run} did not complete")
}

/// The history a long session would have: appended under the session's
/// lease, as a run appends it.
async fn seed(store: &SqlStore, session: &str, run: &str) -> Result<()> {
    let tenant = TenantId::parse("abuse")?;
    let id = SessionId::parse(session)?;
    let lease = store
        .acquire_lease(
            &Lease::session_resource(&id),
            "seed",
            Duration::from_secs(120),
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

/// The data directory's size once the database's log is folded into it.
async fn settled_size(dir: &Path) -> Result<u64> {
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}", dir.join("paddock.db").display());
    let pool = sqlx::AnyPool::connect(&url).await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&pool)
        .await?;
    pool.close().await;
    dir_size(dir)
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += dir_size(&entry.path())?;
        } else {
            // blocks in use, not the apparent length
            total += std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
        }
    }
    Ok(total)
}
