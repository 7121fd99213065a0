//! What every tool declares about itself and what calling one looks like. The
//! run loop only ever sees tools through these types.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::ids::{RunId, SessionId, ToolInvocationId};
use paddock_core::model::ToolSchema;
use paddock_core::sandbox::GuestOps;
use paddock_core::store::{RunMode, TaskStatus, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Whether a tool can change the workspace or the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Never changes anything; may run in parallel with other read-only calls.
    ReadOnly,
    /// May change the workspace or start processes; runs alone, in order.
    Mutating,
}

/// Whether a call may be executed again after a crash without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replay {
    /// Running it twice has the same effect as once.
    Safe,
    /// Must not be re-run blindly (commands, appends, process starts).
    Never,
}

/// What a tool is for, as the end-of-run review weighs its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads or acts on the workspace or the sandbox (files, commands,
    /// processes, subagents): a success shows something about the
    /// workspace, a failure is a setback.
    Workspace,
    /// Only talks to the run loop (a plan, a progress note, a question, the
    /// completion): its results show nothing about the workspace, and a
    /// malformed call sets nothing back.
    Control,
}

/// The argument naming the one workspace path a call acts on, by what the
/// call does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "use", content = "argument", rename_all = "snake_case")]
pub enum PathArgument {
    /// Reads or lists the path.
    Reads(&'static str),
    /// Writes or removes the file named: the run's write scope applies to it.
    Writes(&'static str),
    /// A command's working directory: what the command writes is not known
    /// from its arguments, so no write scope applies to it.
    WorkingDirectory(&'static str),
}

impl PathArgument {
    /// The argument's name in the call's arguments object.
    pub fn name(self) -> &'static str {
        match self {
            Self::Reads(name) | Self::Writes(name) | Self::WorkingDirectory(name) => name,
        }
    }
}

/// A tool's declaration: what the model is offered, what the policy checks
/// and how the review weighs a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolContract {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON schema of the arguments object.
    pub parameters: Value,
    pub role: Role,
    pub access: Access,
    pub replay: Replay,
    /// Longest a call may take before it is stopped and reported as timed out.
    pub timeout: Duration,
    /// The argument naming the workspace path the call acts on, if it has one.
    pub path_argument: Option<PathArgument>,
}

impl ToolContract {
    /// The contract with `argument` declared as its path argument.
    pub fn with_path_argument(mut self, argument: PathArgument) -> Self {
        self.path_argument = Some(argument);
        self
    }

    /// The schema offered to the model.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.to_owned(),
            description: self.description.to_owned(),
            parameters: self.parameters.clone(),
        }
    }
}

/// Paths a build agent may change, relative to /workspace ("src", "docs/a.md").
/// `None` on the context means the whole workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteScope(pub Vec<String>);

/// What a call runs against.
#[derive(Clone)]
pub struct ToolContext {
    pub guest: Arc<dyn GuestOps>,
    pub mode: RunMode,
    pub write_scope: Option<WriteScope>,
    pub session: SessionId,
    pub run: RunId,
    /// Cancelled when the run is cancelled or the call times out.
    pub cancel: CancellationToken,
    /// Where the call sends output while it runs (none by default).
    pub live: super::LiveOutput,
    /// The call's idempotency key: its tool invocation id, or for a call a
    /// resume runs again, the key of the call it repeats (so a repeated
    /// command is recognisable). A command sees it as
    /// [`IDEMPOTENCY_KEY_ENV`]. None outside a run's loop.
    pub idempotency_key: Option<ToolInvocationId>,
}

/// The environment variable a command (`run_command`, `process_start`)
/// finds its call's idempotency key in, to record it or pass it on (an
/// API's `Idempotency-Key`); the key a resume's "outcome unknown" answer
/// names.
pub const IDEMPOTENCY_KEY_ENV: &str = "PADDOCK_IDEMPOTENCY_KEY";

impl ToolContext {
    /// This context for one call: its live output is counted on its own,
    /// and `key` is its idempotency key.
    pub fn for_call(&self, call_id: &str, tool: &str, key: Option<&ToolInvocationId>) -> Self {
        Self {
            live: self.live.for_call(call_id, tool),
            idempotency_key: key.cloned(),
            ..self.clone()
        }
    }

