//! API scenarios over real HTTP against real jailed sandboxes: lifecycle,
//! exec (JSON and SSE), background processes, files, search, workspaces.
//! Each runs on SQLite and, with PADDOCK_TEST_POSTGRES_URL set, on Postgres.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::Result;
use common::{Db, Setup, TestServer, expect_error, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

on_both_databases!(
    sandbox_lifecycle_and_exec,
    exec_streams_as_server_sent_events,
    background_processes,
    files_and_search,
    workspaces_outlive_their_sandboxes,
);

async fn sandbox_lifecycle_and_exec(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;

    let (status, created) = send(server.a(Method::POST, "/v1/sandboxes").json(&json!({
        "limits": {"pids": 64, "memory_bytes": 268435456u64},
        "network": "none",
    })))
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["state"], "running");
    assert_eq!(created["node"], server.setup.node.as_str());
    assert_eq!(created["limits"]["pids"], 64);
    assert_eq!(created["limits"]["memory_bytes"], 268435456u64);
    assert_eq!(created["read_only"], false);
    assert!(created["expires_at"].is_string() && created["idle_expires_at"].is_string());

    let (status, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["id"], created["id"]);
    assert_eq!(got["state"], "running");

    let (status, list) = send(server.a(Method::GET, "/v1/sandboxes")).await?;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = list["sandboxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()]);

    // The record carries the monitor's pid, and it is a live process.
    let record = server
        .store
        .get_sandbox(
            &server.setup.tenants.a,
            &paddock_core::sandbox::SandboxId::parse(&id)?,
        )
        .await?;
    let pid = record
        .pid
        .expect("a running sandbox records its monitor pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());

    let exec = format!("/v1/sandboxes/{id}/exec");
    let (status, out) = send(server.a(Method::POST, &exec).json(&json!({
        "shell": "echo hi; echo oops >&2; exit 3"
    })))
    .await?;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(
        (
            &out["exit_code"],
            &out["signal"],
            &out["timed_out"],
            &out["truncated"]
        ),
        (&json!(3), &Value::Null, &json!(false), &json!(false))
    );
    assert_eq!(
        (&out["stdout"], &out["stderr"]),
        (&json!("hi\n"), &json!("oops\n"))
    );
    assert!(out["duration_ms"].is_u64());

    let (_, out) = send(server.a(Method::POST, &exec).json(&json!({
        "argv": ["sh", "-c", "cat; echo \"[$GREETING]\"; pwd"],
        "stdin": "from stdin\n",
        "env": {"GREETING": "hello"},
    })))
    .await?;
    assert_eq!(out["stdout"], "from stdin\n[hello]\n/workspace\n", "{out}");
    assert_eq!(out["exit_code"], 0);

    let (_, out) = send(server.a(Method::POST, &exec).json(&json!({
        "argv": ["sleep", "30"], "timeout_ms": 300
    })))
    .await?;
    assert_eq!(out["timed_out"], true, "{out}");
    assert_eq!(out["exit_code"], Value::Null);

    let (_, out) = send(server.a(Method::POST, &exec).json(&json!({
        "shell": "printf '\\377\\000ok'", "output_encoding": "base64"
    })))
    .await?;
    assert_eq!(out["encoding"], "base64");
    assert_eq!(out["stdout"], "/wBvaw==", "{out}");

    let (_, out) = send(server.a(Method::POST, &exec).json(&json!({
        "shell": "head -c 5000 /dev/zero", "output_cap": 1000
    })))
    .await?;
    assert_eq!(out["truncated"], true, "{out}");
    assert_eq!(out["stdout"].as_str().unwrap().len(), 1000);
    assert_eq!(out["oom_killed"], false, "{out}");

    // A shell holding 400 MB in a variable, past the 256 MiB limit: the
    // out-of-memory killer's SIGKILL, reported as such.
    let (status, out) = send(server.a(Method::POST, &exec).json(&json!({
        "shell": "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived"
    })))
    .await?;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(
        (&out["signal"], &out["oom_killed"], &out["stdout"]),
        (&json!(9), &json!(true), &json!("")),
        "{out}"
    );

    expect_error(
        server
            .a(Method::POST, &exec)
            .json(&json!({"argv": ["/no/such/program"]})),
        StatusCode::UNPROCESSABLE_ENTITY,
        "spawn_failed",
    )
    .await?;

    let (status, deleted) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["state"], "stopped");
    assert_eq!(deleted["idle_expires_at"], Value::Null);
    assert!(
        common::eventually(Duration::from_secs(5), || !std::path::Path::new(&format!(
            "/proc/{pid}"
        ))
        .exists())
        .await
    );
    expect_error(
        server
            .a(Method::POST, &exec)
            .json(&json!({"argv": ["true"]})),
        StatusCode::CONFLICT,
        "sandbox_not_running",
    )
    .await?;
    // Deleting again answers the stopped record.
    let (status, again) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
    assert_eq!(
        (status, &again["state"]),
        (StatusCode::OK, &json!("stopped"))
    );

    let (_, stopped) = send(server.a(Method::GET, "/v1/sandboxes?state=stopped")).await?;
    assert_eq!(stopped["sandboxes"].as_array().unwrap().len(), 1);
    let (_, running) = send(server.a(Method::GET, "/v1/sandboxes?state=running")).await?;
    assert_eq!(running["sandboxes"], json!([]));
    server.stop().await?;
    Ok(())
}

/// Parses an SSE body into (event, data) pairs.
fn parse_sse(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            Some((event?, serde_json::from_str(&data).ok()?))
        })
        .collect()
}

