//! `paddock sandbox run`: one command in a fresh sandbox.

use std::time::Duration;

use paddock_core::sandbox::{
    ExecEvent, GuestError, Sandbox, SandboxBackend, SandboxLimits, SandboxPolicy, SandboxSpec,
};
use paddock_proto::{EgressDecision, Enforcement, ErrorCode, ExecSpec, ExitInfo, StdinMode};
use serde::Serialize;
use tokio::time::Instant;

use super::exit::{self, EXIT_TIMED_OUT};
use super::output::OutputSink;
use super::signals::TermSignals;
use super::stdin;
use crate::agent::EXIT_USAGE;
use crate::cli::RunArgs;
use crate::logging;

/// How long a command has to exit after we forwarded a termination signal to it.
const SIGNAL_GRACE: Duration = Duration::from_secs(2);

/// How the command ended.
#[derive(Debug)]
enum Outcome {
    Exited(ExitInfo),
    /// We were told to stop (signal number) and the command did not end in time.
    Interrupted(i32),
    /// The guest could not start the command (not found, not executable, a
    /// bad working directory).
    Refused {
        code: ErrorCode,
        message: String,
    },
}

pub async fn run(args: RunArgs, backend: &dyn SandboxBackend) -> anyhow::Result<u8> {
    if let Some(err) = usage_error(&args) {
        if args.json {
            println!("{}", serde_json::to_string(&RunReport::start_failed(&err))?);
        }
        logging::note(format_args!("paddock: {err}"));
        return Ok(EXIT_USAGE);
    }
    let sandbox = match backend.create(sandbox_spec(&args)).await {
        Ok(sandbox) => sandbox,
        Err(err) => {
            let err = anyhow::Error::from(err);
            if args.json {
                // a caller parsing stdout still gets one object saying why
                println!("{}", serde_json::to_string(&RunReport::start_failed(&err))?);
            }
            return Err(err);
        }
    };
    let sandbox_id = sandbox.info().id.to_string();
    let mut sink = OutputSink::new(args.json);
    let executed = execute(&*sandbox, &args, &mut sink).await;
    let enforcement = match (&executed, args.json) {
        (Ok(_), true) => sandbox.guest().info().await.ok().map(|i| i.enforcement),
        _ => None,
    };
    tracing::debug!(sandbox_id, "command finished; destroying the sandbox");
    let egress_log = sandbox.egress_log();
    let destroyed = sandbox.destroy().await;
    // Read after the proxy stopped, so every connection's decision is in.
    let egress = egress_log.map(|log| log.list()).unwrap_or_default();
    let outcome = executed?;
    destroyed?;

    let code = exit_code(&outcome);
    if args.json {
        let (stdout, stderr) = sink.captured();
        let mut report = RunReport::new(&outcome, sandbox_id, enforcement, stdout, stderr);
        report.egress = egress;
        println!("{}", serde_json::to_string(&report)?);
    }
    note_outcome(&outcome, &args);
    Ok(code)
}

/// Says on stderr what the exit code alone does not: why the command did
/// not start, that its timeout killed it, that output was dropped.
fn note_outcome(outcome: &Outcome, args: &RunArgs) {
    match outcome {
        Outcome::Refused { message, .. } => logging::note(format_args!("paddock: {message}")),
        Outcome::Exited(exit) => {
            if exit.timed_out {
                let secs = args.timeout.unwrap_or_default() as f64 / 1000.0;
                logging::note(format_args!(
                    "paddock: the command ran past --timeout {secs} s and was killed"
                ));
            }
            if exit.truncated {
                logging::note(format_args!(
                    "paddock: the output went past --output-cap; the rest was dropped"
                ));
            }
            if exit.oom_killed {
                let limit = sandbox_spec(args).policy.limits.memory_bytes;
                logging::note(format_args!(
                    "paddock: {}",
                    exit::oom_sentence(limit, "--memory")
                ));
            }
        }
        Outcome::Interrupted(_) => {}
    }
}

/// A mistake in the arguments that no sandbox needs to be made to see.
fn usage_error(args: &RunArgs) -> Option<anyhow::Error> {
    if let Some(dir) = &args.workspace
        && !dir.is_dir()
    {
        return Some(anyhow::anyhow!(
            "--workspace {}: not a directory",
            dir.display()
        ));
    }
    // the API's rule (paddock_proto::check_secrets_network)
    paddock_proto::check_secrets_network(args.secrets.len(), &args.network.policy)
        .err()
        .map(|err| anyhow::anyhow!("--secret: {err}"))
}

