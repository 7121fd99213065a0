//! An agent CLI's run: its config files written, the CLI started in the
//! sandbox, its stdout read line by line into the bridge until it exits,
//! the run is cancelled, its wall clock runs out or a budget does (then the
//! CLI's process group is killed),
//! and the end reviewed from what happened in the sandbox.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use paddock_core::sandbox::{ExecEvent, Execution, GuestOps};
use paddock_core::store::{EndReason, RunMode, RunState};
use paddock_proto::{ExecSpec, ExitInfo, FsPath, OutputStream, StdinMode};
use serde_json::Value;
use tokio::time::Instant;

use super::ExternalDriver;
use super::bridge::{Bridge, BridgeParts, Halt};
use super::cli::Invocation;
use super::lines::Lines;
use super::prompt::{Start, prompt};
use crate::drivers::DriveOutcome;
use crate::run::{AgentParts, Budget, Ending, Exceeded, Scope, deadline_after, observed, review};
use crate::util::error_chain;

/// How long the events of a killed CLI are read for.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Most bytes of the CLI's stderr kept for a failure's message.
const STDERR_TAIL: usize = 16 << 10;
/// The file (in the CLI's home) naming its session, for a resumed run.
const SESSION_FILE: &str = "paddock-session";

/// Why the CLI stopped before it ended on its own.
#[derive(Debug)]
enum Stopped {
    Cancelled,
    WallClock,
    Halted(Halt),
}

pub(super) async fn run(driver: &ExternalDriver, mut parts: AgentParts) -> DriveOutcome {
    let deadline = deadline_after(parts.started, parts.run.budgets.max_wall_clock_ms)
        .min(parts.family.deadline());
    let mut bridge = Bridge::new(BridgeParts {
        journal: Arc::clone(&parts.journal),
        run: parts.run.clone(),
        family: Arc::clone(&parts.family),
        started: parts.started,
        checkpoints: parts.checkpoints.take(),
        price: parts.price,
    });
    let ending = match drive(driver, &parts, &mut bridge, deadline).await {
        Ok(ending) => ending,
        Err(err) => Ending::Failed {
            reason: EndReason::InfrastructureError,
            error: err,
        },
    };
    let ending = settle(&parts, &mut bridge, ending).await;
    match bridge.close().await {
        Ok(usage) => DriveOutcome { ending, usage },
        Err(err) => DriveOutcome {
            ending: match ending {
                failed @ Ending::Failed { .. } => failed,
                _ => Ending::Failed {
                    reason: EndReason::InfrastructureError,
                    error: error_chain(&err),
                },
            },
            usage: parts.run.usage,
        },
    }
}

/// Where the CLI keeps its state: in the workspace (so checkpoints, rewind
/// and resume keep it with the files it describes), or under /tmp when the
/// workspace is read-only.
fn home_of(driver: &ExternalDriver, mode: RunMode) -> String {
    match mode {
        RunMode::Build => format!("/workspace/.paddock-agent/{}", driver.kind),
        RunMode::Plan => format!("/tmp/paddock-agent/{}", driver.kind),
    }
}

