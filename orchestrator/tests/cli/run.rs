//! `paddock run` and `paddock session` on the embedded defaults, as a user
//! runs them: the real binary, a SQLite file in a temporary data dir, real
//! jailed sandboxes, the demo workspace and its scripted trajectory. Needs
//! root and `paddock-guest` built next to `paddock`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use common::{PADDOCK, processes_with, wait_until};
use serde_json::{Value, json};

const GOAL: &str = "Write fizzbuzz.sh so that sh test.sh passes";

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/demo")
}

fn trajectory() -> String {
    format!("scripted:{}", demo().join("trajectory.json").display())
}

/// A fresh copy of the demo workspace (without anything a run wrote) and a data dir.
struct Fixture {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    data: PathBuf,
}

impl Fixture {
    fn new() -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let workspace = dir.path().join("demo");
        std::fs::create_dir(&workspace)?;
        for name in ["test.sh", "README.md"] {
            std::fs::copy(demo().join(name), workspace.join(name))?;
        }
        let data = dir.path().join("data");
        Ok(Self {
            _dir: dir,
            workspace,
            data,
        })
    }

    fn paddock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(PADDOCK);
        command
            .args(args)
            .arg("--data-dir")
            .arg(&self.data)
            .env_remove("PADDOCK_SERVER")
            .env_remove("PADDOCK_MODEL")
            .stdin(Stdio::null());
        command
    }

    fn run_goal(&self, extra: &[&str]) -> Result<Output> {
        let workspace = self.workspace.to_string_lossy().into_owned();
        let model = trajectory();
        let mut args = vec!["run", GOAL, "--workspace", &workspace, "--model", &model];
        args.extend_from_slice(extra);
        Ok(self.paddock(&args).output()?)
    }

    fn json(&self, args: &[&str]) -> Result<Value> {
        let out = self.paddock(args).output()?;
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// Every file of the workspace and its content.
    fn files(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&self.workspace)? {
            let entry = entry?;
            files.insert(
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path())?,
            );
        }
        Ok(files)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `sh test.sh` on the host, in `dir`.
fn tests_pass(dir: &Path) -> Result<bool> {
    Ok(Command::new("sh")
        .arg("test.sh")
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()?
        .success())
}

#[test]
fn the_demo_meets_its_goal_and_can_run_again() -> Result<()> {
    let fx = Fixture::new()?;
    assert!(!tests_pass(&fx.workspace)?);
    for attempt in 1..=2 {
        let out = fx.run_goal(&["--criteria", "sh test.sh passes"])?;
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "attempt {attempt}: {stdout}\n{}",
            text(&out.stderr)
        );
        for expected in [
            "[plan] v1",
            "[tool] write_file fizzbuzz.sh (17 lines)",
            "[tool] run_command $ sh test.sh",
            "<- run_command exit 1: 3 of 3 tests failed",
            "[tool] edit_file fizzbuzz.sh",
            "<- run_command exit 0: all 3 tests passed",
            "[progress] The tests fail",
            "== Review: goal met ==",
            "[met] sh test.sh passes: sh test.sh exited 0",
            "last successful command: sh test.sh",
        ] {
            assert!(
                stdout.contains(expected),
                "attempt {attempt}: no {expected:?} in\n{stdout}"
            );
        }
        // The review comes last.
        let review = stdout.find("== Review").unwrap();
        assert!(stdout.find("[finished] completed").unwrap() < review);
        assert!(tests_pass(&fx.workspace)?, "attempt {attempt}");
    }
    Ok(())
}

/// A workspace whose end-of-run snapshot fails (more files than a snapshot
/// takes), so the run logs a warning after its last event.
fn too_many_files(fx: &Fixture) -> Result<()> {
    let many = fx.workspace.join("many");
    std::fs::create_dir(&many)?;
    for i in 0..=paddock_snapshot::DEFAULT_MAX_FILES {
        std::fs::write(many.join(i.to_string()), b"")?;
    }
    Ok(())
}

/// The only session of the data dir and its runs' states.
fn run_states(fx: &Fixture) -> Result<Vec<String>> {
    let listed = fx.json(&["session", "ls", "--json"])?;
    let session = listed["sessions"][0]["id"].as_str().context("no session")?;
    let shown = fx.json(&["session", "show", session, "--json"])?;
    Ok(shown["runs"]
        .as_array()
        .context("no runs")?
        .iter()
        .map(|run| run["state"].as_str().unwrap_or_default().to_owned())
        .collect())
}

