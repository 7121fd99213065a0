//! What the API refuses, and how: auth, tenant isolation, malformed and
//! oversized requests, bad ids, path escapes through the files route; and the
//! OpenAPI document against the router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::io::{Read, Write};

use anyhow::Result;
use common::{Db, Setup, TestServer, expect_error, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    every_route_needs_a_valid_token,
    tenants_never_see_each_other,
    malformed_requests_get_clear_errors,
    paths_cannot_escape_the_workspace,
    oversized_bodies_are_refused,
);

async fn every_route_needs_a_valid_token(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;

    for (method, template) in paddock_api::http::registered_routes() {
        if template.starts_with("/v1/health") || template.starts_with("/v1/openapi") {
            continue;
        }
        let path = concrete(&template, &id);
        let method = Method::from_bytes(method.to_uppercase().as_bytes())?;
        for request in [
            server.request(method.clone(), &path),
            server
                .request(method.clone(), &path)
                .bearer_auth("not-a-configured-token"),
            server.request(method.clone(), &path).header(
                "authorization",
                format!("Basic {}", server.setup.tenants.a_token),
            ),
        ] {
            let response = request.send().await?;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path}"
            );
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
            let body: Value = response.json().await?;
            assert_eq!(body["error"]["code"], "unauthorized", "{method} {path}");
        }
    }

    // Health and the document need no token; without one, health says only
    // that the server is up.
    for request in [
        server.request(Method::GET, "/v1/health"),
        server
            .request(Method::GET, "/v1/health")
            .bearer_auth("not-a-configured-token"),
    ] {
        let (status, anonymous) = send(request).await?;
        assert_eq!(status, StatusCode::OK, "{anonymous}");
        assert_eq!(anonymous, json!({"status": "up"}));
    }
    let (status, health) = send(
        server
            .request(Method::GET, "/v1/health")
            .bearer_auth(&server.setup.tenants.a_token),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{health}");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["backend"], json!({"name": "native", "status": "ok"}));
    assert_eq!(health["database"]["status"], "ok");
    assert_eq!(health["database"]["writable"], true);
    assert_eq!(health["sandboxes"], 1);
    server.stop().await?;
    Ok(())
}

/// A well-formed JSON body for a POST route (or the JSON PUT of
/// `/network`), so only the sandbox lookup can fail.
fn valid_body(template: &str) -> Value {
    if template.ends_with("/network") {
        json!({"network": {"allowlist": ["example.com"]}})
    } else if template.ends_with("/search") {
        json!({"content": "secret"})
    } else if template.ends_with("/stdin") {
        json!({"data": "x"})
    } else if template.ends_with("/signal") {
        json!({"signal": "KILL"})
    } else if template.ends_with("/resize") {
        json!({"rows": 24, "cols": 80})
    } else if template.ends_with("/snapshots")
        || template.ends_with("/url")
        || template.ends_with("/pause")
    {
        json!({})
    } else {
        json!({"argv": ["true"]})
    }
}

/// A request path for a route template.
fn concrete(template: &str, id: &str) -> String {
    template
        .replace("{id}", id)
        .replace("{handle}", "1")
        .replace("{port}", "8000")
        .replace("{path}", "some/file.txt")
        .replace("{name}", "cache")
}

