//! The `Store` trait: object-safe, so the orchestrator holds an `Arc<dyn Store>`
//! and never names the database.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Checkpoint, Compaction, Goal, GoalStatus, Lease, MemoryApproval, MemoryFilter, MemoryRecord,
    NetworkChangeRecord, NewEvent, Plan, QuarantinedRow, Rewind, Run, RunEvent, RunUpdate,
    SandboxRecord, SandboxState, Session, SessionDeletion, SessionPatch, SnapshotRecord,
    SteeringCaps, SteeringClose, SteeringClosed, SteeringDelivered, SteeringDelivery,
    SteeringMessage, StoreError, StoredMessage, StoredSessionMemory, Tenant, Timestamp,
    ToolInvocation, ToolOutcome, Workspace,
};
use crate::ids::{
    CheckpointId, GoalId, MemoryId, RunId, SessionId, SnapshotId, TenantId, ToolInvocationId,
    WorkspaceId,
};
use crate::sandbox::SandboxId;
use crate::volume::{VolumeName, VolumeRecord, VolumeSnapshotRecord};

/// Most rows one list call returns.
pub const MAX_PAGE: u32 = 1_000;

/// One page of a listing ordered by id (ids are time-ordered): the rows after
/// `after`, at most `limit` of them (capped at [`MAX_PAGE`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub after: Option<String>,
    pub limit: u32,
}

impl Default for Page {
    fn default() -> Self {
        Self {
            after: None,
            limit: 100,
        }
    }
}

/// Which snapshots to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotFilter {
    pub workspace: Option<WorkspaceId>,
    pub session: Option<SessionId>,
}

/// The control plane's persistence. Reads of tenant-owned rows take the tenant and
/// answer [`StoreError::NotFound`] for another tenant's rows. Writes marked *fenced*
/// take the caller's lease on the session and are refused with
/// [`StoreError::StaleLease`] once a newer token exists (checked in the same
/// transaction as the write).
#[async_trait]
pub trait Store: Send + Sync + fmt::Debug {
    /// `sqlite` or `postgres`.
    fn engine(&self) -> &'static str;
    /// The store's clock; use it to stamp new rows.
    fn now(&self) -> Timestamp;
    /// Checks that the database answers.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Checks that the database takes a write now: commits a small write
    /// (one probe row, overwritten each time) and, where the store knows
    /// its file system (SQLite), that it has room left. [`StoreError::Full`]
    /// when it has none.
    async fn probe_write(&self) -> Result<(), StoreError>;
    /// Closes every connection; later calls fail with [`StoreError::Unavailable`].
    async fn close(&self);

    /// Creates the tenant, or updates its name; returns what is stored.
    async fn ensure_tenant(&self, tenant: &Tenant) -> Result<Tenant, StoreError>;
    async fn get_tenant(&self, id: &TenantId) -> Result<Tenant, StoreError>;