fn sandbox_spec(args: &RunArgs) -> SandboxSpec {
    let defaults = SandboxLimits::default();
    let no_limit_if_zero = |v: u64| (v != 0).then_some(v);
    SandboxSpec {
        workspace: args.workspace.clone(),
        policy: SandboxPolicy {
            read_only: args.read_only,
            writable_paths: args.writable.clone(),
            network: args.network.policy.clone(),
            limits: SandboxLimits {
                memory_bytes: args
                    .limits
                    .memory
                    .map_or(defaults.memory_bytes, no_limit_if_zero),
                pids: args.limits.pids.map_or(defaults.pids, no_limit_if_zero),
                cpu_millis: args.limits.cpus.or(defaults.cpu_millis),
                tmp_bytes: args.limits.tmp_size.unwrap_or(defaults.tmp_bytes),
                open_files: defaults.open_files,
                workspace_bytes: args.workspace_size,
                workspace_inodes: args.workspace_inodes,
            },
            allow_downgrade: args.allow_downgrade.iter().map(|l| (*l).into()).collect(),
            volumes: Vec::new(),
        },
        secrets: args.secrets.clone(),
        volume_dirs: Vec::new(),
        // a local `--workspace DIR` is outside any server's volume pool
        workspace_quota: None,
    }
}

fn exec_spec(args: &RunArgs) -> ExecSpec {
    ExecSpec {
        argv: args.command.clone(),
        shell: None,
        cwd: args.cwd.clone(),
        env: args.env.iter().cloned().collect(),
        stdin: if args.no_stdin {
            StdinMode::Null
        } else {
            StdinMode::Stream
        },
        timeout_ms: args.timeout,
        output_cap: args.output_cap,
        pty: None,
    }
}

/// Runs the command, streaming its output to `sink` and our stdin to it,
/// until it ends or we are told to stop.
async fn execute(
    sandbox: &dyn Sandbox,
    args: &RunArgs,
    sink: &mut OutputSink,
) -> anyhow::Result<Outcome> {
    let guest = sandbox.guest();
    let mut signals = TermSignals::install()?;
    let requested = Instant::now();
    let mut exec = match guest.exec(exec_spec(args), &[]).await {
        Ok(exec) => exec,
        Err(GuestError::Refused { error, .. }) => {
            return Ok(Outcome::Refused {
                code: error.code,
                message: error.message,
            });
        }
        Err(err) => return Err(err.into()),
    };
    let target = exec.id();
    let mut stdin_task = None;
    let mut output_closed = false;
    let mut exited = None;
    let mut interrupted: Option<(i32, Instant)> = None;

    let outcome = loop {
        let deadline = interrupted.map(|(_, at)| at);
        tokio::select! {
            event = exec.next_event() => match event {
                Ok(Some(ExecEvent::Started { .. })) => {
                    if !args.no_stdin {
                        stdin_task = Some(stdin::forward(guest.clone(), target));
                    }
                }
                Ok(Some(ExecEvent::Output { stream, data })) => {
                    if !output_closed && sink.write(stream, &data).await.is_err() {
                        // Our reader went away: end the command as a pipe would.
                        output_closed = true;
                        let _ = guest.exec_signal(target, libc::SIGPIPE).await;
                    }
                }
                Ok(Some(ExecEvent::Exited(mut exit))) => {
                    // Measured here, the duration covers the whole command
                    // however late the guest started its own clock.
                    let seen = u64::try_from(requested.elapsed().as_millis()).unwrap_or(u64::MAX);
                    exit.duration_ms = exit.duration_ms.max(seen);
                    exited = Some(exit);
                }
                Ok(None) => match exited.take() {
                    Some(exit) => break Outcome::Exited(exit),
                    None => anyhow::bail!("the guest ended exec {target} without an exit status"),
                },
                Err(GuestError::Refused { error, .. }) => {
                    break Outcome::Refused { code: error.code, message: error.message };
                }
                Err(err) => return Err(err.into()),
            },
            signal = signals.recv() => {
                if let Some((first, _)) = interrupted {
                    break Outcome::Interrupted(first);
                }
                tracing::debug!(signal, "forwarding signal to the command");
                let _ = guest.exec_signal(target, signal).await;
                interrupted = Some((signal, Instant::now() + SIGNAL_GRACE));
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if let Some((signal, _)) = interrupted {
                    break Outcome::Interrupted(signal);
                }
            }
        }
    };
    if let Some(task) = stdin_task {
        task.abort();
    }
    Ok(outcome)
}