async fn tenants_never_see_each_other(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (_, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "a's"})),
    )
    .await?;
    let ws_id = ws["id"].as_str().unwrap().to_owned();
    let id = server.create_sandbox(json!({"workspace": ws_id})).await?;
    send(
        server
            .a(Method::PUT, &format!("/v1/sandboxes/{id}/files/secret.txt"))
            .body("a's secret"),
    )
    .await?;

    // Every route that names a's sandbox answers b "not found", and nothing happens.
    for (method, template) in paddock_api::http::registered_routes() {
        // Snapshot, session and run ids are not sandbox ids; tests/api/snapshots.rs
        // and tests/api/sessions.rs cover them.
        if !template.contains("{id}")
            || template.starts_with("/v1/workspaces")
            || template.starts_with("/v1/snapshots")
            || template.starts_with("/v1/sessions")
            || template.starts_with("/v1/runs")
            || template.starts_with("/v1/memory")
        {
            continue;
        }
        let path = concrete(&template, &id).replace("some/file.txt", "secret.txt");
        let method = Method::from_bytes(method.to_uppercase().as_bytes())?;
        let mut request = server.b(method.clone(), &path);
        if method == Method::POST || template.ends_with("/network") {
            request = request.json(&valid_body(&template));
        }
        let (status, body) = send(request).await?;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_eq!(
            body["error"]["code"], "sandbox_not_found",
            "{method} {path}"
        );
    }
    expect_error(
        server.b(Method::GET, &format!("/v1/workspaces/{ws_id}")),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    expect_error(
        server
            .b(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": ws_id})),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    let (_, b_list) = send(server.b(Method::GET, "/v1/sandboxes")).await?;
    assert_eq!(b_list["sandboxes"], json!([]));
    let (_, b_ws) = send(server.b(Method::GET, "/v1/workspaces")).await?;
    assert_eq!(b_ws["workspaces"], json!([]));

    // b's own sandbox is b's alone; a's is untouched.
    let (status, b_box) = send(server.b(Method::POST, "/v1/sandboxes").json(&json!({}))).await?;
    assert_eq!(status, StatusCode::CREATED);
    let b_id = b_box["id"].as_str().unwrap();
    expect_error(
        server.a(Method::GET, &format!("/v1/sandboxes/{b_id}")),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;
    let (_, a_list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    let a_ids: Vec<&str> = a_list["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(a_ids, [id.as_str()]);
    let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(got["state"], "running");
    let text = server
        .a(Method::GET, &format!("/v1/sandboxes/{id}/files/secret.txt"))
        .send()
        .await?
        .text()
        .await?;
    assert_eq!(text, "a's secret");
    server.stop().await?;
    Ok(())
}

async fn malformed_requests_get_clear_errors(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let exec = format!("/v1/sandboxes/{id}/exec");

    let malformed = server
        .a(Method::POST, &exec)
        .header("content-type", "application/json")
        .body("{\"argv\": [\"ls\"");
    let err = expect_error(malformed, StatusCode::BAD_REQUEST, "malformed_json").await?;
    assert!(
        err["error"]["message"].as_str().unwrap().contains("line 1"),
        "{err}"
    );

    let unknown = server
        .a(Method::POST, &exec)
        .json(&json!({"argv": ["ls"], "privileged": true}));
    let err = expect_error(unknown, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await?;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("privileged"),
        "{err}"
    );

    // A network policy no backend could apply is the caller's mistake,
    // refused before any sandbox starts (the fuzzer found it a 500).
    let empty_allowlist = server
        .a(Method::POST, "/v1/sandboxes")
        .json(&json!({"network": {"allowlist": []}}));
    let err = expect_error(empty_allowlist, StatusCode::BAD_REQUEST, "invalid_request").await?;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("network"),
        "{err}"
    );

    // Every body is an object: serde alone would read `[]` as a struct of
    // defaults (a snapshot, a sandbox), or `[...]` as its fields in order.
    for (path, body) in [
        (format!("/v1/sandboxes/{id}/snapshots"), json!([])),
        ("/v1/sandboxes".to_owned(), json!([])),
        (
            format!("/v1/sandboxes/{id}/search"),
            json!([null, null, "x"]),
        ),
        ("/v1/workspaces".to_owned(), json!(["named"])),
        (exec.clone(), json!("ls")),
        (exec.clone(), json!(null)),
    ] {
        let request = server.a(Method::POST, &path).json(&body);
        let err =
            expect_error(request, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await?;
        assert!(
            err["error"]["message"].as_str().unwrap().contains("object")
                || err["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("invalid type"),
            "{path} {body}: {err}"
        );
    }
    let (_, snapshots) = send(server.a(Method::GET, "/v1/snapshots")).await?;
    assert_eq!(
        snapshots["snapshots"],
        json!([]),
        "an array made a snapshot"
    );
    let (_, sandboxes) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    assert_eq!(
        sandboxes["sandboxes"].as_array().map(Vec::len),
        Some(1),
        "an array made a sandbox: {sandboxes}"
    );
    // A JSON type with parameters or a +json suffix is still JSON.
    let (status, _) = send(
        server
            .a(Method::POST, &exec)
            .header("content-type", "application/json; charset=utf-8")
            .body(r#"{"argv": ["true"]}"#),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);

    let wrong_type = server
        .a(Method::POST, "/v1/sandboxes")
        .json(&json!({"read_only": "yes"}));
    expect_error(
        wrong_type,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    let unknown_limit = server
        .a(Method::POST, "/v1/sandboxes")
        .json(&json!({"limits": {"gpus": 1}}));
    expect_error(
        unknown_limit,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
    )
    .await?;
    let too_big = server
        .a(Method::POST, "/v1/sandboxes")
        .json(&json!({"limits": {"memory_bytes": 1u64 << 50}}));
    let err = expect_error(too_big, StatusCode::BAD_REQUEST, "invalid_request").await?;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.memory_bytes"),
        "{err}"
    );
    let zero = server
        .a(Method::POST, "/v1/sandboxes")
        .json(&json!({"limits": {"pids": 0}}));
    expect_error(zero, StatusCode::BAD_REQUEST, "invalid_request").await?;

    // Limits no sandbox could start with are refused up front (they were
    // sandboxes that died starting: 503).
    for limits in [
        json!({"memory_bytes": 4096}),
        json!({"pids": 2}),
        json!({"open_files": 3}),
        json!({"cpu_millis": 9_223_372_036_854_775_808u64}),
    ] {
        let request = server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"limits": limits}));
        let err = expect_error(request, StatusCode::BAD_REQUEST, "invalid_request").await?;
        assert!(
            err["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("limits."),
            "{limits}: {err}"
        );
    }

    let not_json = server
        .a(Method::POST, &exec)
        .header("content-type", "text/plain")
        .body("ls");
    expect_error(
        not_json,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    )
    .await?;

    for bad in ["nope!", "sb-..", "sb%2F..%2F..", &"a".repeat(65)] {
        expect_error(
            server.a(Method::GET, &format!("/v1/sandboxes/{bad}")),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        )
        .await?;
    }
    expect_error(
        server.a(Method::GET, "/v1/workspaces/sb-1"),
        StatusCode::BAD_REQUEST,
        "invalid_id",
    )
    .await?;
    let unknown_id = "sb-0190aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    expect_error(
        server.a(Method::GET, &format!("/v1/sandboxes/{unknown_id}")),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/sandboxes?state=zombie"),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/sandboxes?limit=0"),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/sandboxes?colour=red"),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, "/v1/nothing/here"),
        StatusCode::NOT_FOUND,
        "route_not_found",
    )
    .await?;
    expect_error(
        server.a(Method::PATCH, &format!("/v1/sandboxes/{id}")),
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await?;
    let nul = server
        .a(Method::POST, &exec)
        .json(&json!({"argv": ["echo", "a\u{0}b"]}));
    expect_error(nul, StatusCode::BAD_REQUEST, "invalid_request").await?;
    let both = server
        .a(Method::POST, &exec)
        .json(&json!({"argv": ["ls"], "shell": "ls"}));
    expect_error(both, StatusCode::BAD_REQUEST, "invalid_request").await?;
    let bad_b64 = server
        .a(Method::POST, &exec)
        .json(&json!({"argv": ["cat"], "stdin_base64": "***"}));
    expect_error(bad_b64, StatusCode::BAD_REQUEST, "invalid_request").await?;
    let bad_mode = server
        .a(Method::PUT, &format!("/v1/sandboxes/{id}/files/x?mode=999"))
        .body("x");
    expect_error(bad_mode, StatusCode::BAD_REQUEST, "invalid_request").await?;
    // A sign is not octal digits (the document's pattern refuses it too).
    let signed_mode = server
        .a(
            Method::PUT,
            &format!("/v1/sandboxes/{id}/files/x?mode=%2B644"),
        )
        .body("x");
    expect_error(signed_mode, StatusCode::BAD_REQUEST, "invalid_request").await?;

    // After all that, the sandbox still works.
    let (_, out) = send(
        server
            .a(Method::POST, &exec)
            .json(&json!({"argv": ["echo", "fine"]})),
    )
    .await?;
    assert_eq!(out["stdout"], "fine\n");
    server.stop().await?;
    Ok(())
}

/// Sends one raw HTTP/1.1 request (no client-side path normalisation) and
/// answers the status and body.
fn raw_request(base: &str, method: &str, path: &str, token: &str) -> Result<(u16, String)> {
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

async fn paths_cannot_escape_the_workspace(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let files = format!("/v1/sandboxes/{id}/files");
    let (_, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({
                "shell": "ln -s /etc/passwd passwd-link && ln -s .. up && mkdir -p d"
            })),
    )
    .await?;
    assert_eq!(out["exit_code"], 0, "{out}");

    // Encoded so no client or router normalises them away.
    for escape in [
        "..%2F..%2Fetc%2Fpasswd",
        "d%2F..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "passwd-link",
        "up%2Fetc%2Fpasswd",
    ] {
        let err = expect_error(
            server.a(Method::GET, &format!("{files}/{escape}")),
            StatusCode::BAD_REQUEST,
            "path_escape",
        )
        .await?;
        assert!(!err.to_string().contains("root:"), "{err}");
        // Writing or deleting a final symlink acts on the link itself (an
        // atomic replace never writes through it), so only the others escape.
        if escape != "passwd-link" {
            expect_error(
                server
                    .a(Method::PUT, &format!("{files}/{escape}"))
                    .body("owned"),
                StatusCode::BAD_REQUEST,
                "path_escape",
            )
            .await?;
            expect_error(
                server.a(Method::DELETE, &format!("{files}/{escape}")),
                StatusCode::BAD_REQUEST,
                "path_escape",
            )
            .await?;
        }
    }
    expect_error(
        server.a(Method::GET, &format!("{files}?dir=..")),
        StatusCode::BAD_REQUEST,
        "path_escape",
    )
    .await?;
    expect_error(
        server.a(Method::GET, &format!("{files}?dir=%2Fetc")),
        StatusCode::BAD_REQUEST,
        "path_escape",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/search"))
            .json(&json!({"path": "../..", "content": "root"})),
        StatusCode::BAD_REQUEST,
        "path_escape",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"argv": ["ls"], "cwd": "../.."})),
        StatusCode::BAD_REQUEST,
        "path_escape",
    )
    .await?;

    // Literal dot segments straight on the wire.
    let token = server.setup.tenants.a_token.clone();
    let base = server.url.clone();
    let raw_path = format!("{files}/../../../../etc/passwd");
    let (status, body) =
        tokio::task::spawn_blocking(move || raw_request(&base, "GET", &raw_path, &token)).await??;
    assert!(
        status == 400 || status == 404,
        "a dot-segment path answered {status}: {body}"
    );
    assert!(!body.contains("root:"), "{body}");

    // Writing over the final symlink replaces the link itself.
    let (status, _) = send(
        server
            .a(Method::PUT, &format!("{files}/passwd-link"))
            .body("replaced"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    let text = server
        .a(Method::GET, &format!("{files}/passwd-link"))
        .send()
        .await?
        .text()
        .await?;
    assert_eq!(text, "replaced");

    // The host file was never touched and nothing was written outside.
    assert!(std::fs::read_to_string("/etc/passwd")?.contains("root:"));
    let (_, listing) = send(server.a(Method::GET, &files)).await?;
    let names: BTreeSet<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["d", "passwd-link", "up"]));
    server.stop().await?;
    Ok(())
}

async fn oversized_bodies_are_refused(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.max_body_bytes = 64 << 10;
    let server = TestServer::start(setup).await?;
    let id = server.create_sandbox(json!({})).await?;

    let big = vec![b'x'; (64 << 10) + 1];
    expect_error(
        server
            .a(Method::PUT, &format!("/v1/sandboxes/{id}/files/big.txt"))
            .body(big.clone()),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    )
    .await?;
    let huge_stdin = json!({"argv": ["cat"], "stdin": String::from_utf8(big)?});
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&huge_stdin),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    )
    .await?;
    // Streamed without a length: refused all the same. Only just over the
    // limit, so the client has finished sending when the server answers and
    // closes (a larger body would race the close and end in a broken pipe).
    let chunks =
        futures_util::stream::iter((0..17).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 4096])));
    expect_error(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{id}/files/streamed.txt"),
            )
            .body(reqwest::Body::wrap_stream(chunks)),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    )
    .await?;
    expect_error(
        server.a(Method::GET, &format!("/v1/sandboxes/{id}/files/big.txt")),
        StatusCode::NOT_FOUND,
        "file_not_found",
    )
    .await?;

    // Just under the limit is fine.
    let (status, written) = send(
        server
            .a(Method::PUT, &format!("/v1/sandboxes/{id}/files/ok.txt"))
            .body(vec![b'z'; 60 << 10]),
    )
    .await?;
    assert_eq!(
        (status, &written["bytes"]),
        (StatusCode::OK, &json!(60 << 10))
    );
    server.stop().await?;
    Ok(())
}

