//! Sandboxes over time: records survive a restart, a crash leaves them
//! `lost` and nothing on the host, a graceful stop leaves them `stopped`,
//! idle and too-old sandboxes expire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::Result;
use common::{
    Db, Setup, TestServer, cgroups_under, eventually, expect_error, guest_processes, send,
};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    records_survive_a_restart_and_running_ones_become_lost,
    a_graceful_stop_destroys_every_sandbox,
    idle_and_old_sandboxes_expire,
);

async fn state_of(server: &TestServer, id: &str) -> Result<String> {
    let (status, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(status, StatusCode::OK, "{got}");
    Ok(got["state"].as_str().unwrap().to_owned())
}

async fn records_survive_a_restart_and_running_ones_become_lost(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let stopped = server.create_sandbox(json!({})).await?;
    let running = server.create_sandbox(json!({"read_only": true})).await?;
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{stopped}"))).await?;
    let parent = server.setup.cgroup_parent();
    assert!(
        !guest_processes(&parent).is_empty(),
        "the running sandbox's processes"
    );

    let setup = server.crash().await;
    // What a crash leaves: records still say running (the handles died with
    // the process, and their sandboxes with them).
    assert!(
        eventually(Duration::from_secs(10), || guest_processes(&parent)
            .is_empty())
        .await
    );

    let server = TestServer::start(setup).await?;
    assert_eq!(server.reconciled.lost.len(), 1);
    assert_eq!(server.reconciled.lost[0].as_str(), running);
    assert_eq!(state_of(&server, &stopped).await?, "stopped");
    assert_eq!(state_of(&server, &running).await?, "lost");
    let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{running}"))).await?;
    assert_eq!(got["read_only"], true, "the spec survives: {got}");
    let (_, list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    assert_eq!(list["sandboxes"].as_array().unwrap().len(), 2);
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{running}/exec"))
            .json(&json!({"argv": ["true"]})),
        StatusCode::CONFLICT,
        "sandbox_not_running",
    )
    .await?;
    assert!(guest_processes(&parent).is_empty());
    assert!(
        cgroups_under(&parent).is_empty(),
        "{:?}",
        cgroups_under(&parent)
    );
    assert!(
        std::fs::read_dir(data.path().join("tmp"))?.next().is_none(),
        "temporary workspaces are gone"
    );

    // The restarted server makes new sandboxes as before.
    let fresh = server.create_sandbox(json!({})).await?;
    assert_eq!(state_of(&server, &fresh).await?, "running");
    server.stop().await?;
    Ok(())
}

async fn a_graceful_stop_destroys_every_sandbox(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let ids = [
        server.create_sandbox(json!({})).await?,
        server.create_sandbox(json!({})).await?,
    ];
    let parent = server.setup.cgroup_parent();
    // A background process and a long exec must not hold the stop up.
    send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{}/processes", ids[0]))
            .json(&json!({"argv": ["sleep", "600"]})),
    )
    .await?;
    let slow = server
        .a(Method::POST, &format!("/v1/sandboxes/{}/exec", ids[1]))
        .json(&json!({"argv": ["sleep", "600"]}))
        .send();
    let slow = tokio::spawn(slow);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = std::time::Instant::now();
    let setup = server.stop().await?;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stop took {:?}",
        started.elapsed()
    );
    let answered = slow.await?;
    if let Ok(response) = answered {
        assert_ne!(response.status(), StatusCode::OK);
    }
    assert!(guest_processes(&parent).is_empty());
    assert!(
        cgroups_under(&parent).is_empty(),
        "{:?}",
        cgroups_under(&parent)
    );

    let server = TestServer::start(setup).await?;
    assert!(server.reconciled.lost.is_empty(), "{:?}", server.reconciled);
    for id in &ids {
        assert_eq!(state_of(&server, id).await?, "stopped");
    }
    server.stop().await?;
    Ok(())
}

async fn idle_and_old_sandboxes_expire(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.idle_timeout = Duration::from_millis(1500);
    let server = TestServer::start(setup).await?;
    let idle = server.create_sandbox(json!({})).await?;
    let busy = server.create_sandbox(json!({})).await?;

    // A request that runs longer than the idle timeout keeps its sandbox.
    let (_, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{busy}/exec"))
            .json(&json!({"argv": ["sleep", "2.5"]})),
    )
    .await?;
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(state_of(&server, &busy).await?, "running");
    assert_eq!(
        state_of(&server, &idle).await?,
        "stopped",
        "idle for 2.5 s with a 1.5 s timeout"
    );

    // Activity reaches the store (the expiry task writes it).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy_id = paddock_core::sandbox::SandboxId::parse(&busy)?;
    let record = server
        .store
        .get_sandbox(&server.setup.tenants.a, &busy_id)
        .await?;
    assert!(
        record.last_active_at.as_millis() >= record.created_at.as_millis() + 2000,
        "{record:?}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(state_of(&server, &busy).await?, "stopped");
    server.stop().await?;

    // Max lifetime: ends a sandbox in use.
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.max_lifetime = Duration::from_millis(1500);
    let server = TestServer::start(setup).await?;
    let id = server.create_sandbox(json!({})).await?;
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"argv": ["sleep", "30"]})),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{out}");
    assert_eq!(out["error"]["code"], "sandbox_not_running");
    assert_eq!(state_of(&server, &id).await?, "stopped");
    let parent = server.setup.cgroup_parent();
    assert!(
        eventually(Duration::from_secs(5), || guest_processes(&parent)
            .is_empty())
        .await
    );
    server.stop().await?;
    Ok(())
}
