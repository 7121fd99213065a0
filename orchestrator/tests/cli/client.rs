//! The CLI as a client of `paddock serve`: sandbox create|ls|info|exec|rm and
//! files get|put|ls, human and --json output, exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Command, Output, Stdio};

use anyhow::Result;
use common::{PADDOCK, ServerProcess, unique};
use serde_json::Value;

struct Cli {
    url: String,
    token: String,
}

impl Cli {
    fn run(&self, args: &[&str]) -> Result<Output> {
        Ok(Command::new(PADDOCK)
            .args(args)
            .env("PADDOCK_SERVER", &self.url)
            .env("PADDOCK_TOKEN", &self.token)
            .stdin(Stdio::null())
            .output()?)
    }

    fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.run(args)?;
        assert!(
            out.status.success(),
            "paddock {args:?}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    }
}

#[test]
fn the_cli_drives_a_server() -> Result<()> {
    let data = tempfile::tempdir()?;
    let token = format!("client-token-{}", unique("t"));
    let server = ServerProcess::start(data.path(), &unique("client"), &format!("cli:{token}"))?;
    let cli = Cli {
        url: server.url.clone(),
        token: token.clone(),
    };

    let id = cli
        .ok(&["sandbox", "create", "--pids", "64"])?
        .trim()
        .to_owned();
    assert!(id.starts_with("sb-"), "{id}");

    let listing = cli.ok(&["sandbox", "ls"])?;
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("running")),
        "{listing}"
    );
    let listed: Value =
        serde_json::from_str(&cli.ok(&["sandbox", "ls", "--json", "--state", "running"])?)?;
    assert_eq!(listed[0]["id"], id.as_str());

    let info: Value = serde_json::from_str(&cli.ok(&["sandbox", "info", &id, "--json"])?)?;
    assert_eq!(
        (&info["state"], &info["limits"]["pids"]),
        (&Value::from("running"), &Value::from(64))
    );
    let human = cli.ok(&["sandbox", "info", &id])?;
    assert!(
        human.contains("limits.pids") && human.contains("64"),
        "{human}"
    );

    // exec streams, passes stdout and stderr apart, and exits with the command's code.
    let out = cli.run(&[
        "sandbox",
        "exec",
        &id,
        "--",
        "sh",
        "-c",
        "echo out; echo err >&2; printf '\\377'; exit 4",
    ])?;
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"out\n\xff");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    let json: Value = serde_json::from_slice(
        &cli.run(&["sandbox", "exec", "--json", &id, "--", "echo", "hi"])?
            .stdout,
    )?;
    assert_eq!(
        (&json["exit_code"], &json["stdout"]),
        (&Value::from(0), &Value::from("hi\n"))
    );
    let timed_out = cli.run(&[
        "sandbox",
        "exec",
        "--timeout",
        "0.2",
        &id,
        "--",
        "sleep",
        "10",
    ])?;
    assert_eq!(timed_out.status.code(), Some(124));

    // files
    let local = data.path().join("local.txt");
    std::fs::write(&local, "file body\n")?;
    cli.ok(&["files", "put", &id, "dir/x.txt", local.to_str().unwrap()])?;
    assert_eq!(cli.ok(&["files", "get", &id, "dir/x.txt"])?, "file body\n");
    let copy = data.path().join("copy.txt");
    cli.ok(&[
        "files",
        "get",
        &id,
        "dir/x.txt",
        "-o",
        copy.to_str().unwrap(),
    ])?;
    assert_eq!(std::fs::read_to_string(&copy)?, "file body\n");
    let ls = cli.ok(&["files", "ls", &id, "dir"])?;
    assert!(ls.contains("x.txt") && ls.contains("10"), "{ls}");
    let ls_json: Value = serde_json::from_str(&cli.ok(&["files", "ls", &id, "--json"])?)?;
    assert_eq!(ls_json["entries"][0]["name"], "dir");
    let out = cli.ok(&["sandbox", "exec", &id, "--", "cat", "dir/x.txt"])?;
    assert_eq!(out, "file body\n");

    // Errors carry the server's message and exit 125.
    let missing = cli.run(&["files", "get", &id, "nope.txt"])?;
    assert_eq!(missing.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("file_not_found"));

    assert_eq!(
        cli.ok(&["sandbox", "rm", &id])?.trim(),
        format!("{id} stopped")
    );
    let after = cli.run(&["sandbox", "exec", &id, "--", "true"])?;
    assert_eq!(after.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&after.stderr).contains("sandbox_not_running"));

    // A wrong token is refused; no server at all says how to give one.
    let bad = Cli {
        url: server.url.clone(),
        token: "wrong-token-0000000000".into(),
    };
    let refused = bad.run(&["sandbox", "ls"])?;
    assert_eq!(refused.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unauthorized"));
    let no_server = Command::new(PADDOCK)
        .args(["sandbox", "ls"])
        .env_remove("PADDOCK_SERVER")
        .output()?;
    assert_eq!(no_server.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&no_server.stderr).contains("--server"));
    server.terminate()?;
    Ok(())
}

