//! One CLI for local and server work: `paddock run --server` against a real
//! `paddock serve` (the workspace uploaded as one archive, the events
//! streamed, the result printed as for a local run, the changes downloadable
//! with `workspace download`), Ctrl-C cancelling the remote run, a server
//! that is down (an error, nothing run here), `runs show|cancel|children|events`
//! in both modes, and the background-process commands. Needs root and
//! `paddock-guest` built next to `paddock`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use anyhow::{Context, Result};
use common::{PADDOCK, ServerProcess, unique};
use serde_json::{Value, json};

const GOAL: &str = "Write fizzbuzz.sh so that sh test.sh passes";
const SLOW: &str = r#"{"turns": [
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 300", "timeout_secs": 600}}]},
    {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "x", "evidence": ["y"]}}]}]}"#;

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/demo")
}

fn trajectory() -> String {
    format!("scripted:{}", demo().join("trajectory.json").display())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A temporary root with a copy of the demo workspace, a local data dir and
/// (when asked) a server with a token.
struct Fixture {
    root: tempfile::TempDir,
    workspace: PathBuf,
    data: PathBuf,
    server: Option<(ServerProcess, String)>,
}

impl Fixture {
    fn new(with_server: bool) -> Result<Self> {
        let root = tempfile::tempdir()?;
        let workspace = root.path().join("demo");
        std::fs::create_dir(&workspace)?;
        for name in ["test.sh", "README.md"] {
            std::fs::copy(demo().join(name), workspace.join(name))?;
        }
        let data = root.path().join("local-data");
        let server = if with_server {
            let token = format!("remote-token-{}", unique("t"));
            let server = ServerProcess::start(
                &root.path().join("server-data"),
                &unique("remote"),
                &format!("cli:{token}"),
            )?;
            Some((server, token))
        } else {
            None
        };
        Ok(Self {
            root,
            workspace,
            data,
            server,
        })
    }

    /// `paddock ARGS` against the server (if any), never the caller's environment.
    fn paddock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(PADDOCK);
        command
            .args(args)
            .env_remove("PADDOCK_SERVER")
            .env_remove("PADDOCK_TOKEN")
            .env_remove("PADDOCK_MODEL")
            .env("PADDOCK_DATA_DIR", &self.data)
            .stdin(Stdio::null());
        if let Some((server, token)) = &self.server {
            command
                .env("PADDOCK_SERVER", &server.url)
                .env("PADDOCK_TOKEN", token);
        }
        command
    }

    fn local(&self, args: &[&str]) -> Command {
        let mut command = self.paddock(args);
        command.env_remove("PADDOCK_SERVER");
        command
    }

    fn ok(&self, mut command: Command) -> Result<String> {
        let out = command.output()?;
        assert!(
            out.status.success(),
            "{command:?}: {:?}\n{}\n{}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
        Ok(text(&out.stdout))
    }

    fn json(&self, command: Command) -> Result<Value> {
        Ok(serde_json::from_str(&self.ok(command)?)?)
    }

    fn run_goal(&self, command: &mut Command) -> Result<Output> {
        Ok(command.output()?)
    }

    fn script(&self, name: &str, body: &str) -> Result<String> {
        let path = self.root.path().join(name);
        std::fs::write(&path, body)?;
        Ok(format!("scripted:{}", path.display()))
    }
}

/// `paddock: session SES run RUN` (the first line of a human run).
fn ids(stdout: &str) -> (String, String) {
    let line = stdout.lines().next().unwrap_or_default();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.get(1), Some(&"session"), "{stdout}");
    (words[2].to_owned(), words[4].to_owned())
}