    /// What a command the call runs adds to the sandbox's environment: the
    /// call's idempotency key ([`IDEMPOTENCY_KEY_ENV`]).
    pub fn command_env(&self) -> BTreeMap<String, String> {
        self.idempotency_key
            .iter()
            .map(|key| (IDEMPOTENCY_KEY_ENV.to_owned(), key.to_string()))
            .collect()
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("mode", &self.mode)
            .field("write_scope", &self.write_scope)
            .field("session", &self.session)
            .field("run", &self.run)
            .field("idempotency_key", &self.idempotency_key)
            .finish_non_exhaustive()
    }
}

/// One step of a plan as the model sends it to `update_plan`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanStep {
    /// Stable id of the step ("1", "tests", ...); keep it when the step changes.
    pub id: String,
    pub title: String,
    pub status: TaskStatusArg,
}

/// [`TaskStatus`] as a tool argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatusArg {
    Pending,
    InProgress,
    Done,
    Blocked,
    Cancelled,
}

impl From<TaskStatusArg> for TaskStatus {
    fn from(status: TaskStatusArg) -> Self {
        match status {
            TaskStatusArg::Pending => TaskStatus::Pending,
            TaskStatusArg::InProgress => TaskStatus::InProgress,
            TaskStatusArg::Done => TaskStatus::Done,
            TaskStatusArg::Blocked => TaskStatus::Blocked,
            TaskStatusArg::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// One success criterion as the agent judges it in `complete_task`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CriterionClaim {
    /// The criterion's id as the goal lists it (c1, c2, ...), or its exact text.
    pub criterion: String,
    pub verdict: VerdictArg,
    /// What shows it (a command and its result, a file, ...).
    pub evidence: Option<String>,
}

/// [`Verdict`] as a tool argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictArg {
    Met,
    NotMet,
    Unsure,
}

impl From<VerdictArg> for Verdict {
    fn from(verdict: VerdictArg) -> Self {
        match verdict {
            VerdictArg::Met => Verdict::Met,
            VerdictArg::NotMet => Verdict::NotMet,
            VerdictArg::Unsure => Verdict::Unsure,
        }
    }
}

/// The agent's claim at the end of its work (`complete_task`); the run loop
/// checks it against what the run actually did before it becomes the review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Completion {
    pub verdict: VerdictArg,
    pub summary: String,
    #[serde(default)]
    pub evidence: Vec<String>,
    #[serde(default)]
    pub remaining: Vec<String>,
    #[serde(default)]
    pub criteria: Vec<CriterionClaim>,
}

/// What a call asks the run loop to do besides answering the model. Control
/// tools (update_plan, report_progress, ask_user, complete_task) only produce
/// effects; workspace tools report what they changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    PlanUpdated {
        explanation: Option<String>,
        steps: Vec<PlanStep>,
    },
    Progress {
        message: String,
    },
    AskUser {
        question: String,
    },
    Complete(Completion),
    /// Workspace paths (relative to /workspace) the call wrote or removed.
    FilesChanged {
        paths: Vec<String>,
    },
    /// A command finished; `success` is exit code 0. Verification evidence.
    CommandFinished {
        command: String,
        exit_code: Option<i32>,
        success: bool,
    },
}

/// The result of a call: what the model reads, plus structured data kept in
/// the tool invocation log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Text for the model; already capped to a size a context can hold.
    pub content: String,
    /// The call ran but failed (non-zero exit is not an error: the model reads it).
    pub is_error: bool,
    /// Structured result for the invocation log and the event stream.
    pub data: Value,
    pub effects: Vec<Effect>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            data: Value::Null,
            effects: Vec::new(),
        }
    }
}

/// Why a call could not run at all. The run loop turns it into an error
/// result for the model; none of these end the run by themselves.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments { tool: String, reason: String },
    #[error("{tool} is not allowed: {reason}")]
    Denied { tool: String, reason: String },
    #[error("unknown tool {tool}")]
    Unknown { tool: String },
    #[error("{tool} timed out after {timeout:?}")]
    TimedOut { tool: String, timeout: Duration },
    #[error("{tool} was cancelled")]
    Cancelled { tool: String },
    #[error("{tool} failed in the sandbox")]
    Guest {
        tool: String,
        #[source]
        source: paddock_core::sandbox::GuestError,
    },
}

/// A tool the agent can call.
#[async_trait]
pub trait Tool: Send + Sync + fmt::Debug {
    fn contract(&self) -> &ToolContract;
    /// Runs one call. Arguments are validated here (deserialized into the
    /// tool's argument struct); timeouts and cancellation are applied by the
    /// executor around this call.
    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError>;
}