    async fn create_workspace(&self, workspace: &Workspace) -> Result<(), StoreError>;
    async fn get_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Workspace, StoreError>;
    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        page: &Page,
    ) -> Result<Vec<Workspace>, StoreError>;
    /// Deletes the workspace's row: [`StoreError::Conflict`] (naming it) while
    /// a session works in it or a running sandbox uses it. Sandboxes no longer
    /// running and snapshots taken from it keep their rows, without it.
    async fn delete_workspace(&self, tenant: &TenantId, id: &WorkspaceId)
    -> Result<(), StoreError>;
    /// The tenant's workspace registered for the host directory `root`, if any.
    async fn find_workspace_by_root(
        &self,
        tenant: &TenantId,
        root: &str,
    ) -> Result<Option<Workspace>, StoreError>;

    async fn create_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError>;
    async fn get_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<SandboxRecord, StoreError>;
    async fn list_sandboxes(
        &self,
        tenant: &TenantId,
        state: Option<SandboxState>,
        page: &Page,
    ) -> Result<Vec<SandboxRecord>, StoreError>;
    /// Sets the state (and clears the pid unless running); returns the updated row.
    async fn set_sandbox_state(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        state: SandboxState,
    ) -> Result<SandboxRecord, StoreError>;
    /// Records a running sandbox paused (state `paused`, no pid, `pause`
    /// kept); a sandbox in another state is a [`StoreError::Conflict`].
    /// Any other state change ([`Self::set_sandbox_state`]) clears `pause`.
    async fn pause_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        pause: &super::SandboxPause,
    ) -> Result<SandboxRecord, StoreError>;
    /// Records a paused sandbox running again with its new host pid (and
    /// `pause` cleared, activity now); one not paused is a
    /// [`StoreError::Conflict`].
    async fn resume_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        pid: Option<u32>,
    ) -> Result<SandboxRecord, StoreError>;
    /// Records activity now (idle expiry counts from the last activity).
    async fn touch_sandbox(&self, tenant: &TenantId, id: &SandboxId) -> Result<(), StoreError>;
    /// Every tenant's sandboxes owned by `node` in `state`. System-level, for
    /// crash reconciliation at startup; never exposed to a tenant.
    async fn list_node_sandboxes(
        &self,
        node: &str,
        state: SandboxState,
    ) -> Result<Vec<SandboxRecord>, StoreError>;

    async fn create_session(&self, session: &Session) -> Result<(), StoreError>;
    async fn get_session(&self, tenant: &TenantId, id: &SessionId) -> Result<Session, StoreError>;
    async fn list_sessions(
        &self,
        tenant: &TenantId,
        workspace: Option<&WorkspaceId>,
        page: &Page,
    ) -> Result<Vec<Session>, StoreError>;
    /// Renames or archives a session; returns the updated row.
    async fn update_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        patch: &SessionPatch,
    ) -> Result<Session, StoreError>;

    /// Grants `resource` to `owner` for `ttl` with a new, higher token, if it is
    /// free (never granted, released or expired) or already `owner`'s; otherwise
    /// [`StoreError::LeaseHeld`].
    async fn acquire_lease(
        &self,
        resource: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError>;
    /// Extends the lease to now + `ttl` if its token is still the current one
    /// (even past expiry, as long as nobody took it over).
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError>;
    /// Gives the lease up; its token stays spent and its writes are refused.
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError>;
    /// The current holder of `resource`, if it is held (expired or not).
    async fn get_lease(&self, resource: &str) -> Result<Option<Lease>, StoreError>;

    /// Fenced by the lease on `run.session`. A run that resumes another
    /// (`resumed_from`) takes over, in the same transaction, the steering
    /// messages its predecessor accepted and never delivered (they become
    /// its own, in their order) and closes the predecessor's queue, so each
    /// is delivered once, by the resumed run.
    async fn create_run(&self, lease: &Lease, run: &Run) -> Result<(), StoreError>;
    /// Fenced by the lease on the run's session.
    async fn update_run(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &RunId,
        update: &RunUpdate,
    ) -> Result<Run, StoreError>;
    /// `update_run`, and `events` (of the run's session) appended in the
    /// same transaction, so that whoever reads the new state finds the
    /// events too (a run's end and its `run.finished`), and a refused
    /// update (the run already ended: `Conflict`) stores none of them.
    async fn update_run_with_events(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &RunId,
        update: &RunUpdate,
        events: &[NewEvent],
    ) -> Result<(Run, Vec<RunEvent>), StoreError>;
    async fn get_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, StoreError>;
    async fn list_runs(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Run>, StoreError>;
    /// Subagent runs spawned by `parent`, oldest first.
    async fn list_child_runs(
        &self,
        tenant: &TenantId,
        parent: &RunId,
    ) -> Result<Vec<Run>, StoreError>;
    /// Every tenant's runs not in a terminal state. System-level, for crash
    /// recovery at startup; never exposed to a tenant.
    async fn list_unfinished_runs(&self) -> Result<Vec<Run>, StoreError>;

    /// Fenced by the lease on `goal.session`.
    async fn create_goal(&self, lease: &Lease, goal: &Goal) -> Result<(), StoreError>;
    /// Fenced by the lease on the goal's session.
    async fn set_goal_status(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &GoalId,
        status: GoalStatus,
    ) -> Result<Goal, StoreError>;
    /// The session's goals, oldest first.
    async fn list_goals(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Goal>, StoreError>;

    /// Stores `plan` as the session's next plan version and makes its tasks the
    /// session's task list (tasks left out are removed); returns it with its
    /// version. Fenced by the lease on `plan.session`.
    async fn save_plan(&self, lease: &Lease, plan: &Plan) -> Result<Plan, StoreError>;
    /// The session's latest plan with its tasks, if a plan was ever saved.
    async fn get_plan(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<Plan>, StoreError>;

    /// Appends to the session's history with the next sequence number.
    /// Fenced by the lease on `message.session`.
    async fn append_message(
        &self,
        lease: &Lease,
        message: &StoredMessage,
    ) -> Result<StoredMessage, StoreError>;
    /// The session's history in order; with `through_run`, only the messages of
    /// that run and of the runs before it (a fork from that run's end).
    async fn list_messages(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        through_run: Option<&RunId>,
    ) -> Result<Vec<StoredMessage>, StoreError>;

    /// Stores a steering message for `run`: [`StoreError::NotFound`] for
    /// another tenant's or no run, [`StoreError::Conflict`] once the run has
    /// finished (a terminal state or `awaiting_user`) or its loop closed the
    /// queue ([`Store::close_steering`]), [`StoreError::Limit`] when the
    /// run's messages with this one would pass `caps` (checked in the same
    /// transaction, under the run's row lock). Not fenced: any node
    /// may post; the run's driver takes it.
    async fn post_steering_message(
        &self,
        tenant: &TenantId,
        run: &RunId,
        text: &str,
        caps: SteeringCaps,
    ) -> Result<SteeringMessage, StoreError>;
    /// The run's steering messages not yet delivered, oldest first (one
    /// indexed read, no lock: the loop asks before every model request).
    async fn waiting_steering_messages(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<SteeringMessage>, StoreError>;
    /// Delivers steering messages of `run` in one transaction: each of
    /// `deliveries` still waiting is marked delivered, its history entry
    /// appended and its event written, so a crash leaves a message either
    /// waiting (a resume carries it) or in the history with its event, once.
    /// One that no longer waits (delivered already, carried to a resumed
    /// run) or any once the run's queue closed ([`Store::close_steering`]
    /// with [`SteeringClose::Always`] reports them undelivered) is skipped.
    /// Returns what was delivered, in the order given. Fenced by the lease
    /// on `session`, the run's.
    async fn deliver_steering_messages(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        run: &RunId,
        deliveries: &[SteeringDelivery],
    ) -> Result<Vec<SteeringDelivered>, StoreError>;
    /// Closes the run's steering queue as its loop is about to end, and
    /// reads what waits in the same transaction (see [`SteeringClose`]):
    /// a post that this answer does not include is refused. Fenced by the
    /// lease on `session`, the run's.
    async fn close_steering(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        run: &RunId,
        how: SteeringClose,
    ) -> Result<SteeringClosed, StoreError>;
    /// Every steering message of the run, oldest first.
    async fn list_steering_messages(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<SteeringMessage>, StoreError>;

    /// Appends to the session's event log with the next sequence number.
    /// Fenced by the lease on `event.session`.
    async fn append_event(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        event: &NewEvent,
    ) -> Result<RunEvent, StoreError>;
    /// Appends `events`, all of one session, in order with consecutive sequence
    /// numbers, in one transaction with one fence check: all of them or none.
    /// Fenced by the lease on their session; an empty slice writes nothing.
    async fn append_events(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        events: &[NewEvent],
    ) -> Result<Vec<RunEvent>, StoreError>;
    /// Events of the session with `seq > after_seq`, in order, at most `limit`.
    async fn list_events(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, StoreError>;
    /// The events of one run (in its session's sequence) with `seq > after_seq`.
    async fn list_run_events(
        &self,
        tenant: &TenantId,
        run: &RunId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, StoreError>;

    /// Logs a tool call as it starts. Fenced by the lease on `invocation.session`.
    async fn record_tool_invocation(
        &self,
        lease: &Lease,
        invocation: &ToolInvocation,
    ) -> Result<(), StoreError>;
    /// Logs a tool call's result. Fenced by the lease on its session.
    async fn finish_tool_invocation(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &ToolInvocationId,
        outcome: &ToolOutcome,
    ) -> Result<ToolInvocation, StoreError>;
    async fn list_tool_invocations(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<ToolInvocation>, StoreError>;

    async fn create_snapshot(&self, snapshot: &SnapshotRecord) -> Result<(), StoreError>;
    async fn get_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotRecord, StoreError>;
    async fn list_snapshots(
        &self,
        tenant: &TenantId,
        filter: &SnapshotFilter,
        page: &Page,
    ) -> Result<Vec<SnapshotRecord>, StoreError>;
    /// Deletes the row ([`StoreError::Conflict`] while another snapshot names it as parent).
    async fn delete_snapshot(&self, tenant: &TenantId, id: &SnapshotId) -> Result<(), StoreError>;
    /// Whether any snapshot row of any tenant still points at the blob
    /// `blob_hash`, or any checkpoint (as its manifest or a file it stored).
    /// System-level, for blob garbage collection.
    async fn snapshot_blob_referenced(&self, blob_hash: &str) -> Result<bool, StoreError>;

    /// Records a volume: [`StoreError::Conflict`] if the tenant has one of
    /// that name.
    async fn create_volume(&self, volume: &VolumeRecord) -> Result<(), StoreError>;
    async fn get_volume(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
    ) -> Result<VolumeRecord, StoreError>;
    /// The tenant's volumes by name, the page after the name `page.after`.
    async fn list_volumes(
        &self,
        tenant: &TenantId,
        page: &Page,
    ) -> Result<Vec<VolumeRecord>, StoreError>;
    /// Deletes the volume's row ([`StoreError::NotFound`] if there is none).
    async fn delete_volume(&self, tenant: &TenantId, name: &VolumeName) -> Result<(), StoreError>;
    /// Records a volume's snapshot: [`StoreError::Conflict`] if the volume
    /// has one of that name, [`StoreError::NotFound`] if there is no volume.
    async fn create_volume_snapshot(
        &self,
        snapshot: &VolumeSnapshotRecord,
    ) -> Result<(), StoreError>;
    async fn get_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        name: &VolumeName,
    ) -> Result<VolumeSnapshotRecord, StoreError>;
    /// The volume's snapshots by name, the page after the name `page.after`.
    async fn list_volume_snapshots(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        page: &Page,
    ) -> Result<Vec<VolumeSnapshotRecord>, StoreError>;
    /// Deletes the snapshot's row ([`StoreError::NotFound`] if there is none).
    async fn delete_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        name: &VolumeName,
    ) -> Result<(), StoreError>;

    /// Records a change of the sandbox's network as its next `seq` (the
    /// record's own is ignored) and returns it as stored;
    /// [`StoreError::NotFound`] if the tenant has no such sandbox.
    async fn append_network_change(
        &self,
        change: &NetworkChangeRecord,
    ) -> Result<NetworkChangeRecord, StoreError>;
    /// The sandbox's network changes with `seq > after_seq`, oldest first,
    /// at most `limit` (capped at [`MAX_PAGE`]).
    async fn list_network_changes(
        &self,
        tenant: &TenantId,
        sandbox: &SandboxId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<NetworkChangeRecord>, StoreError>;

    /// Records a checkpoint at the session's current position (its last
    /// message, event and plan version are read from the session in the same
    /// write; the argument's are ignored) with the file blobs it stored first
    /// (`blobs`, keys), which the blob collection then keeps. Fenced by the
    /// lease on `checkpoint.session`; returns the row as stored.
    async fn create_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: &Checkpoint,
        blobs: &[String],
    ) -> Result<Checkpoint, StoreError>;
    /// Appends `message` to its session's history and records `checkpoint`
    /// at the position that includes it, in one transaction (a tool batch's
    /// results and the workspace after them: a crash leaves both or
    /// neither). Fenced by the lease on the session; returns both as stored.
    async fn append_message_with_checkpoint(
        &self,
        lease: &Lease,
        message: &StoredMessage,
        checkpoint: &Checkpoint,
        blobs: &[String],
    ) -> Result<(StoredMessage, Checkpoint), StoreError>;
    async fn get_checkpoint(
        &self,
        tenant: &TenantId,
        id: &CheckpointId,
    ) -> Result<Checkpoint, StoreError>;
    /// What deleting the session `id` removes: it and its subagents'
    /// sessions, their checkpoints and the blobs those stored first.
    /// Refused (`Conflict`) while a session outside it was forked from one
    /// in it (a fork reads its parent's history and runs), or while one of
    /// their runs has not ended.
    async fn plan_session_delete(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionDeletion, StoreError>;
    /// Every checkpoint of the tenant with its session and manifest hash.
    async fn list_checkpoint_manifests(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(CheckpointId, SessionId, String)>, StoreError>;
    /// Deletes what `deletion` planned, in one transaction, refused
    /// (`Conflict`) when the plan no longer holds. The rows of its owned
    /// blobs named in `keep` move to the checkpoint given there, rows from
    /// before migration 0013 stay without a checkpoint, the others go.
    /// Returns the blobs no row keeps any more: the owned ones removed and
    /// the deleted checkpoints' manifests no remaining checkpoint names.
    async fn delete_sessions(
        &self,
        tenant: &TenantId,
        deletion: &SessionDeletion,
        keep: &[(String, CheckpointId)],
    ) -> Result<Vec<String>, StoreError>;
    /// The session's checkpoints, oldest first.
    async fn list_checkpoints(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Checkpoint>, StoreError>;
    /// The manifest keys of every checkpoint of the tenant, each once: what
    /// the collection of the tenant's checkpoint blobs keeps.
    async fn checkpoint_manifests(&self, tenant: &TenantId) -> Result<Vec<String>, StoreError>;
    /// Deletes those of `ids` that may be pruned (tool-batch checkpoints of
    /// the session, not its latest, no rewind's target); a run's start and a
    /// rewind's checkpoints are never deleted. Fenced by the session's lease;
    /// returns the rows deleted.
    async fn prune_checkpoints(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        ids: &[CheckpointId],
    ) -> Result<Vec<Checkpoint>, StoreError>;
    /// Approximately what the tenant's rows take in the database: the text
    /// of its messages, events and tool invocations plus a fixed cost per
    /// row (docs/architecture.md, "Storage").
    async fn tenant_row_bytes(&self, tenant: &TenantId) -> Result<u64, StoreError>;
    /// Records a rewind of the session's history to `rewind.to_seq`; its
    /// `through_seq` is the session's last message now (the argument's is
    /// ignored). Fenced by the lease on `rewind.session`.
    async fn record_rewind(&self, lease: &Lease, rewind: &Rewind) -> Result<Rewind, StoreError>;
    /// The session's rewinds, oldest first.
    async fn list_rewinds(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Rewind>, StoreError>;

    /// The session's messages with `seq > after_seq`, in order (a context
    /// rebuilt from a compaction).
    async fn list_messages_after(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<Vec<StoredMessage>, StoreError>;

    /// Records a compaction of the session's history under the session's next
    /// compaction number (`seq` of the argument is ignored); returns it.
    /// Fenced by the lease on `compaction.session`.
    async fn record_compaction(
        &self,
        lease: &Lease,
        compaction: &Compaction,
    ) -> Result<Compaction, StoreError>;
    /// The session's latest compaction, if its history was ever compacted.
    async fn latest_compaction(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<Compaction>, StoreError>;
    /// The session's compactions, oldest first.
    async fn list_compactions(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Compaction>, StoreError>;

    /// Replaces the session's memory. Fenced by the lease on `memory.session`.
    async fn put_session_memory(
        &self,
        lease: &Lease,
        memory: &StoredSessionMemory,
    ) -> Result<(), StoreError>;
    async fn get_session_memory(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<StoredSessionMemory>, StoreError>;

    /// Stores a new project memory record ([`StoreError::Invalid`] when its
    /// scope and its workspace or project disagree, or its text is empty).
    async fn create_memory(&self, record: &MemoryRecord) -> Result<(), StoreError>;
    async fn get_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<MemoryRecord, StoreError>;
    /// The records `filter` sees, most recently updated first.
    async fn list_memories(
        &self,
        tenant: &TenantId,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, StoreError>;
    /// Full-text search over the records `filter` sees, best first: relevance
    /// to `query` weighed by recency. A query without any word finds nothing.
    async fn search_memories(
        &self,
        tenant: &TenantId,
        query: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, StoreError>;
    /// Marks `old` as replaced by `new` (both the tenant's); returns `old`.
    async fn supersede_memory(
        &self,
        tenant: &TenantId,
        old: &MemoryId,
        new: &MemoryId,
    ) -> Result<MemoryRecord, StoreError>;
    /// Makes a proposed record active, widened to the tenant when
    /// `approval` says so; returns it.
    async fn approve_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        approval: MemoryApproval,
    ) -> Result<MemoryRecord, StoreError>;
    async fn delete_memory(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), StoreError>;

    /// The rows taken out of their tables because they failed validation
    /// when read (see [`QuarantinedRow`]), newest first: `tenant`'s, or with
    /// None every tenant's (the local operator's view). At most `limit`
    /// (capped at [`MAX_PAGE`]).
    async fn list_quarantined(
        &self,
        tenant: Option<&TenantId>,
        limit: u32,
    ) -> Result<Vec<QuarantinedRow>, StoreError>;
}
