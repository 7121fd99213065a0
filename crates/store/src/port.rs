//! `impl Store for SqlStore`: each operation lives in the module of its table.

use std::time::Duration;

use async_trait::async_trait;
use paddock_core::ids::{
    CheckpointId, GoalId, MemoryId, RunId, SessionId, SnapshotId, TenantId, ToolInvocationId,
    WorkspaceId,
};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    Checkpoint, Compaction, Goal, GoalStatus, Lease, MemoryApproval, MemoryFilter, MemoryRecord,
    NetworkChangeRecord, NewEvent, Page, Plan, QuarantinedRow, Rewind, Run, RunEvent, RunUpdate,
    SandboxRecord, SandboxState, Session, SessionDeletion, SessionPatch, SnapshotFilter,
    SnapshotRecord, SteeringCaps, SteeringClose, SteeringClosed, SteeringDelivered,
    SteeringDelivery, SteeringMessage, Store, StoreError, StoredMessage, StoredSessionMemory,
    Tenant, Timestamp, ToolInvocation, ToolOutcome, Workspace,
};
use paddock_core::volume::{VolumeName, VolumeRecord, VolumeSnapshotRecord};

use crate::error::db;
use crate::open::SqlStore;
use crate::{
    checkpoints, compactions, deletion, events, goals, leases, memories, messages, network_changes,
    plans, quarantine, records, runs, sessions, snapshots, steering, tools, usage,
    volume_snapshots, volumes,
};

