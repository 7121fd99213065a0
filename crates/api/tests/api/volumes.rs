//! Named volumes over real HTTP on a real btrfs pool: per tenant, checked
//! names and quotas, a quota the kernel enforces (EDQUOT), a pool mounted
//! again after a restart, delete; mounted into native sandboxes: the mount
//! rule, one read-write mount or many read-only ones (the lease), the quota
//! inside, a volume in use kept from deletion, leases freed after a crash.
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
    volume_mounts_are_checked_before_a_sandbox_starts,
    a_volume_has_one_writer_many_readers_and_outlives_its_sandboxes,
    a_lost_sandbox_leaves_no_volume_lease_and_a_paused_one_keeps_its_volume,
    a_delete_racing_a_start_never_leaves_a_sandbox_on_a_deleted_volume,
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

async fn create_volume(server: &TestServer, name: &str, quota: u64) -> Result<()> {
    let (status, body) = send(
        server
            .a(Method::POST, "/v1/volumes")
            .json(&json!({"name": name, "quota_bytes": quota})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {body}");
    Ok(())
}

/// Runs `script` in the sandbox; its exit code and stdout+stderr.
async fn sh(server: &TestServer, id: &str, script: &str) -> Result<(i64, String)> {
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"argv": ["sh", "-c", script]})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {out}");
    let text = format!(
        "{}{}",
        out["stdout"].as_str().unwrap_or_default(),
        out["stderr"].as_str().unwrap_or_default()
    );
    Ok((out["exit_code"].as_i64().unwrap_or(-1), text))
}

async fn delete_sandbox(server: &TestServer, id: &str) -> Result<()> {
    let (status, body) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    ensure!(status.is_success(), "{status} {body}");
    Ok(())
}

async fn volume_mounts_are_checked_before_a_sandbox_starts(db: Db) -> Result<()> {
    if btrfs_missing("volume_mounts_are_checked")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;
    create_volume(&server, "cache", 4 << 20).await?;
    create_volume(&server, "other", 4 << 20).await?;
    for (volumes, says) in [
        (
            json!([{"name": "cache", "path": "/workspace"}]),
            "workspace",
        ),
        (json!([{"name": "cache", "path": "/etc/cache"}]), "identity"),
        (json!([{"name": "cache", "path": "/"}]), "root filesystem"),
        (json!([{"name": "cache", "path": "cache"}]), "not absolute"),
        (
            json!([{"name": "cache", "path": "/a/../etc"}]),
            "normalized",
        ),
        (
            json!([{"name": "cache", "path": "/a"}, {"name": "cache", "path": "/b"}]),
            "twice",
        ),
        (
            json!([{"name": "cache", "path": "/a"}, {"name": "other", "path": "/a/b"}]),
            "overlap",
        ),
        (
            json!([{"name": "../x", "path": "/a"}]),
            "invalid volume name",
        ),
    ] {
        let refused = expect_error(
            server
                .a(Method::POST, "/v1/sandboxes")
                .json(&json!({"volumes": volumes})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        ensure!(message.contains(says), "{volumes}: {refused}");
    }
    // a volume the tenant does not have, or another tenant's, is not found
    expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"volumes": [{"name": "missing", "path": "/data"}]})),
        StatusCode::NOT_FOUND,
        "volume_not_found",
    )
    .await?;
    expect_error(
        server
            .b(Method::POST, "/v1/sandboxes")
            .json(&json!({"volumes": [{"name": "cache", "path": "/data"}]})),
        StatusCode::NOT_FOUND,
        "volume_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"volumes": [{"name": "cache", "path": "/data", "mode": "rw"}]})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    // nothing started, nothing leased: a read-write mount still goes
    let id = server
        .create_sandbox(json!({"volumes": [{"name": "cache", "path": "/data"}]}))
        .await?;
    delete_sandbox(&server, &id).await?;
    server.stop().await?;
    Ok(())
}