fn document() -> Result<Value> {
    Ok(serde_json::from_str(&paddock_api::http::OPENAPI)?)
}

/// Every operation of the document, as (method, path, operation).
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            found.push((method.clone(), path.clone(), op));
        }
    }
    found
}

/// Every `$ref` anywhere in `value`.
fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(target)) => found.push(target),
                    _ => refs(v, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

/// A parameter's schema, its `$ref` followed.
fn resolved<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(target) => {
            let name = target.trim_start_matches("#/components/schemas/");
            &doc["components"]["schemas"][name]
        }
        None => schema,
    }
}

#[test]
fn the_openapi_document_lists_exactly_the_routes() -> Result<()> {
    let doc = document()?;
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(method, path, _)| (method, path))
        .collect();
    let routed: BTreeSet<(String, String)> =
        paddock_api::http::registered_routes().into_iter().collect();
    assert_eq!(routed.len(), 78, "{routed:?}");
    assert_eq!(
        documented.difference(&routed).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "documented but not routed"
    );
    assert_eq!(
        routed.difference(&documented).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "routed but not documented"
    );
    // Every $ref resolves.
    let mut targets = Vec::new();
    refs(&doc, &mut targets);
    assert!(targets.len() > 100, "{}", targets.len());
    for target in targets {
        let (kind, name) = target
            .strip_prefix("#/components/")
            .and_then(|t| t.split_once('/'))
            .unwrap_or_else(|| panic!("odd $ref {target}"));
        assert!(
            doc["components"][kind][name].is_object(),
            "dangling $ref {target}"
        );
    }
    Ok(())
}

