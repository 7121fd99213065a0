//! `paddock session say` as a user types it: the real binary telling a
//! `paddock run` in another process (through the local store) or on a
//! server (through the API) something, and the model server that drives the
//! run seeing it in its next request. Needs root and `paddock-guest` built
//! next to `paddock`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use common::PADDOCK;
use paddock_test_support::model_server::{ModelServer, Turn};
use serde_json::json;

const STEER: &str = "Use the v2 API instead.";

fn script() -> Vec<Turn> {
    vec![
        Turn::call(
            "run_command",
            json!({"command": "echo first line; sleep 0.5; echo second line"}),
        )
        .held(),
        Turn::text("Understood, v2 it is."),
    ]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `paddock: session SES run RUN` line a run starts with.
fn ids_of(line: &str) -> Result<(String, String)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let session = words
        .iter()
        .position(|w| *w == "session")
        .and_then(|i| words.get(i + 1))
        .context("no session id")?;
    let run = words
        .iter()
        .position(|w| *w == "run")
        .and_then(|i| words.get(i + 1))
        .context("no run id")?;
    Ok(((*session).to_owned(), (*run).to_owned()))
}

/// Reads the run's first line, then lets it go on in the background.
fn first_line(child: &mut Child) -> Result<(String, String, BufReader<std::process::ChildStdout>)> {
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let (session, run) = ids_of(&line).with_context(|| line.clone())?;
    Ok((session, run, stdout))
}

/// The rest of the run's output once it ended, and its exit code.
fn finish(child: Child, mut stdout: impl Read) -> Result<(Option<i32>, String, String)> {
    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    let output = child.wait_with_output()?;
    Ok((output.status.code(), rest, text(&output.stderr)))
}

fn paddock(data: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(PADDOCK);
    command
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(Stdio::null());
    command
}

fn assert_steered(model: &ModelServer, runtime: &tokio::runtime::Runtime) -> Result<()> {
    let requests = runtime.block_on(model.wait_requests(2, Duration::from_secs(30)))?;
    assert!(!requests[0].user_texts().iter().any(|t| t == STEER));
    assert_eq!(
        requests[1].user_texts().last().map(String::as_str),
        Some(STEER),
        "{:?}",
        requests[1].body
    );
    Ok(())
}

/// The run's output is not a terminal: no deltas, no live command output,
/// no spinner; the stored events as before, the message among them.
fn assert_plain_output(out: &str) {
    assert!(out.contains(&format!("[you] {STEER}")), "{out}");
    assert!(out.contains("[agent] Understood, v2 it is."), "{out}");
    assert!(!out.contains("    | first line"), "{out}");
    assert_eq!(out.matches("[agent] Understood").count(), 1, "{out}");
    assert!(out.contains("[finished] completed (completed)"), "{out}");
}

