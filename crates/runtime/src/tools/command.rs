//! `run_command`: a shell command in the sandbox, run to completion. A
//! non-zero exit is a normal result the model reads, not an error.

use std::fmt::Write;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::ExecEvent;
use paddock_proto::{ExecSpec, ExitInfo};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{bounded, contract_for, non_empty, parse_args};
use super::output::{HeadTail, guest, refusal_as_result};
use super::{
    Access, Effect, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError,
    ToolOutput,
};

pub(crate) const NAME: &str = "run_command";

const DEFAULT_TIMEOUT_SECS: u64 = 120;
pub(crate) const MAX_TIMEOUT_SECS: u64 = 600;
/// Output kept: the start (what ran) and the end (how it ended; test
/// summaries and errors come last).
const HEAD_BYTES: usize = 8 << 10;
const TAIL_BYTES: usize = 12 << 10;
/// The contract's timeout: the longest command plus time for the guest to
/// kill it and report, so the guest's own timeout always fires first.
const CALL_GRACE: Duration = Duration::from_secs(15);

/// Run a shell command.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Shell script run with `sh -c`.
    command: String,
    /// Seconds before the command (and every process it started) is killed. Default 120.
    #[schemars(range(min = 1, max = MAX_TIMEOUT_SECS))]
    #[serde(default)]
    timeout_secs: Option<u64>,
    /// Working directory relative to /workspace. Default: /workspace.
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Debug)]
pub struct RunCommand {
    contract: ToolContract,
}

impl RunCommand {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "Run a shell command (sh -c) in /workspace inside the sandbox and wait for it. \
                 Returns the combined stdout and stderr (long output keeps its start and end) \
                 and the exit code; a non-zero exit is reported, not an error. Use \
                 process_start for servers and other commands that do not end.",
                Role::Workspace,
                Access::Mutating,
                // Commands may append, delete or talk to the network.
                Replay::Never,
                Duration::from_secs(MAX_TIMEOUT_SECS) + CALL_GRACE,
            )
            .with_path_argument(PathArgument::WorkingDirectory("cwd")),
        }
    }
}

impl Default for RunCommand {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

impl RunCommand {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        non_empty(NAME, "command", &args.command)?;
        let timeout_secs = bounded(
            NAME,
            "timeout_secs",
            args.timeout_secs,
            DEFAULT_TIMEOUT_SECS,
            (1, MAX_TIMEOUT_SECS),
        )?;
        let spec = ExecSpec {
            shell: Some(args.command.clone()),
            cwd: args.cwd,
            timeout_ms: Some(timeout_secs * 1000),
            // No cap in the guest: the end of the output matters most, so the
            // host keeps head and tail in bounded memory and drops the middle.
            output_cap: None,
            env: ctx.command_env(),
            ..ExecSpec::default()
        };
        let mut execution = ctx.guest.exec(spec, &[]).await.map_err(guest(NAME))?;
        let mut output = HeadTail::new(HEAD_BYTES, TAIL_BYTES);
        let exit = loop {
            // Dropping the execution on cancel kills the command's process group.
            let event = tokio::select! {
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::Cancelled { tool: NAME.to_owned() });
                }
                event = execution.next_event() => event.map_err(guest(NAME))?,
            };
            match event {
                Some(ExecEvent::Output { stream, data }) => {
                    ctx.live.send(stream, &data);
                    output.push(&data);
                }
                Some(ExecEvent::Started { .. }) => {}
                Some(ExecEvent::Exited(exit)) => break exit,
                None => {
                    return Err(ToolError::Guest {
                        tool: NAME.to_owned(),
                        source: paddock_core::sandbox::GuestError::Disconnected {
                            op: "exec",
                            reason: "the command's events ended without its exit".to_owned(),
                        },
                    });
                }
            }
        };
        tracing::debug!(
            run_id = %ctx.run,
            session_id = %ctx.session,
            tool = NAME,
            exit_code = ?exit.code,
            timed_out = exit.timed_out,
            duration_ms = exit.duration_ms,
            "command finished"
        );
        Ok(result(&args.command, timeout_secs, &exit, &output))
    }
}