#[async_trait]
impl Store for SqlStore {
    fn engine(&self) -> &'static str {
        self.engine.name()
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(db("ping"))
    }

    async fn probe_write(&self) -> Result<(), StoreError> {
        crate::probe::probe_write(self).await
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn ensure_tenant(&self, tenant: &Tenant) -> Result<Tenant, StoreError> {
        records::ensure_tenant(self, tenant).await
    }

    async fn get_tenant(&self, id: &TenantId) -> Result<Tenant, StoreError> {
        records::get_tenant(self, id).await
    }

    async fn create_workspace(&self, workspace: &Workspace) -> Result<(), StoreError> {
        records::create_workspace(self, workspace).await
    }

    async fn get_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Workspace, StoreError> {
        records::get_workspace(self, tenant, id).await
    }

    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        page: &Page,
    ) -> Result<Vec<Workspace>, StoreError> {
        records::list_workspaces(self, tenant, page).await
    }

    async fn delete_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), StoreError> {
        records::delete_workspace(self, tenant, id).await
    }

    async fn find_workspace_by_root(
        &self,
        tenant: &TenantId,
        root: &str,
    ) -> Result<Option<Workspace>, StoreError> {
        records::find_workspace_by_root(self, tenant, root).await
    }

    async fn create_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError> {
        records::create_sandbox(self, sandbox).await
    }

    async fn get_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<SandboxRecord, StoreError> {
        records::get_sandbox(self, tenant, id).await
    }

    async fn list_sandboxes(
        &self,
        tenant: &TenantId,
        state: Option<SandboxState>,
        page: &Page,
    ) -> Result<Vec<SandboxRecord>, StoreError> {
        records::list_sandboxes(self, tenant, state, page).await
    }

    async fn set_sandbox_state(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        state: SandboxState,
    ) -> Result<SandboxRecord, StoreError> {
        records::set_sandbox_state(self, tenant, id, state).await
    }

    async fn pause_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        pause: &paddock_core::store::SandboxPause,
    ) -> Result<SandboxRecord, StoreError> {
        records::pause_sandbox(self, tenant, id, pause).await
    }

    async fn resume_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        pid: Option<u32>,
    ) -> Result<SandboxRecord, StoreError> {
        records::resume_sandbox(self, tenant, id, pid).await
    }

    async fn touch_sandbox(&self, tenant: &TenantId, id: &SandboxId) -> Result<(), StoreError> {
        records::touch_sandbox(self, tenant, id).await
    }

    async fn list_node_sandboxes(
        &self,
        node: &str,
        state: SandboxState,
    ) -> Result<Vec<SandboxRecord>, StoreError> {
        records::list_node_sandboxes(self, node, state).await
    }

    async fn create_session(&self, session: &Session) -> Result<(), StoreError> {
        sessions::create(self, session).await
    }

    async fn get_session(&self, tenant: &TenantId, id: &SessionId) -> Result<Session, StoreError> {
        sessions::get(self, tenant, id).await
    }

    async fn list_sessions(
        &self,
        tenant: &TenantId,
        workspace: Option<&WorkspaceId>,
        page: &Page,
    ) -> Result<Vec<Session>, StoreError> {
        sessions::list(self, tenant, workspace, page).await
    }

    async fn update_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        patch: &SessionPatch,
    ) -> Result<Session, StoreError> {
        sessions::update(self, tenant, id, patch).await
    }

    async fn acquire_lease(
        &self,
        resource: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        leases::acquire(self, resource, owner, ttl).await
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        leases::renew(self, lease, ttl).await
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        leases::release(self, lease).await
    }

    async fn get_lease(&self, resource: &str) -> Result<Option<Lease>, StoreError> {
        leases::get(self, resource).await
    }

    async fn create_run(&self, lease: &Lease, run: &Run) -> Result<(), StoreError> {
        runs::create(self, lease, run).await
    }

    async fn update_run(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &RunId,
        update: &RunUpdate,
    ) -> Result<Run, StoreError> {
        runs::update(self, lease, tenant, id, update).await
    }

    async fn update_run_with_events(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &RunId,
        update: &RunUpdate,
        events: &[NewEvent],
    ) -> Result<(Run, Vec<RunEvent>), StoreError> {
        runs::update_with_events(self, lease, tenant, id, update, events).await
    }

    async fn get_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, StoreError> {
        runs::get(self, tenant, id).await
    }

    async fn list_runs(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Run>, StoreError> {
        runs::list(self, tenant, session).await
    }

    async fn list_child_runs(
        &self,
        tenant: &TenantId,
        parent: &RunId,
    ) -> Result<Vec<Run>, StoreError> {
        runs::list_children(self, tenant, parent).await
    }

    async fn list_unfinished_runs(&self) -> Result<Vec<Run>, StoreError> {
        runs::list_unfinished(self).await
    }

    async fn create_goal(&self, lease: &Lease, goal: &Goal) -> Result<(), StoreError> {
        goals::create(self, lease, goal).await
    }

    async fn set_goal_status(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &GoalId,
        status: GoalStatus,
    ) -> Result<Goal, StoreError> {
        goals::set_status(self, lease, tenant, id, status).await
    }

    async fn list_goals(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Goal>, StoreError> {
        goals::list(self, tenant, session).await
    }

    async fn save_plan(&self, lease: &Lease, plan: &Plan) -> Result<Plan, StoreError> {
        plans::save(self, lease, plan).await
    }

    async fn get_plan(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<Plan>, StoreError> {
        plans::get(self, tenant, session).await
    }

    async fn append_message(
        &self,
        lease: &Lease,
        message: &StoredMessage,
    ) -> Result<StoredMessage, StoreError> {
        messages::append(self, lease, message).await
    }

    async fn list_messages(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        through_run: Option<&RunId>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        messages::list(self, tenant, session, through_run).await
    }

    async fn post_steering_message(
        &self,
        tenant: &TenantId,
        run: &RunId,
        text: &str,
        caps: SteeringCaps,
    ) -> Result<SteeringMessage, StoreError> {
        steering::post(self, tenant, run, text, caps, self.clock.now()).await
    }

    async fn waiting_steering_messages(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<SteeringMessage>, StoreError> {
        steering::waiting(self, tenant, run).await
    }

    async fn deliver_steering_messages(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        run: &RunId,
        deliveries: &[SteeringDelivery],
    ) -> Result<Vec<SteeringDelivered>, StoreError> {
        steering::deliver(
            self,
            lease,
            tenant,
            session,
            run,
            deliveries,
            self.clock.now(),
        )
        .await
    }

    async fn list_steering_messages(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<SteeringMessage>, StoreError> {
        steering::list(self, tenant, run).await
    }

    async fn close_steering(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        run: &RunId,
        how: SteeringClose,
    ) -> Result<SteeringClosed, StoreError> {
        steering::close(self, lease, tenant, session, run, how, self.clock.now()).await
    }

    async fn append_event(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        event: &NewEvent,
    ) -> Result<RunEvent, StoreError> {
        events::append(self, lease, tenant, event).await
    }

    async fn append_events(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        events: &[NewEvent],
    ) -> Result<Vec<RunEvent>, StoreError> {
        events::append_all(self, "append_events", lease, tenant, events).await
    }

    async fn list_events(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, StoreError> {
        events::list(self, tenant, session, after_seq, limit).await
    }

    async fn list_run_events(
        &self,
        tenant: &TenantId,
        run: &RunId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, StoreError> {
        events::list_of_run(self, tenant, run, after_seq, limit).await
    }

    async fn record_tool_invocation(
        &self,
        lease: &Lease,
        invocation: &ToolInvocation,
    ) -> Result<(), StoreError> {
        tools::record(self, lease, invocation).await
    }

    async fn finish_tool_invocation(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &ToolInvocationId,
        outcome: &ToolOutcome,
    ) -> Result<ToolInvocation, StoreError> {
        tools::finish(self, lease, tenant, id, outcome).await
    }

    async fn list_tool_invocations(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Vec<ToolInvocation>, StoreError> {
        tools::list(self, tenant, run).await
    }

    async fn create_snapshot(&self, snapshot: &SnapshotRecord) -> Result<(), StoreError> {
        snapshots::create(self, snapshot).await
    }

    async fn get_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotRecord, StoreError> {
        snapshots::get(self, tenant, id).await
    }

    async fn list_snapshots(
        &self,
        tenant: &TenantId,
        filter: &SnapshotFilter,
        page: &Page,
    ) -> Result<Vec<SnapshotRecord>, StoreError> {
        snapshots::list(self, tenant, filter, page).await
    }

    async fn delete_snapshot(&self, tenant: &TenantId, id: &SnapshotId) -> Result<(), StoreError> {
        snapshots::delete(self, tenant, id).await
    }

    async fn snapshot_blob_referenced(&self, blob_hash: &str) -> Result<bool, StoreError> {
        snapshots::blob_referenced(self, blob_hash).await
    }

    async fn append_network_change(
        &self,
        change: &NetworkChangeRecord,
    ) -> Result<NetworkChangeRecord, StoreError> {
        network_changes::append(self, change).await
    }

    async fn list_network_changes(
        &self,
        tenant: &TenantId,
        sandbox: &SandboxId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<NetworkChangeRecord>, StoreError> {
        network_changes::list(self, tenant, sandbox, after_seq, limit).await
    }

    async fn create_volume(&self, volume: &VolumeRecord) -> Result<(), StoreError> {
        volumes::create(self, volume).await
    }

    async fn get_volume(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
    ) -> Result<VolumeRecord, StoreError> {
        volumes::get(self, tenant, name).await
    }

    async fn list_volumes(
        &self,
        tenant: &TenantId,
        page: &Page,
    ) -> Result<Vec<VolumeRecord>, StoreError> {
        volumes::list(self, tenant, page).await
    }

    async fn delete_volume(&self, tenant: &TenantId, name: &VolumeName) -> Result<(), StoreError> {
        volumes::delete(self, tenant, name).await
    }

    async fn create_volume_snapshot(
        &self,
        snapshot: &VolumeSnapshotRecord,
    ) -> Result<(), StoreError> {
        volume_snapshots::create(self, snapshot).await
    }

    async fn get_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        name: &VolumeName,
    ) -> Result<VolumeSnapshotRecord, StoreError> {
        volume_snapshots::get(self, tenant, volume, name).await
    }

    async fn list_volume_snapshots(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        page: &Page,
    ) -> Result<Vec<VolumeSnapshotRecord>, StoreError> {
        volume_snapshots::list(self, tenant, volume, page).await
    }

    async fn delete_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        name: &VolumeName,
    ) -> Result<(), StoreError> {
        volume_snapshots::delete(self, tenant, volume, name).await
    }

    async fn create_checkpoint(
        &self,
        lease: &Lease,
        checkpoint: &Checkpoint,
        blobs: &[String],
    ) -> Result<Checkpoint, StoreError> {
        checkpoints::create(self, lease, checkpoint, blobs).await
    }

    async fn append_message_with_checkpoint(
        &self,
        lease: &Lease,
        message: &StoredMessage,
        checkpoint: &Checkpoint,
        blobs: &[String],
    ) -> Result<(StoredMessage, Checkpoint), StoreError> {
        checkpoints::create_with_message(self, lease, message, checkpoint, blobs).await
    }

    async fn get_checkpoint(
        &self,
        tenant: &TenantId,
        id: &CheckpointId,
    ) -> Result<Checkpoint, StoreError> {
        checkpoints::get(self, tenant, id).await
    }

    async fn plan_session_delete(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionDeletion, StoreError> {
        deletion::plan(self, tenant, id).await
    }

    async fn list_checkpoint_manifests(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(CheckpointId, SessionId, String)>, StoreError> {
        deletion::checkpoint_manifests(self, tenant).await
    }

    async fn delete_sessions(
        &self,
        tenant: &TenantId,
        deletion: &SessionDeletion,
        keep: &[(String, CheckpointId)],
    ) -> Result<Vec<String>, StoreError> {
        deletion::delete(self, tenant, deletion, keep).await
    }

    async fn list_checkpoints(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Checkpoint>, StoreError> {
        checkpoints::list(self, tenant, session).await
    }

    async fn checkpoint_manifests(&self, tenant: &TenantId) -> Result<Vec<String>, StoreError> {
        checkpoints::manifests(self, tenant).await
    }

    async fn prune_checkpoints(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        session: &SessionId,
        ids: &[CheckpointId],
    ) -> Result<Vec<Checkpoint>, StoreError> {
        checkpoints::prune(self, lease, tenant, session, ids).await
    }

    async fn tenant_row_bytes(&self, tenant: &TenantId) -> Result<u64, StoreError> {
        usage::tenant_row_bytes(self, tenant).await
    }

    async fn record_rewind(&self, lease: &Lease, rewind: &Rewind) -> Result<Rewind, StoreError> {
        checkpoints::record_rewind(self, lease, rewind).await
    }

    async fn list_rewinds(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Rewind>, StoreError> {
        checkpoints::list_rewinds(self, tenant, session).await
    }

    async fn list_messages_after(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        messages::list_after(self, tenant, session, after_seq).await
    }

    async fn record_compaction(
        &self,
        lease: &Lease,
        compaction: &Compaction,
    ) -> Result<Compaction, StoreError> {
        compactions::record(self, lease, compaction).await
    }

    async fn latest_compaction(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<Compaction>, StoreError> {
        compactions::latest(self, tenant, session).await
    }

    async fn list_compactions(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Compaction>, StoreError> {
        compactions::list(self, tenant, session).await
    }

    async fn put_session_memory(
        &self,
        lease: &Lease,
        memory: &StoredSessionMemory,
    ) -> Result<(), StoreError> {
        compactions::put_session_memory(self, lease, memory).await
    }

    async fn get_session_memory(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<StoredSessionMemory>, StoreError> {
        compactions::get_session_memory(self, tenant, session).await
    }

    async fn create_memory(&self, record: &MemoryRecord) -> Result<(), StoreError> {
        memories::create(self, record).await
    }

    async fn get_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<MemoryRecord, StoreError> {
        memories::get(self, tenant, id).await
    }

    async fn list_memories(
        &self,
        tenant: &TenantId,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        memories::list(self, tenant, filter).await
    }

    async fn search_memories(
        &self,
        tenant: &TenantId,
        query: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        memories::search(self, tenant, query, filter).await
    }

    async fn supersede_memory(
        &self,
        tenant: &TenantId,
        old: &MemoryId,
        new: &MemoryId,
    ) -> Result<MemoryRecord, StoreError> {
        memories::supersede(self, tenant, old, new).await
    }

    async fn approve_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        approval: MemoryApproval,
    ) -> Result<MemoryRecord, StoreError> {
        memories::approve(self, tenant, id, approval).await
    }

    async fn delete_memory(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), StoreError> {
        memories::delete(self, tenant, id).await
    }

    async fn list_quarantined(
        &self,
        tenant: Option<&TenantId>,
        limit: u32,
    ) -> Result<Vec<QuarantinedRow>, StoreError> {
        quarantine::list(self, tenant, limit).await
    }
}