/// The answers every operation's shape implies are documented, each with
/// the one error body.
#[test]
fn every_operation_documents_its_error_answers() -> Result<()> {
    let doc = document()?;
    let error_body = json!({"$ref": "#/components/schemas/ErrorBody"});
    assert_eq!(
        doc["components"]["schemas"]["ErrorBody"]["required"],
        json!(["error"])
    );
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        let public = path == "/v1/health" || path == "/v1/openapi.json";
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let json_body = op["requestBody"]["content"]["application/json"].is_object();
        let mut expected = Vec::new();
        if !public {
            expected.extend(["401", "500", "503"]);
        }
        if params.iter().any(|p| p["in"] == "path") {
            expected.extend(["400", "404"]);
        }
        if json_body {
            expected.extend(["400", "413", "415", "422"]);
        }
        // a body that does not keep pace, or past the tenant's share of body memory
        if op["requestBody"].is_object() {
            expected.extend(["408", "429"]);
        }
        for status in expected {
            let answer = &responses.get(status).unwrap_or_else(|| {
                panic!("{method} {path} does not document {status}: {responses:?}")
            });
            assert_eq!(
                answer["content"]["application/json"]["schema"], error_body,
                "{method} {path} {status}"
            );
        }
        // A tunnel's success is its switch of protocols.
        assert!(
            responses.keys().any(|s| s.starts_with('2') || s == "101"),
            "{method} {path} has no success answer"
        );
        if public {
            assert_eq!(op["security"], json!([]), "{method} {path}");
        }
    }
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"],
        json!({"type": "http", "scheme": "bearer"})
    );
    Ok(())
}

