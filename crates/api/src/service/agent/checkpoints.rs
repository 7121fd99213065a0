//! Checkpoints over the API: list a session's, rewind it to one, diff two
//! (or one and the workspace now). A fork at a checkpoint is
//! [`super::ForkSession::at_checkpoint`].

use paddock_core::ids::{CheckpointId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{Checkpoint, CheckpointReason};
use paddock_runtime::{CheckpointDiff, FileChange, Rewound};
use paddock_snapshot::checkpoint::{ChangeKind, Node};
use serde::{Deserialize, Serialize};

use super::RunView;
use super::{AgentError, AgentService};

/// `POST /v1/sessions/{id}/rewind`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RewindSession {
    /// The checkpoint of the session to go back to.
    pub checkpoint: CheckpointId,
    /// Go on although the workspace changed since the session's last
    /// checkpoint (those changes are checkpointed first); false: such a
    /// rewind is refused with 409 `workspace_changed`, naming the paths.
    #[serde(default)]
    pub force: bool,
}

/// The command that undoes a rewind or a resume's restore: the rewind to
/// `safety`, the checkpoint that kept the workspace as it was (over the
/// API: `POST /v1/sessions/{session}/rewind` with `{"checkpoint": safety}`).
pub fn undo_command(session: &SessionId, safety: &CheckpointId) -> String {
    format!("paddock session rewind {session} --to {safety}")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckpointView {
    pub id: CheckpointId,
    pub session: SessionId,
    pub run: RunId,
    pub workspace: WorkspaceId,
    pub reason: CheckpointReason,
    /// The session's last message and event when it was taken.
    pub message_seq: u64,
    pub event_seq: u64,
    pub plan_version: u64,
    pub file_count: u64,
    pub bytes: u64,
    /// Blobs and bytes it stored that no earlier checkpoint had.
    pub new_blobs: u64,
    pub new_bytes: u64,
    pub created_at: String,
}

impl From<&Checkpoint> for CheckpointView {
    fn from(c: &Checkpoint) -> Self {
        Self {
            id: c.id.clone(),
            session: c.session.clone(),
            run: c.run.clone(),
            workspace: c.workspace.clone(),
            reason: c.reason,
            message_seq: c.message_seq,
            event_seq: c.event_seq,
            plan_version: c.plan_version,
            file_count: c.file_count,
            bytes: c.bytes,
            new_blobs: c.new_blobs,
            new_bytes: c.new_bytes,
            created_at: c.created_at.to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RewindView {
    /// The run that rewound the session (completed).
    pub run: RunView,
    /// The checkpoint rewound to, and the one of the restored state.
    pub to: CheckpointId,
    pub checkpoint: Option<CheckpointId>,
    /// The checkpoint of the workspace as it was before the rewind.
    pub safety_checkpoint: CheckpointId,
    /// What undoes the rewind: the rewind to `safety_checkpoint`.
    pub undo: String,
    /// Paths that had changed since the session's last checkpoint (the
    /// rewind went on over them because it was forced; they are in
    /// `safety_checkpoint`).
    pub changed: Vec<String>,
    pub files_written: u64,
    pub bytes_written: u64,
    pub removed: u64,
}

impl From<&Rewound> for RewindView {
    fn from(r: &Rewound) -> Self {
        Self {
            run: RunView::new(&r.run, r.run.usage),
            to: r.to.clone(),
            checkpoint: r.checkpoint.clone(),
            safety_checkpoint: r.safety_checkpoint.clone(),
            undo: undo_command(&r.run.session, &r.safety_checkpoint),
            changed: r.changed.clone(),
            files_written: r.files_written,
            bytes_written: r.bytes_written,
            removed: r.removed,
        }
    }
}

/// A path as one side of a diff has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NodeView {
    File {
        /// sha256 of the content.
        hash: String,
        size: u64,
    },
    Dir,
    Symlink {
        /// For display: bytes not in UTF-8 as `\xNN`.
        target: String,
        /// The target's raw bytes in standard base64, only when it is not UTF-8.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_bytes: Option<String>,
    },
}

impl From<&Node> for NodeView {
    fn from(node: &Node) -> Self {
        match node {
            Node::File { hash, size } => NodeView::File {
                hash: hash.to_string(),
                size: *size,
            },
            Node::Dir => NodeView::Dir,
            Node::Symlink { target } => NodeView::Symlink {
                target: target.display(),
                target_bytes: target.bytes_b64(),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeView {
    Added,
    Removed,
    Changed,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileChangeView {
    /// For display: bytes not in UTF-8 as `\xNN`.
    pub path: String,
    /// The path's raw bytes in standard base64, only when it is not UTF-8
    /// (docs/api.md, "Paths not in UTF-8").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub change: ChangeView,
    pub before: Option<NodeView>,
    pub after: Option<NodeView>,
    /// The unified diff of a text file.
    pub patch: Option<String>,
}

impl From<&FileChange> for FileChangeView {
    fn from(c: &FileChange) -> Self {
        Self {
            path: c.path.clone(),
            path_bytes: c.path_bytes.clone(),
            change: match c.change {
                ChangeKind::Added => ChangeView::Added,
                ChangeKind::Removed => ChangeView::Removed,
                ChangeKind::Changed => ChangeView::Changed,
            },
            before: c.before.as_ref().map(NodeView::from),
            after: c.after.as_ref().map(NodeView::from),
            patch: c.patch.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckpointDiffView {
    /// None: from an empty workspace.
    pub from: Option<CheckpointId>,
    /// None: the workspace as it is now.
    pub to: Option<CheckpointId>,
    pub changes: Vec<FileChangeView>,
}

impl From<&CheckpointDiff> for CheckpointDiffView {
    fn from(d: &CheckpointDiff) -> Self {
        Self {
            from: d.from.clone(),
            to: d.to.clone(),
            changes: d.changes.iter().map(FileChangeView::from).collect(),
        }
    }
}

impl AgentService {
    pub async fn list_checkpoints(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<CheckpointView>, AgentError> {
        let checkpoints = self
            .runtime()
            .list_checkpoints(tenant, session)
            .await
            .map_err(AgentError::runtime("list_checkpoints"))?;
        Ok(checkpoints.iter().map(CheckpointView::from).collect())
    }

    pub async fn rewind_session(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        command: RewindSession,
    ) -> Result<RewindView, AgentError> {
        let rewound = self
            .runtime()
            .rewind_session(tenant, session, &command.checkpoint, command.force)
            .await
            .map_err(AgentError::runtime("rewind_session"))?;
        Ok(RewindView::from(&rewound))
    }

    pub async fn diff_checkpoints(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        from: Option<&CheckpointId>,
        to: Option<&CheckpointId>,
    ) -> Result<CheckpointDiffView, AgentError> {
        let diff = self
            .runtime()
            .diff_checkpoints(tenant, session, from, to)
            .await
            .map_err(AgentError::runtime("diff_checkpoints"))?;
        Ok(CheckpointDiffView::from(&diff))
    }
}
