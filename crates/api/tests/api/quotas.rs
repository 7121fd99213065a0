//! Quotas on granted limits: one tenant cannot take every sandbox slot, the
//! node never grants more pids or memory than it has, refusals are 429
//! naming the quota, and a destroyed sandbox gives its grant back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use anyhow::Result;
use common::{Db, Setup, TestServer, expect_error, send};
use paddock_api::service::{Quota, Quotas};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(quotas_refuse_with_429_and_give_back_on_destroy);

async fn quotas_refuse_with_429_and_give_back_on_destroy(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.quotas = Some(Quotas {
        tenant: Quota {
            sandboxes: Some(2),
            ..Quota::default()
        },
        node: Quota {
            pids: Some(1200),
            ..Quota::default()
        },
    });
    let server = TestServer::start(setup).await?;
    let first = server
        .create_sandbox(json!({"limits": {"pids": 512}}))
        .await?;
    server
        .create_sandbox(json!({"limits": {"pids": 512}}))
        .await?;
    let refused = expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"limits": {"pids": 16}})),
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await?;
    assert_eq!(
        refused["error"]["message"],
        "tenant quota sandboxes exceeded: 2 in use of 2, 1 asked"
    );

    // Tenant b is not blocked by a's quota, only by what the node has left.
    let (status, got) = send(
        server
            .b(Method::POST, "/v1/sandboxes")
            .json(&json!({"limits": {"pids": 100}})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{got}");
    let refused = expect_error(
        server
            .b(Method::POST, "/v1/sandboxes")
            .json(&json!({"limits": {"pids": 512}})),
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
    )
    .await?;
    // the node's figures count a's sandboxes: not for b to see
    assert_eq!(
        refused["error"]["message"],
        "this node has no room now for the pids asked (512); try again later or ask for less"
    );

    // Destroying one of a's sandboxes gives back its slot and its pids.
    let (status, _) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{first}"))).await?;
    assert_eq!(status, StatusCode::OK);
    server
        .create_sandbox(json!({"limits": {"pids": 512}}))
        .await?;
    server.stop().await?;
    Ok(())
}