fn exit_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Exited(exit) if exit.timed_out => EXIT_TIMED_OUT,
        Outcome::Exited(exit) => u8::try_from(exit.shell_code() & 0xff).unwrap_or(u8::MAX),
        Outcome::Interrupted(signal) => u8::try_from((128 + signal) & 0xff).unwrap_or(u8::MAX),
        Outcome::Refused { code, message } => exit::refused(*code, message),
    }
}

/// The one object `--json` prints.
#[derive(Debug, Serialize)]
struct RunReport {
    /// The command's exit code; null when a signal ended it or it never ran.
    exit_code: Option<i32>,
    /// The signal that ended the command (or that paddock was stopped with).
    signal: Option<i32>,
    timed_out: bool,
    /// Output went past --output-cap.
    truncated: bool,
    /// The out-of-memory killer ended the command (the sandbox's memory limit).
    oom_killed: bool,
    /// Wall time from the exec request to the command's exit, seen from the host.
    duration_ms: u64,
    /// Null when the sandbox never started.
    sandbox_id: Option<String>,
    enforcement: Option<Enforcement>,
    /// Every egress decision of a sandbox with network, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    egress: Vec<EgressDecision>,
    /// Why the command could not be started, when it could not.
    error: Option<String>,
    stdout: String,
    stderr: String,
}

impl RunReport {
    /// The sandbox could not be started: no command ran.
    fn start_failed(error: &anyhow::Error) -> Self {
        RunReport {
            exit_code: None,
            signal: None,
            timed_out: false,
            truncated: false,
            oom_killed: false,
            duration_ms: 0,
            sandbox_id: None,
            enforcement: None,
            egress: Vec::new(),
            error: Some(format!("{error:#}")),
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    fn new(
        outcome: &Outcome,
        sandbox_id: String,
        enforcement: Option<Enforcement>,
        stdout: String,
        stderr: String,
    ) -> Self {
        let mut report = RunReport {
            exit_code: None,
            signal: None,
            timed_out: false,
            truncated: false,
            oom_killed: false,
            duration_ms: 0,
            sandbox_id: Some(sandbox_id),
            enforcement,
            egress: Vec::new(),
            error: None,
            stdout,
            stderr,
        };
        match outcome {
            Outcome::Exited(exit) => {
                report.exit_code = exit.code;
                report.signal = exit.signal;
                report.timed_out = exit.timed_out;
                report.truncated = exit.truncated;
                report.oom_killed = exit.oom_killed;
                report.duration_ms = exit.duration_ms;
            }
            Outcome::Interrupted(signal) => report.signal = Some(*signal),
            Outcome::Refused { message, .. } => report.error = Some(message.clone()),
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_and_timeout_conventions() {
        let exited = |code, signal, timed_out| {
            Outcome::Exited(ExitInfo {
                code,
                signal,
                timed_out,
                ..ExitInfo::default()
            })
        };
        assert_eq!(exit_code(&exited(Some(0), None, false)), 0);
        assert_eq!(exit_code(&exited(Some(42), None, false)), 42);
        assert_eq!(exit_code(&exited(None, Some(9), false)), 137);
        assert_eq!(exit_code(&exited(None, Some(9), true)), 124);
        assert_eq!(exit_code(&Outcome::Interrupted(libc::SIGTERM)), 143);
        let refused = |code, message: &str| Outcome::Refused {
            code,
            message: message.into(),
        };
        assert_eq!(
            exit_code(&refused(ErrorCode::SpawnFailed, "nope: not found")),
            127
        );
        assert_eq!(
            exit_code(&refused(ErrorCode::SpawnFailed, "permission denied")),
            126
        );
        assert_eq!(
            exit_code(&refused(ErrorCode::NotFound, "resolving nope")),
            2
        );
    }
}
