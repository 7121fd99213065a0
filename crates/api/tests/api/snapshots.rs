//! Snapshots over real HTTP with real jailed sandboxes: snapshot -> restore,
//! fork isolation, read-only restores, lineage, hostile imports, limits,
//! archive download/import into a second server, tenant isolation, and blob
//! collection (shared blobs, the grace period, deletes racing reads).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send};
use futures_util::StreamExt;
use paddock_core::ids::WorkspaceId;
use paddock_core::store::Session;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    snapshot_restore_and_fork,
    hostile_imports_are_refused_naming_the_entry,
    snapshots_are_per_tenant,
    read_only_restores_refuse_every_write,
    snapshots_record_their_parent_and_session,
    limits_fail_the_snapshot_and_keep_the_last_one,
    thousands_of_entries_move_to_a_second_server,
    blobs_are_collected_when_no_row_names_them,
    a_delete_does_not_cut_a_download_or_a_restore_short,
    the_disk_quota_holds_imports_and_restores_and_workspaces_can_be_deleted,
    a_failed_restore_leaves_no_workspace,
    workspaces_come_from_archives_and_go_back_as_archives,
);

async fn sh(server: &TestServer, id: &str, script: &str) -> Result<String> {
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": script})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{script}: {status} {out}");
    ensure!(out["exit_code"] == 0, "{script}: {out}");
    Ok(out["stdout"].as_str().unwrap_or_default().to_owned())
}

/// A directory's size is its file system's (a temporary workspace is a
/// tmpfs, a restored one the host's directory), not the snapshot's: "-".
const LISTING: &str = "find . -mindepth 1 \\( -type d -printf '%p %y %m - %l\\n' \
                       -o -printf '%p %y %m %s %l\\n' \\) | sort; \
                       find . -type f -exec md5sum {} + | sort";

/// Like [`LISTING`], with mtimes and names that need quoting.
const FULL_LISTING: &str = "find . -mindepth 1 \\( -type d -printf '%p|%y|%m|-|%l|%T@\\n' \
                            -o -printf '%p|%y|%m|%s|%l|%T@\\n' \\) | sort; \
                            find . -type f -print0 | xargs -0 md5sum | sort";

/// Exec that must fail; answers its stderr.
async fn sh_fails(server: &TestServer, id: &str, script: &str) -> Result<String> {
    let (status, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": script})),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{script}: {status} {out}");
    ensure!(out["exit_code"] != 0, "{script} succeeded: {out}");
    Ok(out["stderr"].as_str().unwrap_or_default().to_owned())
}

async fn snapshot(server: &TestServer, sandbox: &str, body: Value) -> Result<Value> {
    let (status, snap) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{sandbox}/snapshots"))
            .json(&body),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "snapshot: {status} {snap}");
    Ok(snap)
}