fn result(command: &str, timeout_secs: u64, exit: &ExitInfo, output: &HeadTail) -> ToolOutput {
    let mut content = output.render();
    if output.total() == 0 {
        content.push_str("(no output)");
    }
    if !content.ends_with('\n') {
        content.push('\n');
    }
    let secs = exit.duration_ms as f64 / 1000.0;
    let _ = match (exit.timed_out, exit.code, exit.signal) {
        (true, _, _) => write!(
            content,
            "[timed out after {timeout_secs}s and was killed; raise timeout_secs or use process_start]"
        ),
        (false, Some(code), _) => write!(content, "[exit code {code} after {secs:.1}s]"),
        (false, None, Some(signal)) => {
            write!(content, "[killed by signal {signal} after {secs:.1}s]")
        }
        (false, None, None) => write!(content, "[ended without an exit status after {secs:.1}s]"),
    };
    if exit.oom_killed {
        content.push_str(
            "\n[killed by the out-of-memory killer: the sandbox reached its memory limit; \
             use less memory at once (smaller inputs, fewer parallel jobs)]",
        );
    }
    if output.omitted() > 0 {
        let _ = write!(
            content,
            "\n[output was {} bytes; kept the first {} KiB and the last {} KiB]",
            output.total(),
            HEAD_BYTES >> 10,
            TAIL_BYTES >> 10
        );
    }
    let success = exit.code == Some(0) && !exit.timed_out;
    ToolOutput {
        content,
        is_error: false,
        data: json!({
            "exit_code": exit.code,
            "signal": exit.signal,
            "timed_out": exit.timed_out,
            "oom_killed": exit.oom_killed,
            "duration_ms": exit.duration_ms,
            "output_bytes": output.total(),
            "output_truncated": output.omitted() > 0,
        }),
        effects: vec![Effect::CommandFinished {
            command: command.to_owned(),
            exit_code: exit.code,
            success,
        }],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn timeouts_outside_the_cap_and_empty_commands_are_refused() {
        let tool = RunCommand::new();
        for (args, says) in [
            (
                json!({"command": "true", "timeout_secs": 601}),
                "between 1 and 600",
            ),
            (
                json!({"command": "true", "timeout_secs": 0}),
                "between 1 and 600",
            ),
            (json!({"command": "  "}), "command must not be empty"),
            (json!({"cmd": "ls"}), "unknown field `cmd`"),
        ] {
            let err = tool.call(&offline_context(), args).await.unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn the_call_timeout_outlasts_the_longest_command() {
        let tool = RunCommand::new();
        let contract = tool.contract();
        assert!(contract.timeout > Duration::from_secs(MAX_TIMEOUT_SECS));
        assert_eq!(
            contract.parameters["properties"]["timeout_secs"]["maximum"],
            MAX_TIMEOUT_SECS
        );
        assert_eq!(contract.replay, Replay::Never);
    }

    #[test]
    fn a_failed_command_is_a_normal_result_with_its_exit_code() {
        let mut output = HeadTail::new(HEAD_BYTES, TAIL_BYTES);
        output.push(b"boom\n");
        let exit = ExitInfo {
            code: Some(2),
            duration_ms: 1500,
            ..ExitInfo::default()
        };
        let out = result("make", 120, &exit, &output);
        assert!(!out.is_error);
        assert_eq!(out.content, "boom\n[exit code 2 after 1.5s]");
        assert_eq!(
            out.effects,
            [Effect::CommandFinished {
                command: "make".into(),
                exit_code: Some(2),
                success: false
            }]
        );
    }

    #[test]
    fn an_oom_kill_is_named_in_the_result() {
        let output = HeadTail::new(HEAD_BYTES, TAIL_BYTES);
        let exit = ExitInfo {
            signal: Some(9),
            oom_killed: true,
            duration_ms: 300,
            ..ExitInfo::default()
        };
        let out = result("make -j8", 120, &exit, &output);
        assert!(
            out.content.starts_with(
                "(no output)\n[killed by signal 9 after 0.3s]\n[killed by the out-of-memory killer"
            ),
            "{}",
            out.content
        );
        assert_eq!(out.data["oom_killed"], true);
        let plain = result(
            "x",
            120,
            &ExitInfo {
                signal: Some(9),
                ..ExitInfo::default()
            },
            &output,
        );
        assert!(
            !plain.content.contains("out-of-memory"),
            "{}",
            plain.content
        );
        assert_eq!(plain.data["oom_killed"], false);
    }
}
