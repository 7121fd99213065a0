//! Snapshots over real HTTP with real jailed sandboxes: snapshot -> restore,
//! fork isolation, hostile imports, archive download/import, tenant isolation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use anyhow::{Result, ensure};
use common::{Db, Setup, TestServer, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    snapshot_restore_and_fork,
    hostile_imports_are_refused_naming_the_entry,
    snapshots_are_per_tenant,
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

const LISTING: &str = "find . -mindepth 1 -printf '%p %y %m %s %l\\n' | sort; \
                       find . -type f -exec md5sum {} + | sort";

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
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name);
    header[100..107].copy_from_slice(b"0000644");
    header[108..115].copy_from_slice(b"0000000");
    header[116..123].copy_from_slice(b"0000000");
    header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
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
    // Nothing was recorded, nothing escaped.
    let (_, list) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(list["snapshots"], json!([]));
    assert!(!data.path().join("evil.txt").exists());
    assert!(!data.path().join("workspaces/evil.txt").exists());
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
