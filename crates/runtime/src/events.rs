//! The events a run appends to its session's log, and their JSON payloads.
//!
//! Every payload type here is what `RunEvent::payload` holds for its kind,
//! and the runtime writes them with these types. Readers do not all use
//! them yet: the CLI (orchestrator/src/agent/render.rs) and the HTTP event
//! stream (crates/api/src/http/events.rs) match `kind` as a string and read
//! the payload as JSON. The run id is on the event itself (`RunEvent::run`),
//! not repeated in the payloads.

use paddock_core::ids::{RunId, SessionId, SnapshotId, ToolInvocationId};
use paddock_core::model::{ToolCall, Usage};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    Budgets, EndReason, RunMode, RunState, RunUsage, SubagentProfile, TaskStatus, Verdict,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Event kinds (`RunEvent::kind`).
pub mod kind {
    pub const RUN_STARTED: &str = "run.started";
    pub const RUN_STATE: &str = "run.state";
    pub const SANDBOX_READY: &str = "sandbox.ready";
    pub const SANDBOX_STOPPED: &str = "sandbox.stopped";
    pub const MODEL_MESSAGE: &str = "model.message";
    pub const TOOL_CALL: &str = "tool.call";
    pub const TOOL_RESULT: &str = "tool.result";
    pub const PLAN_UPDATED: &str = "plan.updated";
    pub const PROGRESS: &str = "progress";
    pub const RUN_REVIEW: &str = "run.review";
    pub const RUN_FINISHED: &str = "run.finished";
    /// In a parent's session: one of its subagents changed phase.
    pub const SUBAGENT_STATUS: &str = "subagent.status";
    /// In a subagent's session: the parent sent it a message.
    pub const PARENT_MESSAGE: &str = "parent.message";
}

/// Most characters of a tool result's content carried by a `tool.result` event
/// (the invocation log keeps the whole result).
pub const RESULT_EVENT_CAP: usize = 2_000;

/// `run.started`: the run row exists and its goal is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    pub goal: String,
    pub success_criteria: Vec<String>,
    pub mode: RunMode,
    pub budgets: Budgets,
    /// `provider:model` of the model driving the run.
    pub model: String,
    pub parent_run: Option<RunId>,
    pub profile: Option<SubagentProfile>,
    pub task_key: Option<String>,
}

/// `run.state`: the run moved to `state`; `usage` is what it spent so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStateChanged {
    pub state: RunState,
    pub usage: RunUsage,
}

/// `sandbox.ready`: the run's sandbox answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxReady {
    pub sandbox_id: SandboxId,
    pub backend: String,
    pub read_only: bool,
}

/// `sandbox.stopped`: the run's sandbox was torn down (`error` if not cleanly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxStopped {
    pub sandbox_id: SandboxId,
    pub error: Option<String>,
}

/// `model.message`: one model turn's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMessage {
    /// 1-based model turn of the run.
    pub turn: u32,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// The request was compacted to fit the context window before this turn.
    pub compacted: bool,
}

/// `tool.call`: a call the model asked for, before it runs (or is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub invocation_id: ToolInvocationId,
}

/// How a call ended, as `tool.result` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran and reported success.
    Succeeded,
    /// The tool ran (or tried to) and failed: its error is the result.
    Failed,
    /// The policy refused the call; nothing ran.
    Denied,
    /// The repeat guard answered with a recovery hint; nothing ran.
    Hint,
    /// Not run because the run ended first (budget, repeat, cancellation).
    Skipped,
}

/// `tool.result`: a call's result as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    pub call_id: String,
    pub tool: String,
    pub invocation_id: Option<ToolInvocationId>,
    pub status: CallStatus,
    pub is_error: bool,
    /// The result's text, cut at [`RESULT_EVENT_CAP`] characters.
    pub content: String,
    pub truncated: bool,
    pub duration_ms: u64,
}

/// One task of a `plan.updated` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTask {
    pub key: String,
    pub title: String,
    pub status: TaskStatus,
}

/// `plan.updated`: the session's plan as `update_plan` set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanUpdated {
    pub version: u64,
    pub explanation: Option<String>,
    pub tasks: Vec<PlanTask>,
}

/// `progress`: a milestone the agent reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub message: String,
}

/// `run.finished`: the run reached the end of its life (a terminal state, or
/// `awaiting_user`). The review, if any, came in `run.review` just before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFinished {
    pub state: RunState,
    pub end_reason: EndReason,
    pub usage: RunUsage,
    pub error: Option<String>,
    pub verdict: Option<Verdict>,
    /// The question of `ask_user` (state `awaiting_user`).
    pub question: Option<String>,
    /// The workspace as the run left it (a fork from this run restores it).
    pub end_snapshot: Option<SnapshotId>,
    /// Why no end snapshot was taken, if that failed.
    pub snapshot_error: Option<String>,
}

/// Where a subagent is in its life, as `subagent.status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentPhase {
    /// Its run, session and workspace exist.
    Spawned,
    /// It waits for one of the parent's running slots.
    Queued,
    /// Its sandbox is starting or its loop runs.
    Running,
    /// Its run ended; `state`, `verdict`, `summary` and `changed_paths` say how.
    Finished,
}

/// `subagent.status`, in the parent's session: a lightweight view of a child,
/// never its transcript (that is in the child's own session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentStatus {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub task_id: String,
    pub profile: SubagentProfile,
    pub status: SubagentPhase,
    /// Set when finished.
    pub state: Option<RunState>,
    pub verdict: Option<Verdict>,
    /// The child's review summary, first 500 characters.
    pub summary: Option<String>,
    /// Files its change set adds, modifies or deletes (build children).
    pub changed_paths: Option<u32>,
}

/// `parent.message`, in a subagent's session: what `message_subagent` sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentMessage {
    pub message: String,
}

/// `content` cut to at most `cap` characters, and whether it was cut.
pub(crate) fn cap_text(content: &str, cap: usize) -> (String, bool) {
    match content.char_indices().nth(cap) {
        Some((end, _)) => (content[..end].to_owned(), true),
        None => (content.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capping_counts_characters_not_bytes() {
        assert_eq!(cap_text("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(cap_text("héllo", 5), ("héllo".to_owned(), false));
        assert_eq!(cap_text("", 0), (String::new(), false));
    }

    #[test]
    fn payloads_use_snake_case_states_and_statuses() -> Result<(), serde_json::Error> {
        let changed = RunStateChanged {
            state: RunState::AwaitingUser,
            usage: RunUsage::default(),
        };
        let json = serde_json::to_value(&changed)?;
        assert_eq!(json["state"], "awaiting_user");
        assert_eq!(serde_json::to_value(CallStatus::Hint)?, "hint");
        Ok(())
    }
}
