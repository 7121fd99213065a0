//! Named volumes over real HTTP on a real btrfs pool: per tenant, checked
//! names and quotas, a quota the kernel enforces (EDQUOT), a pool mounted
//! again after a restart, delete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::path::Path;

use anyhow::{Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send};
use paddock_test_support::require::{Need, skip_or_fail};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    volumes_are_per_tenant_and_their_quota_is_the_kernels,
    the_pool_is_mounted_again_after_a_restart,
);

pub(crate) const POOL_BYTES: u64 = 512 << 20;
/// Linux's "Disk quota exceeded".
pub(crate) const EDQUOT: i32 = 122;

/// Whether this host can hold a btrfs pool (mkfs.btrfs from btrfs-progs).
pub(crate) fn btrfs_missing(what: &str) -> Result<bool> {
    let found = std::process::Command::new("mkfs.btrfs")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip_or_fail(
            Need::Loop,
            what,
            "mkfs.btrfs is not installed (btrfs-progs)",
        )?;
    }
    Ok(!found)
}

/// Unmounts the pool when the test ends, pass or fail (its loop device goes
/// with it: mount -o loop sets autoclear).
pub(crate) struct Unmount(pub(crate) std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

pub(crate) fn setup(db: Db, data: &Path) -> Setup {
    let mut setup = Setup::new(db, data);
    setup.volume_pool_bytes = Some(POOL_BYTES);
    setup
}

/// Writes `bytes` into `path` and syncs it.
pub(crate) fn write(path: &Path, bytes: usize) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(&vec![7u8; bytes])?;
    file.sync_all()
}

async fn volumes_are_per_tenant_and_their_quota_is_the_kernels(db: Db) -> Result<()> {
    if btrfs_missing("volumes_are_per_tenant")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;

    let (status, created) = send(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "cache", "quota_bytes": 8 << 20})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {created}");
    assert_eq!(created["name"], "cache");
    assert_eq!(created["quota_bytes"], 8 << 20);
    assert_eq!(created.get("used_bytes"), None, "{created}");

    expect_error(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "cache", "quota_bytes": 8 << 20})),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "../etc", "quota_bytes": 8 << 20})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "tiny", "quota_bytes": 1024})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/volumes/..%2Fetc"),
        StatusCode::BAD_REQUEST,
        "invalid_id",
    )
    .await?;

    // b sees none of a's
    let (_, listed) = send(server.b(Method::GET, "/v1/volumes")).await?;
    assert_eq!(listed, json!({"volumes": [], "next_after": null}));
    for method in [Method::GET, Method::DELETE] {
        expect_error(
            server.b(method, "/v1/volumes/cache"),
            StatusCode::NOT_FOUND,
            "volume_not_found",
        )
        .await?;
    }
    let (_, listed) = send(server.a(Method::GET, "/v1/volumes")).await?;
    assert_eq!(listed["volumes"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["volumes"][0]["name"], "cache");

    // The kernel holds the quota: a write past it fails with EDQUOT.
    let dir = data
        .path()
        .join("volumes/mnt")
        .join(server.setup.tenants.a.as_str())
        .join("cache");
    write(&dir.join("small"), 1 << 20)?;
    let err = write(&dir.join("big"), 16 << 20).expect_err("a write past the quota");
    assert_eq!(err.raw_os_error(), Some(EDQUOT), "{err}");
    let (_, got) = send(server.a(Method::GET, "/v1/volumes/cache")).await?;
    let used = got["used_bytes"].as_u64().unwrap();
    ensure!((1 << 20..=8 << 20).contains(&used), "{got}");

    let (status, deleted) = send(server.a(Method::DELETE, "/v1/volumes/cache")).await?;
    ensure!(status == StatusCode::OK, "{status} {deleted}");
    assert!(!dir.exists());
    expect_error(
        server.a(Method::GET, "/v1/volumes/cache"),
        StatusCode::NOT_FOUND,
        "volume_not_found",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

async fn the_pool_is_mounted_again_after_a_restart(db: Db) -> Result<()> {
    if btrfs_missing("the_pool_is_mounted_again")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let mount = data.path().join("volumes/mnt");
    let _unmount = Unmount(mount.clone());
    let server = TestServer::start(setup(db, data.path())).await?;
    let tenant = server.setup.tenants.a.clone();
    let (status, body) = send(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": "keep", "quota_bytes": 4 << 20})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {body}");
    let file = mount.join(tenant.as_str()).join("keep/kept.txt");
    std::fs::write(&file, "still here")?;
    let again = server.stop().await?;

    // The host restarted: the pool is no longer mounted.
    let umounted = std::process::Command::new("umount").arg(&mount).status()?;
    ensure!(umounted.success());
    assert!(!file.exists());

    let server = TestServer::start(again).await?;
    let (status, got) = send(server.a(Method::GET, "/v1/volumes/keep")).await?;
    ensure!(status == StatusCode::OK, "{status} {got}");
    assert_eq!(std::fs::read_to_string(&file)?, "still here");
    // its quota came back with it
    let err = write(&file.with_file_name("big"), 8 << 20).expect_err("past the quota");
    assert_eq!(err.raw_os_error(), Some(EDQUOT), "{err}");
    server.stop().await?;
    Ok(())
}