/// Restores as tenant a; answers the new sandboxes' ids.
async fn restore(server: &TestServer, snap: &str, body: Value) -> Result<Vec<String>> {
    let (status, restored) = send(
        server
            .a(Method::POST, &format!("/v1/snapshots/{snap}/restore"))
            .json(&body),
    )
    .await?;
    ensure!(
        status == StatusCode::CREATED,
        "restore: {status} {restored}"
    );
    Ok(restored["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect())
}

async fn snapshot_ids(server: &TestServer) -> Result<Vec<String>> {
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    Ok(list["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect())
}

fn blob_path(data: &Path, hash: &str) -> PathBuf {
    data.join("blobs").join(&hash[..2]).join(hash)
}

/// Makes a blob look written long ago (older than any grace period).
fn backdate_blob(data: &Path, hash: &str) {
    let file = std::fs::File::options()
        .write(true)
        .open(blob_path(data, hash))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(24 * 3600))
        .unwrap();
}

async fn snapshot_restore_and_fork(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(
        &server,
        &source,
        "mkdir -p src/a empty node_modules/x && echo hello > src/a/f.txt && \
         printf '#!/bin/sh\\n' > run.sh && chmod 751 run.sh && ln -s src/a/f.txt link && \
         echo junk > node_modules/x/i.js",
    )
    .await?;
    let (status, snap) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{source}/snapshots"))
            .json(&json!({"excludes": ["*.log"]})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{snap}");
    let snap_id = snap["id"].as_str().unwrap().to_owned();
    assert_eq!(snap["source_sandbox"], json!(source));
    assert_eq!(snap["excludes"], json!(["*.log"]));
    assert_eq!(snap["blob_hash"].as_str().unwrap().len(), 64);

    let (status, got) = send(server.a(Method::GET, &format!("/v1/snapshots/{snap_id}"))).await?;
    assert_eq!((status, &got), (StatusCode::OK, &snap));
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([snap]));

    // Restore: the same tree, without the excluded directory.
    let expected = sh(&server, &source, &format!("rm -rf node_modules; {LISTING}")).await?;
    let (status, restored) = send(
        server
            .a(Method::POST, &format!("/v1/snapshots/{snap_id}/restore"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{restored}");
    let one = restored["sandboxes"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(sh(&server, &one, LISTING).await?, expected);

    // Fork into 3: a write in one is seen by none of the others.
    let (status, forked) = send(
        server
            .a(Method::POST, &format!("/v1/snapshots/{snap_id}/restore"))
            .json(&json!({"count": 3})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{forked}");
    let forks: Vec<String> = forked["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(forks.len(), 3);
    sh(
        &server,
        &forks[0],
        "echo changed > src/a/f.txt && touch new",
    )
    .await?;
    assert_eq!(
        sh(&server, &forks[0], "cat src/a/f.txt").await?,
        "changed\n"
    );
    for other in &forks[1..] {
        assert_eq!(sh(&server, other, LISTING).await?, expected);
    }

    // Archive download, then import as a new snapshot: the same bytes.
    let response = server
        .a(Method::GET, &format!("/v1/snapshots/{snap_id}/archive"))
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let archive = response.bytes().await?;
    assert_eq!(
        archive.len() as u64,
        snap["bytes_compressed"].as_u64().unwrap()
    );
    let (status, imported) = send(
        server
            .a(Method::POST, "/v1/snapshots")
            .header("content-type", "application/zstd")
            .body(archive.to_vec()),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    assert_eq!(imported["blob_hash"], snap["blob_hash"]);
    assert_ne!(imported["id"], snap["id"]);

    // Deleted: gone for get and restore; the restored sandboxes keep running.
    let (status, _) = send(server.a(Method::DELETE, &format!("/v1/snapshots/{snap_id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(server.a(Method::GET, &format!("/v1/snapshots/{snap_id}"))).await?;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "snapshot_not_found");
    assert_eq!(sh(&server, &one, "cat src/a/f.txt").await?, "hello\n");
    server.stop().await?;
    Ok(())
}

/// A raw tar entry whose name the tar crate's safe setters would refuse.
fn entry(tar: &mut Vec<u8>, name: &[u8], kind: u8, link: &[u8], data: &[u8]) {
    entry_sized(tar, name, kind, link, data, data.len() as u64);
}

/// A raw tar entry declaring `size` bytes of data (whatever follows).
fn entry_sized(tar: &mut Vec<u8>, name: &[u8], kind: u8, link: &[u8], data: &[u8], size: u64) {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name);
    header[100..107].copy_from_slice(b"0000644");
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    header[136..147].copy_from_slice(b"00000000000");
    header[156] = kind;
    header[157..157 + link.len()].copy_from_slice(link);
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    tar.extend_from_slice(&header);
    tar.extend_from_slice(data);
    tar.extend(std::iter::repeat_n(0u8, (512 - data.len() % 512) % 512));
}

/// (name, type flag, link target, content) of one raw tar entry.
type RawEntry<'a> = (&'a [u8], u8, &'a [u8], &'a [u8]);

fn compressed(entries: &[RawEntry<'_>]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, kind, link, data) in entries {
        entry(&mut tar, name, *kind, link, data);
    }
    tar.extend([0u8; 1024]);
    zstd::encode_all(&tar[..], 3).unwrap()
}

async fn hostile_imports_are_refused_naming_the_entry(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            compressed(&[
                (b"ok.txt", b'0', b"", b"ok"),
                (b"../evil.txt", b'0', b"", b"x"),
            ]),
            "../evil.txt",
        ),
        (compressed(&[(b"/etc/evil", b'0', b"", b"x")]), "/etc/evil"),
        (
            compressed(&[
                (b"out", b'2', b"/etc", b""),
                (b"out/passwd", b'0', b"", b"x"),
            ]),
            "out",
        ),
        (compressed(&[(b"dev", b'3', b"", b"")]), "dev"),
        // Hardlinks out of the archive: up, absolute, or to a file never restored.
        (
            compressed(&[(b"up", b'1', b"../../../etc/passwd", b"")]),
            "up",
        ),
        (compressed(&[(b"abs", b'1', b"/etc/passwd", b"")]), "abs"),
        (
            compressed(&[(b"dir", b'5', b"", b""), (b"hl", b'1', b"dir", b"")]),
            "hl",
        ),
        // A fifo, and a write through a symlink that stays inside.
        (compressed(&[(b"pipe", b'6', b"", b"")]), "pipe"),
        (
            compressed(&[
                (b"d", b'5', b"", b""),
                (b"in", b'2', b"d", b""),
                (b"in/x", b'0', b"", b"x"),
            ]),
            "in/x",
        ),
        // A declared size of 8 GiB: refused before a byte is written.
        (
            {
                let mut tar = Vec::new();
                entry_sized(&mut tar, b"huge", b'0', b"", b"tiny", 0o77777777777);
                tar.extend([0u8; 1024]);
                zstd::encode_all(&tar[..], 3).unwrap()
            },
            "huge",
        ),
    ];
    for (archive, named) in cases {
        let (status, body) = send(
            server
                .a(Method::POST, "/v1/snapshots")
                .header("content-type", "application/zstd")
                .body(archive),
        )
        .await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{named}: {body}");
        assert_eq!(body["error"]["code"], "archive_refused", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{named:?}")),
            "{named}: {message}"
        );
    }
    // Truncated zstd.
    let mut truncated = compressed(&[(b"a.txt", b'0', b"", &[b'a'; 5000])]);
    truncated.truncate(truncated.len() / 2);
    let (status, body) = send(server.a(Method::POST, "/v1/snapshots").body(truncated)).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "archive_refused", "{body}");
    // Corrupted zstd: bytes flipped in the middle (the frame checksum or the
    // decoder notices).
    let mut corrupted = compressed(&[(b"a.txt", b'0', b"", &[b'a'; 50_000])]);
    let middle = corrupted.len() / 2;
    for byte in &mut corrupted[middle..middle + 8] {
        *byte ^= 0x5a;
    }
    let (status, body) = send(server.a(Method::POST, "/v1/snapshots").body(corrupted)).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "archive_refused", "{body}");
    // Not an archive at all.
    let (status, body) = send(
        server
            .a(Method::POST, "/v1/snapshots")
            .body(b"hello".to_vec()),
    )
    .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Nothing was recorded, nothing escaped.
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([]));
    assert!(!data.path().join("evil.txt").exists());
    assert!(!data.path().join("workspaces/evil.txt").exists());
    // Neither scratch trees nor blobs are left behind.
    let scratch: Vec<_> = std::fs::read_dir(data.path().join("workspaces"))
        .map(|dir| dir.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(scratch.is_empty(), "{scratch:?}");
    let blobs: Vec<_> = walk_files(&data.path().join("blobs"));
    assert!(blobs.is_empty(), "{blobs:?}");
    server.stop().await?;
    Ok(())
}

async fn snapshots_are_per_tenant(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(&server, &source, "echo secret > s.txt").await?;
    let (status, snap) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{source}/snapshots"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{snap}");
    let id = snap["id"].as_str().unwrap();

    // Tenant b sees none of it, and cannot snapshot a's sandbox.
    for (method, path, body) in [
        (Method::GET, format!("/v1/snapshots/{id}"), None),
        (Method::GET, format!("/v1/snapshots/{id}/archive"), None),
        (Method::DELETE, format!("/v1/snapshots/{id}"), None),
        (
            Method::POST,
            format!("/v1/snapshots/{id}/restore"),
            Some(json!({})),
        ),
        (
            Method::POST,
            format!("/v1/sandboxes/{source}/snapshots"),
            Some(json!({})),
        ),
    ] {
        let mut request = server.b(method.clone(), &path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let (status, body): (StatusCode, Value) = send(request).await?;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
    }
    let (_, list) = send(server.b(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([]));
    // Still there for a.
    let (status, _) = send(server.a(Method::GET, &format!("/v1/snapshots/{id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    server.stop().await?;
    Ok(())
}

/// Regular files under `dir`, recursively, except the blob store's lock file.
fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else if path.file_name().is_some_and(|n| n != "gc.lock") {
            files.push(path);
        }
    }
    files
}

async fn read_only_restores_refuse_every_write(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(
        &server,
        &source,
        "mkdir -p src/a empty && echo hello > src/a/f.txt && chmod 600 src/a/f.txt && \
         ln -s src/a/f.txt link && printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod 755 run.sh",
    )
    .await?;
    let expected = sh(&server, &source, LISTING).await?;
    let snap = snapshot(&server, &source, json!({})).await?;
    let snap_id = snap["id"].as_str().unwrap();

    let ids = restore(&server, snap_id, json!({"count": 2, "read_only": true})).await?;
    assert_eq!(ids.len(), 2);
    for id in &ids {
        let (_, view) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
        assert_eq!(view["read_only"], true, "{view}");
        assert_eq!(view["restored_from"], snap_id, "{view}");
        // Every file is there and readable, even the 0600 one.
        assert_eq!(sh(&server, id, LISTING).await?, expected);
        assert_eq!(
            sh(&server, id, "cat link && ./run.sh").await?,
            "hello\nran\n"
        );
        // No write of any kind goes through.
        for write in [
            "echo x >> src/a/f.txt",
            "touch new",
            "mkdir empty/sub",
            "rm src/a/f.txt",
            "mv run.sh moved.sh",
            "chmod 777 run.sh",
            "ln -s x newlink",
        ] {
            let stderr = sh_fails(&server, id, write).await?;
            assert!(
                stderr.contains("Read-only file system") || stderr.contains("Permission denied"),
                "{write}: {stderr}"
            );
        }
        assert_eq!(sh(&server, id, LISTING).await?, expected);
        // Nor through the file API.
        let (status, body) = send(
            server
                .a(Method::PUT, &format!("/v1/sandboxes/{id}/files/new.txt"))
                .body("x"),
        )
        .await?;
        assert!(status.is_client_error(), "{status} {body}");
    }
    // The restore's helper sandbox is neither running nor recorded.
    let (_, list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    let listed: Vec<&str> = list["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 3, "{list}");
    server.stop().await?;
    Ok(())
}

async fn snapshots_record_their_parent_and_session(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (status, workspace) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "lineage"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{workspace}");
    let workspace_id = WorkspaceId::parse(workspace["id"].as_str().unwrap())?;
    let session = Session::new(
        server.setup.tenants.a.clone(),
        workspace_id,
        "lineage test",
        server.store.now(),
    );
    server.store.create_session(&session).await?;

    let source = server
        .create_sandbox(json!({"workspace": workspace["id"]}))
        .await?;
    sh(&server, &source, "echo one > f").await?;
    let first = snapshot(&server, &source, json!({"session": session.id})).await?;
    assert_eq!(first["parent"], Value::Null);
    assert_eq!(first["session"], json!(session.id));
    assert_eq!(first["workspace"], workspace["id"]);

    // Taken in a sandbox restored from `first`: its parent is `first`.
    let restored = restore(&server, first["id"].as_str().unwrap(), json!({})).await?;
    sh(&server, &restored[0], "echo two >> f").await?;
    let second = snapshot(&server, &restored[0], json!({})).await?;
    assert_eq!(second["parent"], first["id"]);
    assert_eq!(second["session"], Value::Null);
    assert_eq!(second["source_sandbox"], json!(restored[0]));
    // And a grandchild through a read-only restore of `second`.
    let ro = restore(
        &server,
        second["id"].as_str().unwrap(),
        json!({"read_only": true}),
    )
    .await?;
    let third = snapshot(&server, &ro[0], json!({})).await?;
    assert_eq!(third["parent"], second["id"]);
    let (_, got) = send(server.a(
        Method::GET,
        &format!("/v1/snapshots/{}", third["id"].as_str().unwrap()),
    ))
    .await?;
    assert_eq!(got, third);

    // An unknown session is refused before anything is packed.
    let unknown = paddock_core::ids::SessionId::generate();
    let body = expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{source}/snapshots"))
            .json(&json!({"session": unknown})),
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await?;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session"),
        "{body}"
    );

    // A parent cannot go while its children are there.
    let body = expect_error(
        server.a(
            Method::DELETE,
            &format!("/v1/snapshots/{}", first["id"].as_str().unwrap()),
        ),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(first["id"].as_str().unwrap()),
        "{body}"
    );
    for snap in [&third, &second, &first] {
        let (status, body) = send(server.a(
            Method::DELETE,
            &format!("/v1/snapshots/{}", snap["id"].as_str().unwrap()),
        ))
        .await?;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // The parent is gone: a new snapshot of the restored sandbox has none.
    let orphan = snapshot(&server, &restored[0], json!({})).await?;
    assert_eq!(orphan["parent"], Value::Null);
    server.stop().await?;
    Ok(())
}

async fn limits_fail_the_snapshot_and_keep_the_last_one(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(
        &server,
        &source,
        "for i in $(seq 1 10); do echo $i > f$i; done",
    )
    .await?;
    let good = snapshot(&server, &source, json!({"max_files": 10})).await?;
    assert_eq!(good["file_count"], 10);
    sh(
        &server,
        &source,
        "echo more > f11 && head -c 5000 /dev/zero > big",
    )
    .await?;

    for (body, named) in [
        (json!({"max_files": 10}), "max_files = 10"),
        (json!({"max_bytes": 1000}), "max_bytes = 1000"),
    ] {
        let error = expect_error(
            server
                .a(Method::POST, &format!("/v1/sandboxes/{source}/snapshots"))
                .json(&body),
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
        )
        .await?;
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{message}");
        // The last complete snapshot is still the latest, and the only one.
        assert_eq!(
            snapshot_ids(&server).await?,
            vec![good["id"].as_str().unwrap()]
        );
    }
    // The failed exports left no blob behind.
    assert_eq!(walk_files(&data.path().join("blobs")).len(), 1);
    for body in [
        json!({"max_files": 0}),
        json!({"max_bytes": 0}),
        json!({"max_bytes": 1u64 << 40}),
    ] {
        expect_error(
            server
                .a(Method::POST, &format!("/v1/sandboxes/{source}/snapshots"))
                .json(&body),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
    }

    // Imports are checked within the limits in the query.
    let archive = server
        .a(
            Method::GET,
            &format!("/v1/snapshots/{}/archive", good["id"].as_str().unwrap()),
        )
        .send()
        .await?
        .bytes()
        .await?;
    let error = expect_error(
        server
            .a(Method::POST, "/v1/snapshots?max_files=5")
            .body(archive.to_vec()),
        StatusCode::BAD_REQUEST,
        "archive_refused",
    )
    .await?;
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_files = 5"),
        "{error}"
    );
    let (status, imported) = send(
        server
            .a(Method::POST, "/v1/snapshots?max_files=20&max_bytes=100000")
            .body(archive.to_vec()),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    assert_eq!(imported["file_count"], 10);
    server.stop().await?;
    Ok(())
}

/// A tree of about 2,500 entries with varied sizes, modes, names, symlinks,
/// empty and read-only directories, and distinct mtimes, built in the sandbox.
const BUILD_TREE: &str = r#"
import os, random
random.seed(11)
for d in range(20):
    for s in range(5):
        base = f"src/mod {d:02}/sub-é{s}"
        os.makedirs(base, exist_ok=True)
        for f in range(20):
            path = f"{base}/f{f:02}.txt"
            with open(path, "wb") as out:
                out.write(random.randbytes(random.choice([0, 1, 100, 4000, 30000])))
            os.chmod(path, random.choice([0o644, 0o600, 0o755, 0o400]))
os.makedirs("empty/nested")
os.symlink("src/mod 00/sub-é0/f00.txt", "link")
os.symlink("../../empty", "src/mod 01/up")
os.makedirs("ro/inner")
open("ro/inner/kept", "w").write("x")
entries = []
for root, dirs, names in os.walk("."):
    entries += [os.path.join(root, n) for n in dirs + names]
for i, path in enumerate(sorted(entries)):
    os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i), follow_symlinks=False)
os.chmod("ro/inner", 0o555)
os.chmod("ro", 0o500)
"#;

async fn thousands_of_entries_move_to_a_second_server(db: Db) -> Result<()> {
    let data_a = tempfile::tempdir()?;
    let data_b = tempfile::tempdir()?;
    let a = TestServer::start(Setup::new(db, data_a.path())).await?;
    let b = TestServer::start(Setup::new(db, data_b.path())).await?;
    let source = a.create_sandbox(json!({})).await?;
    sh(&a, &source, &format!("python3 -c '{BUILD_TREE}'")).await?;
    let expected = sh(&a, &source, FULL_LISTING).await?;
    assert!(
        expected.lines().count() > 4000,
        "{}",
        expected.lines().count()
    );
    let snap = snapshot(&a, &source, json!({})).await?;
    let archive = a
        .a(
            Method::GET,
            &format!("/v1/snapshots/{}/archive", snap["id"].as_str().unwrap()),
        )
        .send()
        .await?
        .bytes()
        .await?;

    let (status, imported) = send(
        b.a(Method::POST, "/v1/snapshots")
            .header("content-type", "application/zstd")
            .body(archive.to_vec()),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{imported}");
    assert_eq!(imported["blob_hash"], snap["blob_hash"]);
    assert_eq!(imported["file_count"], snap["file_count"]);
    assert_eq!(imported["bytes_raw"], snap["bytes_raw"]);
    assert!(blob_path(data_b.path(), snap["blob_hash"].as_str().unwrap()).is_file());
    let restored = restore(&b, imported["id"].as_str().unwrap(), json!({})).await?;
    let got = sh(&b, &restored[0], FULL_LISTING).await?;
    for (got, want) in got.lines().zip(expected.lines()) {
        assert_eq!(got, want);
    }
    assert_eq!(got.lines().count(), expected.lines().count());
    a.stop().await?;
    b.stop().await?;
    Ok(())
}

async fn blobs_are_collected_when_no_row_names_them(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(&server, &source, "echo shared > f").await?;
    // The same tree twice: one blob, two rows.
    let one = snapshot(&server, &source, json!({})).await?;
    let two = snapshot(&server, &source, json!({})).await?;
    let hash = one["blob_hash"].as_str().unwrap().to_owned();
    assert_eq!(two["blob_hash"], hash.as_str());
    // Tenant b imports the same archive: a third row, of another tenant.
    let archive = std::fs::read(blob_path(data.path(), &hash))?;
    let (status, theirs) = send(server.b(Method::POST, "/v1/snapshots").body(archive)).await?;
    assert_eq!(status, StatusCode::CREATED, "{theirs}");
    assert_eq!(theirs["blob_hash"], hash.as_str());

    backdate_blob(data.path(), &hash);
    let delete = |tenant_b: bool, id: &Value| {
        let path = format!("/v1/snapshots/{}", id.as_str().unwrap());
        if tenant_b {
            server.b(Method::DELETE, &path)
        } else {
            server.a(Method::DELETE, &path)
        }
    };
    let (status, _) = send(delete(false, &one["id"])).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        blob_path(data.path(), &hash).is_file(),
        "still named by two rows"
    );
    let (status, _) = send(delete(false, &two["id"])).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        blob_path(data.path(), &hash).is_file(),
        "still named by tenant b's row"
    );
    assert_eq!(server.service.sweep_blobs().await?.removed, 0);
    let (status, _) = send(delete(true, &theirs["id"])).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(!blob_path(data.path(), &hash).exists(), "no row names it");

    // A blob written within the grace period stays at delete and at a
    // sweep; once older, the sweep removes it.
    sh(&server, &source, "echo fresh > g").await?;
    let fresh = snapshot(&server, &source, json!({})).await?;
    let fresh_hash = fresh["blob_hash"].as_str().unwrap().to_owned();
    let (status, _) = send(delete(false, &fresh["id"])).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(blob_path(data.path(), &fresh_hash).is_file());
    assert_eq!(server.service.sweep_blobs().await?.removed, 0);
    assert!(blob_path(data.path(), &fresh_hash).is_file());
    // Recording the same content again makes it new and named.
    let again = snapshot(&server, &source, json!({})).await?;
    assert_eq!(again["blob_hash"], fresh_hash.as_str());
    backdate_blob(data.path(), &fresh_hash);
    assert_eq!(
        server.service.sweep_blobs().await?.removed,
        0,
        "named by `again`"
    );
    let (status, _) = send(delete(false, &again["id"])).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(!blob_path(data.path(), &fresh_hash).exists());
    server.stop().await?;
    Ok(())
}

async fn a_delete_does_not_cut_a_download_or_a_restore_short(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let source = server.create_sandbox(json!({})).await?;
    sh(
        &server,
        &source,
        "head -c 33554432 /dev/urandom > big && echo small > s",
    )
    .await?;
    let expected = sh(&server, &source, LISTING).await?;
    let snap = snapshot(&server, &source, json!({})).await?;
    let id = snap["id"].as_str().unwrap().to_owned();
    let hash = snap["blob_hash"].as_str().unwrap().to_owned();
    let blob = std::fs::read(blob_path(data.path(), &hash))?;
    backdate_blob(data.path(), &hash);

    // A download that has started keeps going after the snapshot and its
    // blob are gone.
    let response = server
        .a(Method::GET, &format!("/v1/snapshots/{id}/archive"))
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.bytes_stream();
    let mut downloaded = body.next().await.unwrap()?.to_vec();
    assert!(downloaded.len() < blob.len());
    let (status, _) = send(server.a(Method::DELETE, &format!("/v1/snapshots/{id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !blob_path(data.path(), &hash).exists(),
        "the blob was collected"
    );
    while let Some(chunk) = body.next().await {
        downloaded.extend_from_slice(&chunk?);
    }
    assert!(downloaded == blob, "the download was cut short or changed");
    // Now it is gone for good.
    expect_error(
        server.a(Method::GET, &format!("/v1/snapshots/{id}/archive")),
        StatusCode::NOT_FOUND,
        "snapshot_not_found",
    )
    .await?;

    // A restore racing a delete either restores everything or reports the
    // snapshot gone; it never leaves a half-restored sandbox.
    for round in 0..4 {
        let snap = snapshot(&server, &source, json!({})).await?;
        let id = snap["id"].as_str().unwrap().to_owned();
        backdate_blob(data.path(), &hash);
        let restoring = send(
            server
                .a(Method::POST, &format!("/v1/snapshots/{id}/restore"))
                .json(&json!({"count": 2})),
        );
        let deleting = async {
            tokio::time::sleep(Duration::from_millis(round * 15)).await;
            send(server.a(Method::DELETE, &format!("/v1/snapshots/{id}"))).await
        };
        let (restored, deleted) = tokio::join!(restoring, deleting);
        let (status, restored) = restored?;
        assert_eq!(deleted?.0, StatusCode::OK);
        match status {
            StatusCode::CREATED => {
                for sandbox in restored["sandboxes"].as_array().unwrap() {
                    let sandbox = sandbox["id"].as_str().unwrap();
                    assert_eq!(sh(&server, sandbox, LISTING).await?, expected);
                    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{sandbox}"))).await?;
                }
            }
            StatusCode::NOT_FOUND => {
                assert_eq!(
                    restored["error"]["code"], "snapshot_not_found",
                    "{restored}"
                );
            }
            other => panic!("round {round}: {other} {restored}"),
        }
        assert!(!blob_path(data.path(), &hash).exists());
    }
    // Only the source still runs.
    let (_, list) = send(server.a(Method::GET, "/v1/sandboxes?state=running")).await?;
    assert_eq!(list["sandboxes"].as_array().unwrap().len(), 1, "{list}");
    server.stop().await?;
    Ok(())
}

async fn workspace_ids(server: &TestServer) -> Result<Vec<String>> {
    let (status, list) = send(server.a(Method::GET, "/v1/workspaces?limit=1000")).await?;
    ensure!(status == StatusCode::OK, "{status} {list}");
    Ok(list["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_owned())
        .collect())
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn the_disk_quota_holds_imports_and_restores_and_workspaces_can_be_deleted(
    db: Db,
) -> Result<()> {
    const QUOTA: u64 = 8 << 20;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.disk_quota = Some(QUOTA);
    let server = TestServer::start(setup).await?;
    let workspaces_dir = data.path().join("workspaces");

    // 16 MiB of zeros in a few KB: refused while its headers are read.
    let mut tar = Vec::new();
    entry(&mut tar, b"zeros", b'0', b"", &vec![0u8; 16 << 20]);
    tar.extend([0u8; 1024]);
    let bomb = zstd::encode_all(&tar[..], 3)?;
    assert!(bomb.len() < 64 << 10, "{}", bomb.len());
    let (status, body) = send(
        server
            .a(Method::POST, "/v1/snapshots")
            .header("content-type", "application/zstd")
            .body(bomb),
    )
    .await?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&QUOTA.to_string()), "{message}");
    assert!(message.contains("0 bytes in use"), "{message}");
    assert!(snapshot_ids(&server).await?.is_empty());
    assert!(
        dir_names(&workspaces_dir).is_empty(),
        "{:?}",
        dir_names(&workspaces_dir)
    );

    // 3 MiB that do not compress, snapshotted: a fork of 4 needs 12 MiB.
    let (status, sandbox) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{sandbox}");
    let source = sandbox["id"].as_str().unwrap().to_owned();
    sh(
        &server,
        &source,
        "head -c 3145728 /dev/urandom > /workspace/big",
    )
    .await?;
    let snap = snapshot(&server, &source, json!({})).await?;
    let snap_id = snap["id"].as_str().unwrap().to_owned();
    let before = workspace_ids(&server).await?;
    let dirs_before = dir_names(&workspaces_dir);
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/snapshots/{snap_id}/restore"))
            .json(&json!({"count": 4})),
    )
    .await?;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "disk_quota_exceeded", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&QUOTA.to_string()), "{message}");
    assert!(message.contains("4 time(s)"), "{message}");
    assert_eq!(workspace_ids(&server).await?, before);
    assert_eq!(dir_names(&workspaces_dir), dirs_before);

    // One copy fits; its workspace cannot go while its sandbox runs.
    let restored = restore(&server, &snap_id, json!({})).await?;
    let (_, view) = send(server.a(Method::GET, &format!("/v1/sandboxes/{}", restored[0]))).await?;
    let workspace = view["workspace"].as_str().unwrap().to_owned();
    assert!(workspaces_dir.join(&workspace).join("big").exists());
    let path = format!("/v1/workspaces/{workspace}");
    let (status, body) = send(server.a(Method::DELETE, &path)).await?;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&restored[0]),
        "{body}"
    );
    let (status, _) =
        send(server.a(Method::DELETE, &format!("/v1/sandboxes/{}", restored[0]))).await?;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(server.a(Method::DELETE, &path)).await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], workspace.as_str());
    assert!(!workspaces_dir.join(&workspace).exists());
    let (status, body) = send(server.a(Method::GET, &path)).await?;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = send(server.a(Method::DELETE, &path)).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The space is free again: the snapshot of the deleted workspace's
    // sandbox still restores.
    let again = restore(&server, &snap_id, json!({})).await?;
    assert_eq!(again.len(), 1);
    server.stop().await?;
    Ok(())
}

async fn a_failed_restore_leaves_no_workspace(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let workspaces_dir = data.path().join("workspaces");
    let (status, sandbox) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{sandbox}");
    let source = sandbox["id"].as_str().unwrap().to_owned();
    sh(
        &server,
        &source,
        "head -c 200000 /dev/urandom > /workspace/noise",
    )
    .await?;
    let snap = snapshot(&server, &source, json!({})).await?;
    // The stored archive is damaged: every restore of it fails in the guest.
    let blob = blob_path(data.path(), snap["blob_hash"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob)?;
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 64] {
        *byte ^= 0x5a;
    }
    std::fs::write(&blob, bytes)?;
    let before = workspace_ids(&server).await?;
    let dirs_before = dir_names(&workspaces_dir);
    for body in [json!({"count": 3}), json!({"count": 1, "read_only": true})] {
        let (status, answer) = send(
            server
                .a(
                    Method::POST,
                    &format!("/v1/snapshots/{}/restore", snap["id"].as_str().unwrap()),
                )
                .json(&body),
        )
        .await?;
        assert!(!status.is_success(), "{body}: {status} {answer}");
        assert_eq!(workspace_ids(&server).await?, before, "{body}");
        assert_eq!(dir_names(&workspaces_dir), dirs_before, "{body}");
    }
    server.stop().await?;
    Ok(())
}

/// `POST /v1/workspaces/import` makes a workspace holding the archive's
/// files (a sandbox on it sees them); hostile, over-limit and over-quota
/// archives are 4xx naming why and leave no workspace (row or directory);
/// `GET /v1/workspaces/{id}/archive` gives the files back, changes included.
async fn workspaces_come_from_archives_and_go_back_as_archives(db: Db) -> Result<()> {
    const QUOTA: u64 = 8 << 20;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.disk_quota = Some(QUOTA);
    let server = TestServer::start(setup).await?;
    let workspaces_dir = data.path().join("workspaces");
    let import = |archive: Vec<u8>, query: &str| {
        server
            .a(Method::POST, &format!("/v1/workspaces/import{query}"))
            .header("content-type", "application/zstd")
            .body(archive)
    };

    let good = compressed(&[
        (b"a.txt", b'0', b"", b"hello"),
        // Its parent is made (the raw entries here would give a directory 0644).
        (b"d/b.txt", b'0', b"", b"inner"),
    ]);
    let (status, ws) = send(import(good.clone(), "?name=demo")).await?;
    assert_eq!(status, StatusCode::CREATED, "{ws}");
    assert_eq!(ws["name"], "demo");
    let ws_id = ws["id"].as_str().unwrap().to_owned();
    let (status, sandbox) = send(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": ws_id})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{sandbox}");
    let sb = sandbox["id"].as_str().unwrap().to_owned();
    assert_eq!(sh(&server, &sb, "cat a.txt d/b.txt").await?, "helloinner");
    sh(&server, &sb, "echo changed > c.txt").await?;

    // Downloaded: the archive holds the imported files and the change.
    let response = server
        .a(Method::GET, &format!("/v1/workspaces/{ws_id}/archive"))
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/zstd");
    let tar = zstd::decode_all(&response.bytes().await?[..])?;
    let listing = String::from_utf8_lossy(&tar);
    for name in ["a.txt", "d/b.txt", "c.txt", "changed"] {
        assert!(listing.contains(name), "{name} missing from the archive");
    }
    // Over the download's limits: a 400 before any byte of archive.
    let (status, body) = send(server.a(
        Method::GET,
        &format!("/v1/workspaces/{ws_id}/archive?max_files=1"),
    ))
    .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "archive_refused", "{body}");

    let before = workspace_ids(&server).await?;
    let dirs_before = dir_names(&workspaces_dir);
    let refused: Vec<(Vec<u8>, &str, StatusCode, &str)> = vec![
        (
            compressed(&[
                (b"ok.txt", b'0', b"", b"ok"),
                (b"../evil.txt", b'0', b"", b"x"),
            ]),
            "",
            StatusCode::BAD_REQUEST,
            "archive_refused",
        ),
        (
            compressed(&[
                (b"out", b'2', b"/etc", b""),
                (b"out/passwd", b'0', b"", b"x"),
            ]),
            "",
            StatusCode::BAD_REQUEST,
            "archive_refused",
        ),
        (
            good,
            "?max_files=1",
            StatusCode::BAD_REQUEST,
            "archive_refused",
        ),
        (
            b"not an archive".to_vec(),
            "",
            StatusCode::BAD_REQUEST,
            "archive_refused",
        ),
        (
            {
                let mut tar = Vec::new();
                entry(&mut tar, b"zeros", b'0', b"", &vec![0u8; 16 << 20]);
                tar.extend([0u8; 1024]);
                zstd::encode_all(&tar[..], 3)?
            },
            "?max_bytes=33554432",
            StatusCode::PAYLOAD_TOO_LARGE,
            "disk_quota_exceeded",
        ),
        (
            compressed(&[(b"a", b'0', b"", b"a")]),
            "?max_files=0",
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (archive, query, code, error) in refused {
        let (status, body) = send(import(archive, query)).await?;
        assert_eq!(status, code, "{query}: {body}");
        assert_eq!(body["error"]["code"], error, "{query}: {body}");
    }
    assert_eq!(workspace_ids(&server).await?, before);
    assert_eq!(dir_names(&workspaces_dir), dirs_before);
    assert!(!data.path().join("evil.txt").exists());
    assert!(!workspaces_dir.join("evil.txt").exists());
    Ok(())
}
