//! Project memory over real HTTP and a real database (`/v1/memory`): add,
//! list, search, show, supersede, approve and remove as one tenant; none of
//! it visible to or changeable by another; bad input answered 400 naming
//! what is wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use anyhow::{Context, Result, ensure};
use common::{Db, Setup, TestServer, expect_error, send};
use paddock_core::ids::{MemoryId, WorkspaceId};
use paddock_core::store::{MemoryKind, MemoryRecord, MemoryScope, MemoryStatus};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    memory_is_kept_found_and_removed_per_tenant,
    bad_memory_input_is_answered_400,
);

async fn add(server: &TestServer, body: Value) -> Result<Value> {
    let (status, view) = send(server.a(Method::POST, "/v1/memory").json(&body)).await?;
    ensure!(status == StatusCode::CREATED, "{status} {view}");
    Ok(view)
}

fn ids(list: &Value) -> Vec<String> {
    list["memories"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn memory_is_kept_found_and_removed_per_tenant(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "parser"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let ws = ws["id"].as_str().context("workspace id")?.to_owned();

    let tenant_wide = add(
        &server,
        json!({"kind": "preference", "text": "Answer in short sentences"}),
    )
    .await?;
    assert_eq!(tenant_wide["scope"], "tenant");
    assert_eq!(tenant_wide["status"], "active");
    let fact = add(
        &server,
        json!({"kind": "fact", "workspace": ws,
               "text": "The zebra parser tests need ZEBRA_STRICT=1 in the environment"}),
    )
    .await?;
    assert_eq!(fact["scope"], "workspace");
    assert_eq!(fact["workspace"], ws.as_str());
    let fact_id = fact["id"].as_str().unwrap().to_owned();

    // listed newest first; searched by words; shown by id
    let (status, list) = send(server.a(Method::GET, "/v1/memory")).await?;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(
        ids(&list),
        [
            fact_id.clone(),
            tenant_wide["id"].as_str().unwrap().to_owned()
        ]
    );
    let (_, found) = send(server.a(
        Method::GET,
        &format!("/v1/memory?q=zebra%20environment&workspace={ws}"),
    ))
    .await?;
    assert_eq!(ids(&found), std::slice::from_ref(&fact_id));
    assert_eq!(found["memories"][0], fact);
    let (_, none) = send(server.a(Method::GET, "/v1/memory?q=kangaroo")).await?;
    assert_eq!(ids(&none), Vec::<String>::new());
    let (status, shown) = send(server.a(Method::GET, &format!("/v1/memory/{fact_id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown, fact);
    let (_, facts) = send(server.a(Method::GET, "/v1/memory?kind=fact&limit=1")).await?;
    assert_eq!(ids(&facts), std::slice::from_ref(&fact_id));

    // a newer record replaces the fact: only it is found, unless asked
    let newer = add(
        &server,
        json!({"kind": "fact", "workspace": ws, "supersedes": fact_id,
               "text": "The zebra parser tests need ZEBRA_STRICT=2 since the upgrade"}),
    )
    .await?;
    let newer_id = newer["id"].as_str().unwrap().to_owned();
    let (_, found) = send(server.a(Method::GET, "/v1/memory?q=zebra")).await?;
    assert_eq!(ids(&found), std::slice::from_ref(&newer_id));
    let (_, all) = send(server.a(Method::GET, "/v1/memory?q=zebra&superseded=true")).await?;
    assert_eq!(ids(&all).len(), 2, "{all}");
    let (_, old) = send(server.a(Method::GET, &format!("/v1/memory/{fact_id}"))).await?;
    assert_eq!(old["superseded_by"], newer_id.as_str());

    // a record a run proposed (for its workspace) is not listed until approved
    let now = server.store.now();
    let proposed = MemoryRecord {
        id: MemoryId::generate(),
        tenant: server.setup.tenants.a.clone(),
        scope: MemoryScope::Workspace,
        workspace: Some(WorkspaceId::parse(&ws)?),
        project: None,
        kind: MemoryKind::Convention,
        text: "Run cargo fmt before committing".into(),
        status: MemoryStatus::Proposed,
        source_run: None,
        source_session: None,
        created_at: now,
        updated_at: now,
        superseded_by: None,
    };
    server.store.create_memory(&proposed).await?;
    let (_, list) = send(server.a(Method::GET, "/v1/memory?kind=convention")).await?;
    assert_eq!(ids(&list), Vec::<String>::new());
    let (_, list) = send(server.a(Method::GET, "/v1/memory?kind=convention&proposed=true")).await?;
    assert_eq!(ids(&list), [proposed.id.to_string()]);

    // the other tenant sees, finds, approves and removes none of it
    let (status, theirs) = send(server.b(Method::GET, "/v1/memory")).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&theirs), Vec::<String>::new());
    let (_, theirs) = send(server.b(Method::GET, "/v1/memory?q=zebra&proposed=true")).await?;
    assert_eq!(ids(&theirs), Vec::<String>::new());
    for (method, path) in [
        (Method::GET, format!("/v1/memory/{newer_id}")),
        (Method::DELETE, format!("/v1/memory/{newer_id}")),
        (Method::POST, format!("/v1/memory/{}/approve", proposed.id)),
    ] {
        expect_error(
            server.b(method.clone(), &path),
            StatusCode::NOT_FOUND,
            "memory_not_found",
        )
        .await?;
    }
    // nor writes into the first tenant's workspace, or replaces its records
    expect_error(
        server
            .b(Method::POST, "/v1/memory")
            .json(&json!({"kind": "fact", "text": "mine", "workspace": ws})),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    expect_error(
        server
            .b(Method::POST, "/v1/memory")
            .json(&json!({"kind": "fact", "text": "mine", "supersedes": newer_id})),
        StatusCode::NOT_FOUND,
        "memory_not_found",
    )
    .await?;

    // approved (and widened to the tenant by the person), it is listed; removed, it is gone
    let approve = format!("/v1/memory/{}/approve", proposed.id);
    expect_error(
        server.a(Method::POST, &format!("{approve}?widen=project")),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    let (status, approved) =
        send(server.a(Method::POST, &format!("{approve}?widen=tenant"))).await?;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(
        (
            &approved["status"],
            &approved["scope"],
            &approved["workspace"]
        ),
        (&json!("active"), &json!("tenant"), &Value::Null),
        "{approved}"
    );
    let (_, list) = send(server.a(Method::GET, "/v1/memory?kind=convention")).await?;
    assert_eq!(ids(&list), [proposed.id.to_string()]);
    let (status, _) = send(server.a(Method::DELETE, &format!("/v1/memory/{newer_id}"))).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    expect_error(
        server.a(Method::GET, &format!("/v1/memory/{newer_id}")),
        StatusCode::NOT_FOUND,
        "memory_not_found",
    )
    .await?;
    let (_, found) = send(server.a(Method::GET, "/v1/memory?q=zebra")).await?;
    assert_eq!(ids(&found), Vec::<String>::new());
    server.stop().await?;
    Ok(())
}

async fn bad_memory_input_is_answered_400(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let long = "x".repeat(2_001);
    // values out of range are 400; JSON of the wrong shape 422 (docs/api.md)
    let wrong = StatusCode::UNPROCESSABLE_ENTITY;
    for (body, status, mentions) in [
        (
            json!({"kind": "fact", "text": "  "}),
            StatusCode::BAD_REQUEST,
            "text",
        ),
        (
            json!({"kind": "fact", "text": long}),
            StatusCode::BAD_REQUEST,
            "2000",
        ),
        (
            json!({"kind": "fact", "text": "t", "scope": "workspace"}),
            StatusCode::BAD_REQUEST,
            "scope",
        ),
        (
            json!({"kind": "fact", "text": "t", "project": ""}),
            StatusCode::BAD_REQUEST,
            "project",
        ),
        (json!({"kind": "wizardry", "text": "t"}), wrong, "kind"),
        (json!({"text": "no kind"}), wrong, "kind"),
        (
            json!({"kind": "fact", "text": "t", "colour": "red"}),
            wrong,
            "colour",
        ),
        (
            json!({"kind": "fact", "text": "t", "workspace": "not-an-id"}),
            wrong,
            "workspace",
        ),
        (
            json!({"kind": "fact", "text": "t", "supersedes": "nope"}),
            wrong,
            "supersedes",
        ),
    ] {
        let (got, error) = send(server.a(Method::POST, "/v1/memory").json(&body)).await?;
        assert_eq!(got, status, "{body}: {error}");
        assert_eq!(error["error"]["code"], "invalid_request", "{body}: {error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(mentions), "{body}: {message}");
    }
    let error = send(
        server
            .a(Method::POST, "/v1/memory")
            .header("content-type", "application/json")
            .body("{\"kind\": "),
    )
    .await?;
    assert_eq!(error.0, StatusCode::BAD_REQUEST, "{}", error.1);
    for (query, mentions) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("q=%20", "q"),
        ("kind=wizardry", "kind"),
        ("workspace=nope", "nope"),
        ("colour=red", "colour"),
        ("proposed=perhaps", "proposed"),
    ] {
        let error = send(server.a(Method::GET, &format!("/v1/memory?{query}"))).await?;
        assert_eq!(error.0, StatusCode::BAD_REQUEST, "{query}: {}", error.1);
        let message = error.1["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(mentions), "{query}: {message}");
    }
    for (method, path) in [
        (Method::GET, "/v1/memory/not-a-memory"),
        (Method::DELETE, "/v1/memory/ses_01"),
        (Method::POST, "/v1/memory/x/approve"),
    ] {
        expect_error(
            server.a(method, path),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        )
        .await?;
    }
    // nothing was stored by any of it
    let (_, list) = send(server.a(Method::GET, "/v1/memory?proposed=true&superseded=true")).await?;
    assert_eq!(ids(&list), Vec::<String>::new());
    server.stop().await?;
    Ok(())
}
