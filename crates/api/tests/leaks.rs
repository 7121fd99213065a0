//! Small leaks between tenants and hardening of every answer (issue 26,
//! item 9): health shows a tenant only its own counts, and every answer of
//! the server (API, errors, fallbacks, the console) says `nosniff`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use anyhow::Result;
use common::{Db, Setup, TestServer, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    health_shows_a_tenant_only_its_own_counts,
    every_answer_says_nosniff,
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
    // A warm pool is every tenant's: how full it is is not in the answer.
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