/// A request's `secrets` are names or the caller's own secrets, whose value
/// the document marks write-only; the routes that take them document the
/// 403 of a secret not granted.
#[test]
fn the_secrets_of_a_request_are_names_or_write_only_values() -> Result<()> {
    let doc = document()?;
    let schemas = &doc["components"]["schemas"];
    for request in ["CreateSandbox", "StartRunCommand"] {
        let items = &schemas[request]["properties"]["secrets"]["items"];
        let item = resolved(&doc, items);
        let one_of = item["oneOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{request}: {item}"));
        assert_eq!(one_of.len(), 2, "{request}: {item}");
        assert_eq!(one_of[0]["type"], "string", "{request}: {item}");
        let supplied = match one_of[1]["allOf"][0] {
            Value::Null => resolved(&doc, &one_of[1]),
            ref first => resolved(&doc, first),
        };
        assert_eq!(
            supplied["properties"]["value"]["writeOnly"], true,
            "{supplied}"
        );
        assert_eq!(
            supplied["required"],
            json!(["name", "value", "hosts"]),
            "{supplied}"
        );
        assert_eq!(supplied["additionalProperties"], false, "{supplied}");
    }
    for (method, path) in [
        ("post", "/v1/sandboxes"),
        ("post", "/v1/sessions/{id}/runs"),
    ] {
        let answer = &doc["paths"][path][method]["responses"]["403"]["description"];
        assert!(
            answer
                .as_str()
                .is_some_and(|d| d.contains("secret_not_allowed")),
            "{method} {path}: {answer}"
        );
    }
    Ok(())
}