#[test]
fn closed_pipes_change_nothing_about_the_run() -> Result<()> {
    let fx = Fixture::new()?;
    too_many_files(&fx)?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    // a workspace too large to checkpoint: run there anyway (--yes)
    let mut child = fx
        .paddock(&["run", GOAL, "--workspace", &ws, "--model", &model, "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Nobody reads: every write paddock makes from now on meets EPIPE.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let exited = wait_until(Duration::from_secs(120), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !exited {
        let _ = child.kill();
    }
    assert!(exited, "paddock run hung on its closed pipes");
    assert_eq!(child.wait()?.code(), Some(0));
    assert_eq!(run_states(&fx)?, ["completed"]);
    assert!(tests_pass(&fx.workspace)?);

    // The same warning, read by a person: a sentence, no raw log line.
    let out = fx
        .paddock(&["run", GOAL, "--workspace", &ws, "--model", &model, "--yes"])
        .output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("paddock: warning: end-of-run snapshot failed"),
        "{stderr}"
    );
    assert!(!stderr.contains(" WARN "), "a raw tracing line: {stderr}");
    // ... and for machines, JSON lines.
    let out = fx
        .paddock(&[
            "run",
            GOAL,
            "--workspace",
            &ws,
            "--model",
            &model,
            "--log-format",
            "json",
            "--yes",
        ])
        .output()?;
    let line = text(&out.stderr);
    let warning: Value = serde_json::from_str(line.lines().next().context("no log line")?)?;
    assert_eq!(warning["level"], "WARN", "{line}");
    Ok(())
}

#[test]
fn a_snapshot_limit_is_named_with_how_to_raise_it_and_can_be_raised() -> Result<()> {
    let fx = Fixture::new()?;
    // The demo's root, test.sh, README.md and the fizzbuzz.sh the run writes.
    let out = fx.run_goal(&["--snapshot-max-files", "2"])?;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    for expected in [
        "[snapshot] no end snapshot was kept (no fork from this run): the workspace holds \
         more than 2 entries (files, directories and links): over the snapshot limit \
         max_files = 2",
        "`paddock run --snapshot-max-files N`",
        "`max_files` in the server config's [snapshot] section",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in\n{stdout}");
    }
    let out = fx.run_goal(&["--snapshot-max-bytes", "10", "--json"])?;
    let lines = text(&out.stdout);
    let finished = lines
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["kind"] == "run.finished")
        .context("no run.finished event")?;
    let hit = &finished["data"]["snapshot_limit"];
    assert_eq!(
        (&hit["limit"], &hit["value"]),
        (&json!("max_bytes"), &json!(10)),
        "{finished}"
    );
    assert!(
        hit["message"]
            .as_str()
            .unwrap()
            .contains("--snapshot-max-bytes N"),
        "{hit}"
    );

    // Over the default, raised on the command line: the end snapshot is kept.
    too_many_files(&fx)?;
    let out = fx.run_goal(&["--snapshot-max-files", "20000", "--json", "--yes"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_str(text(&out.stdout).lines().last().unwrap())?;
    assert!(result["run"]["end_snapshot"].is_string(), "{result}");
    let out = fx.run_goal(&["--snapshot-max-files", "0"])?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--snapshot-max-files must be more than 0"));
    Ok(())
}

#[test]
fn a_criterion_the_agent_never_named_is_reviewed_unsure() -> Result<()> {
    let fx = Fixture::new()?;
    // The demo's claim is about "sh test.sh passes" only.
    let out = fx.run_goal(&["--criteria", "README.md documents fizzbuzz.sh usage"])?;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("[unsure] README.md documents fizzbuzz.sh usage\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("[met] README.md"), "{stdout}");
    Ok(())
}

#[test]
fn plan_mode_changes_nothing_and_does_not_claim_success() -> Result<()> {
    let fx = Fixture::new()?;
    let before = fx.files()?;
    let out = fx.run_goal(&["--mode", "plan"])?;
    let stdout = text(&out.stdout);
    // Every call that would change or verify anything is refused, so a "met"
    // claim cannot be shown; the review must not let it stand.
    assert_ne!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("[sandbox] native ready (workspace read-only)"),
        "{stdout}"
    );
    assert!(stdout.contains("<- write_file denied"), "{stdout}");
    assert!(stdout.contains("<- run_command denied"), "{stdout}");
    assert!(!stdout.contains("== Review: goal met"), "{stdout}");
    assert_eq!(fx.files()?, before);
    Ok(())
}

/// `--driver` names what drives the agent: an agent CLI given a model it
/// cannot call (a script) is refused before anything runs (usage, exit 2),
/// saying what it needs; a name that is no driver is refused by the
/// parser, listing the known ones.
#[test]
fn a_driver_that_cannot_call_the_model_is_refused_before_anything_runs() -> Result<()> {
    let fx = Fixture::new()?;
    let before = fx.files()?;
    let out = fx.run_goal(&["--driver", "claude-code"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--driver: the claude-code driver calls its model provider itself: give it a \
             model of anthropic"
        ),
        "{stderr}"
    );
    let workspace = fx.workspace.to_string_lossy().into_owned();
    let out = fx
        .paddock(&[
            "run",
            GOAL,
            "--workspace",
            &workspace,
            "--model",
            "anthropic:claude-x",
            "--driver",
            "codex",
        ])
        .env("ANTHROPIC_API_KEY", "sk-test")
        .output()?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the codex driver speaks openai's API, not anthropic's"),
        "{stderr}"
    );
    let out = fx.run_goal(&["--driver", "gemini"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("expected one of builtin, claude-code, codex, opencode"),
        "{stderr}"
    );
    assert_eq!(fx.files()?, before);
    // the built-in loop, named, is the default's
    let out = fx.run_goal(&["--driver", "builtin"])?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("== Review: goal met"));
    Ok(())
}