#[test]
fn session_say_reaches_a_local_run_in_another_process() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let model = runtime.block_on(ModelServer::start(script()))?;
    let dir = tempfile::tempdir()?;
    let (workspace, data) = (dir.path().join("ws"), dir.path().join("data"));
    std::fs::create_dir(&workspace)?;
    let ws = workspace.to_string_lossy().into_owned();
    let mut child = paddock(
        &data,
        &[
            "run",
            "Call the API",
            "--workspace",
            &ws,
            "--model",
            "openai:scripted",
            "--base-url",
            &model.base_url,
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()?;
    let (session, run, stdout) = first_line(&mut child)?;
    runtime.block_on(model.wait_requests(1, Duration::from_secs(60)))?;

    let said = paddock(&data, &["session", "say", &session, STEER]).output()?;
    assert!(said.status.success(), "{}", text(&said.stderr));
    assert!(text(&said.stdout).contains(&format!("sent to run {run}")));
    model.release(0);
    let (code, out, err) = finish(child, stdout)?;
    // it stopped without complete_task: completed, the goal unsure
    assert!(code.is_some_and(|c| c != 0), "{code:?} {out}{err}");
    assert_steered(&model, &runtime)?;
    assert_plain_output(&out);

    // the run is over: by session and by run id, a clear refusal
    let late = paddock(&data, &["session", "say", &session, "more"]).output()?;
    assert!(!late.status.success());
    assert!(
        text(&late.stderr).contains("has no run in progress"),
        "{}",
        text(&late.stderr)
    );
    let late = paddock(&data, &["session", "say", &run, "more"]).output()?;
    assert!(!late.status.success());
    assert!(
        text(&late.stderr).contains("has finished"),
        "{}",
        text(&late.stderr)
    );
    Ok(())
}

#[test]
fn session_say_reaches_a_run_on_a_server() -> Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let model = runtime.block_on(ModelServer::start(script()))?;
    let dir = tempfile::tempdir()?;
    let (workspace, data) = (dir.path().join("ws"), dir.path().join("data"));
    std::fs::create_dir(&workspace)?;
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!("model_base_urls = [{:?}]\n", model.base_url),
    )?;
    let token = format!("steer-{}", common::unique("t"));
    let server = common::ServerProcess::start_with(
        &data,
        &common::unique("steer"),
        &format!("cli:{token}"),
        &["--config", &config.to_string_lossy()],
    )?;
    let remote = |args: &[&str]| {
        let mut command = Command::new(PADDOCK);
        command
            .args(args)
            .args(["--server", &server.url])
            .env("PADDOCK_TOKEN", &token)
            .env_remove("PADDOCK_MODEL")
            .stdin(Stdio::null());
        command
    };
    let ws = workspace.to_string_lossy().into_owned();
    let mut child = remote(&[
        "run",
        "Call the API",
        "--workspace",
        &ws,
        "--model",
        "openai:scripted",
        "--base-url",
        &model.base_url,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()?;
    let (session, _run, stdout) = first_line(&mut child)?;
    runtime.block_on(model.wait_requests(1, Duration::from_secs(60)))?;
    let said = remote(&["session", "say", &session, STEER, "--json"]).output()?;
    assert!(said.status.success(), "{}", text(&said.stderr));
    let said: serde_json::Value = serde_json::from_slice(&said.stdout)?;
    assert!(said["steering_id"].as_u64().is_some(), "{said}");
    model.release(0);
    let (code, out, err) = finish(child, stdout)?;
    // it stopped without complete_task: completed, the goal unsure
    assert!(code.is_some_and(|c| c != 0), "{code:?} {out}{err}");
    assert_steered(&model, &runtime)?;
    assert_plain_output(&out);
    let late = remote(&["session", "say", &session, "more"]).output()?;
    assert!(!late.status.success());
    assert!(
        text(&late.stderr).contains("has no run in progress"),
        "{}",
        text(&late.stderr)
    );
    server.terminate()?;
    Ok(())
}

/// On a terminal (`script` gives the run a pty for stdin and stdout): a
/// line typed into the running `paddock run` steers it, the command's output
/// shows while it runs, and the streamed answer is printed once.
#[test]
fn a_line_typed_into_an_interactive_run_steers_it() -> Result<()> {
    use std::io::Write;

    let runtime = tokio::runtime::Runtime::new()?;
    let model = runtime.block_on(ModelServer::start(script()))?;
    let dir = tempfile::tempdir()?;
    let (workspace, data) = (dir.path().join("ws"), dir.path().join("data"));
    std::fs::create_dir(&workspace)?;
    let line = format!(
        "{PADDOCK} run 'Call the API' --workspace {} --model openai:scripted --base-url {} --data-dir {}",
        workspace.display(),
        model.base_url,
        data.display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running script(1)")?;
    runtime.block_on(model.wait_requests(1, Duration::from_secs(60)))?;
    // the run reads its terminal once it started; typing goes through the pty
    let mut typing = child.stdin.take().context("stdin")?;
    typing.write_all(format!("{STEER}\n").as_bytes())?;
    typing.flush()?;
    let sent = runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let path = data.join("paddock.db");
            let url = format!("sqlite://{}", path.display());
            if let Ok(store) = paddock_store::SqlStore::open(&url).await {
                use paddock_core::store::Store;
                let tenant = paddock_core::ids::TenantId::parse("local")?;
                for session in store
                    .list_sessions(&tenant, None, &paddock_core::store::Page::default())
                    .await?
                {
                    for run in store.list_runs(&tenant, &session.id).await? {
                        if !store
                            .list_steering_messages(&tenant, &run.id)
                            .await?
                            .is_empty()
                        {
                            return anyhow::Ok(true);
                        }
                    }
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })?;
    assert!(sent, "the typed line never reached the store");
    model.release(0);
    let output = child.wait_with_output()?;
    drop(typing);
    let out = text(&output.stdout);
    assert_steered(&model, &runtime)?;
    assert!(out.contains(&format!("[you] {STEER}")), "{out}");
    // live output, on the terminal only
    assert!(out.contains("    | first line"), "{out}");
    assert!(out.contains("    | second line"), "{out}");
    assert_eq!(
        out.matches("[agent] Understood, v2 it is.").count(),
        1,
        "{out}"
    );
    Ok(())
}

/// Steering accepted while the model thinks, then `kill -9` of the process
/// driving the run before it delivered them: `paddock run --resume` carries
/// both to the resumed run, whose first model request has them, in order,
/// and the session's history holds each once.
#[test]
fn messages_accepted_before_a_kill_9_reach_the_resumed_run() -> Result<()> {
    const FIRST: &str = "Use the v2 API instead.";
    const SECOND: &str = "And add a test for it.";
    let runtime = tokio::runtime::Runtime::new()?;
    let model = runtime.block_on(ModelServer::start(vec![
        Turn::text("never sent").held(),
        Turn::text("Understood, v2 with a test."),
    ]))?;
    let dir = tempfile::tempdir()?;
    let (workspace, data) = (dir.path().join("ws"), dir.path().join("data"));
    std::fs::create_dir(&workspace)?;
    let ws = workspace.to_string_lossy().into_owned();
    let mut child = paddock(
        &data,
        &[
            "run",
            "Call the API",
            "--workspace",
            &ws,
            "--model",
            "openai:scripted",
            "--base-url",
            &model.base_url,
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()?;
    let (session, run, _stdout) = first_line(&mut child)?;
    runtime.block_on(model.wait_requests(1, Duration::from_secs(60)))?;
    for message in [FIRST, SECOND] {
        let said = paddock(&data, &["session", "say", &run, message]).output()?;
        assert!(said.status.success(), "{}", text(&said.stderr));
    }
    // the model still thinks: neither was delivered when the process dies
    child.kill()?;
    child.wait()?;

    let resumed = paddock(
        &data,
        &[
            "run",
            "--resume",
            &run,
            "--model",
            "openai:scripted",
            "--base-url",
            &model.base_url,
        ],
    )
    .output()?;
    let out = text(&resumed.stdout);
    assert!(
        out.contains("[agent] Understood, v2 with a test."),
        "{out}{}",
        text(&resumed.stderr)
    );
    let requests = runtime.block_on(model.wait_requests(2, Duration::from_secs(30)))?;
    assert!(!requests[0].user_texts().iter().any(|t| t == FIRST));
    let texts = requests[1].user_texts();
    assert_eq!(texts[texts.len() - 2..], [FIRST, SECOND], "{texts:?}");
    assert!(out.contains(&format!("[you] {FIRST}")), "{out}");

    // each is in the session's history once, and the dead run takes no more
    let (copies, dead_queue) = runtime.block_on(async {
        use paddock_core::store::Store;
        let url = format!("sqlite://{}", data.join("paddock.db").display());
        let store = paddock_store::SqlStore::open(&url).await?;
        let tenant = paddock_core::ids::TenantId::parse("local")?;
        let session = paddock_core::ids::SessionId::parse(&session)?;
        let run = paddock_core::ids::RunId::parse(&run)?;
        let messages = store.list_messages(&tenant, &session, None).await?;
        let count = |needle: &str| {
            messages
                .iter()
                .filter(|m| {
                    m.message.content.iter().any(|part| {
                        matches!(part, paddock_core::model::ContentPart::Text { text } if text == needle)
                    })
                })
                .count()
        };
        let queue = store.list_steering_messages(&tenant, &run).await?;
        anyhow::Ok(((count(FIRST), count(SECOND)), queue.len()))
    })?;
    assert_eq!(copies, (1, 1));
    assert_eq!(dead_queue, 0);
    let late = paddock(&data, &["session", "say", &run, "more"]).output()?;
    assert!(!late.status.success());
    assert!(
        text(&late.stderr).contains("has finished"),
        "{}",
        text(&late.stderr)
    );
    Ok(())
}