/// Values the server's id parsers refuse and accept, against the pattern of
/// every id parameter in the document: the schema refuses exactly what the
/// server refuses.
#[test]
fn id_patterns_refuse_what_the_server_refuses() -> Result<()> {
    use paddock_core::ids::{MemoryId, RunId, SessionId, SnapshotId, WorkspaceId};
    use paddock_core::sandbox::SandboxId;

    let doc = document()?;
    let valid: Vec<String> = vec![
        SandboxId::generate().to_string(),
        WorkspaceId::generate().to_string(),
        SessionId::generate().to_string(),
        RunId::generate().to_string(),
        SnapshotId::generate().to_string(),
        MemoryId::generate().to_string(),
    ];
    let mut candidates = valid.clone();
    for id in &valid {
        candidates.extend([
            id.to_uppercase(),
            id[..id.len() - 1].to_owned(),
            format!("{id}0"),
            format!("{id}/x"),
            id.replace('_', "-"),
            format!(" {id}"),
            format!("{id}\n"),
        ]);
    }
    candidates.extend(
        [
            "", "a", "-", "ses_", "../etc", "a b", "sb.1", "ünï", "x\0y", "ses_ZZ", "sb-x", "A_b-9",
        ]
        .map(String::from),
    );
    candidates.push("a".repeat(64));
    candidates.push("a".repeat(65));
    candidates.push(format!("ses_{}", "g".repeat(32)));

    type Parse = fn(&str) -> bool;
    let parsers: [(&str, Parse); 7] = [
        ("SandboxId", |s| SandboxId::parse(s).is_ok()),
        ("WorkspaceId", |s| WorkspaceId::parse(s).is_ok()),
        ("SessionId", |s| SessionId::parse(s).is_ok()),
        ("RunId", |s| RunId::parse(s).is_ok()),
        ("SnapshotId", |s| SnapshotId::parse(s).is_ok()),
        ("MemoryId", |s| MemoryId::parse(s).is_ok()),
        ("VolumeName", |s| {
            paddock_core::volume::VolumeName::parse(s).is_ok()
        }),
    ];
    let mut checked = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            let name = param["name"].as_str().unwrap();
            let volume_name = name == "name" && path.starts_with("/v1/volumes");
            if !(name == "id" || name == "after" || name == "workspace" || volume_name) {
                continue;
            }
            let schema = &param["schema"];
            // An optional query id is `T` or null.
            let schema = schema["oneOf"]
                .as_array()
                .and_then(|alts| alts.iter().find(|s| s["type"] != "null"))
                .unwrap_or(schema);
            let Some(target) = schema["$ref"].as_str() else {
                // `after` of the event streams is a sequence number.
                assert!(
                    schema["type"] == "integer" || schema["type"] == json!(["integer", "null"]),
                    "{method} {path} {name}: {schema}"
                );
                continue;
            };
            let kind = target.trim_start_matches("#/components/schemas/");
            let (_, parse) = parsers
                .iter()
                .find(|(k, _)| *k == kind)
                .unwrap_or_else(|| panic!("{method} {path} {name}: no parser for {kind}"));
            let pattern = resolved(&doc, schema)["pattern"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} {name}: {kind} has no pattern"));
            let regex = regex::Regex::new(pattern)?;
            for candidate in &candidates {
                assert_eq!(
                    regex.is_match(candidate),
                    parse(candidate),
                    "{method} {path} {name}: {kind} pattern {pattern} and the server disagree on {candidate:?}"
                );
            }
            checked.insert((kind.to_owned(), name.to_owned()));
        }
    }
    // Each kind of id is a path parameter somewhere, and the pages name theirs.
    for kind in [
        "SandboxId",
        "WorkspaceId",
        "SessionId",
        "RunId",
        "SnapshotId",
    ] {
        assert!(
            checked.contains(&(kind.to_owned(), "id".to_owned())),
            "{kind}: {checked:?}"
        );
    }
    assert!(checked.contains(&("WorkspaceId".to_owned(), "workspace".to_owned())));
    assert!(checked.contains(&("SessionId".to_owned(), "after".to_owned())));
    assert!(checked.contains(&("VolumeName".to_owned(), "name".to_owned())));
    assert!(checked.contains(&("VolumeName".to_owned(), "after".to_owned())));
    Ok(())
}

