//! The CLI as a client of `paddock serve`: sandbox create|ls|info|exec|rm and
//! files get|put|ls, human and --json output, exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