async fn a_volume_has_one_writer_many_readers_and_outlives_its_sandboxes(db: Db) -> Result<()> {
    if btrfs_missing("a_volume_has_one_writer")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;
    create_volume(&server, "data", 4 << 20).await?;

    let (status, writer) = send(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"volumes": [{"name": "data", "path": "/srv/data"}]})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {writer}");
    assert_eq!(
        writer["volumes"],
        json!([{"name": "data", "path": "/srv/data", "read_only": false}])
    );
    let writer = writer["id"].as_str().unwrap().to_owned();
    let (code, out) = sh(
        &server,
        &writer,
        "echo kept > /srv/data/note && cat /srv/data/note",
    )
    .await?;
    ensure!(code == 0 && out.trim() == "kept", "{code} {out}");
    // the kernel's quota holds inside
    let (code, out) = sh(
        &server,
        &writer,
        "dd if=/dev/zero of=/srv/data/big bs=1M count=8 conv=fsync 2>&1; echo rc=$?",
    )
    .await?;
    ensure!(
        code == 0 && out.contains("quota exceeded") && !out.contains("rc=0"),
        "{out}"
    );
    sh(&server, &writer, "rm -f /srv/data/big").await?;

    // a second read-write mount is refused naming the holder; readers go
    let refused = expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"volumes": [{"name": "data", "path": "/data"}]})),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    ensure!(message.contains(&writer), "{refused}");
    let reader = server
        .create_sandbox(json!({"volumes": [{"name": "data", "path": "/data", "read_only": true}]}))
        .await?;
    let (code, out) = sh(
        &server,
        &reader,
        "cat /data/note; touch /data/x 2>&1; echo rc=$?",
    )
    .await?;
    ensure!(
        code == 0 && out.contains("kept") && out.contains("Read-only file system"),
        "{out}"
    );
    ensure!(!out.contains("rc=0"), "{out}");
    let second_reader = server
        .create_sandbox(json!({"volumes": [{"name": "data", "path": "/data", "read_only": true}]}))
        .await?;

    // in use: not deleted
    let refused = expect_error(
        server.a(Method::DELETE, "/v1/volumes/data"),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    ensure!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("mounts it"),
        "{refused}"
    );

    // the writer gone, another may write, and finds what it left
    delete_sandbox(&server, &writer).await?;
    let next = server
        .create_sandbox(json!({"volumes": [{"name": "data", "path": "/data"}]}))
        .await?;
    let (code, out) = sh(
        &server,
        &next,
        "cat /data/note && echo more >> /data/note && cat /data/note",
    )
    .await?;
    ensure!(code == 0 && out == "kept\nkept\nmore\n", "{code} {out:?}");
    // on disk every file is the volume owner's, whichever sandbox wrote it
    let note = data
        .path()
        .join("volumes/mnt")
        .join(server.setup.tenants.a.as_str())
        .join("data/note");
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&note)?);
    assert_eq!(owner, paddock_proto::VOLUME_OWNER_ID);
    for id in [&next, &reader, &second_reader] {
        delete_sandbox(&server, id).await?;
    }
    // the volume outlived them all, and may go now
    let (status, got) = send(server.a(Method::GET, "/v1/volumes/data")).await?;
    ensure!(status == StatusCode::OK, "{status} {got}");
    let (status, deleted) = send(server.a(Method::DELETE, "/v1/volumes/data")).await?;
    ensure!(status == StatusCode::OK, "{status} {deleted}");
    server.stop().await?;
    Ok(())
}