/// The "not blank" patterns of the text fields the server trims (a steering
/// message, a goal, a memory and its search words) match exactly the strings
/// whose `trim()` leaves something: the document and the server agree on
/// every kind of whitespace, so the fuzzer's positive_data_acceptance check
/// holds for them (scripts/fuzz-api.sh).
#[test]
fn not_blank_patterns_are_what_trim_leaves_non_empty() -> Result<()> {
    let doc = document()?;
    let schemas = &doc["components"]["schemas"];
    let q = operations(&doc)
        .into_iter()
        .find(|(method, path, _)| method == "get" && path == "/v1/memory")
        .and_then(|(_, _, op)| {
            op["parameters"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == "q")
                .map(|p| p["schema"]["pattern"].clone())
        });
    let patterns = [
        (
            "SteerRun.text",
            schemas["SteerRun"]["properties"]["text"]["pattern"].clone(),
        ),
        (
            "StartRunCommand.goal",
            schemas["StartRunCommand"]["properties"]["goal"]["pattern"].clone(),
        ),
        (
            "AddMemory.text",
            schemas["AddMemory"]["properties"]["text"]["pattern"].clone(),
        ),
        ("GET /v1/memory q", q.unwrap_or(Value::Null)),
    ];
    let mut candidates: Vec<String> = [
        "",
        "a",
        " a ",
        "\t\n",
        "\u{85}",
        "\u{a0}",
        "\u{1680}",
        "\u{2000}",
        "\u{200a}",
        "\u{200b}",
        "\u{2028}",
        "\u{202f}",
        "\u{205f}",
        "\u{3000}",
        "\u{feff}",
        "\u{b}\u{c}",
        "\u{1c}",
        "\u{0}",
        "x\u{3000}",
        "\u{85}\u{85}y",
    ]
    .map(String::from)
    .to_vec();
    candidates.extend((0u32..0x3100).filter_map(char::from_u32).map(String::from));
    for (field, pattern) in patterns {
        let pattern = pattern
            .as_str()
            .unwrap_or_else(|| panic!("{field}: no pattern in the document"));
        let regex = regex::Regex::new(pattern)?;
        for candidate in &candidates {
            assert_eq!(
                regex.is_match(candidate),
                !candidate.trim().is_empty(),
                "{field}: pattern {pattern} and trim() disagree on {candidate:?}"
            );
        }
    }
    Ok(())
}

/// Over HTTP: an id the pattern refuses is a 400 `invalid_id`, one it
/// admits reaches the lookup (404).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_outside_the_pattern_are_refused_by_the_server() -> Result<()> {
    let doc = document()?;
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    for (path, kind, good) in [
        (
            "/v1/sandboxes/{id}",
            "SandboxId",
            "sb-nothing_here".to_owned(),
        ),
        (
            "/v1/workspaces/{id}",
            "WorkspaceId",
            format!("ws_{}", "0".repeat(32)),
        ),
        (
            "/v1/sessions/{id}",
            "SessionId",
            format!("ses_{}", "a".repeat(32)),
        ),
        ("/v1/runs/{id}", "RunId", format!("run_{}", "1".repeat(32))),
        (
            "/v1/snapshots/{id}",
            "SnapshotId",
            format!("snap_{}", "f".repeat(32)),
        ),
    ] {
        let pattern = doc["components"]["schemas"][kind]["pattern"]
            .as_str()
            .unwrap();
        let regex = regex::Regex::new(pattern)?;
        let bad = [
            good.to_uppercase().replace("SB-", "sb!"),
            format!("{good}%2F"),
            format!("{good}{}", "0".repeat(64)),
            "%20".to_owned(),
        ];
        assert!(regex.is_match(&good), "{kind} {good}");
        let (status, body) = send(server.a(Method::GET, &path.replace("{id}", &good))).await?;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path} {good}: {body}");
        for raw in bad {
            let decoded = raw.replace("%2F", "/").replace("%20", " ");
            assert!(!regex.is_match(&decoded), "{kind} {decoded:?}");
            let (status, body) = send(server.a(Method::GET, &path.replace("{id}", &raw))).await?;
            assert_eq!(
                (status, &body["error"]["code"]),
                (StatusCode::BAD_REQUEST, &json!("invalid_id")),
                "{path} {raw}: {body}"
            );
        }
    }
    server.stop().await?;
    Ok(())
}

