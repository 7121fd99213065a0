//! Turning an [`ExecSpec`] into a running child in its own process group.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;

use paddock_proto::{Enforcement, ErrorCode, ErrorInfo, ExecSpec, PROXY_ENV, StdinMode};
use tokio::io::{AsyncRead, AsyncWrite};

use super::child::Child;
use super::pty::{self, PtyReader};
use super::spawner::{Launch, Spawner, Streams, WorkDir};
use crate::error::bad_request;
use crate::files::Workspace;

/// Where a child's output is read from: a pipe, or a terminal's master.
pub type OutputPipe = Box<dyn AsyncRead + Send + Unpin>;
/// Where a child's input is written to.
pub type InputPipe = Box<dyn AsyncWrite + Send + Unpin>;

const BASE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub struct Spawned {
    pub child: Child,
    /// Also the id of its process group.
    pub pid: u32,
    pub stdin: Option<InputPipe>,
    pub stdout: OutputPipe,
    /// Empty for a terminal, whose one output is `stdout`.
    pub stderr: OutputPipe,
    /// The terminal's master, kept for resizing, when started on one.
    pub pty: Option<OwnedFd>,
    pub started: tokio::time::Instant,
}

impl std::fmt::Debug for Spawned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawned")
            .field("pid", &self.pid)
            .field("pty", &self.pty)
            .finish_non_exhaustive()
    }
}

/// The command line as the host asked for it (`sh -c` spelled out).
pub fn command_line(spec: &ExecSpec) -> Vec<String> {
    match &spec.shell {
        Some(script) => vec!["/bin/sh".into(), "-c".into(), script.clone()],
        None => spec.argv.clone(),
    }
}

/// Whether commands get the proxy variables: the sandbox has egress through
/// the proxy in its own network namespace (`allowlist`, or `full` with
/// secrets, which only the proxy injects; `full` otherwise goes out through
/// NAT). A guest run unconfined (tests, development) shares the host's
/// network and has no proxy to point at.
pub fn proxied(enforcement: &Enforcement) -> bool {
    let through_proxy = match enforcement.network {
        paddock_proto::NetworkPolicy::None => false,
        paddock_proto::NetworkPolicy::Full => !enforcement.secrets.is_empty(),
        paddock_proto::NetworkPolicy::Allowlist(_) => true,
    };
    // A VM has no namespaces of its own: its boundary is the VM.
    through_proxy && (!enforcement.namespaces.is_empty() || enforcement.vm.is_some())
}

pub async fn spawn(
    spec: &ExecSpec,
    ws: &Workspace,
    spawner: &Spawner,
    proxied: bool,
    egress_env: &[(String, String)],
) -> Result<Spawned, ErrorInfo> {
    let argv = match (&spec.shell, spec.argv.is_empty()) {
        (Some(_), true) | (None, false) => command_line(spec),
        (Some(_), false) => return Err(bad_request("set either argv or shell, not both")),
        (None, true) => return Err(bad_request("set argv or shell")),
    };
    let cwd = match ws.normalize(spec.cwd.as_deref().unwrap_or("").as_bytes())? {
        dir if dir.is_root() => WorkDir::Root,
        dir => WorkDir::Beneath(ws.open_dir(&dir)?),
    };
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
        env.extend(egress_env.iter().cloned());
    }
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let (streams, master) = match spec.pty {
        None => (
            Streams::Pipes {
                piped_stdin: spec.stdin != StdinMode::Null,
            },
            None,
        ),
        Some(size) => {
            let size = size.check().map_err(bad_request)?;
            let pair = paddock_jail::pty::open(size.rows, size.cols).map_err(|e| pty_error(&e))?;
            (Streams::Terminal { slave: pair.slave }, Some(pair.master))
        }
    };

    let mut child = spawner
        .spawn(Launch {
            program: program.clone(),
            args: args.to_vec(),
            env,
            streams,
            cwd,
        })
        .await?;
    let started = tokio::time::Instant::now();
    let pid = child.id();
    if let Some(master) = master {
        let dup = || master.try_clone().map_err(|e| pty_error(&e));
        let input = pty::writer(dup()?).map_err(|e| pty_error(&e))?;
        let output = PtyReader::new(dup()?).map_err(|e| pty_error(&e))?;
        return Ok(Spawned {
            stdin: Some(Box::new(input)),
            stdout: Box::new(output),
            stderr: Box::new(tokio::io::empty()),
            pty: Some(master),
            child,
            pid,
            started,
        });
    }
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ErrorInfo::new(
            ErrorCode::Io,
            format!("{program}: output pipes missing"),
        ));
    };
    Ok(Spawned {
        stdin: child.stdin.take().map(|pipe| Box::new(pipe) as InputPipe),
        child,
        pid,
        stdout: Box::new(stdout),
        stderr: Box::new(stderr),
        pty: None,
        started,
    })
}
fn pty_error(err: &std::io::Error) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::SpawnFailed,
        format!("opening a pseudo-terminal: {err}"),
    )
}
