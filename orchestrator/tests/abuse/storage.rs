//! Storage: a run rewriting a big file in every tool batch (checkpoint
//! growth), and an import of tens of thousands of one-byte files. The
//! attacking tenant's disk, as `du` counts it, stays under its quota plus
//! 10%; the other tenant answers in under a second and keeps its files;
//! the server stays under 512 MiB.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;
use paddock_test_support::disk_use::du;

const RSS_FLOOR: u64 = 512 << 20;
const LATENCY_FLOOR: Duration = Duration::from_secs(1);

/// The attacking tenant's files: its workspaces and its part of the blob store.
fn attacker_du(data: &Path, workspaces: &[String]) -> u64 {
    workspaces
        .iter()
        .map(|ws| du(&data.join("workspaces").join(ws)))
        .sum::<u64>()
        + du(&data.join("blobs/tenants/abuse"))
}

async fn json_as(
    server: &Server,
    token: &str,
    method: &str,
    path: &str,
    body: Value,
) -> Result<(u16, Value)> {
    let (status, text) = server
        .request_as(token, local(1), method, path, &body.to_string())
        .await?;
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok((status, value))
}

async fn create_workspace(server: &Server, token: &str) -> Result<String> {
    let (status, ws) = json_as(
        server,
        token,
        "POST",
        "/v1/workspaces",
        json!({"name": "w"}),
    )
    .await?;
    if status != 201 {
        bail!("creating a workspace: {status} {ws}");
    }
    Ok(ws["id"].as_str().context("workspace id")?.to_owned())
}

/// The victim's data: a workspace with a file written over the API.
async fn victim_files(server: &Server) -> Result<(String, Vec<u8>)> {
    let ws = create_workspace(server, &server.victim).await?;
    let (status, sandbox) = json_as(
        server,
        &server.victim,
        "POST",
        "/v1/sandboxes",
        json!({"workspace": ws}),
    )
    .await?;
    if status != 201 {
        bail!("the victim's sandbox: {status} {sandbox}");
    }
    let id = sandbox["id"].as_str().context("sandbox id")?.to_owned();
    let content = b"the victim's work, kept\n".repeat(100);
    let mut tcp = server.connect_from(local(9)).await?;
    let head = head_with(
        &server.victim,
        "PUT",
        &format!("/v1/sandboxes/{id}/files/notes.txt"),
        content.len(),
        "application/json",
    );
    tcp.write_all(head.as_bytes()).await?;
    tcp.write_all(&content).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut answer)).await??;
    if !answer.starts_with(b"HTTP/1.1 200") {
        bail!("the victim's write: {}", String::from_utf8_lossy(&answer));
    }
    let (status, body) = json_as(
        server,
        &server.victim,
        "DELETE",
        &format!("/v1/sandboxes/{id}"),
        json!({}),
    )
    .await?;
    if !(200..300).contains(&status) {
        bail!("deleting the victim's sandbox: {status} {body}");
    }
    Ok((ws, content))
}

