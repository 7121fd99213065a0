//! Secrets injected at egress, with real TLS between namespaces the test
//! makes: the sandbox's environment, its processes' environ and its files
//! hold only a placeholder; the HTTPS test host (behind a test CA the
//! operator tells the proxy to trust) receives the value in the headers;
//! the value is in no output or log line of paddock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::tlshost::TestCa;

const PLACEHOLDER: &str = "paddock-secret-placeholder-API_KEY";

#[test]
fn a_secret_reaches_its_host_while_the_sandbox_sees_only_a_placeholder() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net2, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-test-{:x}", std::process::id() as u64 * 7919 + 13);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README"), "nothing secret here\n").unwrap();

    let script = [
        "echo \"env=$API_KEY\"",
        // every process's environment, the shell's included
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^API_KEY=' ",
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^API_KEY=' | sort -u",
        "echo \"bundle=$SSL_CERT_FILE\"",
        "curl -sS -m 10 -H \"X-Key: $API_KEY\" https://api.test/v1/models; echo \" rc=$?\"",
        "echo probe > /tmp/probe; env > /workspace/env.txt",
    ]
    .join("; ");
    let (json, run) = SandboxRun::shell(&script)
        .workspace(ws.path())
        .option(&dns.option())
        .option(&format!("--egress-ca={}", ca_file.display()))
        .option("--secret=API_KEY@api.test=Authorization: Bearer {{secret}}")
        .network("allow:api.test")
        .timeout_secs(30)
        .env("API_KEY", &value)
        .env("RUST_LOG", "debug")
        .run_json();
    let out = &json.stdout;
    assert!(json.error.is_none(), "{json:?}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("env={PLACEHOLDER}"),
        "{out}\n{}",
        json.stderr
    );
    assert_ne!(lines[1], "0", "no process environ was read: {out}");
    assert_eq!(lines[2], format!("API_KEY={PLACEHOLDER}"), "{out}");
    assert_eq!(lines[3], "bundle=/etc/paddock-ca.pem");
    assert_eq!(lines[4], "hello from api", "{out}\n{}", json.stderr);
    assert_eq!(lines[5], " rc=0");

    // The host got the value, in the swapped header and the template's.
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /v1/models http/1.1\r\n"), "{head}");
    assert!(head.contains(&format!("x-key: {value}\r\n")), "{head}");
    assert!(
        head.contains(&format!("authorization: bearer {value}\r\n")),
        "{head}"
    );
    assert!(!head.contains(PLACEHOLDER), "{head}");

    // Nowhere else: not in the workspace, not in paddock's output or logs.
    let env_file = std::fs::read_to_string(ws.path().join("env.txt")).unwrap();
    assert!(env_file.contains(PLACEHOLDER), "{env_file}");
    for (what, text) in [
        ("the workspace's env.txt", env_file.as_str()),
        ("stdout", out.as_str()),
        ("the command's stderr", json.stderr.as_str()),
        ("paddock's own stderr (its logs)", run.stderr_str().as_str()),
    ] {
        assert!(!text.contains(&value), "the value is in {what}");
    }
    let decision = json
        .egress
        .iter()
        .find(|d| d.host == "api.test")
        .unwrap_or_else(|| panic!("{:?}", json.egress));
    assert!(
        decision.allowed && decision.reason.is_none(),
        "{decision:?}"
    );
    assert!(!format!("{:?}", json.egress).contains(&value));
}

/// Every file under `dir` that holds `needle` (the store, its WAL, blobs, workspaces).
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.windows(needle.len()).any(|w| w == needle)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn an_agent_run_with_a_secret_never_stores_it() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net3, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-run-{:x}", std::process::id() as u64 * 104_729 + 7);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let command = "curl -sS -m 10 -H \"X-Key: $API_KEY\" https://api.test/v1/models; \
                   env | grep API_KEY > seen.txt; echo done";
    let script = serde_json::json!({"turns": [
        {"text": "calling", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
        {"text": "done", "tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "called the API", "evidence": ["curl printed hello"]}}]}
    ]});
    let model = dir.path().join("model.json");
    std::fs::write(&model, script.to_string()).unwrap();
    let data = dir.path().join("data");
    let out = std::process::Command::new(paddock_tests::bins::paddock())
        .args([
            "run",
            "Call the API",
            "--json",
            "--network",
            "allow:api.test",
        ])
        .arg("--workspace")
        .arg(&ws)
        .arg(format!("--model=scripted:{}", model.display()))
        .arg("--secret=API_KEY@api.test")
        .arg(format!("--egress-ca={}", ca_file.display()))
        .arg(dns.option())
        .arg("--data-dir")
        .arg(&data)
        .env("API_KEY", &value)
        .env("RUST_LOG", "debug")
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello from api"), "{stdout}");
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("x-key: {value}\r\n")),
        "{heads:?}"
    );
    let seen = std::fs::read_to_string(ws.join("seen.txt")).unwrap();
    assert_eq!(seen, format!("API_KEY={PLACEHOLDER}\n"));
    assert!(!stdout.contains(&value), "the value is in the run's events");
    assert!(!stderr.contains(&value), "the value is in paddock's logs");
    assert!(data.join("paddock.db").exists());
    let holding = files_holding(&data, value.as_bytes());
    assert!(holding.is_empty(), "the value is stored in {holding:?}");
    assert!(files_holding(&ws, value.as_bytes()).is_empty());
}
