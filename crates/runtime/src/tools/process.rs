//! Background processes (servers, watchers): `process_start`,
//! `process_output` and `process_stop`, over the guest's process table.
//! Their combined output lives in a bounded buffer in the guest.

use std::fmt::Write;
use std::time::Duration;

use async_trait::async_trait;
use paddock_proto::{ExecSpec, ExitInfo};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{bounded, contract_for, non_empty, parse_args};
use super::output::{guest, refusal_as_result};
use super::{
    Access, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
};

pub(crate) const START: &str = "process_start";
pub(crate) const OUTPUT: &str = "process_output";
pub(crate) const STOP: &str = "process_stop";

/// Output bytes returned per `process_output` call.
const READ_BYTES: u64 = 16 << 10;
const MAX_WAIT_SECS: u64 = 60;
const DEFAULT_GRACE_SECS: u64 = 5;
const MAX_GRACE_SECS: u64 = 30;
/// How long a SIGKILLed group gets to be reaped before stop reports it still running.
const KILL_WAIT: Duration = Duration::from_secs(5);
// Linux signal numbers (this crate has no libc).
const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// Start a background process.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StartArgs {
    /// Shell script run with `sh -c`, in the background.
    command: String,
    /// Working directory relative to /workspace. Default: /workspace.
    #[serde(default)]
    cwd: Option<String>,
}

/// Read a background process's output.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    /// The handle process_start returned.
    handle: u64,
    /// Output byte offset to read from (the next_offset of the previous read). Default 0.
    #[serde(default)]
    offset: Option<u64>,
    /// Seconds to wait for the process to exit before reading. Default 0: read now.
    #[schemars(range(max = MAX_WAIT_SECS))]
    #[serde(default)]
    wait_secs: Option<u64>,
}

/// Stop a background process.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StopArgs {
    /// The handle process_start returned.
    handle: u64,
    /// Seconds between SIGTERM and SIGKILL. Default 5.
    #[schemars(range(max = MAX_GRACE_SECS))]
    #[serde(default)]
    grace_secs: Option<u64>,
}

fn describe_exit(exit: &ExitInfo) -> String {
    match (exit.code, exit.signal) {
        _ if exit.timed_out => "was killed at its timeout".to_owned(),
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

#[derive(Debug)]
pub struct ProcessStart {
    contract: ToolContract,
}

impl ProcessStart {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<StartArgs>(
                START,
                "Start a long-running command (a server, a watcher) in the background with \
                 sh -c in /workspace. Returns a handle for process_output and process_stop.",
                Role::Workspace,
                Access::Mutating,
                Replay::Never,
                Duration::from_secs(30),
            )
            .with_path_argument(PathArgument::WorkingDirectory("cwd")),
        }
    }
}

impl Default for ProcessStart {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ProcessStart {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(start(ctx, arguments).await)
    }
}

async fn start(ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
    let args: StartArgs = parse_args(START, arguments)?;
    non_empty(START, "command", &args.command)?;
    let spec = ExecSpec {
        shell: Some(args.command),
        cwd: args.cwd,
        env: ctx.command_env(),
        ..ExecSpec::default()
    };
    let started = ctx.guest.process_start(spec).await.map_err(guest(START))?;
    tracing::debug!(
        run_id = %ctx.run,
        session_id = %ctx.session,
        tool = START,
        handle = started.handle,
        pid = started.pid,
        "background process started"
    );
    Ok(ToolOutput {
        content: format!(
            "started process {} (pid {}); read its output with process_output {{\"handle\": {}}}",
            started.handle, started.pid, started.handle
        ),
        is_error: false,
        data: json!({ "handle": started.handle, "pid": started.pid }),
        effects: Vec::new(),
    })
}

#[derive(Debug)]
pub struct ProcessOutputTool {
    contract: ToolContract,
}

impl ProcessOutputTool {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<OutputArgs>(
                OUTPUT,
                "Read a background process's combined output from a byte offset (16 KiB per \
                 call) and whether it is still running. Optionally wait for it to exit first.",
                Role::Workspace,
                Access::ReadOnly,
                // Reads at an explicit offset: the same call gives the same bytes.
                Replay::Safe,
                Duration::from_secs(MAX_WAIT_SECS + 15),
            ),
        }
    }
}

impl Default for ProcessOutputTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ProcessOutputTool {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(output(ctx, arguments).await)
    }
}

