//! What a finished subagent hands back to its parent.

use paddock_core::ids::{RunId, SessionId};
use paddock_core::store::{EndReason, Run, RunState, RunUsage, SubagentProfile, Verdict};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One entry of a change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// Relative to the workspace root.
    pub path: String,
    pub change: ChangeKind,
}

/// Where a build child's change set stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ChangeSetState {
    /// Read-only profile, or the child changed nothing.
    None,
    /// Waiting for `apply_subagent_changes` or `reject_subagent_changes`.
    Pending,
    Applied,
    Rejected,
    /// It could not be computed (no end snapshot, unreadable archive).
    Unavailable {
        reason: String,
    },
}

/// The result of a subagent: what `wait_subagents` answers with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub task_id: String,
    pub profile: SubagentProfile,
    pub status: RunState,
    pub end_reason: Option<EndReason>,
    pub verdict: Option<Verdict>,
    /// The child's review summary.
    pub summary: Option<String>,
    pub evidence: Vec<String>,
    pub remaining: Vec<String>,
    pub changed_paths: Vec<ChangedPath>,
    pub change_set: ChangeSetState,
    pub usage: RunUsage,
    /// Why it could not finish: its question, its error, or that it was cancelled.
    pub blocked_reason: Option<String>,
}

impl ChildReport {
    pub(crate) fn of(
        run: &Run,
        task_id: &str,
        profile: SubagentProfile,
        changed_paths: Vec<ChangedPath>,
        change_set: ChangeSetState,
    ) -> Self {
        let review = run.review.as_ref();
        let blocked_reason = match run.state {
            RunState::AwaitingUser => review
                .and_then(|r| r.remaining.first().cloned())
                .or_else(|| Some("it asked a question only the user can answer".to_owned())),
            RunState::Cancelled => Some("it was cancelled".to_owned()),
            RunState::Failed | RunState::Interrupted => run
                .error
                .clone()
                .or_else(|| Some(format!("it ended {}", run.state))),
            _ => None,
        };
        Self {
            run_id: run.id.clone(),
            session_id: run.session.clone(),
            task_id: task_id.to_owned(),
            profile,
            status: run.state,
            end_reason: run.end_reason,
            verdict: review.map(|r| r.verdict),
            summary: review.map(|r| r.summary.clone()),
            evidence: review.map(|r| r.evidence.clone()).unwrap_or_default(),
            remaining: review.map(|r| r.remaining.clone()).unwrap_or_default(),
            changed_paths,
            change_set,
            usage: run.usage,
            blocked_reason,
        }
    }
}