async fn drive(
    driver: &ExternalDriver,
    parts: &AgentParts,
    bridge: &mut Bridge,
    deadline: Instant,
) -> Result<Ending, String> {
    let guest = &parts.guest;
    let home = home_of(driver, parts.run.mode);
    let resume = if parts.resumed {
        read_session(guest.as_ref(), &home).await
    } else {
        None
    };
    let how = match (&resume, parts.resumed) {
        (Some(_), _) => Start::InItsSession,
        (None, true) => Start::ResumedAfresh,
        (None, false) => Start::New,
    };
    let text = prompt(
        &parts.run.goal,
        &parts.criteria,
        parts.instructions.as_deref(),
        &parts.history,
        how,
    );
    let invocation = Invocation {
        program: &driver.settings.program,
        prompt: &text,
        home: &home,
        model: driver.settings.model.as_deref(),
        base_url: &driver.settings.base_url,
        resume: resume.as_deref(),
    };
    let mut adapter = driver.adapter();
    let launch = adapter.launch(&invocation);
    let mut files = launch.files;
    if files.is_empty() {
        // the CLI's home exists before it starts (writing a file makes it)
        files.push((format!("{home}/.keep"), Vec::new()));
    }
    for (path, bytes) in &files {
        write_file(guest.as_ref(), path, bytes)
            .await
            .map_err(|err| format!("writing {path} for the {} CLI: {err}", driver.kind))?;
    }
    let mut env = launch.env;
    if driver.settings.key.is_none()
        && let Some(wire) = super::Wire::of(driver.kind)
    {
        // a provider that takes no key: the CLI still wants one set
        env.insert(wire.key_var.to_owned(), "none".to_owned());
    }
    let spec = ExecSpec {
        argv: launch.argv,
        env,
        ..ExecSpec::default()
    };
    tracing::info!(driver = %driver.kind, resume = resume.is_some(), "starting the agent CLI");
    let mut execution = guest
        .exec(spec, &[])
        .await
        .map_err(|err| format!("starting the {} CLI: {err}", driver.kind))?;
    let mut lines = Lines::default();
    let mut stderr = Vec::new();
    let mut session_saved = resume.clone();
    let outcome = loop {
        let event = tokio::select! {
            biased;
            () = parts.cancel.cancelled() => break Err(Stopped::Cancelled),
            () = tokio::time::sleep_until(deadline) => break Err(Stopped::WallClock),
            event = execution.next_event() => event,
        };
        match event {
            Ok(Some(ExecEvent::Output {
                stream: OutputStream::Stdout,
                data,
            })) => {
                let mut halted = None;
                for line in lines.push(&data) {
                    if let Err(halt) = read_line(&mut *adapter, bridge, &line).await {
                        halted = Some(halt);
                        break;
                    }
                }
                if let Some(halt) = halted {
                    break Err(Stopped::Halted(halt));
                }
                if bridge.session != session_saved
                    && let Some(session) = bridge.session.clone()
                    && parts.run.mode == RunMode::Build
                {
                    save_session(guest.as_ref(), &home, &session).await;
                    session_saved = Some(session);
                }
            }
            Ok(Some(ExecEvent::Output {
                stream: OutputStream::Stderr,
                data,
            })) => keep_tail(&mut stderr, &data),
            Ok(Some(ExecEvent::Started { .. })) => {}
            Ok(Some(ExecEvent::Exited(exit))) => break Ok(exit),
            Ok(None) => break Ok(ExitInfo::default()),
            Err(err) => return Err(format!("reading the {} CLI's output: {err}", driver.kind)),
        }
    };
    let exit = match outcome {
        Ok(exit) => {
            if let Some(last) = lines.finish()
                && let Err(halt) = read_line(&mut *adapter, bridge, &last).await
            {
                return Ok(halted_ending(parts, halt));
            }
            exit
        }
        Err(stopped) => {
            stop(guest.as_ref(), execution).await;
            return Ok(match stopped {
                Stopped::Cancelled => cancelled(parts),
                Stopped::WallClock => Ending::Failed {
                    reason: EndReason::BudgetExceeded,
                    error: wall_clock(parts, bridge).to_string(),
                },
                Stopped::Halted(halt) => halted_ending(parts, halt),
            });
        }
    };
    if lines.dropped > 0 {
        tracing::warn!(
            dropped = lines.dropped,
            "agent CLI lines over the length bound were dropped"
        );
    }
    Ok(ended(driver, parts, bridge, &exit, &stderr))
}

/// One line of the CLI's stdout into the bridge; a line that is not JSON
/// (a CLI's stray print) is skipped.
async fn read_line(
    adapter: &mut dyn super::cli::CliAdapter,
    bridge: &mut Bridge,
    line: &[u8],
) -> Result<(), Halt> {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        tracing::debug!(line = %String::from_utf8_lossy(line), "agent CLI output that is not JSON");
        return Ok(());
    };
    for report in adapter.read(&value) {
        bridge.apply(report).await?;
    }
    Ok(())
}

fn halted_ending(parts: &AgentParts, halt: Halt) -> Ending {
    match halt {
        Halt::Budget(exceeded) => Ending::Failed {
            reason: EndReason::BudgetExceeded,
            error: exceeded.to_string(),
        },
        Halt::Record(_) if parts.cancel.is_cancelled() => cancelled(parts),
        Halt::Record(err) => Ending::Failed {
            reason: EndReason::InfrastructureError,
            error: error_chain(&err),
        },
    }
}

fn cancelled(parts: &AgentParts) -> Ending {
    if parts.lease_lost.load(Ordering::SeqCst) {
        return Ending::Failed {
            reason: EndReason::InfrastructureError,
            error: "the session lease was taken over by another driver".to_owned(),
        };
    }
    Ending::Cancelled
}

fn wall_clock(parts: &AgentParts, bridge: &Bridge) -> Exceeded {
    let own = deadline_after(parts.started, parts.run.budgets.max_wall_clock_ms);
    if parts.family.deadline() < own {
        return Exceeded {
            budget: Budget::WallClock,
            scope: Scope::Family,
            used: parts.family.spent().wall_clock_ms,
            limit: parts.family.limits().max_wall_clock_ms,
        };
    }
    Exceeded {
        budget: Budget::WallClock,
        scope: Scope::Run,
        used: bridge.usage().wall_clock_ms,
        limit: parts.run.budgets.max_wall_clock_ms,
    }
}