fn usage_of(value: &Value) -> [u64; 4] {
    ["turns", "input_tokens", "output_tokens", "tool_calls"]
        .map(|field| value[field].as_u64().unwrap_or(u64::MAX))
}

/// examples/subagents from the command line: `--subagent-model` gives each
/// child profile its own script (explore lists and reads, review reads and
/// searches, build writes bin/hello.sh and runs the test), the parent
/// applies the change; the result shows the run's own usage and the total
/// with its children's, in `--json`, in the text and in `session show`.
#[test]
fn subagent_scripts_from_the_cli_drive_each_child_and_usage_adds_up() -> Result<()> {
    let fx = Fixture::new()?;
    std::fs::remove_file(fx.workspace.join("test.sh"))?;
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/subagents");
    std::fs::copy(
        example.join("workspace/test.sh"),
        fx.workspace.join("test.sh"),
    )?;
    let scripted = |name: &str| format!("scripted:{}", example.join(name).display());
    let workspace = fx.workspace.to_string_lossy().into_owned();
    let (parent, explore, review, build) = (
        scripted("parent.json"),
        scripted("explore.json"),
        scripted("review.json"),
        scripted("build.json"),
    );
    let flags: Vec<String> = [
        ("explore", &explore),
        ("review", &review),
        ("build", &build),
    ]
    .iter()
    .flat_map(|(key, spec)| ["--subagent-model".to_owned(), format!("{key}={spec}")])
    .collect();
    let args = |json: bool| {
        let mut args = vec![
            "run",
            "Make sh test.sh pass, with subagents",
            "--workspace",
            &workspace,
            "--model",
            &parent,
        ];
        args.extend(flags.iter().map(String::as_str));
        if json {
            args.push("--json");
        }
        args
    };
    let out = fx.paddock(&args(true)).output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let (result, events) = lines.split_last().context("no output")?;
    let run = &result["run"];
    assert_eq!(run["review"]["verdict"], "met", "{run}");
    assert_eq!(usage_of(&run["usage"]), [5, 4300, 145, 7], "{run}");
    assert_eq!(usage_of(&run["total_usage"]), [13, 5480, 285, 16], "{run}");
    let finished = &events.last().context("no events")?["data"];
    assert_eq!(usage_of(&finished["total_usage"]), [13, 5480, 285, 16]);
    assert!(tests_pass(&fx.workspace)?);

    // Each child as `session show` has it: its profile's script, its usage.
    let sessions = fx.json(&["session", "ls", "--json"])?;
    let mut children = Vec::new();
    for session in sessions["sessions"].as_array().context("sessions")? {
        if session["parent_run"] != run["id"] {
            continue;
        }
        let shown = fx.json(&["session", "show", session["id"].as_str().unwrap(), "--json"])?;
        let child = &shown["runs"][0];
        assert_eq!(child["review"]["verdict"], "met", "{child}");
        children.push((
            child["profile"].as_str().unwrap_or_default().to_owned(),
            usage_of(&child["usage"]),
        ));
    }
    children.sort();
    assert_eq!(
        children,
        [
            ("build".to_owned(), [3, 450, 60, 3]),
            ("explore".to_owned(), [2, 280, 40, 3]),
            ("review".to_owned(), [3, 450, 40, 3]),
        ]
    );

    // The text says both, and a bad --subagent-model is a usage error.
    std::fs::remove_dir_all(fx.workspace.join("bin"))?;
    let out = fx.paddock(&args(false)).output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("after 5 model turns, 7 tool calls, 4445 tokens"),
        "{stdout}"
    );
    assert!(
        stdout.contains("With its subagents: 13 model turns, 16 tool calls, 5765 tokens"),
        "{stdout}"
    );
    for bad in ["explore", "=scripted:x.json", "explore=nope:x"] {
        let out = fx
            .paddock(&[
                "run",
                "x",
                "--workspace",
                &workspace,
                "--model",
                &parent,
                "--subagent-model",
                bad,
            ])
            .output()?;
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("--subagent-model"),
            "{}",
            text(&out.stderr)
        );
    }
    Ok(())
}

