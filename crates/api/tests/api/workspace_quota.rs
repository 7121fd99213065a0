//! A persistent workspace's quota over real HTTP on a real btrfs pool and
//! real jailed sandboxes (native): a workspace made with `quota_bytes` is a
//! subvolume with a qgroup limit, and a write past it fails inside the
//! sandbox with "Disk quota exceeded"; an agent run in a session on it
//! works on the same files under the same quota; a quota the workspace
//! cannot hold (no subvolume, or a looser limit than asked) still refuses
//! the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::sessions::{complete_turn, create_session, script, start_run, wait_run};
use crate::volumes::{Unmount, btrfs_missing, setup};

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    a_workspace_quota_is_the_kernels_inside_the_sandbox,
    a_workspace_quota_needs_the_volume_pool,
);

const QUOTA: u64 = 8 << 20;

async fn a_workspace_quota_is_the_kernels_inside_the_sandbox(db: Db) -> Result<()> {
    if btrfs_missing("a_workspace_quota_is_the_kernels")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;

    let (status, created) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "held", "quota_bytes": QUOTA})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {created}");
    assert_eq!(created["quota_bytes"], QUOTA, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (_, got) = send(server.a(Method::GET, &format!("/v1/workspaces/{id}"))).await?;
    assert_eq!(got["quota_bytes"], QUOTA, "{got}");
    let dir = data
        .path()
        .join("volumes/mnt")
        .join(server.setup.tenants.a.as_str())
        .join(".workspaces")
        .join(&id);
    assert!(
        dir.is_dir(),
        "the workspace is in the pool: {}",
        dir.display()
    );
    expect_error(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "tiny", "quota_bytes": 1024})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;

    // A sandbox asking for the same quota gets it, from the kernel.
    let (status, body) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({
        "workspace": id,
        "limits": {"workspace_bytes": QUOTA},
    })))
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {body}");
    let sandbox = body["id"].as_str().unwrap().to_owned();
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{sandbox}/exec"))
            .json(
                &json!({"shell": "dd if=/dev/zero of=/workspace/big bs=1M count=32 2>&1; \
                                   echo dd=$?; sync; stat -c size=%s /workspace/big"}),
            ),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {out}");
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(stdout.contains("Disk quota exceeded"), "{out}");
    assert!(stdout.contains("dd=1"), "{out}");
    let written = std::fs::metadata(dir.join("big"))?.len();
    ensure!(
        written <= QUOTA,
        "{written} bytes reached the host past the quota"
    );
    let (status, body) =
        send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;
    ensure!(status == StatusCode::OK, "{status} {body}");

    // A tighter quota than the workspace's is not what the kernel holds.
    let (status, body) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({
        "workspace": id,
        "limits": {"workspace_bytes": QUOTA / 2},
    })))
    .await?;
    ensure!(
        status == StatusCode::SERVICE_UNAVAILABLE
            && body["error"]["code"] == "sandbox_start_failed",
        "{status} {body}"
    );
    // Nor is any quota on a workspace made without one.
    let (_, plain) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "plain"})),
    )
    .await?;
    assert_eq!(plain.get("quota_bytes"), None, "{plain}");
    let (status, body) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({
        "workspace": plain["id"],
        "limits": {"workspace_bytes": QUOTA},
    })))
    .await?;
    ensure!(
        status == StatusCode::SERVICE_UNAVAILABLE
            && body["error"]["code"] == "sandbox_start_failed",
        "{status} {body}"
    );

    // The workspace's bytes count in the tenant's disk usage, and go with it.
    let used = server.service.measure_disk(&server.setup.tenants.a).await?;
    ensure!(used.workspaces >= written, "{used:?} (wrote {written})");
    // A run in a session on the workspace sees the sandbox's files (the
    // pool's directory, not one of its own) under the same quota.
    std::fs::remove_file(dir.join("big"))?;
    // the qgroup gives the space back when the transaction commits
    let synced = std::process::Command::new("sync")
        .arg("-f")
        .arg(&dir)
        .status()?;
    ensure!(synced.success(), "sync -f {}", dir.display());
    std::fs::write(dir.join("seed.txt"), "planted\n")?;
    let session = create_session(&server, &id, "held").await?;
    let run = start_run(
        &server,
        session["id"].as_str().context("session id")?,
        json!({"goal": "fill the disk", "model": script(json!([
            {"tool_calls": [{"name": "run_command", "arguments": {"command":
                "cat seed.txt; dd if=/dev/zero of=big2 bs=1M count=32 2>&1; echo dd=$?"}}]},
            complete_turn(),
        ]))}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_owned();
    let ended = wait_run(&server, &run_id).await?;
    assert_eq!(ended["state"], "completed", "{ended}");
    let invocations = server
        .store
        .list_tool_invocations(
            &server.setup.tenants.a,
            &paddock_core::ids::RunId::parse(&run_id)?,
        )
        .await?;
    let output = invocations
        .iter()
        .find(|i| i.tool == "run_command")
        .and_then(|i| i.output.clone())
        .unwrap_or_default();
    assert!(output.contains("planted"), "{output}");
    assert!(output.contains("Disk quota exceeded"), "{output}");
    assert!(output.contains("dd=1"), "{output}");
    let big2 = std::fs::metadata(dir.join("big2"))?.len();
    ensure!(
        big2 <= QUOTA,
        "{big2} bytes reached the host past the quota"
    );
    let sid = session["id"].as_str().context("session id")?;
    let (status, body) = send(
        server
            .a(Method::PATCH, &format!("/v1/sessions/{sid}"))
            .json(&json!({"archived": true})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {body}");

    let (status, body) = send(server.a(Method::DELETE, &format!("/v1/workspaces/{id}"))).await?;
    ensure!(status == StatusCode::OK, "{status} {body}");
    assert!(!dir.exists(), "the subvolume is gone");
    server.stop().await?;
    Ok(())
}

async fn a_workspace_quota_needs_the_volume_pool(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    expect_error(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "held", "quota_bytes": QUOTA})),
        StatusCode::SERVICE_UNAVAILABLE,
        "volumes_unavailable",
    )
    .await?;
    let (_, listed) = send(server.a(Method::GET, "/v1/workspaces")).await?;
    assert_eq!(
        listed["workspaces"],
        json!([]),
        "nothing half made: {listed}"
    );
    server.stop().await?;
    Ok(())
}
