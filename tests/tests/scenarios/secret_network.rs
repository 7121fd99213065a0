//! `--secret` with network `none` is refused by the CLI as the API refuses
//! it (one rule, `paddock_proto::check_secrets_network`): before a sandbox
//! is made or a request sent, with a usage error naming the network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

use paddock_tests::host::require_root;

/// `paddock ARGS` with `API_KEY` set, no server in the environment.
fn paddock(args: &[&str]) -> Output {
    Command::new(paddock_tests::bins::paddock())
        .args(args)
        .env("API_KEY", "sk-test-value-1")
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_refused(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--secret: network none: a secret reaches only its hosts"),
        "{stderr}"
    );
}

#[test]
fn sandbox_run_refuses_a_secret_with_network_none() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let marker = ws.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let ws_path = ws.path().to_str().unwrap();
    for network in [None, Some("--network=none")] {
        let mut args = vec!["sandbox", "run", "--workspace", ws_path];
        args.extend(network);
        args.extend(["--secret=API_KEY@api.test", "--", "sh", "-c", &touch]);
        assert_refused(&paddock(&args));
        assert!(!marker.exists(), "the command ran");
    }
}

#[test]
fn a_local_agent_run_refuses_a_secret_without_network() {
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().to_str().unwrap();
    let out = paddock(&[
        "run",
        "Call the API",
        "--model",
        "scripted:/nonexistent",
        "--workspace",
        ws_path,
        "--secret",
        "API_KEY@api.test",
    ]);
    assert_refused(&out);
}

#[test]
fn the_client_refuses_before_asking_the_server() {
    // A server that is not there: a request would fail to connect, not be
    // refused as a usage error.
    let out = paddock(&[
        "sandbox",
        "create",
        "--server",
        "http://127.0.0.1:9",
        "--secret",
        "API_KEY",
    ]);
    assert_refused(&out);
    let out = Command::new(paddock_tests::bins::paddock())
        .args(["run", "Call the API", "--model", "openai:gpt-4o-mini"])
        .args(["--server", "http://127.0.0.1:9", "--network", "none"])
        .args(["--secret", "API_KEY"])
        .env("PADDOCK_TOKEN", "tok-0123456789abcdef")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_refused(&out);
}