#[test]
fn json_output_is_one_object_per_line_and_a_result() -> Result<()> {
    let fx = Fixture::new()?;
    let out = fx.run_goal(&["--json"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let (result, events) = lines.split_last().context("no output")?;
    assert_eq!(result["type"], "result");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["run"]["state"], "completed");
    assert_eq!(result["run"]["review"]["verdict"], "met");
    let run = &result["run"]["id"];
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(
        events
            .iter()
            .all(|e| e["type"] == "event" && &e["run"] == run)
    );
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run.started"));
    assert_eq!(kinds.last(), Some(&"run.finished"));
    for kind in [
        "plan.updated",
        "tool.call",
        "tool.result",
        "progress",
        "run.review",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    let started = &events[0]["data"];
    assert_eq!(started["goal"], GOAL);
    assert_eq!(started["mode"], "build");
    Ok(())
}

#[test]
fn sessions_show_runs_continue_fork_archive_and_delete() -> Result<()> {
    let fx = Fixture::new()?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let out = fx.run_goal(&["--json"])?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_str(text(&out.stdout).lines().last().unwrap())?;
    let session = result["session"].as_str().unwrap().to_owned();
    let first_run = result["run"]["id"].as_str().unwrap().to_owned();

    let listed = fx.json(&["session", "ls", "--workspace", &ws, "--json"])?;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["sessions"][0]["id"], session.as_str());
    assert_eq!(listed["sessions"][0]["title"], GOAL);
    let elsewhere = tempfile::tempdir()?;
    let none = fx.json(&[
        "session",
        "ls",
        "--workspace",
        &elsewhere.path().to_string_lossy(),
        "--json",
    ])?;
    assert_eq!(none["sessions"], Value::Array(vec![]));

    // Continue the session with a second run that breaks the file.
    let script = fx.data.parent().unwrap().join("break.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "fizzbuzz.sh", "content": "exit 3\n"}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "not_met", "summary": "broke it"}}]}]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let out = fx
        .paddock(&["run", "break it", "--session", &session, "--model", &model])
        .output()?;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("== Review: goal NOT met =="));
    assert!(!tests_pass(&fx.workspace)?);

    let shown = fx.json(&["session", "show", &session, "--json"])?;
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["id"], first_run.as_str());
    assert_eq!(runs[0]["review"]["verdict"], "met");
    assert_eq!(runs[1]["review"]["verdict"], "not_met");
    let human = text(&fx.paddock(&["session", "show", &session]).output()?.stdout);
    assert!(
        human.contains(&first_run) && human.contains("completed"),
        "{human}"
    );

    // A fork at the first run's end has the working file back.
    let fork = fx.json(&[
        "session", "fork", &session, "--at-run", &first_run, "--json",
    ])?;
    assert_eq!(fork["forked_from"], session.as_str());
    assert_eq!(fork["forked_at_run"], first_run.as_str());
    assert_eq!(fork["title"], format!("{GOAL} (fork)"));
    let fork_id = fork["id"].as_str().unwrap();
    let fork_dir = fx
        .data
        .join("workspaces")
        .join(fork["workspace"].as_str().unwrap());
    assert!(tests_pass(&fork_dir)?, "{}", fork_dir.display());
    let all = fx.json(&["session", "ls", "--json"])?;
    assert_eq!(all["sessions"].as_array().map(Vec::len), Some(2));

    // Events: every one, in order, as JSON lines; --after skips.
    let out = fx
        .paddock(&["session", "events", &session, "--json"])
        .output()?;
    assert!(out.status.success());
    let seqs: Vec<u64> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).map(|v| v["seq"].as_u64().unwrap()))
        .collect::<Result<_, _>>()?;
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let out = fx
        .paddock(&["session", "events", &session, "--after", "5", "--json"])
        .output()?;
    assert_eq!(text(&out.stdout).lines().count(), seqs.len() - 5);

    let renamed = fx.json(&["session", "rename", fork_id, "the fixed one", "--json"])?;
    assert_eq!(renamed["title"], "the fixed one");
    let archived = fx.json(&["session", "archive", &session, "--json"])?;
    assert_eq!(archived["status"], "archived");
    // An archived session takes no new run: a usage error.
    let out = fx
        .paddock(&["run", "more", "--session", &session, "--model", &model])
        .output()?;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("archived"),
        "{}",
        text(&out.stderr)
    );

    // Delete: refused while the fork reads the session's history, naming
    // the fork; the fork goes, then the session.
    let out = fx.paddock(&["session", "delete", &session]).output()?;
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains(fork_id), "{}", text(&out.stderr));
    let deleted = fx.json(&["session", "delete", fork_id, "--json"])?;
    assert_eq!(deleted["sessions"][0], fork_id);
    let deleted = fx.json(&["session", "delete", &session, "--json"])?;
    assert_eq!(deleted["sessions"][0], session.as_str());
    assert!(deleted["checkpoints"].as_u64() > Some(0), "{deleted}");
    let all = fx.json(&["session", "ls", "--json"])?;
    assert_eq!(all["sessions"], Value::Array(vec![]));
    Ok(())
}

