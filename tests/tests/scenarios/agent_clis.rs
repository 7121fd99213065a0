//! Agent CLIs as drivers (issue 31), with the real CLIs from
//! images/agents (scripts/agents-setup.sh) inside real sandboxes, talking
//! to a local fake of their provider (`paddock_tests::fake_provider`, its
//! real streaming wire format over TLS, in a test host's namespace behind
//! the egress proxy) scripted to make the agent edit files and run tests:
//! the run completes and is reviewed from what ran in the sandbox, its
//! steps are bridged into events, the provider key reaches the provider
//! and nothing inside (environment, /proc, files, events), a budget stops
//! the CLI, and a rewind undoes what it wrote.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use paddock_tests::bins::paddock;
use paddock_tests::fake_provider::{FakeProvider, Script, Turn};
use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns};
use paddock_tests::tlshost::TestCa;
use serde_json::{Value, json};

const AGENTS_VAR: &str = "PADDOCK_AGENTS_DIR";
const KEY: &str = "sk-ant-real-key-never-inside-0123456789";
const OPENAI_KEY: &str = "sk-openai-real-key-never-inside-0123456789";

/// The directory the CLIs are installed under, or None after saying why
/// the tests skip (a run that requires them fails instead).
fn agents_dir(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(AGENTS_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/lib/paddock-agents"));
    if dir.join("bin/claude").exists() {
        return Some(dir);
    }
    let reason = format!(
        "{} has no agent CLIs (run scripts/agents-setup.sh)",
        dir.display()
    );
    assert!(
        std::env::var_os("PADDOCK_REQUIRE_AGENTS").is_none(),
        "{what}: {reason}"
    );
    println!("SKIPPED {what}: {reason}");
    None
}

/// A provider on `name` (TLS from a test CA the egress proxy trusts), the
/// DNS that names it, and the options a run needs to reach it.
struct Provider {
    fake: FakeProvider,
    _dns: TestDns,
    options: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Provider {
    fn start(name: &str, script: Script) -> Provider {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new().unwrap();
        let ca_file = dir.path().join("test-ca.pem");
        ca.write_pem(&ca_file).unwrap();
        let fake = FakeProvider::start_in_host(
            name,
            DocRange::Net2,
            443,
            Some(ca.server(name).unwrap()),
            script,
        )
        .unwrap();
        let host = fake.host().expect("a test host");
        let dns = TestDns::start().unwrap();
        dns.set(name, &[host.ip]);
        let options = vec![
            dns.option(),
            host.allow_option(),
            format!("--egress-ca={}", ca_file.display()),
        ];
        Provider {
            fake,
            _dns: dns,
            options,
            _dir: dir,
        }
    }
}

/// A workspace whose test passes once answer.txt says `fixed`.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("test.sh"),
        "grep -qx fixed answer.txt && echo PASS\n",
    )
    .unwrap();
    std::fs::write(ws.path().join("answer.txt"), "broken\n").unwrap();
    ws
}

/// `paddock run` with `driver` on `ws`, its data in `data`.
fn run(
    driver: &str,
    model: &str,
    base_url: &str,
    ws: &Path,
    data: &Path,
    provider: &Provider,
    extra: &[&str],
) -> Output {
    let mut command = Command::new(paddock());
    command
        .args([
            "run",
            "Make test.sh pass",
            "--criteria",
            "`sh test.sh` exits 0",
            "--driver",
            driver,
            "--model",
            model,
            "--base-url",
            base_url,
            "--workspace",
        ])
        .arg(ws)
        .arg("--data-dir")
        .arg(data)
        .args(&provider.options)
        .args(extra)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(Stdio::null());
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => {
                    if std::fs::read(&path).is_ok_and(|bytes| {
                        bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
                    }) {
                        found.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// The `--json` lines of a run's output.
fn events(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The command that shows what the sandbox's processes hold for the key.
const KEY_PROBE: &str = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' \
     | grep '^ANTHROPIC_API_KEY=' | sort -u > keyseen.txt; env | grep -c sk-ant-real >> keyseen.txt; true";

#[test]
fn claude_code_fixes_the_workspace_with_its_key_only_at_the_provider() {
    require_root();
    let Some(agents) = agents_dir("claude code on native") else {
        return;
    };
    let provider = Provider::start(
        "api.anthropic.test",
        Script::new(vec![
            Turn::tool("Bash", json!({"command": KEY_PROBE})),
            Turn::tool("Bash", json!({"command": "echo fixed > answer.txt"})),
            Turn::tool("Bash", json!({"command": "sh test.sh"})),
            Turn::text("Done: answer.txt is fixed and test.sh passes."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let out = run(
        "claude-code",
        "anthropic:claude-sonnet-4-5",
        "https://api.anthropic.test",
        ws.path(),
        data.path(),
        &provider,
        &["--json"],
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    let _ = agents;
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "fixed\n"
    );

    // the provider got the real key, on every model call
    let calls = provider.fake.model_calls();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    for call in &calls {
        assert_eq!(call.header("x-api-key"), Some(KEY), "{call:#?}");
    }
    // inside: only the placeholder, in every process
    let seen = std::fs::read_to_string(ws.path().join("keyseen.txt")).unwrap();
    assert_eq!(
        seen, "ANTHROPIC_API_KEY=paddock-secret-placeholder-ANTHROPIC_API_KEY\n0\n",
        "{stdout}"
    );
    // nowhere in the workspace (the CLI's state included), the data dir
    // (the store's events and messages) or the output
    assert_eq!(files_holding(ws.path(), KEY), Vec::<PathBuf>::new());
    assert_eq!(files_holding(data.path(), KEY), Vec::<PathBuf>::new());
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));

    // bridged: a model message per turn, each call and result, the review
    let events = events(&out);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert_eq!(count("tool.call"), 3, "{kinds:?}");
    assert_eq!(count("tool.result"), 3, "{kinds:?}");
    assert_eq!(count("model.message"), 4, "{kinds:?}");
    let started = events.iter().find(|e| e["kind"] == "run.started").unwrap();
    assert_eq!(started["data"]["driver"]["kind"], "claude-code");
    assert_eq!(started["data"]["driver"]["capabilities"]["steer"], false);
    let finished = events.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_eq!(finished["data"]["state"], "completed", "{finished}");
    // reviewed from what ran: `sh test.sh` succeeded after the last change
    assert_eq!(finished["data"]["verdict"], "met", "{finished}");
    let usage = &finished["data"]["usage"];
    assert_eq!(usage["turns"], 4, "{finished}");
    assert_eq!(usage["tool_calls"], 3, "{finished}");
}
