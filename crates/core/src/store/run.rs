//! A session's runs and what they record: events and tool invocations.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use super::agent::{Budgets, DriverKind, EndReason, Review, RunMode, RunUsage, SubagentProfile};
use crate::ids::{RunId, SessionId, SnapshotId, TenantId, ToolInvocationId};

text_enum!(
    /// The run state machine: (queued ->) preparing -> planning -> acting ->
    /// observing / verifying -> completed, with the side exits below.
    RunState {
        /// Waiting for a sandbox slot of its tenant or node (only where the
        /// operator asks for queueing); starts as `preparing` when it gets one.
        Queued => "queued",
        Preparing => "preparing",
        Planning => "planning",
        Acting => "acting",
        Observing => "observing",
        Verifying => "verifying",
        AwaitingUser => "awaiting_user",
        Cancelling => "cancelling",
        Completed => "completed",
        Cancelled => "cancelled",
        Failed => "failed",
        /// The process driving it died; a resume starts a new run.
        Interrupted => "interrupted",
    }
);

impl RunState {
    /// No further transition happens from a terminal state.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunState::Completed | RunState::Cancelled | RunState::Failed | RunState::Interrupted
        )
    }
}

/// One attempt at a session's goal. A subagent's run names its parent in
/// `parent_run` and lives in its own session (its own event sequence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub id: RunId,
    pub tenant: TenantId,
    pub session: SessionId,
    pub parent_run: Option<RunId>,
    /// The interrupted run this one resumes (same session, a new run).
    pub resumed_from: Option<RunId>,
    pub state: RunState,
    pub goal: String,
    /// Why the run failed or was interrupted.
    pub error: Option<String>,
    pub mode: RunMode,
    /// What drives the run's agent.
    #[serde(default)]
    pub driver: DriverKind,
    /// Set on subagent runs.
    pub profile: Option<SubagentProfile>,
    /// The parent's plan task a subagent works on.
    pub task_key: Option<String>,
    pub budgets: Budgets,
    pub usage: RunUsage,
    /// What ended the run, once it ended.
    pub end_reason: Option<EndReason>,
    pub review: Option<Review>,
    /// The workspace as it was when the run ended; a fork from this run restores it.
    pub end_snapshot: Option<SnapshotId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Set when the run reaches a terminal state.
    pub finished_at: Option<Timestamp>,
}

impl Run {
    pub fn new(
        tenant: TenantId,
        session: SessionId,
        goal: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            id: RunId::generate(),
            tenant,
            session,
            parent_run: None,
            resumed_from: None,
            state: RunState::Preparing,
            goal: goal.into(),
            error: None,
            mode: RunMode::Build,
            driver: DriverKind::Builtin,
            profile: None,
            task_key: None,
            budgets: Budgets::default(),
            usage: RunUsage::default(),
            end_reason: None,
            review: None,
            end_snapshot: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
        }
    }
}

/// A state change of a run. `None` fields keep their stored value, except
/// `error`, which is written as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunUpdate {
    pub state: RunState,
    pub error: Option<String>,
    pub usage: Option<RunUsage>,
    pub end_reason: Option<EndReason>,
    pub review: Option<Review>,
    pub end_snapshot: Option<SnapshotId>,
}

impl RunUpdate {
    /// Moves to `state` and changes nothing else.
    pub fn state(state: RunState) -> Self {
        Self {
            state,
            error: None,
            usage: None,
            end_reason: None,
            review: None,
            end_snapshot: None,
        }
    }
}

/// An event to append to a session's log; the store assigns its sequence number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEvent {
    pub session: SessionId,
    pub run: Option<RunId>,
    /// Event type, e.g. `run.state`, `tool.call`, `model.message`.
    pub kind: String,
    /// JSON document; the store keeps it opaque.
    pub payload: String,
}

/// One entry of a session's append-only event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEvent {
    pub tenant: TenantId,
    pub session: SessionId,
    /// 1, 2, 3, ... per session, without gaps; SSE sends it as the event id.
    /// 0 for a transient event (a `model.delta`, say): published live on
    /// the bus only, never stored, so it has no place in the sequence.
    pub seq: u64,
    pub run: Option<RunId>,
    pub kind: String,
    pub payload: String,
    pub created_at: Timestamp,
}

impl RunEvent {
    /// Whether this event was only published live, never stored.
    pub fn is_transient(&self) -> bool {
        self.seq == 0
    }
}

text_enum!(
    ToolStatus {
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
    }
);

/// One tool call of a run and, once finished, its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInvocation {
    pub id: ToolInvocationId,
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    pub tool: String,
    /// Arguments as a JSON document.
    pub input: String,
    pub status: ToolStatus,
    /// Result as a JSON document, once finished.
    pub output: Option<String>,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl ToolInvocation {
    /// A call that is starting now.
    pub fn start(
        run: &Run,
        tool: impl Into<String>,
        input: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            id: ToolInvocationId::generate(),
            tenant: run.tenant.clone(),
            session: run.session.clone(),
            run: run.id.clone(),
            tool: tool.into(),
            input: input.into(),
            status: ToolStatus::Running,
            output: None,
            started_at: now,
            finished_at: None,
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    pub output: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_text() -> Result<(), serde_json::Error> {
        for state in RunState::ALL {
            assert_eq!(RunState::parse(state.as_str()), Some(*state));
            let json = serde_json::to_string(state)?;
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<RunState>(&json)?, *state);
        }
        assert_eq!(RunState::parse("done"), None);
        Ok(())
    }

    #[test]
    fn only_end_states_are_terminal() {
        let terminal: Vec<_> = RunState::ALL
            .iter()
            .filter(|s| s.is_terminal())
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            terminal,
            ["completed", "cancelled", "failed", "interrupted"]
        );
    }
}