/// Watches the floors every 250 ms until `done` says stop; the worst
/// latency and RSS seen.
async fn watch(
    server: &Server,
    done: &tokio::sync::watch::Receiver<bool>,
) -> Result<(Duration, u64)> {
    let mut worst = Duration::ZERO;
    let mut peak = 0;
    while !*done.borrow() {
        worst = worst.max(server.victim_health_latency().await?);
        peak = peak.max(server.rss_bytes());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok((worst, peak))
}

/// A run whose every tool batch rewrites a 20 MiB file with new content,
/// under a 50 MB quota (before: 252 MB stored).
#[test]
fn checkpoint_growth_stays_under_the_quota() -> Result<()> {
    const QUOTA: u64 = 50_000_000;
    let data = tempfile::tempdir()?;
    let server = Server::start(
        data.path(),
        &format!("tenant_disk_quota_bytes = {QUOTA}\nmax_checkpoints_per_session = 4\n"),
    )?;
    runtime().block_on(async {
        let (victim_ws, victim_content) = victim_files(&server).await?;
        let ws = create_workspace(&server, &server.token).await?;
        let (status, session) = json_as(
            &server,
            &server.token,
            "POST",
            "/v1/sessions",
            json!({"workspace": ws, "title": "grow"}),
        )
        .await?;
        if status != 201 {
            bail!("session: {status} {session}");
        }
        let sid = session["id"].as_str().context("session id")?.to_owned();
        let mut turns: Vec<Value> = (0..12)
            .map(|i| {
                json!({"tool_calls": [{"name": "run_command", "arguments": {
                    "command": format!("yes 'round {i}' | head -c 20971520 > big.bin")}}]})
            })
            .collect();
        turns.push(
            json!({"tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "done", "evidence": ["none"]}}]}),
        );
        let (status, run) = json_as(
            &server,
            &server.token,
            "POST",
            &format!("/v1/sessions/{sid}/runs"),
            json!({"goal": "grow", "mode": "build", "budgets": {"max_turns": 20},
                   "model": {"scripted": {"turns": turns}}}),
        )
        .await?;
        if status != 202 {
            bail!("run: {status} {run}");
        }
        let run_id = run["id"].as_str().context("run id")?.to_owned();

        let (stop, done) = tokio::sync::watch::channel(false);
        let watcher = watch(&server, &done);
        let waiter = async {
            let deadline = Instant::now() + Duration::from_secs(50);
            let mut peak_disk = 0;
            loop {
                peak_disk = peak_disk.max(attacker_du(data.path(), std::slice::from_ref(&ws)));
                let (_, run) = json_as(
                    &server,
                    &server.token,
                    "GET",
                    &format!("/v1/runs/{run_id}"),
                    json!({}),
                )
                .await?;
                let state = run["state"].as_str().unwrap_or_default().to_owned();
                if matches!(state.as_str(), "completed" | "failed" | "cancelled") {
                    let _ = stop.send(true);
                    return Ok::<_, anyhow::Error>((run, peak_disk));
                }
                if Instant::now() > deadline {
                    let _ = stop.send(true);
                    bail!("the run did not end: {run}");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        let (watched, waited) = tokio::join!(watcher, waiter);
        let (worst, peak_rss) = watched?;
        let (run, peak_disk) = waited?;
        let on_disk = attacker_du(data.path(), std::slice::from_ref(&ws));
        println!(
            "checkpoint growth: run {}, attacker disk {:.1} MiB at the end, {:.1} MiB peak \
             (quota {:.1} MiB), victim health worst {worst:?}, server RSS peak {:.1} MiB",
            run["state"],
            mib(on_disk),
            mib(peak_disk),
            mib(QUOTA),
            mib(peak_rss)
        );
        assert_eq!(run["state"], "completed", "{run}");
        assert!(
            peak_disk.max(on_disk) < QUOTA + QUOTA / 10,
            "{peak_disk} bytes"
        );
        assert!(worst < LATENCY_FLOOR, "{worst:?}");
        assert!(peak_rss < RSS_FLOOR, "{peak_rss}");
        // nothing of the victim's lost
        let kept = std::fs::read(
            data.path()
                .join("workspaces")
                .join(&victim_ws)
                .join("notes.txt"),
        )?;
        assert_eq!(kept, victim_content);
        Ok(())
    })
}

/// An archive of `count` one-byte files.
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

/// 60,000 one-byte files imported under a 10 MiB quota (before: 236 MB on
/// disk): refused while it unpacks, and nothing of it is left.
#[test]
fn an_import_of_tiny_files_is_refused_and_leaves_nothing() -> Result<()> {
    const QUOTA: u64 = 10 << 20;
    let data = tempfile::tempdir()?;
    let server = Server::start(data.path(), &format!("tenant_disk_quota_bytes = {QUOTA}\n"))?;
    let archive = tiny_files_archive(60_000)?;
    runtime().block_on(async {
        let (victim_ws, victim_content) = victim_files(&server).await?;
        let workspaces_before = std::fs::read_dir(data.path().join("workspaces"))?.count();
        let (stop, done) = tokio::sync::watch::channel(false);
        let watcher = watch(&server, &done);
        let attack = async {
            let mut answers = Vec::new();
            for path in [
                "/v1/workspaces/import?max_files=100000",
                "/v1/snapshots?max_files=100000",
            ] {
                let mut tcp = server.connect_from(local(1)).await?;
                let head = head_with(
                    &server.token,
                    "POST",
                    path,
                    archive.len(),
                    "application/json",
                )
                .replace(
                    "Content-Type: application/json",
                    "Content-Type: application/zstd",
                );
                tcp.write_all(head.as_bytes()).await?;
                // the server may answer (and close) before it read everything
                let _ = tcp.write_all(&archive).await;
                let mut answer = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut answer))
                    .await;
                answers.push(String::from_utf8_lossy(&answer).into_owned());
            }
            let _ = stop.send(true);
            Ok::<_, anyhow::Error>(answers)
        };
        let (watched, answers) = tokio::join!(watcher, attack);
        let (worst, peak_rss) = watched?;
        let answers = answers?;
        let on_disk = du(&data.path().join("workspaces")) + du(&data.path().join("blobs"));
        println!(
            "tiny files import: answers {:?}, disk under workspaces and blobs {:.1} MiB, victim \
             health worst {worst:?}, server RSS peak {:.1} MiB",
            answers
                .iter()
                .map(|a| a.lines().next().unwrap_or_default())
                .collect::<Vec<_>>(),
            mib(on_disk),
            mib(peak_rss)
        );
        for answer in &answers {
            assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
            assert!(answer.contains("disk_quota_exceeded"), "{answer}");
        }
        assert!(on_disk < QUOTA + QUOTA / 10, "{on_disk}");
        assert!(worst < LATENCY_FLOOR, "{worst:?}");
        assert!(peak_rss < RSS_FLOOR, "{peak_rss}");
        // nothing of the import left: no workspace, no scratch tree, no snapshot
        assert_eq!(
            std::fs::read_dir(data.path().join("workspaces"))?.count(),
            workspaces_before
        );
        let (_, list) = json_as(&server, &server.token, "GET", "/v1/snapshots", json!({})).await?;
        assert_eq!(list["snapshots"], json!([]), "{list}");
        let kept = std::fs::read(
            data.path()
                .join("workspaces")
                .join(&victim_ws)
                .join("notes.txt"),
        )?;
        assert_eq!(kept, victim_content);
        Ok(())
    })
}