#[test]
fn ctrl_c_cancels_the_run_and_tears_the_sandbox_down() -> Result<()> {
    let fx = Fixture::new()?;
    let script = fx.data.parent().unwrap().join("slow.json");
    // A command no other test runs (the tests of this binary run at once,
    // and remote.rs's runs sleep too): the process check below is this
    // run's alone.
    let command = format!("sleep 300.{}", std::process::id());
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "COMMAND", "timeout_secs": 600}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "x", "evidence": ["y"]}}]}]}"#
            .replace("COMMAND", &command),
    )?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = format!("scripted:{}", script.display());
    let mut child = fx
        .paddock(&["run", "wait", "--workspace", &ws, "--model", &model])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains(&format!("[tool] run_command $ {command}")) {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            panic!("paddock run ended early: {seen}");
        }
        seen.push_str(&line);
    }
    // The sandbox runs its command (the monitor's command line names no host
    // path any more, so the command is what identifies this sandbox).
    assert!(wait_until(Duration::from_secs(5), || !processes_with(
        &command
    )
    .is_empty()));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()?;
    assert!(status.success());
    let output = child.wait_with_output()?;
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest)?;
    assert_eq!(output.status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("[finished] cancelled (cancelled)"), "{rest}");
    assert!(rest.contains("[sandbox] stopped"), "{rest}");
    assert!(text(&output.stderr).contains("cancelling the run"));
    assert!(
        wait_until(Duration::from_secs(5), || processes_with(&command)
            .is_empty()),
        "a sandbox process outlived the cancelled run: {:?}",
        processes_with(&command)
    );
    Ok(())
}

