//! Crash reconciliation with the real binary: `kill -9` of `paddock serve`
//! leaves no sandbox process and no cgroup behind, and the next start records
//! the sandboxes it ran as lost. SIGTERM stops it cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::Result;
use common::{ServerProcess, cgroups_under, processes_with, unique, wait_until};
use serde_json::{Value, json};

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> Result<(u16, Value)> {
    let mut request = http.request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_leaves_nothing_behind_and_the_restart_marks_sandboxes_lost() -> Result<()> {
    let data = tempfile::tempdir()?;
    let node = unique("crash");
    let parent = format!("paddock/{node}");
    // Monitors name their owner by a hash of the cgroup parent, not the parent.
    let monitors = format!("--owner {}", paddock_sandbox::owner_tag(&parent));
    let token = format!("crash-token-{}", unique("t"));
    let tokens = format!("crash:{token}");
    let marker = "987.654321"; // an unusual sleep, to find its process on the host
    let http = reqwest::Client::new();

    let server = ServerProcess::start(data.path(), &node, &tokens)?;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, created) = call(
            &http,
            reqwest::Method::POST,
            format!("{}/v1/sandboxes", server.url),
            &token,
            Some(json!({})),
        )
        .await?;
        assert_eq!(status, 201, "{created}");
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let (status, _) = call(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/sandboxes/{}/processes", server.url, ids[0]),
        &token,
        Some(json!({"argv": ["sleep", marker]})),
    )
    .await?;
    assert_eq!(status, 201);
    assert!(
        !processes_with(&monitors).is_empty(),
        "the sandboxes' monitors run"
    );
    assert!(
        !processes_with(marker).is_empty(),
        "the background process runs"
    );
    let mut sandbox_cgroups: Vec<_> = cgroups_under(&parent)
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_owned()))
        .collect();
    sandbox_cgroups.sort();
    sandbox_cgroups.dedup();
    assert_eq!(
        sandbox_cgroups.len(),
        3,
        "one cgroup (per hierarchy) per sandbox: {sandbox_cgroups:?}"
    );

    server.kill_9()?;
    // Without any code of the server running: the guest sees its connection
    // close and exits, its pid namespace dies with it, and the monitor
    // removes the cgroups on its way out.
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&monitors)
            .is_empty()),
        "sandbox processes outlived the server: {:?}",
        processes_with(&monitors)
    );
    assert!(
        processes_with(marker).is_empty(),
        "{:?}",
        processes_with(marker)
    );
    assert!(
        wait_until(Duration::from_secs(5), || cgroups_under(&parent).is_empty()),
        "{:?}",
        cgroups_under(&parent)
    );

    let server = ServerProcess::start(data.path(), &node, &tokens)?;
    for id in &ids {
        let (status, got) = call(
            &http,
            reqwest::Method::GET,
            format!("{}/v1/sandboxes/{id}", server.url),
            &token,
            None,
        )
        .await?;
        assert_eq!((status, &got["state"]), (200, &json!("lost")), "{got}");
    }
    // The restarted server works, and SIGTERM stops it cleanly, its sandbox stopped.
    let (status, created) = call(
        &http,
        reqwest::Method::POST,
        format!("{}/v1/sandboxes", server.url),
        &token,
        Some(json!({})),
    )
    .await?;
    assert_eq!(status, 201, "{created}");
    let fresh = created["id"].as_str().unwrap().to_owned();
    let exit = server.terminate()?;
    assert!(exit.success(), "{exit:?}");
    assert!(processes_with(&monitors).is_empty());
    assert!(cgroups_under(&parent).is_empty());

    let server = ServerProcess::start(data.path(), &node, &tokens)?;
    let (_, got) = call(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/sandboxes/{fresh}", server.url),
        &token,
        None,
    )
    .await?;
    assert_eq!(got["state"], "stopped", "{got}");
    let (_, list) = call(
        &http,
        reqwest::Method::GET,
        format!("{}/v1/sandboxes?state=lost", server.url),
        &token,
        None,
    )
    .await?;
    assert_eq!(list["sandboxes"].as_array().unwrap().len(), 3);
    server.terminate()?;
    for hierarchy in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_dir(hierarchy.path().join(&parent));
    }
    Ok(())
}

#[test]
fn serve_refuses_to_start_without_tokens() -> Result<()> {
    let data = tempfile::tempdir()?;
    let output = std::process::Command::new(common::PADDOCK)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .env_remove("PADDOCK_TOKENS")
        .env_remove("PADDOCK_CONFIG")
        .output()?;
    // A config error: usage (2), as every other one (tests/cli/client.rs).
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no API tokens"), "{stderr}");
    Ok(())
}