async fn output(ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
    let args: OutputArgs = parse_args(OUTPUT, arguments)?;
    let wait = bounded(OUTPUT, "wait_secs", args.wait_secs, 0, (0, MAX_WAIT_SECS))?;
    if wait > 0 {
        ctx.guest
            .process_wait(args.handle, Some(wait * 1000))
            .await
            .map_err(guest(OUTPUT))?;
    }
    let handle = args.handle;
    let read = ctx
        .guest
        .process_read(handle, args.offset.unwrap_or(0), READ_BYTES)
        .await
        .map_err(guest(OUTPUT))?;
    let mut content = String::from_utf8_lossy(&read.data).into_owned();
    if read.data.is_empty() {
        content.push_str("(no new output)");
    }
    if !content.ends_with('\n') {
        content.push('\n');
    }
    if read.dropped > 0 {
        let _ = writeln!(
            content,
            "[{} older bytes were no longer kept; this starts at offset {}]",
            read.dropped, read.offset
        );
    }
    let state = match &read.exit {
        Some(exit) => format!("process {handle} {}", describe_exit(exit)),
        None => format!("process {handle} is running"),
    };
    let _ = write!(content, "[{state}; next_offset {}]", read.next_offset);
    Ok(ToolOutput {
        content,
        is_error: false,
        data: json!({
            "handle": handle,
            "offset": read.offset,
            "next_offset": read.next_offset,
            "dropped": read.dropped,
            "running": read.running,
            "exit": read.exit,
        }),
        effects: Vec::new(),
    })
}

#[derive(Debug)]
pub struct ProcessStop {
    contract: ToolContract,
}

impl ProcessStop {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<StopArgs>(
                STOP,
                "Stop a background process and everything it started: SIGTERM, then SIGKILL \
                 after grace_secs. Reports how it ended.",
                Role::Workspace,
                Access::Mutating,
                // Stopping a process that already ended is a no-op, and handles are never reused.
                Replay::Safe,
                Duration::from_secs(MAX_GRACE_SECS) + KILL_WAIT + Duration::from_secs(15),
            ),
        }
    }
}

impl Default for ProcessStop {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ProcessStop {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(stop(ctx, arguments).await)
    }
}

async fn stop(ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
    let args: StopArgs = parse_args(STOP, arguments)?;
    let grace = bounded(
        STOP,
        "grace_secs",
        args.grace_secs,
        DEFAULT_GRACE_SECS,
        (0, MAX_GRACE_SECS),
    )?;
    let handle = args.handle;
    let guest_ops = &ctx.guest;
    let before = guest_ops
        .process_wait(handle, Some(0))
        .await
        .map_err(guest(STOP))?;
    let mut killed = false;
    let status = if before.running {
        guest_ops
            .process_signal(handle, SIGTERM)
            .await
            .map_err(guest(STOP))?;
        let after_term = guest_ops
            .process_wait(handle, Some(grace * 1000))
            .await
            .map_err(guest(STOP))?;
        if after_term.running {
            killed = true;
            guest_ops
                .process_signal(handle, SIGKILL)
                .await
                .map_err(guest(STOP))?;
            guest_ops
                .process_wait(handle, Some(KILL_WAIT.as_millis() as u64))
                .await
                .map_err(guest(STOP))?
        } else {
            after_term
        }
    } else {
        before.clone()
    };
    tracing::debug!(
        run_id = %ctx.run,
        session_id = %ctx.session,
        tool = STOP,
        handle,
        killed,
        running = status.running,
        "background process stop"
    );
    let (content, is_error) = match (&status.exit, before.running) {
        (Some(exit), false) => (
            format!(
                "process {handle} had already ended: it {}",
                describe_exit(exit)
            ),
            false,
        ),
        (Some(exit), true) => {
            let how = if killed { "SIGKILL" } else { "SIGTERM" };
            (
                format!(
                    "stopped process {handle} with {how}: it {}",
                    describe_exit(exit)
                ),
                false,
            )
        }
        (None, _) => (
            format!("process {handle} is still running after SIGKILL"),
            true,
        ),
    };
    Ok(ToolOutput {
        content,
        is_error,
        data: json!({
            "handle": handle,
            "running": status.running,
            "exit": status.exit,
            "killed": killed,
        }),
        effects: Vec::new(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn handles_must_be_numbers_and_waits_are_capped() {
        let ctx = offline_context();
        let err = ProcessOutputTool::new()
            .call(&ctx, json!({"handle": "1"}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");
        let err = ProcessOutputTool::new()
            .call(&ctx, json!({"handle": 1, "wait_secs": 61}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("between 0 and 60"), "{err}");
        let err = ProcessStop::new()
            .call(&ctx, json!({"handle": 1, "grace_secs": 31}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("between 0 and 30"), "{err}");
        let err = ProcessStart::new()
            .call(&ctx, json!({"command": ""}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("must not be empty"), "{err}");
    }

    #[test]
    fn reading_output_is_read_only_and_starting_is_not() {
        assert_eq!(ProcessOutputTool::new().contract().access, Access::ReadOnly);
        assert_eq!(ProcessStart::new().contract().access, Access::Mutating);
        assert_eq!(ProcessStop::new().contract().access, Access::Mutating);
        assert_eq!(
            ProcessStart::new().contract().parameters["required"],
            json!(["command"])
        );
    }
}