/// kill -9 of a local `paddock run`: the next command sees that the lease
/// owner's process is gone (pid and start time) and recovers at once, well
/// before the 30 s lease would expire; the dead run is never shown active.
#[test]
fn a_run_killed_with_sigkill_is_recovered_by_the_next_command() -> Result<()> {
    let fx = Fixture::new()?;
    let script = fx.data.parent().unwrap().join("slow.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 300", "timeout_secs": 600}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "x", "evidence": ["y"]}}]}]}"#,
    )?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = format!("scripted:{}", script.display());
    let mut child = fx
        .paddock(&["run", "wait", "--workspace", &ws, "--model", &model])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("[tool] run_command $ sleep 300") {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            panic!("paddock run ended early: {seen}");
        }
        seen.push_str(&line);
    }
    child.kill()?; // SIGKILL: no cleanup code of paddock runs
    child.wait()?;
    let killed = std::time::Instant::now();

    let listed = fx.json(&["session", "ls", "--workspace", &ws, "--json"])?;
    let session = listed["sessions"][0]["id"].as_str().unwrap().to_owned();
    let shown = fx.json(&["session", "show", &session, "--json"])?;
    assert_eq!(shown["runs"][0]["state"], "interrupted", "{shown}");
    let model = trajectory();
    let again = fx
        .paddock(&["run", GOAL, "--session", &session, "--model", &model])
        .output()?;
    let stderr = text(&again.stderr);
    assert!(
        !stderr.contains("already has a run in progress"),
        "{stderr}"
    );
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}\n{stderr}",
        text(&again.stdout)
    );
    // Before the dead run's lease could expire: recovered by its owner's
    // process being gone, not by waiting.
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "recovery took {:?}",
        killed.elapsed()
    );
    // The killed run's sandbox goes too (its monitor follows its parent).
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&ws).is_empty()),
        "a sandbox process outlived the killed run: {:?}",
        processes_with(&ws)
    );
    Ok(())
}

#[test]
fn budgets_and_usage_errors_have_their_exit_codes() -> Result<()> {
    let fx = Fixture::new()?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    for args in [
        vec!["run", "g", "--workspace", &ws, "--model", "gemini:pro"],
        vec![
            "run",
            "g",
            "--workspace",
            "/nonexistent/dir",
            "--model",
            &model,
        ],
        vec![
            "run",
            "g",
            "--workspace",
            &ws,
            "--model",
            "scripted:/nonexistent.json",
        ],
        vec!["run", " ", "--workspace", &ws, "--model", &model],
        vec![
            "run",
            "g",
            "--workspace",
            &ws,
            "--model",
            &model,
            "--max-turns",
            "0",
        ],
        vec!["run", "g", "--session", "ses_nope", "--model", &model],
        vec![
            "run",
            "g",
            "--workspace",
            &ws,
            "--model",
            &model,
            "--timeout",
            "5d",
        ],
        vec!["run", "g", "--workspace", &ws],
    ] {
        let out = fx.paddock(&args).env_remove("PADDOCK_MODEL").output()?;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).is_empty());
    }
    // None of them ran anything.
    assert!(!fx.workspace.join("fizzbuzz.sh").exists());

    // Two model turns: the code is written but never tested.
    let out = fx.run_goal(&["--max-turns", "2"])?;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("(budget_exceeded)"), "{stdout}");
    assert!(!stdout.contains("[tool] run_command"), "{stdout}");
    Ok(())
}