/// The same cause gives the same exit code whether the command runs in a
/// local `sandbox run` or through a server with `sandbox exec`: 127 no such
/// command, 126 not executable, 2 a bad working directory; a timeout is said
/// on stderr by both.
#[test]
fn run_and_exec_exit_alike_for_the_same_cause() -> Result<()> {
    let data = tempfile::tempdir()?;
    let token = format!("client-token-{}", unique("t"));
    let server = ServerProcess::start(data.path(), &unique("codes"), &format!("cli:{token}"))?;
    let cli = Cli {
        url: server.url.clone(),
        token,
    };
    let id = cli.ok(&["sandbox", "create"])?.trim().to_owned();
    let script = data.path().join("plain.sh");
    std::fs::write(&script, "#!/bin/sh\necho ran\n")?;
    cli.ok(&["files", "put", &id, "plain.sh", script.to_str().unwrap()])?;

    let workspace = tempfile::tempdir()?;
    std::fs::copy(&script, workspace.path().join("plain.sh"))?;
    let ws = workspace.path().to_str().unwrap();
    let local = |args: &[&str]| -> Result<Output> {
        Ok(Command::new(PADDOCK)
            .args(["sandbox", "run", "--workspace", ws])
            .args(args)
            .stdin(Stdio::null())
            .output()?)
    };

    let cases: [(&[&str], &[&str], i32); 3] = [
        (&[], &["paddock-no-such-command-4711"], 127),
        (&[], &["/workspace/plain.sh"], 126),
        (&["--cwd", "no/such/dir"], &["true"], 2),
    ];
    for (options, command, code) in cases {
        let mut exec_args = vec!["sandbox", "exec"];
        exec_args.extend_from_slice(options);
        exec_args.push(&id);
        exec_args.push("--");
        exec_args.extend_from_slice(command);
        let exec = cli.run(&exec_args)?;
        let exec_stderr = String::from_utf8_lossy(&exec.stderr);
        assert_eq!(
            exec.status.code(),
            Some(code),
            "exec {command:?}: {exec_stderr}"
        );
        assert!(
            !exec_stderr.trim().is_empty(),
            "exec {command:?} said nothing"
        );

        let mut run_args = options.to_vec();
        run_args.push("--");
        run_args.extend_from_slice(command);
        let run = local(&run_args)?;
        let run_stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(
            run.status.code(),
            Some(code),
            "run {command:?}: {run_stderr}"
        );
        assert!(
            !run_stderr.trim().is_empty(),
            "run {command:?} said nothing"
        );
    }

    // A workspace that is not a directory is a usage error too.
    let bad_workspace = Command::new(PADDOCK)
        .args([
            "sandbox",
            "run",
            "--workspace",
            "/no/such/workspace",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()?;
    assert_eq!(bad_workspace.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_workspace.stderr).contains("not a directory"));

    // A timeout is noted on stderr, not only in the exit code.
    let exec = cli.run(&[
        "sandbox",
        "exec",
        "--timeout",
        "0.2",
        &id,
        "--",
        "sleep",
        "10",
    ])?;
    assert_eq!(exec.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&exec.stderr).contains("timeout"));
    let run = local(&["--timeout", "0.2", "--", "sleep", "10"])?;
    assert_eq!(run.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&run.stderr).contains("timeout"));

    // Output past --output-cap is dropped, and stderr says so.
    let run = local(&[
        "--output-cap",
        "16",
        "--",
        "sh",
        "-c",
        "yes | head -c 100000",
    ])?;
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.stdout.len() <= 16, "{} bytes kept", run.stdout.len());
    assert!(String::from_utf8_lossy(&run.stderr).contains("output-cap"));

    // An out-of-memory kill: 137, a flag in --json, a sentence on stderr.
    let hog = "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo survived";
    let small = cli
        .ok(&["sandbox", "create", "--memory", "64M"])?
        .trim()
        .to_owned();
    let exec = cli.run(&["sandbox", "exec", &small, "--", "sh", "-c", hog])?;
    let exec_stderr = String::from_utf8_lossy(&exec.stderr);
    assert_eq!(exec.status.code(), Some(137), "{exec_stderr}");
    assert!(
        exec_stderr.contains("running out of memory"),
        "{exec_stderr}"
    );
    let exec = cli.run(&["sandbox", "exec", "--json", &small, "--", "sh", "-c", hog])?;
    let result: serde_json::Value = serde_json::from_slice(&exec.stdout)?;
    assert_eq!(exec.status.code(), Some(137), "{result}");
    assert_eq!(result["oom_killed"], true, "{result}");
    assert!(String::from_utf8_lossy(&exec.stderr).contains("running out of memory"));
    let run = local(&["--memory", "64M", "--json", "--", "sh", "-c", hog])?;
    let result: serde_json::Value = serde_json::from_slice(&run.stdout)?;
    assert_eq!(run.status.code(), Some(137), "{result}");
    assert_eq!(result["oom_killed"], true, "{result}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains(
            "running out of memory: the sandbox reached its memory limit of 64 MiB \
             (raise it with --memory)"
        ),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    server.terminate()?;
    Ok(())
}

