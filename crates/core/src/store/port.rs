//! The `Store` trait: object-safe, so the orchestrator holds an `Arc<dyn Store>`
//! and never names the database.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Lease, NewEvent, Run, RunEvent, RunUpdate, SandboxRecord, SandboxState, Session,
    SnapshotRecord, StoreError, Tenant, Timestamp, ToolInvocation, ToolOutcome, Workspace,
};
use crate::ids::{RunId, SessionId, SnapshotId, TenantId, ToolInvocationId, WorkspaceId};
use crate::sandbox::SandboxId;

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

    /// Fenced by the lease on `run.session`.
    async fn create_run(&self, lease: &Lease, run: &Run) -> Result<(), StoreError>;
    /// Fenced by the lease on the run's session.
    async fn update_run(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        id: &RunId,
        update: &RunUpdate,
    ) -> Result<Run, StoreError>;
    async fn get_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, StoreError>;
    async fn list_runs(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Run>, StoreError>;

    /// Appends to the session's event log with the next sequence number.
    /// Fenced by the lease on `event.session`.
    async fn append_event(
        &self,
        lease: &Lease,
        tenant: &TenantId,
        event: &NewEvent,
    ) -> Result<RunEvent, StoreError>;
    /// Events of the session with `seq > after_seq`, in order, at most `limit`.
    async fn list_events(
        &self,
        tenant: &TenantId,
        session: &SessionId,
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
}