#[test]
fn session_commands_work_against_a_server() -> Result<()> {
    let data = tempfile::tempdir()?;
    let token = format!("session-token-{}", common::unique("t"));
    let server = common::ServerProcess::start(
        data.path(),
        &common::unique("sessions"),
        &format!("cli:{token}"),
    )?;
    let url = server.url.clone();
    // A workspace with the demo's tests, a session, and a run of the demo
    // trajectory given inline, over plain HTTP.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (session, run) = runtime.block_on(async {
        let http = reqwest::Client::new();
        let post = |path: &str, body: Value| {
            http.post(format!("{url}{path}"))
                .bearer_auth(&token)
                .json(&body)
                .send()
        };
        let ws: Value = post("/v1/workspaces", serde_json::json!({"name": "demo"}))
            .await?
            .json()
            .await?;
        let ws = ws["id"].as_str().context("workspace id")?.to_owned();
        std::fs::copy(
            demo().join("test.sh"),
            data.path().join("workspaces").join(&ws).join("test.sh"),
        )?;
        let session: Value = post(
            "/v1/sessions",
            serde_json::json!({"workspace": ws, "title": "remote"}),
        )
        .await?
        .json()
        .await?;
        let session = session["id"].as_str().context("session id")?.to_owned();
        let script: Value =
            serde_json::from_str(&std::fs::read_to_string(demo().join("trajectory.json"))?)?;
        let run: Value = post(
            &format!("/v1/sessions/{session}/runs"),
            serde_json::json!({"goal": GOAL, "model": {"scripted": script}}),
        )
        .await?
        .json()
        .await?;
        let run = run["id"].as_str().context("run id")?.to_owned();
        anyhow::Ok((session, run))
    })?;
    let cli = |args: &[&str]| -> Result<Output> {
        Ok(Command::new(PADDOCK)
            .args(args)
            .env("PADDOCK_SERVER", &server.url)
            .env("PADDOCK_TOKEN", &token)
            .stdin(Stdio::null())
            .output()?)
    };
    let json = |args: &[&str]| -> Result<Value> {
        let out = cli(args)?;
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        Ok(serde_json::from_slice(&out.stdout)?)
    };

    assert!(wait_until(Duration::from_secs(60), || {
        json(&["session", "show", &session, "--json"])
            .is_ok_and(|v| v["runs"][0]["state"] == "completed")
    }));
    let shown = json(&["session", "show", &session, "--json"])?;
    assert_eq!(shown["runs"][0]["id"], run.as_str());
    assert_eq!(shown["runs"][0]["review"]["verdict"], "met");
    let listed = json(&["session", "ls", "--json"])?;
    assert_eq!(listed["sessions"][0]["id"], session.as_str());

    // Events come over SSE and stop once the stored ones are printed.
    let out = cli(&["session", "events", &session, "--json"])?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.last().unwrap()["kind"], "run.finished");
    assert!(events.iter().all(|e| e["run"] == run.as_str()));
    let human = text(&cli(&["session", "events", &session, "--after", "3"])?.stdout);
    assert!(human.starts_with("#4 "), "{human}");
    assert!(
        human.contains("<- run_command exit 1: 3 of 3 tests failed"),
        "{human}"
    );

    let fork = json(&["session", "fork", &session, "--at-run", &run, "--json"])?;
    assert_eq!(fork["forked_at_run"], run.as_str());
    let renamed = json(&["session", "rename", &session, "renamed", "--json"])?;
    assert_eq!(renamed["title"], "renamed");
    let archived = json(&["session", "archive", &session, "--json"])?;
    assert_eq!(archived["status"], "archived");
    let out = cli(&["session", "show", "ses_nope"])?;
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("invalid_id"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.terminate()?.success());
    Ok(())
}

