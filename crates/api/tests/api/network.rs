//! `PUT /v1/sandboxes/{id}/network`: a running sandbox's allowlist replaced
//! within the tenant bounds, impossible changes refused saying why, and
//! each change stored as a `network.changed` event, listed in pages after
//! the sandbox stops and after a restart, on SQLite and Postgres. (That the
//! proxy follows the change, and cuts what it refuses, is the scenario
//! `network_change` in tests/.)
#![allow(clippy::unwrap_used)]

use anyhow::Result;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::{Db, Setup, TestServer, expect_error, send};

on_both_databases!(the_allowlist_of_a_running_sandbox_changes_within_the_bounds);

async fn the_allowlist_of_a_running_sandbox_changes_within_the_bounds(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.network = Some(paddock_proto::NetworkBounds::new(
        paddock_proto::NetworkPolicy::None,
        "allow:a.test,b.test".parse()?,
    )?);
    let server = TestServer::start(setup).await?;
    let id = server
        .create_sandbox(json!({"network": {"allowlist": ["a.test"]}}))
        .await?;
    let path = format!("/v1/sandboxes/{id}/network");
    let to_b = json!({"network": {"allowlist": ["b.test"]}});

    // a token, and the tenant's own sandbox
    expect_error(
        server.request(Method::PUT, &path).json(&to_b),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await?;
    expect_error(
        server.b(Method::PUT, &path).json(&to_b),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::PUT, "/v1/sandboxes/sb-0000000000000000/network")
            .json(&to_b),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;

    // the bounds of a create apply
    let beyond = expect_error(
        server
            .a(Method::PUT, &path)
            .json(&json!({"network": {"allowlist": ["c.test"]}})),
        StatusCode::FORBIDDEN,
        "network_not_allowed",
    )
    .await?;
    assert!(
        beyond["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allow:c.test"),
        "{beyond}"
    );
    expect_error(
        server
            .a(Method::PUT, &path)
            .json(&json!({"network": {"allowlist": []}})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    // what a running sandbox cannot become, saying why
    let to_none = expect_error(
        server
            .a(Method::PUT, &path)
            .json(&json!({"network": "none"})),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    assert!(
        to_none["error"]["message"]
            .as_str()
            .unwrap()
            .contains("network allow:a.test cannot become none while the sandbox runs"),
        "{to_none}"
    );

    // the change, and its event
    let (status, changed) = send(server.a(Method::PUT, &path).json(&to_b)).await?;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["kind"], "network.changed");
    assert_eq!(changed["sandbox_id"], id.as_str());
    assert_eq!(changed["seq"], 1);
    assert_eq!(changed["old"], json!({"allowlist": ["a.test"]}));
    assert_eq!(changed["new"], json!({"allowlist": ["b.test"]}));
    assert_eq!(changed["by"], server.setup.tenants.a.to_string());
    assert_eq!(changed["cut"], json!([]));
    assert!(changed["at"].as_str().is_some_and(|at| !at.is_empty()));

    let (status, view) = send(server.a(Method::GET, &path)).await?;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view, json!({"network": {"allowlist": ["b.test"]}}));
    let (_, sandbox) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(sandbox["network"], json!({"allowlist": ["b.test"]}));
    // and back, so there are two to page through
    let to_a_and_b = json!({"network": {"allowlist": ["a.test", "b.test"]}});
    let (status, again) = send(server.a(Method::PUT, &path).json(&to_a_and_b)).await?;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["seq"], 2);
    assert_eq!(again["old"], json!({"allowlist": ["b.test"]}));

    let changes = format!("{path}/changes");
    let (status, all) = send(server.a(Method::GET, &changes)).await?;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(
        all,
        json!({"changes": [changed, again], "next_after": null})
    );
    let (_, first) = send(server.a(Method::GET, &format!("{changes}?limit=1"))).await?;
    assert_eq!(first, json!({"changes": [changed], "next_after": 1}));
    let (_, second) = send(server.a(Method::GET, &format!("{changes}?after=1&limit=1"))).await?;
    assert_eq!(second["changes"], json!([again]));
    expect_error(
        server.a(Method::GET, &format!("{changes}?limit=0")),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.b(Method::GET, &changes),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;

    // a sandbox made without network has no egress to change
    let offline = server.create_sandbox(json!({"network": "none"})).await?;
    let refused = expect_error(
        server
            .a(Method::PUT, &format!("/v1/sandboxes/{offline}/network"))
            .json(&to_b),
        StatusCode::CONFLICT,
        "conflict",
    )
    .await?;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no egress namespace"),
        "{refused}"
    );

    // once it is gone, it does not run, and its changes are still listed
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    expect_error(
        server.a(Method::PUT, &path).json(&to_b),
        StatusCode::CONFLICT,
        "sandbox_not_running",
    )
    .await?;
    let (status, after_stop) = send(server.a(Method::GET, &changes)).await?;
    assert_eq!(status, StatusCode::OK, "{after_stop}");
    assert_eq!(after_stop, all);

    // and after a restart of the server
    let setup = server.stop().await?;
    let server = TestServer::start(setup).await?;
    let (status, after_restart) = send(server.a(Method::GET, &changes)).await?;
    assert_eq!(status, StatusCode::OK, "{after_restart}");
    assert_eq!(after_restart, all);
    server.stop().await?;
    Ok(())
}