/// A config `paddock serve` cannot use is a usage error (2), not a failure of
/// paddock (125), and stderr says what is wrong.
#[test]
fn serve_config_errors_exit_2() -> Result<()> {
    let data = tempfile::tempdir()?;
    let bad_toml = data.path().join("paddock.toml");
    std::fs::write(&bad_toml, "this is = = not toml\n")?;
    for (args, tokens) in [
        (
            vec!["--config", bad_toml.to_str().unwrap()],
            "cli:a-token-of-enough-length",
        ),
        (
            vec!["--config", "/no/such/paddock.toml"],
            "cli:a-token-of-enough-length",
        ),
        (vec!["--node", "Not A Node"], "cli:a-token-of-enough-length"),
        (vec![], "no-colon-in-this-entry"),
    ] {
        let out = Command::new(PADDOCK)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .args(&args)
            .env("PADDOCK_TOKENS", tokens)
            .env_remove("PADDOCK_DATABASE_URL")
            .env_remove("PADDOCK_CONFIG")
            .stdin(Stdio::null())
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "serve {args:?}: {stderr}");
        assert!(stderr.starts_with("paddock: "), "serve {args:?}: {stderr}");
    }
    // Every section's mistake is found at start, before the store is
    // opened or the listener bound, and the message names its key.
    for (toml, key) in [
        ("[http]\nmax_connections = 0\n", "http.max_connections"),
        (
            "[http]\nmax_connections = 8\nreserved_connections = 8\n",
            "http.reserved_connections",
        ),
        (
            "[streams]\nstream_buffer_bytes = 0\n",
            "streams.stream_buffer_bytes",
        ),
        ("[snapshot]\nmax_files = 0\n", "snapshot.max_files"),
        ("[runs]\nmax_turns = 0\n", "runs.max_turns"),
        (
            "max_checkpoints_per_session = 1\n",
            "max_checkpoints_per_session",
        ),
        ("prices = [\"no-price\"]\n", "prices"),
        ("[network]\nmax = \"sometimes\"\n", "network.max"),
        ("idle_timeout_secs = 0\n", "idle_timeout_secs"),
        ("[http]\nmax_connection = 5\n", "max_connection"),
    ] {
        let data = tempfile::tempdir()?;
        let file = data.path().join("paddock.toml");
        std::fs::write(&file, toml)?;
        let state = data.path().join("state");
        let out = Command::new(PADDOCK)
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&file)
            .arg("--data-dir")
            .arg(&state)
            .env("PADDOCK_TOKENS", "cli:a-token-of-enough-length")
            .env_remove("PADDOCK_DATABASE_URL")
            .env_remove("PADDOCK_CONFIG")
            .stdin(Stdio::null())
            .output()?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{toml}: {stderr}");
        assert!(
            stderr.starts_with("paddock: ") && stderr.contains(key),
            "{toml}: stderr should name {key}: {stderr}"
        );
        assert!(!stdout.contains("listening"), "{toml}: {stdout}");
        assert!(
            !state.join("paddock.db").exists(),
            "{toml}: the store was opened"
        );
    }
    Ok(())
}