#[test]
fn a_run_that_empties_the_directory_prints_how_to_undo_it_and_rewind_does() -> Result<()> {
    let fx = Fixture::new()?;
    let before = fx.files()?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let script = fx.data.parent().unwrap().join("destroy.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"text": "Cleaning up.", "tool_calls": [{"name": "run_command", "arguments": {"command": "rm -rf ./*"}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "cleaned"}}]}]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let out = fx
        .paddock(&["run", "tidy up", "--workspace", &ws, "--model", &model])
        .output()?;
    let stdout = text(&out.stdout);
    assert!(fx.files()?.is_empty(), "{stdout}");
    let undo = stdout
        .lines()
        .find(|l| l.contains("to undo its changes: paddock session rewind"))
        .unwrap_or_else(|| panic!("no undo line: {stdout}"));
    let command = undo.split_once("paddock session rewind ").unwrap().1;
    let words: Vec<&str> = command.split_whitespace().collect();
    let (session, checkpoint) = (words[0], words[2]);
    assert_eq!(words[1], "--to");

    let listed = fx.json(&["session", "checkpoints", session, "--json"])?;
    let reasons: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["run_start", "tool_batch"]);
    assert_eq!(listed[0]["id"], checkpoint);

    let diff = fx.json(&["session", "diff", session, "--from", checkpoint, "--json"])?;
    let removed: Vec<&str> = diff["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(removed, ["README.md", "test.sh"]);
    let human = text(
        &fx.paddock(&["session", "diff", session, "--from", checkpoint])
            .output()?
            .stdout,
    );
    assert!(
        human.contains("D README.md") && human.contains("-#"),
        "{human}"
    );

    // the user's own file, made after the run: the rewind names it and stops
    std::fs::write(fx.workspace.join("mine.txt"), "my own work\n")?;
    let refused = fx
        .paddock(&["session", "rewind", session, "--to", checkpoint])
        .output()?;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stdout));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("would overwrite 1 path: mine.txt") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("mine.txt"))?,
        "my own work\n"
    );

    // forced: the directory as it was is kept, and the undo printed
    let out = fx
        .paddock(&["session", "rewind", session, "--to", checkpoint, "--force"])
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(fx.files()?, before, "the directory is back byte for byte");
    assert!(stdout.contains("kept in checkpoint"), "{stdout}");
    let undo = stdout
        .lines()
        .find_map(|l| l.split_once("to undo this rewind: paddock "))
        .unwrap_or_else(|| panic!("no undo line: {stdout}"))
        .1;
    let words: Vec<&str> = undo.split_whitespace().collect();
    assert_eq!(&words[..2], ["session", "rewind"], "{undo}");
    assert!(undo.contains("--data-dir"), "{undo}");
    let undone = Command::new(PADDOCK)
        .args(&words)
        .args(["--json"])
        .env_remove("PADDOCK_SERVER")
        .stdin(Stdio::null())
        .output()?;
    assert!(undone.status.success(), "{}", text(&undone.stderr));
    let undone: Value = serde_json::from_slice(&undone.stdout)?;
    assert_eq!(undone["run"]["state"], "completed");
    let files = fx.files()?;
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["mine.txt"],
        "back to the emptied directory with the user's file"
    );
    Ok(())
}

/// `paddock run` where a checkpoint is no undo: in the home directory, `/`
/// or a workspace too large to checkpoint, without a terminal to ask on,
/// it is refused naming --yes, and nothing is written; --yes runs it.
#[test]
fn a_run_with_no_undo_needs_yes() -> Result<()> {
    let fx = Fixture::new()?;
    let ws = fx.workspace.to_string_lossy().into_owned();
    let model = trajectory();
    let before = fx.files()?;
    let home = fx
        .paddock(&["run", GOAL, "--model", &model])
        .current_dir(&fx.workspace)
        .env("HOME", &fx.workspace)
        .output()?;
    assert_eq!(home.status.code(), Some(2), "{}", text(&home.stdout));
    let stderr = text(&home.stderr);
    assert!(
        stderr.contains("is your home directory") && stderr.contains("pass --yes"),
        "{stderr}"
    );
    assert_eq!(fx.files()?, before, "nothing ran");
    let root = fx
        .paddock(&["run", GOAL, "--workspace", "/", "--model", &model])
        .output()?;
    assert_eq!(root.status.code(), Some(2), "{}", text(&root.stdout));
    assert!(
        text(&root.stderr).contains("/ is the root directory"),
        "{}",
        text(&root.stderr)
    );

    // a workspace the checkpoint limits refuse
    too_many_files(&fx)?;
    let big = fx
        .paddock(&["run", GOAL, "--workspace", &ws, "--model", &model])
        .output()?;
    assert_eq!(big.status.code(), Some(2), "{}", text(&big.stdout));
    let stderr = text(&big.stderr);
    assert!(
        stderr.contains("cannot be checkpointed") && stderr.contains("pass --yes"),
        "{stderr}"
    );
    assert!(!fx.workspace.join("fizzbuzz.sh").exists(), "nothing ran");

    // said yes to: the home directory runs
    std::fs::remove_dir_all(fx.workspace.join("many"))?;
    let out = fx
        .paddock(&["run", GOAL, "--model", &model, "--yes"])
        .current_dir(&fx.workspace)
        .env("HOME", &fx.workspace)
        .output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(tests_pass(&fx.workspace)?);
    Ok(())
}

/// A command finds its call's idempotency key in its environment: the
/// invocation id its `tool.call` names (the key a resume's "outcome
/// unknown" answer would give), so a script can record it or pass it on.
#[test]
fn a_command_sees_its_call_s_idempotency_key() -> Result<()> {
    let fx = Fixture::new()?;
    let script = fx.data.parent().unwrap().join("key.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "printf %s \"$PADDOCK_IDEMPOTENCY_KEY\" > key.txt"}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "recorded the key", "evidence": ["key.txt"]}}]}]}"#,
    )?;
    let model = format!("scripted:{}", script.display());
    let workspace = fx.workspace.to_string_lossy().into_owned();
    let out = fx
        .paddock(&[
            "run",
            "record the key",
            "--workspace",
            &workspace,
            "--model",
            &model,
            "--json",
        ])
        .output()?;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let call = text(&out.stdout)
        .lines()
        .map(serde_json::from_str::<Value>)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .find(|e| e["kind"] == "tool.call" && e["data"]["tool"] == "run_command")
        .context("no tool.call of run_command")?;
    let key = call["data"]["invocation_id"].as_str().context("no key")?;
    assert!(key.starts_with("tool_"), "{call}");
    assert_eq!(std::fs::read_to_string(fx.workspace.join("key.txt"))?, key);
    Ok(())
}
