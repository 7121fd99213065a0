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

use paddock_test_support::require::{Need, skip_or_panic};
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
/// the test skips (a run that requires them fails instead).
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
    skip_or_panic(Need::AgentClis, what, &reason);
    None
}

/// Whether the container backend `kind` can run here; else says why it
/// skips (or fails, where the backend is required).
fn backend(kind: paddock_tests::backends::Kind, what: &str) -> bool {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let unavailable = runtime
        .block_on(paddock_tests::backends::connect(kind))
        .err();
    match unavailable {
        None => true,
        Some(reason) => {
            skip_or_panic(
                Need::Backend(kind.name()),
                what,
                &format!("backend unavailable: {reason}"),
            );
            false
        }
    }
}

fn gvisor(what: &str) -> bool {
    backend(paddock_tests::backends::Kind::Gvisor, what)
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

/// `paddock run` of `cli` on `ws` (its provider at `https://{cli.host}`),
/// its data in `data`, with `extra` options.
fn command(cli: &Cli, ws: &Path, data: &Path, provider: &Provider, extra: &[&str]) -> Command {
    let mut command = Command::new(paddock());
    command
        .args([
            "run",
            "Make test.sh pass",
            "--criteria",
            "`sh test.sh` exits 0",
            "--driver",
            cli.driver,
            "--model",
            cli.model,
            "--base-url",
            &format!("https://{}", cli.host),
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
    command
}

/// [`command`] run to its end.
fn run(cli: &Cli, ws: &Path, data: &Path, provider: &Provider, extra: &[&str]) -> Output {
    command(cli, ws, data, provider, extra).output().unwrap()
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
                Ok(t)
                    if t.is_file()
                        && std::fs::read(&path).is_ok_and(|bytes| {
                            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
                        }) =>
                {
                    found.push(path);
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

/// One agent CLI as the tests drive it: its driver name, model, provider
/// host, the key variable and header, and how its shell tool is called.
struct Cli {
    driver: &'static str,
    model: &'static str,
    host: &'static str,
    key: &'static str,
    key_var: &'static str,
    key_header: &'static str,
    /// The header's value when it carries `key`.
    sent: fn(&str) -> String,
    shell: fn(&str) -> Turn,
    /// Model calls besides the script's turns (opencode's title).
    extra_calls: usize,
}

const CLAUDE: Cli = Cli {
    driver: "claude-code",
    model: "anthropic:claude-sonnet-4-5",
    host: "api.anthropic.test",
    key: KEY,
    key_var: "ANTHROPIC_API_KEY",
    key_header: "x-api-key",
    sent: |key| key.to_owned(),
    shell: |command| Turn::tool("Bash", json!({"command": command})),
    extra_calls: 0,
};

const CODEX: Cli = Cli {
    driver: "codex",
    model: "openai:gpt-5.1-codex",
    host: "api.openai.test",
    key: OPENAI_KEY,
    key_var: "OPENAI_API_KEY",
    key_header: "authorization",
    sent: |key| format!("Bearer {key}"),
    shell: |command| Turn::tool("exec_command", json!({"cmd": command})),
    extra_calls: 0,
};

const OPENCODE: Cli = Cli {
    driver: "opencode",
    model: "openai:gpt-4o",
    host: "api.openai.test",
    key: OPENAI_KEY,
    key_var: "OPENAI_API_KEY",
    key_header: "authorization",
    sent: |key| format!("Bearer {key}"),
    shell: |command| {
        Turn::tool(
            "bash",
            json!({"command": command, "description": "run a command"}),
        )
    },
    extra_calls: 1,
};

/// The command that shows what the sandbox's processes hold for the key.
fn key_probe(var: &str) -> String {
    format!(
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^{var}=' | sort -u > keyseen.txt; \
         env | grep -c real-key-never-inside >> keyseen.txt; true"
    )
}

/// The CLI fixes the workspace: it completes, reviewed met from what ran;
/// its calls are bridged; its key reaches the provider and nothing inside.
fn fixes_the_workspace(cli: &Cli, backend: &[&str]) {
    require_root();
    let what = format!("{} on {backend:?}", cli.driver);
    if agents_dir(&what).is_none() {
        return;
    }
    let provider = Provider::start(
        cli.host,
        Script::new(vec![
            (cli.shell)(&key_probe(cli.key_var)),
            (cli.shell)("echo fixed > answer.txt"),
            (cli.shell)("sh test.sh"),
            Turn::text("Done: answer.txt is fixed and test.sh passes."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let mut extra = vec!["--json"];
    extra.extend_from_slice(backend);
    let out = run(cli, ws.path(), data.path(), &provider, &extra);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{what}: {stdout}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "fixed\n",
        "{what}"
    );

    // the provider got the real key, on every model call
    let calls = provider.fake.model_calls();
    assert_eq!(calls.len(), 4 + cli.extra_calls, "{what}: {calls:#?}");
    for call in &calls {
        assert_eq!(
            call.header(cli.key_header),
            Some((cli.sent)(cli.key).as_str()),
            "{what}: {call:#?}"
        );
    }
    // inside: only the placeholder, in every process
    let seen = std::fs::read_to_string(ws.path().join("keyseen.txt")).unwrap();
    assert_eq!(
        seen,
        format!(
            "{var}=paddock-secret-placeholder-{var}\n0\n",
            var = cli.key_var
        ),
        "{what}: {stdout}"
    );
    // nowhere in the workspace (the CLI's state included), the data dir
    // (the store's events and messages) or the output
    assert_eq!(
        files_holding(ws.path(), cli.key),
        Vec::<PathBuf>::new(),
        "{what}"
    );
    assert_eq!(
        files_holding(data.path(), cli.key),
        Vec::<PathBuf>::new(),
        "{what}"
    );
    assert!(
        !stdout.contains(cli.key) && !stderr.contains(cli.key),
        "{what}"
    );

    // bridged: a model message per turn, each call and result, the review
    let events = events(&out);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert_eq!(count("tool.call"), 3, "{what}: {kinds:?}");
    assert_eq!(count("tool.result"), 3, "{what}: {kinds:?}");
    let started = events.iter().find(|e| e["kind"] == "run.started").unwrap();
    assert_eq!(started["data"]["driver"]["kind"], cli.driver, "{what}");
    assert_eq!(started["data"]["driver"]["capabilities"]["steer"], false);
    let finished = events.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_eq!(finished["data"]["state"], "completed", "{what}: {finished}");
    // reviewed from what ran: `sh test.sh` succeeded after the last change
    assert_eq!(finished["data"]["verdict"], "met", "{what}: {finished}");
    let usage = &finished["data"]["usage"];
    assert_eq!(usage["tool_calls"], 3, "{what}: {finished}");
    assert!(usage["turns"].as_u64().unwrap() >= 3, "{what}: {finished}");
    assert!(
        usage["input_tokens"].as_u64().unwrap() > 0,
        "{what}: {finished}"
    );
}

#[test]
fn claude_code_fixes_the_workspace_with_its_key_only_at_the_provider() {
    fixes_the_workspace(&CLAUDE, &[]);
}

#[test]
fn codex_fixes_the_workspace_with_its_key_only_at_the_provider() {
    fixes_the_workspace(&CODEX, &[]);
}

#[test]
fn opencode_fixes_the_workspace_with_its_key_only_at_the_provider() {
    fixes_the_workspace(&OPENCODE, &[]);
}

/// The options of a run in gVisor: the image with the CLIs; gVisor's
/// kernel has no landlock, and the run says it allowed that downgrade.
const GVISOR: &[&str] = &[
    "--backend",
    "gvisor",
    "--image",
    "paddock-agents:bookworm",
    "--allow-downgrade",
    "landlock",
];

#[test]
fn claude_code_fixes_the_workspace_on_gvisor() {
    if gvisor("claude code on gvisor") {
        fixes_the_workspace(&CLAUDE, GVISOR);
    }
}

/// In docker, from the same image.
#[test]
fn claude_code_fixes_the_workspace_on_docker() {
    if backend(
        paddock_tests::backends::Kind::Docker,
        "claude code on docker",
    ) {
        fixes_the_workspace(
            &CLAUDE,
            &["--backend", "docker", "--image", "paddock-agents:bookworm"],
        );
    }
}

#[test]
fn codex_fixes_the_workspace_on_gvisor() {
    if gvisor("codex on gvisor") {
        fixes_the_workspace(&CODEX, GVISOR);
    }
}

#[test]
fn opencode_fixes_the_workspace_on_gvisor() {
    if gvisor("opencode on gvisor") {
        fixes_the_workspace(&OPENCODE, GVISOR);
    }
}

/// `paddock ARGS --data-dir data`, its stdout as JSON.
fn paddock_json(data: &Path, args: &[&str]) -> Value {
    let out = Command::new(paddock())
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .arg("--json")
        .env_remove("PADDOCK_SERVER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A budget stops the CLI at the report that passes it: the run fails
/// `budget_exceeded`, naming it (`error`), and the script's later turns
/// never come: `flags` set a budget the third turn passes.
fn a_budget_stops_claude_code(flags: &[&str], error: &str) {
    require_root();
    if agents_dir("claude code budget").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("echo one > one.txt"),
            (CLAUDE.shell)("echo two > two.txt"),
            // a slow command (Claude Code refuses a bare long `sleep`)
            (CLAUDE.shell)("timeout 30 tail -f /dev/null; echo three > three.txt"),
            (CLAUDE.shell)("echo four > four.txt"),
            Turn::text("Done."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = run(
        &CLAUDE,
        ws.path(),
        data.path(),
        &provider,
        &[&["--json"], flags].concat(),
    );
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let events = events(&out);
    let finished = events.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_eq!(finished["data"]["state"], "failed", "{finished}");
    assert_eq!(
        finished["data"]["end_reason"], "budget_exceeded",
        "{finished}"
    );
    let said = finished["data"]["error"].as_str().unwrap();
    assert!(said.contains(error), "{said}");
    // stopped at the third turn: not after its 30 s command, never a fourth
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{stdout}"
    );
    assert!(ws.path().join("two.txt").exists(), "{stdout}");
    assert!(!ws.path().join("three.txt").exists(), "{stdout}");
    assert!(!ws.path().join("four.txt").exists(), "{stdout}");
    let turns: Vec<Option<usize>> = provider.fake.model_calls().iter().map(|c| c.turn).collect();
    assert!(turns.iter().all(|t| t.is_some_and(|t| t < 3)), "{turns:?}");
}

#[test]
fn a_turns_budget_stops_claude_code() {
    a_budget_stops_claude_code(
        &["--max-turns", "2"],
        "turns budget exceeded: used 2 of 2 model turns",
    );
}

/// Tokens are counted from what the CLI reports of each model call (123 in
/// and 1 out at each message's start, as the fake streams them).
#[test]
fn a_tokens_budget_stops_claude_code() {
    a_budget_stops_claude_code(
        &["--max-tokens", "300"],
        "tokens budget exceeded: used 372 of 300 tokens",
    );
}

/// The wall clock runs out in the third turn's slow command.
#[test]
fn a_wall_clock_budget_stops_claude_code() {
    a_budget_stops_claude_code(&["--timeout", "10s"], "wall clock budget exceeded");
}

/// A rewind undoes what the CLI's shell wrote: each tool batch that could
/// change the workspace is a checkpoint, and the one before the run puts
/// the workspace back.
#[test]
fn a_rewind_undoes_what_claude_code_wrote() {
    require_root();
    if agents_dir("claude code rewind").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("echo fixed > answer.txt && echo new > added.txt"),
            (CLAUDE.shell)("sh test.sh"),
            Turn::text("Done."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let out = run(&CLAUDE, ws.path(), data.path(), &provider, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let session = events(&out)
        .iter()
        .find_map(|e| e["session"].as_str().map(str::to_owned))
        .unwrap();
    let checkpoints = paddock_json(data.path(), &["session", "checkpoints", &session]);
    let reasons: Vec<&str> = checkpoints
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert_eq!(reasons.first(), Some(&"run_start"), "{checkpoints}");
    assert!(reasons.contains(&"tool_batch"), "{checkpoints}");
    let before = checkpoints[0]["id"].as_str().unwrap();
    paddock_json(
        data.path(),
        &["session", "rewind", &session, "--to", before],
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "broken\n"
    );
    assert!(!ws.path().join("added.txt").exists());
    assert!(!ws.path().join(".paddock-agent").exists());
}

/// `paddock run --json` of Claude Code on `ws`, spawned with its stdout piped.
fn spawn_run(ws: &Path, data: &Path, provider: &Provider, extra: &[&str]) -> std::process::Child {
    command(&CLAUDE, ws, data, provider, &[&["--json"], extra].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The lines of `child`'s stdout as they come.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits up to 60 s for `path` to exist.
fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never came",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Cancel (Ctrl-C on `paddock run`) stops the CLI and the command it runs:
/// the run ends cancelled in seconds, not when the command would have.
#[test]
fn a_cancel_stops_claude_code_and_its_children() {
    require_root();
    if agents_dir("claude code cancel").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("touch started; sleep 120; touch finished"),
            Turn::text("Done."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let child = spawn_run(ws.path(), data.path(), &provider, &[]);
    wait_for(&ws.path().join("started"));
    let cancelled_at = std::time::Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        cancelled_at.elapsed() < std::time::Duration::from_secs(30),
        "{}",
        text(&out.stdout)
    );
    let events = events(&out);
    let finished = events.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_eq!(finished["data"]["state"], "cancelled", "{finished}");
    // the CLI's command did not go on after the run ended
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!ws.path().join("finished").exists());
    let left = Command::new("pgrep")
        .args(["-f", "sleep 120; touch finished"])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "{}", text(&left.stdout));
}

/// Plan mode: the workspace is read-only whatever the CLI believes; its
/// writes fail, nothing changes, and the review does not call it met.
#[test]
fn plan_mode_keeps_claude_code_from_writing() {
    require_root();
    if agents_dir("claude code plan mode").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("echo fixed > answer.txt"),
            (CLAUDE.shell)("sh test.sh"),
            Turn::text("Done."),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let out = run(
        &CLAUDE,
        ws.path(),
        data.path(),
        &provider,
        &["--json", "--mode", "plan"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "broken\n",
        "{stdout}"
    );
    assert!(!ws.path().join(".paddock-agent").exists());
    let events = events(&out);
    let failed = events
        .iter()
        .filter(|e| e["kind"] == "tool.result" && e["data"]["status"] == "failed")
        .count();
    assert_eq!(failed, 2, "{stdout}");
    let finished = events.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_ne!(finished["data"]["verdict"], "met", "{finished}");
}

/// A killed `paddock run` is resumed through Claude Code's own session:
/// the resumed CLI sends the conversation the dead one had, from the
/// session kept in the workspace (restored with its last checkpoint).
#[test]
fn a_killed_claude_code_run_resumes_in_its_own_session() {
    require_root();
    if agents_dir("claude code resume").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("echo one > one.txt"),
            (CLAUDE.shell)("touch waiting; sleep 120"),
        ]),
    );
    let ws = workspace();
    let data = tempfile::tempdir().unwrap();
    let mut child = spawn_run(ws.path(), data.path(), &provider, &[]);
    // killed once the first batch's checkpoint is on record (a resume
    // restores it) and the second command runs
    let lines = lines_of(&mut child);
    let mut run = None;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let wait = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines
            .recv_timeout(wait)
            .expect("the first batch's checkpoint");
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(id) = event["run"].as_str() {
            run = Some(id.to_owned());
        }
        if event["kind"] == "checkpoint.created" && event["data"]["reason"] == "tool_batch" {
            break;
        }
    }
    wait_for(&ws.path().join("waiting"));
    child.kill().unwrap();
    child.wait().unwrap();
    let run = run.expect("the run's id");
    let before = provider.fake.model_calls().len();
    // the resumed CLI goes on from its session (which answers the killed
    // call itself, or asks for it again): the next turns finish the goal
    let fix = || (CLAUDE.shell)("echo fixed > answer.txt && sh test.sh");
    provider.fake.set_script(Script::new(vec![
        (CLAUDE.shell)("echo one > one.txt"),
        fix(),
        fix(),
        Turn::text("Done."),
    ]));

    let out = Command::new(paddock())
        .args([
            "run",
            "--resume",
            &run,
            "--force",
            "--driver",
            CLAUDE.driver,
            "--model",
            CLAUDE.model,
            "--base-url",
            "https://api.anthropic.test",
            "--json",
            "--data-dir",
        ])
        .arg(data.path())
        .args(&provider.options)
        .env("ANTHROPIC_API_KEY", KEY)
        .env_remove("PADDOCK_SERVER")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "fixed\n"
    );
    assert!(ws.path().join("one.txt").exists());
    assert!(!ws.path().join("waiting").exists());
    let calls = provider.fake.model_calls();
    let resumed: Vec<String> = calls[before..].iter().map(|c| c.body.to_string()).collect();
    assert!(
        resumed.iter().any(
            |body| body.contains("Your previous run on this goal was interrupted")
                && body.contains("echo one > one.txt")
        ),
        "no call of the resumed CLI sent its session's conversation: {resumed:#?}"
    );
}

/// On a server that enables the driver: a run names it (`paddock run
/// --server ... --driver claude-code`); the server's key is the one
/// injected; steering it is refused (the CLI takes no messages), and the
/// run reads back over the API with its driver.
#[test]
fn a_server_runs_claude_code_for_a_tenant() {
    require_root();
    if agents_dir("claude code on a server").is_none() {
        return;
    }
    let provider = Provider::start(
        CLAUDE.host,
        Script::new(vec![
            (CLAUDE.shell)("echo fixed > answer.txt").with_delay(std::time::Duration::from_secs(3)),
            (CLAUDE.shell)("sh test.sh"),
            Turn::text("Done."),
        ]),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("paddock.toml");
    std::fs::write(
        &config,
        "model_base_urls = [\"https://api.anthropic.test\"]\n\
         [drivers]\nenabled = [\"claude-code\"]\n",
    )
    .unwrap();
    let token = "agent-clis-token-0123456789abcdef";
    let mut serve = paddock_tests::serve::command(
        &format!("agents-{}", std::process::id()),
        &dir.path().join("data"),
        &format!("acme:{token}"),
    );
    serve
        .arg("--config")
        .arg(&config)
        .args(&provider.options)
        .env("ANTHROPIC_API_KEY", KEY)
        .stderr(Stdio::null());
    let (mut server, url) = paddock_tests::serve::spawn(serve).unwrap();
    let ws = workspace();
    let mut client = Command::new(paddock())
        .args([
            "run",
            "Make test.sh pass",
            "--criteria",
            "`sh test.sh` exits 0",
            "--server",
            &url,
            "--token",
            token,
            "--driver",
            "claude-code",
            "--model",
            CLAUDE.model,
            "--base-url",
            "https://api.anthropic.test",
            "--network",
            "none",
            "--json",
            "--workspace",
        ])
        .arg(ws.path())
        // the client's key is not the one used: the server's is
        .env("ANTHROPIC_API_KEY", "sk-client-side-key")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut client);
    let mut seen = Vec::new();
    let run = loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the run's first event");
        let event: Value = serde_json::from_str(&line).unwrap_or_default();
        seen.push(event.clone());
        if let Some(run) = event["run"].as_str() {
            break run.to_owned();
        }
    };
    // while its first model call is held: a steering message is refused
    provider
        .fake
        .wait_for_model_calls(1, std::time::Duration::from_secs(60))
        .unwrap();
    let steer = Command::new("curl")
        .args(["-sS", "-m", "30", "-w", "\n%{http_code}", "-X", "POST"])
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .args([
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"text": "also add a README"}"#,
        ])
        .arg(format!("{url}/v1/runs/{run}/messages"))
        .output()
        .unwrap();
    let steer = text(&steer.stdout);
    assert!(steer.ends_with("\n409"), "{steer}");
    assert!(
        steer.contains("driver_cannot") && steer.contains("takes no steering messages"),
        "{steer}"
    );
    seen.extend(
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok()),
    );
    let status = client.wait().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(status.success(), "{seen:#?}");
    let finished = seen.iter().find(|e| e["kind"] == "run.finished").unwrap();
    assert_eq!(finished["data"]["verdict"], "met", "{finished}");
    let started = seen.iter().find(|e| e["kind"] == "run.started").unwrap();
    assert_eq!(started["data"]["driver"]["kind"], "claude-code");
    // `none` was asked: the model's host is what the driver added
    assert_eq!(
        started["data"]["network"],
        json!({"allowlist": ["api.anthropic.test:443"]}),
        "{started}"
    );
    for call in provider.fake.model_calls() {
        assert_eq!(call.header("x-api-key"), Some(KEY), "{call:#?}");
    }
    assert!(!seen.iter().any(|e| e.to_string().contains(KEY)));
}
