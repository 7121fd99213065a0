//! Turning an [`ExecSpec`] into a running child in its own process group.

use std::collections::BTreeMap;

use paddock_proto::{Enforcement, ErrorCode, ErrorInfo, ExecSpec, PROXY_ENV, StdinMode};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::spawner::{Launch, Spawner};
use crate::error::bad_request;
use crate::files::Workspace;

const BASE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[derive(Debug)]
pub struct Spawned {
    pub child: Child,
    /// Also the id of its process group.
    pub pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub started: tokio::time::Instant,
}

/// The command line as the host asked for it (`sh -c` spelled out).
pub fn command_line(spec: &ExecSpec) -> Vec<String> {
    match &spec.shell {
        Some(script) => vec!["/bin/sh".into(), "-c".into(), script.clone()],
        None => spec.argv.clone(),
    }
}

/// Whether commands get the proxy variables: the sandbox has egress through
/// the proxy in its own network namespace. A guest run unconfined (tests,
/// development) shares the host's network and has no proxy to point at.
pub fn proxied(enforcement: &Enforcement) -> bool {
    enforcement.network.has_egress() && !enforcement.namespaces.is_empty()
}

pub async fn spawn(
    spec: &ExecSpec,
    ws: &Workspace,
    spawner: &Spawner,
    proxied: bool,
) -> Result<Spawned, ErrorInfo> {
    let argv = match (&spec.shell, spec.argv.is_empty()) {
        (Some(_), true) | (None, false) => command_line(spec),
        (Some(_), false) => return Err(bad_request("set either argv or shell, not both")),
        (None, true) => return Err(bad_request("set argv or shell")),
    };
    let cwd = ws.open_dir(&ws.normalize(spec.cwd.as_deref().unwrap_or(""))?)?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| bad_request("empty command"))?;
    // Later entries win, as with repeated `Command::env`.
    let mut env: BTreeMap<String, String> =
        [("PATH", BASE_PATH), ("LANG", "C.UTF-8"), ("TERM", "xterm")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
    env.insert("HOME".to_owned(), ws.root().display().to_string());
    if proxied {
        env.extend(
            PROXY_ENV
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
    }
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));

    let mut child = spawner
        .spawn(Launch {
            program: program.clone(),
            args: args.to_vec(),
            env,
            piped_stdin: spec.stdin != StdinMode::Null,
            cwd,
        })
        .await?;
    let started = tokio::time::Instant::now();
    let pid = child.id().ok_or_else(|| {
        ErrorInfo::new(ErrorCode::SpawnFailed, format!("{program}: exited at once"))
    })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ErrorInfo::new(
            ErrorCode::Io,
            format!("{program}: output pipes missing"),
        ));
    };
    Ok(Spawned {
        stdin: child.stdin.take(),
        child,
        pid,
        stdout,
        stderr,
        started,
    })
}