async fn a_lost_sandbox_leaves_no_volume_lease_and_a_paused_one_keeps_its_volume(
    db: Db,
) -> Result<()> {
    if btrfs_missing("a_lost_sandbox_leaves_no_volume_lease")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;
    create_volume(&server, "data", 4 << 20).await?;
    let rw = json!({"volumes": [{"name": "data", "path": "/data"}]});
    let first = server.create_sandbox(rw.clone()).await?;
    sh(&server, &first, "echo one > /data/f").await?;

    // a crash: the record says running, the lease is still held
    let setup = server.crash().await;
    let server = TestServer::start(setup).await?;
    assert_eq!(server.reconciled.lost.len(), 1);
    // reconciliation freed the lost sandbox's lease at once (not after its ttl)
    let second = server.create_sandbox(rw.clone()).await?;
    let (code, out) = sh(&server, &second, "cat /data/f").await?;
    ensure!(code == 0 && out == "one\n", "{code} {out:?}");

    // paused: it keeps the volume from deletion, and has it again resumed
    let (status, paused) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{second}/pause"))
            .json(&json!({})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {paused}");
    assert_eq!(paused["volumes"][0]["name"], "data");
    let refused = expect_error(
        server.a(Method::DELETE, "/v1/volumes/data"),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    ensure!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("paused"),
        "{refused}"
    );
    // and its lease: no other writer meanwhile
    expect_error(
        server.a(Method::POST, "/v1/sandboxes").json(&rw),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    let (status, resumed) =
        send(server.a(Method::POST, &format!("/v1/sandboxes/{second}/resume"))).await?;
    ensure!(status == StatusCode::OK, "{status} {resumed}");
    let (code, out) = sh(&server, &second, "echo two >> /data/f && cat /data/f").await?;
    ensure!(code == 0 && out == "one\ntwo\n", "{code} {out:?}");
    // resumed, it holds the lease again
    expect_error(
        server.a(Method::POST, "/v1/sandboxes").json(&rw),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    delete_sandbox(&server, &second).await?;
    server.stop().await?;
    Ok(())
}

/// A delete sent while a sandbox that mounts the volume is starting waits
/// for it: either the start stored its row first and the delete is refused
/// naming it, or the delete went first and the start finds no volume. A
/// sandbox running on a deleted volume is never the outcome.
async fn a_delete_racing_a_start_never_leaves_a_sandbox_on_a_deleted_volume(db: Db) -> Result<()> {
    if btrfs_missing("a_delete_racing_a_start")? {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let _unmount = Unmount(data.path().join("volumes/mnt"));
    let server = TestServer::start(setup(db, data.path())).await?;
    for round in 0..4 {
        let name = format!("race{round}");
        create_volume(&server, &name, 4 << 20).await?;
        let start = send(
            server
                .a(Method::POST, "/v1/sandboxes")
                .json(&json!({"volumes": [{"name": name, "path": "/srv/data"}]})),
        );
        // the delete leaves a little after the start, round by round later
        let delete = async {
            tokio::time::sleep(std::time::Duration::from_millis(2 * round)).await;
            send(server.a(Method::DELETE, &format!("/v1/volumes/{name}"))).await
        };
        let ((started, sandbox), (deleted, answer)) = tokio::try_join!(start, delete)?;
        match (started, deleted) {
            (StatusCode::CREATED, StatusCode::CONFLICT) => {
                let id = sandbox["id"].as_str().unwrap();
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                ensure!(message.contains(id), "round {round}: {answer}");
                let (code, out) =
                    sh(&server, id, "echo ok > /srv/data/f && cat /srv/data/f").await?;
                ensure!(
                    code == 0 && out.trim() == "ok",
                    "round {round}: {code} {out}"
                );
                let (status, body) =
                    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
                ensure!(status == StatusCode::OK, "{status} {body}");
                let (status, body) =
                    send(server.a(Method::DELETE, &format!("/v1/volumes/{name}"))).await?;
                ensure!(status == StatusCode::OK, "{status} {body}");
            }
            (StatusCode::NOT_FOUND, StatusCode::OK) => {}
            other => anyhow::bail!("round {round}: {other:?}: {sandbox} / {answer}"),
        }
    }
    server.stop().await?;
    Ok(())
}
