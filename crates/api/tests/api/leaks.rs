//! Small leaks between tenants and hardening of every answer (issue 26,
//! item 9): health shows a tenant only its own counts, and every answer of
//! the server (API, errors, fallbacks, the console) says `nosniff`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use anyhow::Result;
use common::{Db, Setup, TestServer, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    health_shows_a_tenant_only_its_own_counts,
    every_answer_says_nosniff,
    the_sweeper_collects_in_tenants_parts_too,
);

async fn health_shows_a_tenant_only_its_own_counts(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    server.create_sandbox(json!({})).await?;
    server.create_sandbox(json!({})).await?;

    let (status, a) = send(server.a(Method::GET, "/v1/health")).await?;
    assert_eq!(status, StatusCode::OK, "{a}");
    assert_eq!(a["sandboxes"], 2, "{a}");
    let (status, b) = send(server.b(Method::GET, "/v1/health")).await?;
    assert_eq!(status, StatusCode::OK, "{b}");
    assert_eq!(b["sandboxes"], 0, "{b}");
    assert_eq!(
        b["backends"],
        json!([{"name": "native", "status": "ok"}]),
        "{b}"
    );
    server.stop().await?;
    Ok(())
}

async fn every_answer_says_nosniff(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let file = format!("/v1/sandboxes/{id}/files/page.html");
    let (status, _) = send(
        server
            .a(Method::PUT, &file)
            .body("<script>alert(1)</script>"),
    )
    .await?;
    assert!(status.is_success(), "{status}");

    let answers = [
        // a handler's answer, with and without a token
        server.a(Method::GET, "/v1/health"),
        server.request(Method::GET, "/v1/health"),
        server.request(Method::GET, "/v1/openapi.json"),
        // a file's raw bytes
        server.a(Method::GET, &file),
        // refusals: no token, another tenant's sandbox, a bad body
        server.request(Method::GET, "/v1/sandboxes"),
        server.b(Method::GET, &file),
        server.a(Method::POST, "/v1/sandboxes").body("{"),
        // the fallbacks: no route, a method the route does not serve
        server.a(Method::GET, "/v1/no-such-route"),
        server.a(Method::PATCH, "/v1/health"),
        // the console's page, an asset it does not have
        server.request(Method::GET, "/"),
        server.request(Method::GET, "/assets/missing.js"),
    ];
    for request in answers {
        let request = request.build()?;
        let what = format!("{} {}", request.method(), request.url().path());
        let response = reqwest::Client::new().execute(request).await?;
        assert_eq!(
            response
                .headers()
                .get("x-content-type-options")
                .map(|v| v.to_str().unwrap_or_default().to_owned()),
            Some("nosniff".to_owned()),
            "{what}: {}",
            response.status()
        );
    }
    server.stop().await?;
    Ok(())
}

/// Checkpoint files live in each tenant's part of the blob store
/// (`BlobStore::tenant`); the sweeper collects what no row names there as in
/// the store itself.
async fn the_sweeper_collects_in_tenants_parts_too(db: Db) -> Result<()> {
    use paddock_core::blob::BlobStore;
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let blobs = paddock_snapshot::LocalBlobStore::open(data.path().join("blobs"))?;
    let part = blobs.tenant_part(&server.setup.tenants.b);
    let info = part.put(&mut &b"a checkpoint file no row names"[..])?;
    let path = part.blob_path(&info.key);
    assert!(
        path.starts_with(
            data.path()
                .join("blobs/tenants")
                .join(server.setup.tenants.b.as_str())
        )
    );
    // written within the grace period: kept
    assert_eq!(server.service.sweep_blobs().await?.removed, 0);
    std::fs::File::options()
        .write(true)
        .open(&path)?
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(24 * 3600))?;
    assert_eq!(server.service.sweep_blobs().await?.removed, 1);
    assert!(!path.exists());
    server.stop().await?;
    Ok(())
}