/// The lines of a run's output that do not name ids, times or the model.
fn stable_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| {
            !(l.starts_with("paddock: session")
                || l.starts_with("[run]")
                || l.starts_with("Run run_")
                // ids and timings
                || l.starts_with("[checkpoint]")
                // only a local run edits the caller's own directory
                || l.starts_with("The workspace was checkpointed before the run"))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_run_on_a_server_uploads_streams_and_prints_as_a_local_run() -> Result<()> {
    let fx = Fixture::new(true)?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    let args = [
        "run",
        GOAL,
        "--workspace",
        &ws,
        "--model",
        &model,
        "--criteria",
        "sh test.sh passes",
    ];
    let out = fx.run_goal(&mut fx.paddock(&args))?;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    for expected in [
        "[plan] v1",
        "[tool] write_file fizzbuzz.sh",
        "<- run_command exit 0: all 3 tests passed",
        "[finished] completed (completed)",
        "== Review: goal met ==",
        "[met] sh test.sh passes",
    ] {
        assert!(stdout.contains(expected), "{expected:?} missing:\n{stdout}");
    }
    // It ran there: the local directory is untouched, no local store was made.
    assert!(!fx.workspace.join("fizzbuzz.sh").exists());
    assert!(!fx.data.join("paddock.db").exists());
    let (session, run) = ids(&stdout);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`paddock workspace download ws_"),
        "{stderr}"
    );

    // The same run locally prints the same lines (one renderer).
    let local_ws = fx.root.path().join("local-demo");
    std::fs::create_dir(&local_ws)?;
    for name in ["test.sh", "README.md"] {
        std::fs::copy(demo().join(name), local_ws.join(name))?;
    }
    let local_ws = local_ws.to_string_lossy().into_owned();
    let mut local_args = args;
    local_args[3] = &local_ws;
    let local = fx.run_goal(&mut fx.local(&local_args))?;
    assert_eq!(local.status.code(), Some(0), "{}", text(&local.stderr));
    assert_eq!(stable_lines(&text(&local.stdout)), stable_lines(&stdout));

    // The changes are downloadable: the session's workspace holds fizzbuzz.sh.
    let shown = fx.json(fx.paddock(&["session", "show", &session, "--json"]))?;
    let workspace = shown["session"]["workspace"].as_str().unwrap().to_owned();
    let listed = fx.ok(fx.paddock(&["workspace", "ls"]))?;
    assert!(
        listed.contains(&workspace) && listed.contains("demo"),
        "{listed}"
    );
    let download = fx.root.path().join("download");
    fx.ok(fx.paddock(&[
        "workspace",
        "download",
        &workspace,
        &download.to_string_lossy(),
    ]))?;
    let passes = Command::new("sh")
        .arg("test.sh")
        .current_dir(&download)
        .stdout(Stdio::null())
        .status()?;
    assert!(passes.success(), "the downloaded workspace fails its tests");
    let archive = fx.root.path().join("ws.tar.zst");
    fx.ok(fx.paddock(&[
        "workspace",
        "download",
        "--archive",
        &workspace,
        &archive.to_string_lossy(),
    ]))?;
    assert_eq!(
        std::fs::read(&archive)?.get(..4),
        Some(&[0x28, 0xb5, 0x2f, 0xfd][..])
    );

    // runs show|children|events|cancel on the server.
    let shown = fx.json(fx.paddock(&["runs", "show", &run, "--json"]))?;
    assert_eq!(shown["state"], "completed");
    assert_eq!(shown["review"]["verdict"], "met");
    let human = fx.ok(fx.paddock(&["runs", "show", &run]))?;
    assert!(human.contains("== Review: goal met =="), "{human}");
    let children = fx.json(fx.paddock(&["runs", "children", &run, "--json"]))?;
    assert_eq!(children["runs"], Value::Array(vec![]));
    let events = fx.ok(fx.paddock(&["runs", "events", &run]))?;
    assert!(events.contains("[plan] v1"), "{events}");
    assert!(
        events
            .lines()
            .filter(|l| l.starts_with('#'))
            .all(|l| l.contains(&run)),
        "{events}"
    );
    let followed = fx.ok(fx.paddock(&["runs", "events", &run, "--follow", "--json"]))?;
    let last: Value = serde_json::from_str(followed.lines().last().unwrap())?;
    assert_eq!(last["kind"], "run.finished", "{last}");
    let cancelled = fx.ok(fx.paddock(&["runs", "cancel", &run]))?;
    assert_eq!(cancelled.trim(), format!("{run} completed"));

    // --json: the same events, then the result line with the exit code.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = fx.run_goal(&mut fx.paddock(&json_args))?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap())?;
    assert_eq!(
        (&last["type"], &last["exit_code"]),
        (&Value::from("result"), &Value::from(0))
    );
    let first: Value = serde_json::from_str(stdout.lines().next().unwrap())?;
    assert!(
        first["created_at"].as_str().unwrap().starts_with("20"),
        "{first}"
    );

    // --session continues on the server, in that session's workspace.
    let out =
        fx.run_goal(&mut fx.paddock(&["run", GOAL, "--session", &session, "--model", &model]))?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("session {session}")));

    // Mistakes are usage errors (2), found before or by the server.
    let out =
        fx.run_goal(&mut fx.paddock(&["run", GOAL, "--session", "ses_nope", "--model", &model]))?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = fx.run_goal(&mut fx.paddock(&["run", " ", "--model", &model]))?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    Ok(())
}

/// The session commands that send a body or read an answer of the
/// server's own types: fork (`ForkSession`), rewind (`RewindSession`),
/// delete (`SessionDeletedView`); a malformed id is refused here, naming
/// the flag and the value, before anything is sent.
#[test]
fn session_fork_rewind_and_delete_on_a_server() -> Result<()> {
    let fx = Fixture::new(true)?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    let out =
        fx.run_goal(&mut fx.paddock(&["run", GOAL, "--workspace", &ws, "--model", &model]))?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (session, run) = ids(&text(&out.stdout));

    for (args, said) in [
        (
            vec!["session", "fork", &session, "--at-run", "nope"],
            "--at-run: invalid run id \"nope\"",
        ),
        (
            vec!["session", "fork", &session, "--at", "cp_nope"],
            "--at: invalid checkpoint id \"cp_nope\"",
        ),
        (
            vec!["session", "rewind", &session, "--to", "nope"],
            "--to: invalid checkpoint id \"nope\"",
        ),
    ] {
        let out = fx.paddock(&args).output()?;
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains(said),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    let fork = fx.json(fx.paddock(&["session", "fork", &session, "--at-run", &run, "--json"]))?;
    assert_eq!(fork["forked_from"], session.as_str(), "{fork}");
    assert_eq!(fork["forked_at_run"], run.as_str(), "{fork}");
    let fork_id = fork["id"].as_str().unwrap().to_owned();

    let checkpoints = fx.json(fx.paddock(&["session", "checkpoints", &session, "--json"]))?;
    let checkpoint = checkpoints[0]["id"].as_str().unwrap().to_owned();
    let rewound = fx.json(fx.paddock(&[
        "session",
        "rewind",
        &session,
        "--to",
        &checkpoint,
        "--force",
        "--json",
    ]))?;
    assert_eq!(rewound["to"], checkpoint.as_str(), "{rewound}");
    assert_eq!(rewound["run"]["state"], "completed", "{rewound}");

    let deleted = fx.json(fx.paddock(&["session", "delete", &fork_id, "--json"]))?;
    assert_eq!(deleted["deleted"][0], fork_id.as_str(), "{deleted}");
    let human = fx.ok(fx.paddock(&["session", "delete", &session]))?;
    assert!(
        human.starts_with(&format!("deleted {session}: ")) && human.contains(" checkpoints, "),
        "{human}"
    );
    Ok(())
}

fn read_until(
    child: &mut Child,
    needle: &str,
) -> Result<(BufReader<std::process::ChildStdout>, String)> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains(needle) {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            panic!("paddock run ended before {needle:?}: {seen}");
        }
        seen.push_str(&line);
    }
    Ok((stdout, seen))
}

fn sigint(child: &Child) -> Result<()> {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    assert!(status.success());
    Ok(())
}

#[test]
fn ctrl_c_cancels_the_run_on_the_server() -> Result<()> {
    let fx = Fixture::new(true)?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = fx.script("slow.json", SLOW)?;
    let mut child = fx
        .paddock(&["run", "wait", "--workspace", &ws, "--model", &model])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (mut stdout, seen) = read_until(&mut child, "[tool] run_command $ sleep 300")?;
    let (_, run) = ids(&seen);
    sigint(&child)?;
    let output = child.wait_with_output()?;
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest)?;
    assert_eq!(output.status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("[finished] cancelled (cancelled)"), "{rest}");
    assert!(
        text(&output.stderr).contains("cancelling the run on the server"),
        "{}",
        text(&output.stderr)
    );
    let shown = fx.json(fx.paddock(&["runs", "show", &run, "--json"]))?;
    assert_eq!(shown["state"], "cancelled", "{shown}");

    // `runs cancel` on a live remote run ends it too.
    let mut child = fx
        .paddock(&["run", "wait", "--workspace", &ws, "--model", &model])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let (_stdout, seen) = read_until(&mut child, "[tool] run_command $ sleep 300")?;
    let (_, run) = ids(&seen);
    let cancelled = fx.ok(fx.paddock(&["runs", "cancel", &run]))?;
    assert_eq!(cancelled.trim(), format!("{run} cancelled"));
    let status = child.wait()?;
    assert_eq!(status.code(), Some(130));
    Ok(())
}

#[test]
fn a_server_that_is_down_is_an_error_and_nothing_runs_here() -> Result<()> {
    let fx = Fixture::new(false)?;
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    let out = fx
        .paddock(&["run", GOAL, "--workspace", &ws, "--model", &model])
        .env("PADDOCK_SERVER", &url)
        .output()?;
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot reach the server at {url}")),
        "{stderr}"
    );
    assert!(
        !stderr.contains(" WARN ") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(!fx.workspace.join("fizzbuzz.sh").exists());
    assert!(!fx.data.exists(), "a local store was opened");
    for args in [
        &["runs", "show", "--server", &url, "run_01"][..],
        &["workspace", "ls", "--server", &url],
        &["process", "ls", "--server", &url, "sb-1"],
    ] {
        let out = fx.paddock(args).output()?;
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert!(
            text(&out.stderr).contains("cannot reach the server"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    Ok(())
}

#[test]
fn runs_commands_read_and_cancel_local_runs() -> Result<()> {
    let fx = Fixture::new(false)?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    let out = fx.run_goal(&mut fx.local(&["run", GOAL, "--workspace", &ws, "--model", &model]))?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, run) = ids(&text(&out.stdout));

    let shown = fx.json(fx.local(&["runs", "show", &run, "--json"]))?;
    assert_eq!(shown["state"], "completed");
    let human = fx.ok(fx.local(&["runs", "show", &run]))?;
    assert!(human.contains(&format!("run        {run}")), "{human}");
    assert!(human.contains("== Review: goal met =="), "{human}");
    assert_eq!(
        fx.ok(fx.local(&["runs", "children", &run]))?.trim(),
        "no runs"
    );
    let events = fx.ok(fx.local(&["runs", "events", &run]))?;
    assert!(
        events.contains("[plan] v1") && events.contains("[finished] completed"),
        "{events}"
    );
    let after: Vec<&str> = events.lines().collect();
    let seq: u64 = after[2]
        .trim_start_matches('#')
        .split(' ')
        .next()
        .unwrap()
        .parse()?;
    let later = fx.ok(fx.local(&["runs", "events", &run, "--after", &seq.to_string()]))?;
    assert_eq!(later.lines().count(), after.len() - 3, "{later}");
    let followed = fx.ok(fx.local(&["runs", "events", &run, "--follow"]))?;
    assert_eq!(followed, events);
    assert_eq!(
        fx.ok(fx.local(&["runs", "cancel", &run]))?.trim(),
        format!("{run} completed")
    );
    let out = fx.local(&["runs", "show", "run_nope"]).output()?;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("run id"),
        "{}",
        text(&out.stderr)
    );

    // A live run of another `paddock run` process: cancelled through it.
    let slow = fx.script("slow.json", SLOW)?;
    let mut child = fx
        .local(&["run", "wait", "--workspace", &ws, "--model", &slow])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let (mut stdout, seen) = read_until(&mut child, "[tool] run_command $ sleep 300")?;
    let (_, run) = ids(&seen);
    assert_eq!(
        fx.json(fx.local(&["runs", "show", &run, "--json"]))?["state"],
        "acting"
    );
    let cancelled = fx.ok(fx.local(&["runs", "cancel", &run]))?;
    assert_eq!(cancelled.trim(), format!("{run} cancelled"));
    let status = child.wait()?;
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest)?;
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("[finished] cancelled (cancelled)"), "{rest}");
    Ok(())
}

#[test]
fn process_commands_mirror_the_api() -> Result<()> {
    let fx = Fixture::new(true)?;
    let sandbox = fx.ok(fx.paddock(&["sandbox", "create"]))?.trim().to_owned();
    let handle = fx
        .ok(fx.paddock(&[
            "process",
            "start",
            &sandbox,
            "-e",
            "GREETING=got",
            "--",
            "sh",
            "-c",
            "read x; echo \"$GREETING $x\"; echo oops >&2; exit 3",
        ]))?
        .trim()
        .to_owned();
    let listed = fx.ok(fx.paddock(&["process", "ls", &sandbox]))?;
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&handle) && l.contains("running")),
        "{listed}"
    );
    let mut stdin = fx
        .paddock(&["process", "stdin", &sandbox, &handle, "--eof"])
        .stdin(Stdio::piped())
        .spawn()?;
    stdin.stdin.take().unwrap().write_all(b"hello\n")?;
    assert!(stdin.wait()?.success());
    let out = fx
        .paddock(&["process", "output", &sandbox, &handle, "--follow"])
        .output()?;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let output = text(&out.stdout);
    assert!(
        output.contains("got hello") && output.contains("oops"),
        "{output}"
    );
    let from = fx.ok(fx.paddock(&["process", "output", &sandbox, &handle, "--offset", "4"]))?;
    assert_eq!(from, output[4..]);
    let listed = fx.json(fx.paddock(&["process", "ls", &sandbox, "--json"]))?;
    let me = listed["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["handle"].as_u64() == handle.parse().ok())
        .unwrap()
        .clone();
    assert_eq!(
        (&me["running"], &me["exit"]["exit_code"]),
        (&Value::from(false), &Value::from(3))
    );

    // A signal ends a sleeping process: 128 + 9.
    let sleeper = fx
        .ok(fx.paddock(&["process", "start", &sandbox, "--", "sleep", "300"]))?
        .trim()
        .to_owned();
    fx.ok(fx.paddock(&["process", "signal", &sandbox, &sleeper, "KILL"]))?;
    let out = fx
        .paddock(&["process", "output", &sandbox, &sleeper, "--follow"])
        .output()?;
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    // Bad input is the server's clear error, not a hang.
    let out = fx
        .paddock(&["process", "signal", &sandbox, &sleeper, "NOPE"])
        .output()?;
    assert_eq!(out.status.code(), Some(125));
    assert!(!text(&out.stderr).is_empty());
    let out = fx
        .paddock(&["process", "output", &sandbox, "999"])
        .output()?;
    assert_eq!(out.status.code(), Some(125));
    fx.ok(fx.paddock(&["sandbox", "rm", &sandbox]))?;
    Ok(())
}

/// The server dies mid-run: the CLI tries to resume the stream a few times,
/// then exits 125 saying so (no hang, nothing run here); the restarted server
/// records the run interrupted, and `runs show` says so.
#[test]
fn a_server_that_dies_mid_run_is_an_error_not_a_hang() -> Result<()> {
    let root = tempfile::tempdir()?;
    let workspace = root.path().join("ws");
    std::fs::create_dir(&workspace)?;
    let script = root.path().join("slow.json");
    std::fs::write(&script, SLOW.replace("sleep 300", "sleep 20"))?;
    let (data, node) = (root.path().join("server-data"), unique("dies"));
    let token = format!("remote-token-{}", unique("t"));
    let tokens = format!("cli:{token}");
    let server = ServerProcess::start(&data, &node, &tokens)?;
    let mut child = Command::new(PADDOCK)
        .args(["run", "wait", "--model"])
        .arg(format!("scripted:{}", script.display()))
        .arg("--workspace")
        .arg(&workspace)
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", &token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (_stdout, seen) = read_until(&mut child, "[tool] run_command $ sleep 20")?;
    let (_, run) = ids(&seen);
    server.kill_9()?;
    let started = std::time::Instant::now();
    let output = child.wait_with_output()?;
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert_eq!(output.status.code(), Some(125));
    let stderr = text(&output.stderr);
    assert!(stderr.contains(&format!("following run {run}")), "{stderr}");
    assert!(stderr.contains("cannot reach the server"), "{stderr}");

    // The restart on the same node reconciles: the run is interrupted.
    let server = ServerProcess::start(&data, &node, &tokens)?;
    let out = Command::new(PADDOCK)
        .args(["runs", "show", &run, "--json"])
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", &token)
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(shown["state"], "interrupted", "{shown}");

    // `run --resume` continues it there as a new run: the killed command is
    // not run again, its outcome is reported unknown, and the rest of the
    // script (complete_task) finishes it.
    let rest = root.path().join("rest.json");
    std::fs::write(
        &rest,
        r#"{"turns": [{"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "x", "evidence": ["y"]}}]}]}"#,
    )?;
    let out = Command::new(PADDOCK)
        .args(["run", "--resume", &run, "--json", "--model"])
        .arg(format!("scripted:{}", rest.display()))
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", &token)
        .stdin(Stdio::null())
        .output()?;
    let stdout = text(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let result = lines.last().expect("a result line");
    assert_eq!(result["type"], "result", "{stdout}\n{}", text(&out.stderr));
    assert_eq!(result["run"]["resumed_from"], run.as_str(), "{result}");
    assert_eq!(result["run"]["state"], "completed", "{result}");
    let unknown = lines
        .iter()
        .find(|l| l["kind"] == "tool.result")
        .expect("the killed call's result");
    assert_eq!(unknown["data"]["call_id"], "call_1_1", "{unknown}");
    assert!(
        unknown["data"]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Outcome unknown")),
        "{unknown}"
    );
    let resumed = result["run"]["id"].as_str().unwrap();
    let out = Command::new(PADDOCK)
        .args(["runs", "show", resumed])
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", &token)
        .output()?;
    assert!(
        text(&out.stdout).contains(&format!("resumes    {run}")),
        "{}",
        text(&out.stdout)
    );
    // a second resume is refused as the caller's mistake
    let again = Command::new(PADDOCK)
        .args(["run", "--resume", &run, "--model"])
        .arg(format!("scripted:{}", rest.display()))
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", &token)
        .stdin(Stdio::null())
        .output()?;
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(
        text(&again.stderr).contains("already resumed"),
        "{}",
        text(&again.stderr)
    );
    Ok(())
}

#[test]
fn subagent_scripts_are_sent_with_a_remote_run_and_drive_each_child() -> Result<()> {
    let fx = Fixture::new(true)?;
    std::fs::remove_file(fx.workspace.join("test.sh"))?;
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/subagents");
    std::fs::copy(
        example.join("workspace/test.sh"),
        fx.workspace.join("test.sh"),
    )?;
    let scripted = |name: &str| format!("scripted:{}", example.join(name).display());
    let ws = fx.workspace.to_string_lossy().into_owned();
    let parent = scripted("parent.json");
    let children: Vec<String> = ["explore", "review", "build"]
        .iter()
        .map(|key| format!("{key}={}", scripted(&format!("{key}.json"))))
        .collect();
    let mut args = vec![
        "run",
        "Make sh test.sh pass, with subagents",
        "--workspace",
        &ws,
        "--model",
        &parent,
        "--json",
    ];
    for child in &children {
        args.extend(["--subagent-model", child.as_str()]);
    }
    let out = fx.run_goal(&mut fx.paddock(&args))?;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.lines().last().context("no output")?)?;
    let run = &result["run"];
    assert_eq!(run["state"], "completed", "{run}");
    // The children ran their own scripts on the server: their turns are in
    // the total, beyond the parent's own.
    let own = run["usage"]["turns"].as_u64().context("own turns")?;
    let total = run["total_usage"]["turns"]
        .as_u64()
        .context("total turns")?;
    assert!(
        total > own,
        "children's usage missing: own {own}, total {total}"
    );
    let children = fx.json(fx.paddock(&[
        "runs",
        "children",
        run["id"].as_str().context("run id")?,
        "--json",
    ]))?;
    let profiles: Vec<&str> = children["runs"]
        .as_array()
        .context("runs")?
        .iter()
        .filter_map(|child| child["profile"].as_str())
        .collect();
    for profile in ["explore", "review", "build"] {
        assert!(profiles.contains(&profile), "{profile} missing: {children}");
    }
    Ok(())
}

/// `text` with each of `ids` replaced by `<id>` and the `updated` line left out.
fn normalized(text: &str, ids: &[&str]) -> String {
    let mut out: String = text
        .lines()
        .filter(|l| !l.starts_with("updated "))
        .map(|l| format!("{l}\n"))
        .collect();
    for id in ids {
        out = out.replace(id, "<id>");
    }
    out
}

#[test]
fn memory_and_doctor_commands_work_here_and_on_a_server() -> Result<()> {
    let fx = Fixture::new(true)?;
    let databases = [
        ("here", fx.data.join("paddock.db")),
        (
            "server",
            fx.root.path().join("server-data").join("paddock.db"),
        ),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut outputs = Vec::new();
    for (place, db) in &databases {
        let cmd = |args: &[&str]| {
            if *place == "here" {
                fx.local(args)
            } else {
                fx.paddock(args)
            }
        };
        assert_eq!(fx.ok(cmd(&["memory", "ls"]))?, "no memory\n", "{place}");
        let doctor = fx.ok(cmd(&["doctor"]))?;
        assert!(
            doctor.starts_with("no quarantined rows"),
            "{place}: {doctor}"
        );

        let added = fx.json(cmd(&[
            "memory",
            "add",
            "Indent with tabs, never spaces",
            "--kind",
            "preference",
            "--json",
        ]))?;
        let id = added["id"].as_str().unwrap().to_owned();
        let shown = fx.ok(cmd(&["memory", "show", &id]))?;
        let found = fx.ok(cmd(&["memory", "search", "tabs indent"]))?;
        assert!(found.starts_with(&id), "{place}: {found}");

        // bad input exits 2 and says why, here and on the server alike
        let missing = paddock_core::ids::MemoryId::generate().to_string();
        for args in [
            vec!["memory", "add", "  "],
            vec!["memory", "add", "x", "--kind", "wizardry"],
            vec!["memory", "ls", "--kind", "wizardry"],
            vec!["memory", "show", "not-an-id"],
            vec!["memory", "show", &missing],
            vec!["memory", "rm", &missing],
            vec!["memory", "search", "  "],
            vec!["memory", "search", "tabs", "--limit", "0"],
            vec!["memory", "ls", "--workspace", "/nonexistent/dir"],
        ] {
            let out = cmd(&args).output()?;
            assert_eq!(
                out.status.code(),
                Some(2),
                "{place} {args:?}: {}",
                text(&out.stderr)
            );
            assert!(
                text(&out.stderr).starts_with("paddock: "),
                "{place} {args:?}"
            );
        }

        // a record damaged in the database is quarantined, skipped, and listed
        let second = fx.json(cmd(&["memory", "add", "The build needs make 4", "--json"]))?;
        let second = second["id"].as_str().unwrap().to_owned();
        // and one an agent proposed for its own workspace
        let third = fx.json(cmd(&["memory", "add", "Run make check first", "--json"]))?;
        let third = third["id"].as_str().unwrap().to_owned();
        runtime.block_on(async {
            sqlx::any::install_default_drivers();
            let pool = sqlx::AnyPool::connect(&format!("sqlite://{}", db.display())).await?;
            let done = sqlx::query("UPDATE memories SET source_run_id = 'not-a-run' WHERE id = $1")
                .bind(&second)
                .execute(&pool)
                .await?;
            assert_eq!(done.rows_affected(), 1);
            let done = sqlx::query(
                "UPDATE memories SET status = 'proposed', scope = 'workspace', \
                 workspace_id = $2 WHERE id = $1",
            )
            .bind(&third)
            .bind(paddock_core::ids::WorkspaceId::generate().as_str())
            .execute(&pool)
            .await?;
            assert_eq!(done.rows_affected(), 1);
            pool.close().await;
            anyhow::Ok(())
        })?;
        // a person approves it and widens it to every workspace of the tenant
        let approved = fx.json(cmd(&["memory", "approve", &third, "--tenant", "--json"]))?;
        assert_eq!(
            (
                &approved["status"],
                &approved["scope"],
                &approved["workspace"]
            ),
            (&json!("active"), &json!("tenant"), &Value::Null),
            "{place}: {approved}"
        );
        fx.ok(cmd(&["memory", "rm", &third]))?;
        let listed = fx.ok(cmd(&["memory", "ls"]))?;
        assert_eq!(listed.lines().count(), 1, "{place}: {listed}");
        assert!(listed.starts_with(&id), "{place}: {listed}");
        let doctor = fx.ok(cmd(&["doctor"]))?;
        let lines: Vec<&str> = doctor.lines().collect();
        assert_eq!(lines.len(), 4, "{place}: {doctor}");
        assert!(lines[0].starts_with("1 quarantined row "), "{doctor}");
        assert!(lines[1].contains("TABLE") && lines[1].ends_with("REASON"));
        assert!(
            lines[2].contains(&format!("memories  id={second}")),
            "{doctor}"
        );
        assert!(lines[2].contains("source_run_id"), "{doctor}");
        assert!(lines[3].contains("stored: {") && lines[3].contains("not-a-run"));
        let doctor = fx.json(cmd(&["doctor", "--json"]))?;
        assert_eq!(doctor["quarantined"][0]["table"], "memories", "{doctor}");
        assert_eq!(doctor["quarantined"][0]["raw"]["id"], second.as_str());

        let removed = fx.ok(cmd(&["memory", "rm", &id]))?;
        assert_eq!(removed, format!("removed {id}\n"));
        outputs.push((
            normalized(&shown, &[&id]),
            normalized(&found, &[&id]),
            normalized(&listed, &[&id]),
        ));
    }
    // the same output from the local data dir and from the server
    assert_eq!(outputs[0], outputs[1]);
    assert!(
        outputs[0]
            .0
            .contains("text       Indent with tabs, never spaces")
    );
    // with --server, --workspace names a workspace id, not a directory
    let out = fx
        .paddock(&["memory", "ls", "--workspace", "/tmp"])
        .output()?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("workspace id"));
    Ok(())
}
