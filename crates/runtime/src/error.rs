//! Errors of the runtime's API. Failures inside a run never surface here:
//! they end the run (state `failed`, an `end_reason`, the error text on the
//! run) and the caller reads them from the returned [`paddock_core::store::Run`].

use std::path::PathBuf;

use paddock_core::blob::BlobError;
use paddock_core::ids::{CheckpointId, RunId, SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxError;
use paddock_core::store::{StoreError, Timestamp};
use paddock_snapshot::SnapshotError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No such row for this tenant.
    #[error("{entity} {id} not found")]
    NotFound { entity: &'static str, id: String },
    #[error("store operation {operation} failed")]
    Store {
        operation: &'static str,
        #[source]
        source: StoreError,
    },
    /// Another run drives the session (its lease is held).
    #[error("session {session} already has a run in progress")]
    SessionBusy { session: SessionId },
    /// Another run or sandbox may write the workspace (it holds the
    /// workspace lease); read-only runs may still use it.
    #[error(
        "workspace {workspace} already has a writer: {holder} (lease until {until}); \
         a plan-mode run or a read-only sandbox may still read it"
    )]
    WorkspaceBusy {
        workspace: WorkspaceId,
        holder: String,
        until: Timestamp,
    },
    /// A session or workspace is still in use: a fork reads the session's
    /// history, one of its runs has not ended, or a live session works in
    /// the workspace.
    #[error("{entity} {id} cannot be deleted: {reason}")]
    InUse {
        entity: &'static str,
        id: String,
        reason: String,
    },
    /// A run of the session is in progress on this node: it cannot be
    /// deleted until the run ends.
    #[error("session {session} cannot be deleted: run {run} is in progress; cancel it first")]
    RunInProgress { session: SessionId, run: RunId },
    /// Checkpoints of the tenant were being taken for longer than a
    /// deletion waits to decide which files go, or a deletion held a
    /// checkpoint up for longer than it waits.
    #[error("checkpoint files of the tenant are busy; try again")]
    CheckpointsBusy,
    #[error("session {session} is archived")]
    SessionArchived { session: SessionId },
    #[error("invalid request: {reason}")]
    Invalid { reason: String },
    #[error("run {run} does not belong to session {session}")]
    RunNotInSession { run: RunId, session: SessionId },
    /// A fork from a run that kept no workspace snapshot at its end.
    #[error(
        "run {run} has no end snapshot to fork from (its run.finished event's snapshot_error \
         says why)"
    )]
    NoEndSnapshot { run: RunId },
    /// A snapshot of a workspace went over a snapshot limit.
    #[error("snapshotting {path}: {}", hit.message)]
    SnapshotLimit {
        path: PathBuf,
        hit: crate::events::SnapshotLimitHit,
    },
    /// The run has ended (a terminal state or `awaiting_user`): it takes no
    /// more steering messages.
    #[error("run {run} has finished; start a new run in its session to go on")]
    RunFinished { run: RunId },
    /// The workspace is not what its last checkpoint recorded (someone
    /// changed it outside paddock, or an interrupted run's last calls did),
    /// and a rewind or a resume's restore would overwrite that: refused
    /// unless forced, which checkpoints the changes first.
    #[error(
        "the workspace of session {session} changed since checkpoint {checkpoint}, and going on \
         would overwrite {}: {}; force it (--force) to go on (the workspace as it is is \
         checkpointed first, so this can be undone)",
        count_paths(.paths.len()),
        crate::checkpoints::name_paths(.paths)
    )]
    WorkspaceChanged {
        session: SessionId,
        checkpoint: CheckpointId,
        paths: Vec<String>,
    },
    /// A run asked for an undo (`StartRun::require_checkpoint`) and its
    /// workspace could not be checkpointed before it started.
    #[error(
        "workspace {path} cannot be checkpointed ({reason}), so the agent would write there \
         with no undo"
    )]
    NoUndo { path: PathBuf, reason: String },
    /// A resume of a run that was not interrupted, or whose session moved on.
    #[error("run {run} cannot be resumed: {reason}")]
    NotResumable { run: RunId, reason: String },
    /// The run is not finished but no task of this process drives it.
    #[error("run {run} is not driven by this process")]
    RunNotActive { run: RunId },
    /// Applying or rejecting a subagent's change set failed in the sandbox.
    #[error("deciding on the changes of subagent {run}")]
    ChildChanges {
        run: RunId,
        #[source]
        source: Box<crate::tools::ToolError>,
    },
    #[error("finding workspace {workspace} in the volume pool")]
    WorkspacePool {
        workspace: paddock_core::ids::WorkspaceId,
        #[source]
        source: paddock_core::volume::VolumeError,
    },
    #[error("preparing workspace directory {path}")]
    WorkspaceDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("packing workspace {path}")]
    SnapshotPack {
        path: PathBuf,
        #[source]
        source: SnapshotError,
    },
    #[error("checkpoint of {path}")]
    Checkpoint {
        path: PathBuf,
        #[source]
        source: SnapshotError,
    },
    /// A checkpoint would take more disk than the tenant's quota leaves.
    #[error(
        "the tenant's disk quota of {quota} bytes ({usage} in use) leaves no room for {what}; \
         delete snapshots, workspaces or sessions to free space"
    )]
    DiskQuota {
        quota: u64,
        usage: u64,
        what: String,
    },
    /// The tenant's disk use could not be measured (a quota check fails closed).
    #[error("measuring the tenant's disk use: {reason}")]
    DiskUse { reason: String },
    #[error("checkpoint {checkpoint} is not one of session {session}")]
    CheckpointNotInSession {
        checkpoint: CheckpointId,
        session: SessionId,
    },
    #[error("restoring snapshot {snapshot} into {path}")]
    SnapshotRestore {
        snapshot: SnapshotId,
        path: PathBuf,
        #[source]
        source: SnapshotError,
    },
    #[error("blob store operation for snapshot {what}")]
    Blob {
        what: String,
        #[source]
        source: BlobError,
    },
    /// The run's sandbox was refused a slot (a quota, the node's sandbox
    /// limit): the front end's refusal is the source, and nothing of the
    /// run was recorded.
    #[error("no sandbox slot for the run: {source}")]
    NotAdmitted {
        #[source]
        source: crate::run::AdmissionRefused,
    },
    /// The tenant's run queue holds the most runs it may
    /// (`runs.max_queued_per_tenant`); nothing of the run was recorded.
    #[error(
        "tenant {tenant}'s run queue is full: {queued} runs queued, the most runs.max_queued_per_tenant allows"
    )]
    QueueFull { tenant: TenantId, queued: usize },
    /// The run's driver cannot do what was asked (it declares so in its
    /// capabilities, `run.started`).
    #[error("run {run} is driven by {driver}, which {cannot}")]
    DriverCannot {
        run: RunId,
        driver: paddock_core::store::DriverKind,
        cannot: &'static str,
    },
    /// A steering message over one of the run's steering caps.
    #[error("run {run}: {reason}")]
    SteeringLimit { run: RunId, reason: String },
    #[error("creating the sandbox for run {run}")]
    Sandbox {
        run: RunId,
        #[source]
        source: SandboxError,
    },
    #[error("encoding {what} as JSON")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A write of a running run failed (e.g. its lease was taken over);
    /// the run stops.
    #[error("recording the run failed: {reason}")]
    Journal { reason: String },
    /// A blocking helper task (snapshot packing) or a run task died.
    #[error("background task for {what} failed: {reason}")]
    Task { what: String, reason: String },
}

impl RuntimeError {
    /// Maps a store error, keeping "not found" distinct so front ends can answer 404.
    pub(crate) fn store(operation: &'static str) -> impl FnOnce(StoreError) -> RuntimeError {
        move |source| match source {
            StoreError::NotFound { entity, id } => RuntimeError::NotFound { entity, id },
            source => RuntimeError::Store { operation, source },
        }
    }
}

fn count_paths(n: usize) -> String {
    if n == 1 {
        "1 path".to_owned()
    } else {
        format!("{n} paths")
    }
}
