//! Rows of the control plane that are not part of a run: tenants, workspaces,
//! sandboxes, sessions and snapshots.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::{RunId, SessionId, SnapshotId, TenantId, WorkspaceId};
use crate::sandbox::SandboxId;

/// One customer of the orchestrator; every other row belongs to exactly one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    pub created_at: Timestamp,
}

/// The files an agent works on; sandboxes mount it and sessions work in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    pub id: WorkspaceId,
    pub tenant: TenantId,
    pub name: String,
    /// Host directory holding the files, when it is not the server's default
    /// (`<workspaces root>/<id>`): `paddock run --workspace DIR` registers DIR.
    pub root: Option<String>,
    pub created_at: Timestamp,
}

impl Workspace {
    pub fn new(tenant: TenantId, name: impl Into<String>, now: Timestamp) -> Self {
        Self {
            id: WorkspaceId::generate(),
            tenant,
            name: name.into(),
            root: None,
            created_at: now,
        }
    }
}

text_enum!(
    /// What the control plane believes about a sandbox process.
    SandboxState {
        Running => "running",
        Stopped => "stopped",
        /// Recorded as running, but its process was gone when the orchestrator
        /// reconciled after a restart.
        Lost => "lost",
        /// Paused: nothing of it runs or is held on the host; its files
        /// (and, in `full` mode, its saved memory) are kept until it is
        /// resumed or deleted ([`SandboxRecord::pause`] says where).
        Paused => "paused",
    }
);

text_enum!(
    /// What a pause keeps of a sandbox.
    PauseMode {
        /// Memory and processes too (the tier saves the whole machine).
        Full => "full",
        /// The workspace's files only: its processes are stopped, and a
        /// resume starts a fresh sandbox of the same spec on the same files.
        Filesystem => "filesystem",
    }
);

text_enum!(
    /// What the expiry task does to a sandbox left idle for the idle
    /// timeout: the sandbox's own choice (`on_idle` at create), else the
    /// server's (`on_idle` in its config).
    #[derive(Default)]
    OnIdle {
        /// Destroy it (state `stopped`).
        #[default]
        Stop => "stop",
        /// Pause it (state `paused`, the strongest mode its tier can do);
        /// its next request resumes it. A console sandbox, or one with
        /// secrets, cannot be paused: it is stopped.
        Pause => "pause",
    }
);

/// Where a paused sandbox's state is kept, recorded with it (the `pause`
/// column) so that a restarted server can resume it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPause {
    pub mode: PauseMode,
    /// The snapshot holding the files of a sandbox whose workspace was
    /// temporary (None: its workspace row holds them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotId>,
    /// The file a `full` pause saved the whole sandbox into (memory and
    /// processes; `Sandbox::suspend`), on this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_state: Option<std::path::PathBuf>,
    /// Why it was paused: `requested` or `idle`.
    pub reason: String,
    pub paused_at: Timestamp,
}

/// A sandbox the orchestrator owns over time (it outlives one CLI call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub id: SandboxId,
    pub tenant: TenantId,
    pub workspace: Option<WorkspaceId>,
    /// Backend that runs it: `native`, `docker`, `microvm`.
    pub backend: String,
    /// Orchestrator node that owns the process; reconciliation looks at its own.
    pub node: String,
    pub state: SandboxState,
    /// What the sandbox was started with (limits, network, read-only),
    /// stored as JSON and read back typed.
    pub spec: super::RecordedSpec,
    /// Host pid of the sandbox's init process while it runs.
    pub pid: Option<u32>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Last API activity; idle expiry counts from here.
    pub last_active_at: Timestamp,
    /// Hard end of life (max lifetime), if any.
    pub expires_at: Option<Timestamp>,
    /// The agent run that owns it (None: started through the sandbox API).
    /// Its lifecycle is the run's: it ends when the run does.
    pub run: Option<RunId>,
    /// Set while it is paused (state `paused`).
    pub pause: Option<SandboxPause>,
}

text_enum!(
    SessionStatus {
        Active => "active",
        Archived => "archived",
    }
);

/// One agent session in a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    pub tenant: TenantId,
    pub workspace: WorkspaceId,
    pub title: String,
    pub status: SessionStatus,
    /// The session this one was forked from.
    pub forked_from: Option<SessionId>,
    /// The run of `forked_from` whose end the fork started from (None: its latest state).
    pub forked_at_run: Option<RunId>,
    /// Set on a subagent's session: the parent run that spawned it.
    pub parent_run: Option<RunId>,
    /// Set on a fork that reads the history of `forked_from` instead of
    /// holding a copy (every fork made since migration 0013).
    #[serde(skip)]
    pub shared_history: Option<SharedHistory>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What deleting a session removes, planned by
/// [`super::Store::plan_session_delete`] and done by
/// [`super::Store::delete_sessions`], which checks the plan still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDeletion {
    /// The session asked for, then the sessions of the subagents its runs
    /// (and theirs) spawned.
    pub sessions: Vec<SessionId>,
    /// The checkpoints of those sessions.
    pub checkpoints: Vec<crate::ids::CheckpointId>,
    /// The file blobs one of those checkpoints stored first (so holds the
    /// row that keeps them from the blob collection).
    pub owned_blobs: Vec<String>,
}

/// The part of its parent's (`forked_from`) history a fork reads as its
/// own beginning: the parent's messages with `seq <= upto_seq` that were in
/// the parent's history as of `at` ([`super::visible_messages`] over the
/// parent's rewinds). The fork's own messages are numbered after the
/// parent's last one at the fork, so the two never share a number, and
/// neither a later rewind of the parent nor one of the fork changes what
/// the other reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedHistory {
    pub upto_seq: u64,
    /// [`super::HistoryPoint::NOW`] when the fork is created: the store
    /// replaces it with the parent's position then.
    pub at: super::HistoryPoint,
}

impl Session {
    pub fn new(
        tenant: TenantId,
        workspace: WorkspaceId,
        title: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        Self {
            id: SessionId::generate(),
            tenant,
            workspace,
            title: title.into(),
            status: SessionStatus::Active,
            forked_from: None,
            forked_at_run: None,
            parent_run: None,
            shared_history: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A captured workspace state: a tar + zstd blob addressed by its hash.
/// Built by `paddock_snapshot::snapshot_record` from the statistics of the
/// archive's pack (or of the restore that checked an imported one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    pub id: SnapshotId,
    pub tenant: TenantId,
    pub workspace: Option<WorkspaceId>,
    pub source_sandbox: Option<SandboxId>,
    pub session: Option<SessionId>,
    /// The snapshot this one was restored from, when it was taken in a restored sandbox.
    pub parent: Option<SnapshotId>,
    /// Entries a restore of the archive creates, which is what a restore's
    /// `max_files` limit counts: regular files, directories (parents the
    /// archive leaves implied included), symlinks and hardlinks; not the root.
    /// A restore within `max_files = file_count` succeeds.
    pub file_count: u64,
    /// File content before compression.
    pub bytes_raw: u64,
    pub bytes_compressed: u64,
    /// Path patterns left out of the archive.
    pub excludes: Vec<String>,
    /// Content hash of the compressed blob (its key in the blob store).
    pub blob_hash: String,
    pub created_at: Timestamp,
}
