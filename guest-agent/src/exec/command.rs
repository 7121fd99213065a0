//! Turning an [`ExecSpec`] into a running child in its own process group.

use std::process::Stdio;

use paddock_jail::CommandFilter;
use paddock_proto::{Enforcement, ErrorCode, ErrorInfo, ExecSpec, PROXY_ENV, StdinMode};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

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

pub fn spawn(
    spec: &ExecSpec,
    ws: &Workspace,
    filter: Option<&CommandFilter>,
    proxied: bool,
    egress_env: &[(String, String)],
) -> Result<Spawned, ErrorInfo> {
    let argv = match (&spec.shell, spec.argv.is_empty()) {
        (Some(_), true) | (None, false) => command_line(spec),
        (Some(_), false) => return Err(bad_request("set either argv or shell, not both")),
        (None, true) => return Err(bad_request("set argv or shell")),
    };
    let cwd = ws.dir_path(spec.cwd.as_deref().unwrap_or(""))?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| bad_request("empty command"))?;

    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", BASE_PATH)
        .env("HOME", ws.root())
        .env("LANG", "C.UTF-8")
        .env("TERM", "xterm")
        .envs(if proxied { PROXY_ENV } else { &[] }.iter().copied())
        .envs(
            if proxied { egress_env } else { &[] }
                .iter()
                .map(|(k, v)| (k, v)),
        )
        .envs(&spec.env)
        .current_dir(&cwd)
        .stdin(match spec.stdin {
            StdinMode::Null => Stdio::null(),
            StdinMode::Payload | StdinMode::Stream => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    if let Some(filter) = filter {
        filter.attach_to(command.as_std_mut());
    }

    let mut child = command.spawn().map_err(|e| spawn_error(program, &e))?;
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

fn spawn_error(program: &str, err: &std::io::Error) -> ErrorInfo {
    match err.kind() {
        std::io::ErrorKind::NotFound => ErrorInfo::new(
            ErrorCode::SpawnFailed,
            format!("{program}: command not found"),
        ),
        std::io::ErrorKind::PermissionDenied => ErrorInfo::new(
            ErrorCode::SpawnFailed,
            format!("{program}: permission denied"),
        ),
        std::io::ErrorKind::InvalidInput => bad_request(format!(
            "{program}: invalid command, argument or environment ({err})"
        )),
        _ => ErrorInfo::new(ErrorCode::SpawnFailed, format!("{program}: {err}")),
    }
}