/// The end of a CLI that exited on its own: a success is reviewed against
/// what happened in the sandbox (the CLI's word is only the claim); a
/// failure names what the CLI said.
fn ended(
    driver: &ExternalDriver,
    parts: &AgentParts,
    bridge: &Bridge,
    exit: &ExitInfo,
    stderr: &[u8],
) -> Ending {
    let succeeded = exit.code == Some(0) && exit.signal.is_none();
    match (&bridge.finished, succeeded) {
        (Some((_, false)) | None, true) => {
            let summary = match &bridge.finished {
                Some((text, _)) if !text.trim().is_empty() => text.clone(),
                _ => bridge.last_text.clone(),
            };
            let claim = observed(summary, &parts.criteria, bridge.evidence());
            Ending::Completed(review(&claim, &parts.criteria, bridge.evidence()))
        }
        (Some((text, true)), _) => Ending::Failed {
            reason: EndReason::ModelError,
            error: format!("the {} CLI reported a failure: {text}", driver.kind),
        },
        (_, false) => {
            let how = match (exit.code, exit.signal) {
                (_, Some(signal)) => format!("was killed by signal {signal}"),
                (Some(code), None) => format!("exited with code {code}"),
                (None, None) => "ended without an exit status".to_owned(),
            };
            let said = String::from_utf8_lossy(stderr);
            let said = said.trim();
            let last = bridge.last_error.as_deref().unwrap_or_default();
            Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: format!(
                    "the {} CLI {how}{}{}",
                    driver.kind,
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!(": {last}")
                    },
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!("; stderr: {said}")
                    },
                ),
            }
        }
    }
}

/// The bridge's last writes: what was read and not recorded, calls left
/// open by a stop, the verifying state of a completed run.
async fn settle(parts: &AgentParts, bridge: &mut Bridge, ending: Ending) -> Ending {
    let mut recorded = bridge.flush().await;
    if recorded.is_ok() {
        recorded = bridge.abandon_open().await;
    }
    if recorded.is_ok() {
        recorded = bridge.flush().await;
    }
    if let Err(halt) = recorded {
        let err = match halt {
            Halt::Record(err) => error_chain(&err),
            Halt::Budget(exceeded) => exceeded.to_string(),
        };
        tracing::warn!(error = %err, "recording the agent CLI's last steps");
        if matches!(ending, Ending::Completed(_)) && !parts.cancel.is_cancelled() {
            return Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: err,
            };
        }
    }
    if let Err(err) = bridge.checkpoint_end().await {
        tracing::warn!(error = %error_chain(&err), "recording the agent CLI's last checkpoint");
    }
    if matches!(ending, Ending::Completed(_))
        && let Err(err) = bridge.set_state(RunState::Verifying).await
    {
        tracing::warn!(error = %error_chain(&err), "recording the verifying state");
    }
    ending
}

/// Kills the CLI's process group (a stopped run needs nothing more of it:
/// a graceful end would let it make another model call), then reads what
/// is left of its events for a moment.
async fn stop(guest: &dyn GuestOps, mut execution: Box<dyn Execution>) {
    if let Err(err) = guest.exec_signal(execution.id(), SIGKILL).await {
        tracing::debug!(error = %err, "killing the agent CLI");
    }
    let drained = tokio::time::timeout(STOP_GRACE, async {
        while let Ok(Some(event)) = execution.next_event().await {
            if matches!(event, ExecEvent::Exited(_)) {
                return;
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::info!("the agent CLI did not report its end; dropping it kills its group");
    }
    drop(execution);
}

/// The signal that ends the CLI's group at once.
const SIGKILL: i32 = 9;

fn keep_tail(kept: &mut Vec<u8>, data: &[u8]) {
    kept.extend_from_slice(data);
    if kept.len() > STDERR_TAIL {
        let cut = kept.len() - STDERR_TAIL;
        kept.drain(..cut);
    }
}

/// Writes `bytes` at `path` in the sandbox (any writable path: the guest's
/// file writes are held to the workspace, so a shell writes it).
async fn write_file(guest: &dyn GuestOps, path: &str, bytes: &[u8]) -> Result<(), String> {
    let spec = ExecSpec {
        argv: vec![
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            r#"mkdir -p "$(dirname "$1")" && cat > "$1""#.to_owned(),
            "sh".to_owned(),
            path.to_owned(),
        ],
        stdin: StdinMode::Payload,
        env: BTreeMap::new(),
        ..ExecSpec::default()
    };
    let out = guest
        .exec_output(spec, bytes)
        .await
        .map_err(|err| err.to_string())?;
    if out.exit.code == Some(0) {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

/// The CLI session a resumed run goes on with: what the interrupted run
/// saved in the CLI's home (restored with the workspace).
async fn read_session(guest: &dyn GuestOps, home: &str) -> Option<String> {
    let path = FsPath::from(format!("{home}/{SESSION_FILE}"));
    let data = guest.file_read(&path, 0, Some(4096)).await.ok()?;
    let id = String::from_utf8(data.data).ok()?.trim().to_owned();
    (!id.is_empty() && id.len() < 200 && !id.contains(char::is_whitespace)).then_some(id)
}

async fn save_session(guest: &dyn GuestOps, home: &str, session: &str) {
    let path = FsPath::from(format!("{home}/{SESSION_FILE}"));
    let options = paddock_core::sandbox::WriteOptions {
        mode: None,
        create_parents: true,
    };
    if let Err(err) = guest.file_write(&path, session.as_bytes(), options).await {
        tracing::warn!(error = %err, "saving the agent CLI's session for a resume");
    }
}
