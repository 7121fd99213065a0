//! Sessions and runs as the API answers them: plain data with RFC 3339 times,
//! without the tenant (the caller's own).

use paddock_core::ids::{CheckpointId, RunId, SessionId, SnapshotId, WorkspaceId};
use paddock_core::store::{
    Budgets, DriverKind, EndReason, Review, Run, RunMode, RunState, RunUsage, Session,
    SessionMemory, SessionStatus, SubagentProfile,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SessionView {
    pub id: SessionId,
    pub workspace: WorkspaceId,
    pub title: String,
    pub status: SessionStatus,
    pub forked_from: Option<SessionId>,
    pub forked_at_run: Option<RunId>,
    /// Set on a subagent's session: the run that spawned it.
    pub parent_run: Option<RunId>,
    pub created_at: String,
    pub updated_at: String,
    /// What the session's last run or compaction left: a summary, open
    /// questions, next steps, workspace facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<SessionMemory>,
}

impl From<&Session> for SessionView {
    fn from(s: &Session) -> Self {
        Self {
            id: s.id.clone(),
            workspace: s.workspace.clone(),
            title: s.title.clone(),
            status: s.status,
            forked_from: s.forked_from.clone(),
            forked_at_run: s.forked_at_run.clone(),
            parent_run: s.parent_run.clone(),
            created_at: s.created_at.to_string(),
            updated_at: s.updated_at.to_string(),
            memory: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunView {
    pub id: RunId,
    pub session: SessionId,
    pub parent_run: Option<RunId>,
    /// The interrupted run this one resumes (`POST /v1/runs/{id}/resume`).
    pub resumed_from: Option<RunId>,
    pub state: RunState,
    pub goal: String,
    pub mode: RunMode,
    /// What drives the run's agent.
    pub driver: DriverKind,
    pub profile: Option<SubagentProfile>,
    pub task_key: Option<String>,
    pub budgets: Budgets,
    /// The run's own usage (what its budgets count).
    pub usage: RunUsage,
    /// Its own usage plus every subagent run's under it, as recorded now.
    pub total_usage: RunUsage,
    /// Why the run failed or was interrupted.
    pub error: Option<String>,
    /// What ended the run, once it ended.
    pub end_reason: Option<EndReason>,
    /// The structured end: verdict, summary, evidence, what is left.
    pub review: Option<Review>,
    /// The workspace as the run left it; a fork from this run restores it.
    pub end_snapshot: Option<SnapshotId>,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

impl RunView {
    /// `r` with `total_usage`, its usage and its descendants'
    /// (`Runtime::total_usage`).
    pub fn new(r: &Run, total_usage: RunUsage) -> Self {
        Self {
            id: r.id.clone(),
            session: r.session.clone(),
            parent_run: r.parent_run.clone(),
            resumed_from: r.resumed_from.clone(),
            state: r.state,
            goal: r.goal.clone(),
            mode: r.mode,
            driver: r.driver,
            profile: r.profile,
            task_key: r.task_key.clone(),
            budgets: r.budgets,
            usage: r.usage,
            total_usage,
            error: r.error.clone(),
            end_reason: r.end_reason,
            review: r.review.clone(),
            end_snapshot: r.end_snapshot.clone(),
            created_at: r.created_at.to_string(),
            updated_at: r.updated_at.to_string(),
            finished_at: r.finished_at.map(|t| t.to_string()),
        }
    }
}

/// A steering message as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SteeringView {
    pub id: u64,
    pub run: RunId,
    pub text: String,
    pub created_at: String,
}

/// A resumed run as it started, and how to undo its restore when it
/// overwrote changes.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResumedView {
    #[serde(flatten)]
    pub run: RunView,
    /// The checkpoint that kept the workspace as it was before the restore
    /// (None: the workspace was what the last checkpoint recorded, so
    /// nothing was overwritten).
    pub safety_checkpoint: Option<CheckpointId>,
    /// What undoes the restore: the rewind to `safety_checkpoint`.
    pub undo: Option<String>,
}