/// A workspace file the sandbox may not read (mode 000) refuses a snapshot
/// with `permission_denied`, not an internal error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_files_refuse_a_snapshot_clearly() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let (status, _) = send(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{id}/files/locked?mode=0"),
            )
            .body("secret"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    let snapshot = server
        .a(Method::POST, &format!("/v1/sandboxes/{id}/snapshots"))
        .json(&json!({}));
    let err = expect_error(snapshot, StatusCode::FORBIDDEN, "permission_denied").await?;
    assert!(
        document()?["paths"]["/v1/sandboxes/{id}/snapshots"]["post"]["responses"]["403"]
            .is_object(),
        "the document leaves out the 403"
    );
    assert!(
        err["error"]["message"].as_str().unwrap().contains("locked"),
        "{err}"
    );
    // Readable again, the same workspace snapshots.
    let (status, _) = send(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{id}/files/locked?mode=644"),
            )
            .body("secret"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/snapshots"))
            .json(&json!({})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    server.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_route_is_served() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let (_, doc) = send(server.request(Method::GET, "/v1/openapi.json")).await?;
    assert_eq!(doc["info"]["title"], "Paddock API");
    for (method, template) in paddock_api::http::registered_routes() {
        let path = concrete(&template, &id);
        let method = Method::from_bytes(method.to_uppercase().as_bytes())?;
        let response = server.a(method.clone(), &path).send().await?;
        let status = response.status();
        let body = response.text().await?;
        assert!(
            !body.contains("route_not_found") && !body.contains("method_not_allowed"),
            "{method} {path} is not routed: {status} {body}"
        );
    }
    server.stop().await?;
    Ok(())
}

/// Sends a request head over `stream` (and `body`, if any) and reads the
/// answer's head and its declared body; the head, lower-cased.
fn exchange(stream: &mut std::net::TcpStream, head: &str, body: &[u8]) -> Result<String> {
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        anyhow::ensure!(
            stream.read(&mut byte)? == 1,
            "closed before answering: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.push(byte[0]);
    }
    let head = String::from_utf8(seen)?.to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse())
        .transpose()?
        .unwrap_or(0);
    let mut answer_body = vec![0u8; length];
    stream.read_exact(&mut answer_body)?;
    Ok(head)
}

/// A request refused before its body was read (here: no valid token) may
/// not leave a pooled connection behind that the server is about to close:
/// the answer says `Connection: close`. A request whose body was read keeps
/// its connection alive for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_that_left_the_body_unread_closes_the_connection() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    let addr = server.url.trim_start_matches("http://").to_owned();
    let token = server.setup.tenants.a_token.clone();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let post = |token: &str, length: usize| {
            format!(
                "POST /v1/workspaces HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
                 Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
            )
        };
        let body = br#"{"name": "kept-alive"}"#;

        // Read whole: the connection serves a second request.
        let mut stream = std::net::TcpStream::connect(&addr)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
        let head = exchange(&mut stream, &post(&token, body.len()), body)?;
        assert!(head.starts_with("http/1.1 201"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
        let head = exchange(
            &mut stream,
            &format!("GET /v1/health HTTP/1.1\r\nHost: {addr}\r\n\r\n"),
            b"",
        )?;
        assert!(head.starts_with("http/1.1 200"), "{head}");

        // Refused with the body still to come: the answer says it closes,
        // and it does.
        let mut stream = std::net::TcpStream::connect(&addr)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
        let head = exchange(&mut stream, &post("not-a-token", 1 << 20), b"{")?;
        assert!(head.starts_with("http/1.1 401"), "{head}");
        assert!(head.contains("connection: close"), "{head}");
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
        Ok(())
    })
    .await??;
    server.stop().await?;
    Ok(())
}
