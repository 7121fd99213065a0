//! Volume snapshots over real HTTP on a real btrfs pool: a snapshot is
//! frozen while its volume changes, a volume made from it holds the old
//! content under its own quota, the bytes a snapshot holds alone count in
//! the tenant's disk usage, and a volume with snapshots is not deleted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::volumes::{EDQUOT, Unmount, btrfs_missing, setup, write};

use std::path::Path;

use anyhow::{Result, ensure};
use common::{Db, TestServer, expect_error, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(a_snapshot_is_frozen_and_seeds_a_new_volume);

/// Commits the pool's transaction: btrfs counts qgroups at commit.
fn sync_pool(mount: &Path) -> Result<()> {
    let status = std::process::Command::new("btrfs")
        .args(["filesystem", "sync"])
        .arg(mount)
        .status()?;
    ensure!(
        status.success(),
        "btrfs filesystem sync {}",
        mount.display()
    );
    Ok(())
}

async fn a_snapshot_is_frozen_and_seeds_a_new_volume(db: Db) -> Result<()> {
    if btrfs_missing("a_snapshot_is_frozen")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let mount = data.path().join("volumes/mnt");
    let _unmount = Unmount(mount.clone());
    let server = TestServer::start(setup(db, data.path())).await?;
    let tenant = mount.join(server.setup.tenants.a.as_str());

    let (status, body) = send(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "data", "quota_bytes": 16 << 20})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {body}");
    let volume = tenant.join("data");
    std::fs::write(volume.join("note.txt"), "monday")?;
    write(&volume.join("blob"), 2 << 20)?;

    let (status, taken) = send(
        server
            .a(Method::POST, "/v1/volumes/data/snapshots")
            .json(&json!({"name": "monday"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {taken}");
    assert_eq!(
        (&taken["volume"], &taken["name"]),
        (&json!("data"), &json!("monday"))
    );
    expect_error(
        server
            .a(Method::POST, "/v1/volumes/data/snapshots")
            .json(&json!({"name": "monday"})),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/volumes/nope/snapshots")
            .json(&json!({"name": "x"})),
        StatusCode::NOT_FOUND,
        "volume_not_found",
    )
    .await?;

    // The volume changes; the snapshot does not, and cannot be written.
    std::fs::write(volume.join("note.txt"), "tuesday")?;
    write(&volume.join("blob"), 2 << 20)?;
    std::fs::write(volume.join("new.txt"), "only tuesday")?;
    let frozen = tenant.join(".snapshots/data/monday");
    assert_eq!(std::fs::read_to_string(frozen.join("note.txt"))?, "monday");
    assert!(!frozen.join("new.txt").exists());
    let err = std::fs::write(frozen.join("note.txt"), "x").expect_err("a read-only snapshot");
    assert_eq!(err.raw_os_error(), Some(30), "EROFS: {err}");

    // The blocks the volume no longer shares are the snapshot's alone,
    // and the tenant's disk usage counts them.
    sync_pool(&mount)?;
    let (status, listed) = send(server.a(Method::GET, "/v1/volumes/data/snapshots")).await?;
    ensure!(status == StatusCode::OK, "{status} {listed}");
    assert_eq!(
        listed["snapshots"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let alone = listed["snapshots"][0]["exclusive_bytes"].as_u64().unwrap();
    ensure!(alone >= 2 << 20, "{listed}");
    let used = server.service.measure_disk(&server.setup.tenants.a).await?;
    ensure!(used.volume_snapshots >= 2 << 20, "{used:?}");

    // Another tenant sees none of it.
    expect_error(
        server.b(Method::GET, "/v1/volumes/data/snapshots"),
        StatusCode::NOT_FOUND,
        "volume_not_found",
    )
    .await?;
    expect_error(
        server.b(Method::POST, "/v1/volumes").json(&json!({
            "name": "stolen", "quota_bytes": 4 << 20,
            "from_snapshot": {"volume": "data", "snapshot": "monday"},
        })),
        StatusCode::NOT_FOUND,
        "volume_snapshot_not_found",
    )
    .await?;

    // A volume made from the snapshot holds Monday's content, writable,
    // under its own quota.
    let (status, body) = send(server.a(Method::POST, "/v1/volumes").json(&json!({
        "name": "copy", "quota_bytes": 4 << 20,
        "from_snapshot": {"volume": "data", "snapshot": "monday"},
    })))
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {body}");
    let copy = tenant.join("copy");
    assert_eq!(std::fs::read_to_string(copy.join("note.txt"))?, "monday");
    assert!(!copy.join("new.txt").exists());
    std::fs::write(copy.join("note.txt"), "copy's own")?;
    assert_eq!(std::fs::read_to_string(frozen.join("note.txt"))?, "monday");
    let err = write(&copy.join("big"), 8 << 20).expect_err("a write past the copy's quota");
    assert_eq!(err.raw_os_error(), Some(EDQUOT), "{err}");

    // A volume with snapshots stays until they are deleted.
    expect_error(
        server.a(Method::DELETE, "/v1/volumes/data"),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    assert!(volume.join("note.txt").exists());
    let (status, body) =
        send(server.a(Method::DELETE, "/v1/volumes/data/snapshots/monday")).await?;
    ensure!(status == StatusCode::OK, "{status} {body}");
    assert!(!frozen.exists());
    let (status, body) = send(server.a(Method::DELETE, "/v1/volumes/data")).await?;
    ensure!(status == StatusCode::OK, "{status} {body}");
    // the copy does not depend on the snapshot it came from
    assert_eq!(
        std::fs::read_to_string(copy.join("note.txt"))?,
        "copy's own"
    );
    server.stop().await?;
    Ok(())
}