async fn exec_streams_as_server_sent_events(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let exec = format!("/v1/sandboxes/{id}/exec");

    let response = server
        .a(Method::POST, &exec)
        .header("accept", "text/event-stream")
        .json(&json!({"shell": "echo one; sleep 0.3; echo two >&2; printf 'é'; exit 7"}))
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    // The first event arrives before the command ends: it really streams.
    let mut response = response;
    let first = response.chunk().await?.unwrap();
    assert!(
        !String::from_utf8_lossy(&first).contains("event: exit"),
        "the first chunk already holds the end: nothing was streamed"
    );
    let mut body = String::from_utf8(first.to_vec())?;
    while let Some(chunk) = response.chunk().await? {
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events = parse_sse(&body);
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"started"), "{body}");
    assert_eq!(names.last(), Some(&"exit"), "{body}");
    assert!(events[0].1["pid"].is_u64());
    let text = |stream: &str| -> String {
        events
            .iter()
            .filter(|(e, _)| e == stream)
            .map(|(_, d)| d["data"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(text("stdout"), "one\né");
    assert_eq!(text("stderr"), "two\n");
    let exit = &events.last().unwrap().1;
    assert_eq!(
        (&exit["exit_code"], &exit["timed_out"]),
        (&json!(7), &json!(false))
    );

    // base64 on request.
    let body = server
        .a(Method::POST, &exec)
        .header("accept", "text/event-stream")
        .json(&json!({"shell": "printf '\\001\\002'", "output_encoding": "base64"}))
        .send()
        .await?
        .text()
        .await?;
    let events = parse_sse(&body);
    let stdout: Vec<&Value> = events
        .iter()
        .filter(|(e, _)| e == "stdout")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(stdout, [&json!({"data": "AQI="})], "{body}");

    // Errors before the stream starts are plain JSON errors.
    expect_error(
        server
            .a(Method::POST, &exec)
            .header("accept", "text/event-stream")
            .json(&json!({"argv": []})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;

    // A client that goes away kills its command.
    let mut response = server
        .a(Method::POST, &exec)
        .header("accept", "text/event-stream")
        .json(&json!({"shell": "echo started; exec sleep 300"}))
        .send()
        .await?;
    let _ = response.chunk().await?;
    drop(response);
    let mut gone = false;
    for _ in 0..50 {
        let (_, check) = send(server.a(Method::POST, &exec).json(&json!({
            "shell": "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"
        })))
        .await?;
        if !check["stdout"].as_str().unwrap().contains("sleep 300") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the streamed command outlived its client");
    server.stop().await?;
    Ok(())
}

async fn background_processes(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let processes = format!("/v1/sandboxes/{id}/processes");

    let (status, cat) = send(
        server
            .a(Method::POST, &processes)
            .json(&json!({"argv": ["cat"]})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{cat}");
    assert_eq!(cat["running"], true);
    assert_eq!(cat["command"], json!(["cat"]));
    let handle = cat["handle"].as_u64().unwrap();

    let (status, _) = send(
        server
            .a(Method::POST, &format!("{processes}/{handle}/stdin"))
            .json(&json!({"data": "ping\n"})),
    )
    .await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    send(
        server
            .a(Method::POST, &format!("{processes}/{handle}/stdin"))
            .json(&json!({"data_base64": "cG9uZwo=", "eof": true})),
    )
    .await?;

    // Read until it exits; offsets move forward.
    let mut output = String::new();
    let mut offset = 0;
    let mut exit = Value::Null;
    for _ in 0..100 {
        let (status, out) = send(server.a(
            Method::GET,
            &format!("{processes}/{handle}/output?offset={offset}"),
        ))
        .await?;
        assert_eq!(status, StatusCode::OK, "{out}");
        output.push_str(out["data"].as_str().unwrap());
        offset = out["next_offset"].as_u64().unwrap();
        if out["running"] == false {
            exit = out["exit"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(output, "ping\npong\n");
    assert_eq!(offset, 10);
    assert_eq!(exit["exit_code"], 0, "{exit}");

    // Reading again from an offset answers only what follows it.
    let (_, tail) = send(server.a(
        Method::GET,
        &format!("{processes}/{handle}/output?offset=5&encoding=base64"),
    ))
    .await?;
    assert_eq!(tail["data"], "cG9uZwo=");
    assert_eq!(tail["offset"], 5);

    let (_, sleeper) = send(
        server
            .a(Method::POST, &processes)
            .json(&json!({"shell": "exec sleep 300"})),
    )
    .await?;
    let sleeper_handle = sleeper["handle"].as_u64().unwrap();
    let (_, list) = send(server.a(Method::GET, &processes)).await?;
    let listed: Vec<(u64, bool)> = list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["handle"].as_u64().unwrap(),
                p["running"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        listed.contains(&(handle, false)) && listed.contains(&(sleeper_handle, true)),
        "{list}"
    );

    let (status, _) = send(
        server
            .a(
                Method::POST,
                &format!("{processes}/{sleeper_handle}/signal"),
            )
            .json(&json!({"signal": "TERM"})),
    )
    .await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let mut signalled = Value::Null;
    for _ in 0..100 {
        let (_, out) =
            send(server.a(Method::GET, &format!("{processes}/{sleeper_handle}/output"))).await?;
        if out["running"] == false {
            signalled = out["exit"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(signalled["signal"], 15, "{signalled}");

    expect_error(
        server.a(Method::GET, &format!("{processes}/999999/output")),
        StatusCode::NOT_FOUND,
        "process_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, &format!("{processes}/{handle}/signal"))
            .json(&json!({"signal": "NOPE"})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    expect_error(
        server.a(Method::GET, &format!("{processes}/not-a-number/output")),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

async fn files_and_search(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.max_body_bytes = 12 << 20;
    let server = TestServer::start(setup).await?;
    let id = server.create_sandbox(json!({})).await?;
    let files = format!("/v1/sandboxes/{id}/files");

    let (status, written) = send(
        server
            .a(Method::PUT, &format!("{files}/src/notes.txt"))
            .body("alpha\nneedle here\nomega\n"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{written}");
    assert_eq!(written, json!({"path": "src/notes.txt", "bytes": 24}));

    let got = server
        .a(Method::GET, &format!("{files}/src/notes.txt"))
        .send()
        .await?;
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(got.headers()["content-type"], "application/octet-stream");
    assert_eq!(got.text().await?, "alpha\nneedle here\nomega\n");
    let range = server
        .a(
            Method::GET,
            &format!("{files}/src/notes.txt?offset=6&len=6"),
        )
        .send()
        .await?;
    assert_eq!(range.text().await?, "needle");

    // Binary and larger than one read chunk: exact bytes both ways.
    let big: Vec<u8> = (0..(9 << 20) as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let (status, _) = send(
        server
            .a(Method::PUT, &format!("{files}/bin/big.dat?mode=600"))
            .body(big.clone()),
    )
    .await?;
    assert_eq!(status, StatusCode::OK);
    let back = server
        .a(Method::GET, &format!("{files}/bin/big.dat"))
        .send()
        .await?
        .bytes()
        .await?;
    assert_eq!(back.len(), big.len());
    assert!(back[..] == big[..], "a 9 MiB file came back different");

    let (status, listing) = send(server.a(Method::GET, &format!("{files}?dir=bin"))).await?;
    assert_eq!(status, StatusCode::OK);
    let entry = &listing["entries"][0];
    assert_eq!(
        (
            &entry["name"],
            &entry["kind"],
            &entry["size"],
            &entry["mode"]
        ),
        (
            &json!("big.dat"),
            &json!("file"),
            &json!(9 << 20),
            &json!(0o600)
        )
    );
    let (_, root) = send(server.a(Method::GET, &files)).await?;
    let mut names: Vec<&str> = root["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["bin", "src"]);

    let (status, found) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/search"))
            .json(&json!({"content": "needle"})),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(
        found["matches"],
        json!([{"path": "src/notes.txt", "line": 2, "text": "needle here"}])
    );
    assert_eq!(found["truncated"], false);
    let (_, by_name) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/search"))
            .json(&json!({"name_glob": "*.dat"})),
    )
    .await?;
    assert_eq!(by_name["matches"][0]["path"], "bin/big.dat");
    expect_error(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/search"))
            .json(&json!({})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;

    // The files route and exec see the same workspace.
    let (_, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({"shell": "cat src/notes.txt | wc -l"})),
    )
    .await?;
    assert_eq!(out["stdout"], "3\n");

    let (status, _) = send(server.a(Method::DELETE, &format!("{files}/src/notes.txt"))).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    expect_error(
        server.a(Method::GET, &format!("{files}/src/notes.txt")),
        StatusCode::NOT_FOUND,
        "file_not_found",
    )
    .await?;
    expect_error(
        server.a(Method::DELETE, &format!("{files}/bin")),
        StatusCode::CONFLICT,
        "directory_not_empty",
    )
    .await?;
    let (status, _) =
        send(server.a(Method::DELETE, &format!("{files}/bin?recursive=true"))).await?;
    assert_eq!(status, StatusCode::NO_CONTENT);
    expect_error(
        server.a(Method::GET, &format!("{files}?dir=bin")),
        StatusCode::NOT_FOUND,
        "file_not_found",
    )
    .await?;
    server.stop().await?;
    Ok(())
}

async fn workspaces_outlive_their_sandboxes(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(db, data.path())).await?;
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "demo"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{ws}");
    let ws_id = ws["id"].as_str().unwrap().to_owned();
    assert_eq!(ws["name"], "demo");

    let first = server.create_sandbox(json!({"workspace": ws_id})).await?;
    send(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{first}/files/kept.txt"),
            )
            .body("still here"),
    )
    .await?;
    send(server.a(Method::DELETE, &format!("/v1/sandboxes/{first}"))).await?;
    assert_eq!(
        std::fs::read_to_string(data.path().join("workspaces").join(&ws_id).join("kept.txt"))?,
        "still here"
    );

    let second = server
        .create_sandbox(json!({"workspace": ws_id, "read_only": true}))
        .await?;
    let (_, got) = send(server.a(Method::GET, &format!("/v1/sandboxes/{second}"))).await?;
    assert_eq!(
        (&got["workspace"], &got["read_only"]),
        (&json!(ws_id), &json!(true))
    );
    let text = server
        .a(
            Method::GET,
            &format!("/v1/sandboxes/{second}/files/kept.txt"),
        )
        .send()
        .await?
        .text()
        .await?;
    assert_eq!(text, "still here");
    // Read-only holds through the files route and through the shell.
    let (status, err) = send(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{second}/files/new.txt"),
            )
            .body("x"),
    )
    .await?;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    let (_, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{second}/exec"))
            .json(&json!({"shell": "echo x > new.txt"})),
    )
    .await?;
    assert_ne!(out["exit_code"], 0, "{out}");

    let (_, list) = send(server.a(Method::GET, "/v1/workspaces")).await?;
    assert_eq!(list["workspaces"].as_array().unwrap().len(), 1);
    let (status, _) = send(server.a(Method::GET, &format!("/v1/workspaces/{ws_id}"))).await?;
    assert_eq!(status, StatusCode::OK);
    expect_error(
        server
            .a(Method::POST, "/v1/sandboxes")
            .json(&json!({"workspace": "ws_0123456789abcdef0123456789abcdef"})),
        StatusCode::NOT_FOUND,
        "workspace_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": ""})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    server.stop().await?;
    Ok(())
}
