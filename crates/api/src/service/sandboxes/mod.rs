//! The sandbox service: the one place that creates, tracks, uses and destroys
//! long-lived sandboxes. Every front end (HTTP API, later MCP) builds the typed
//! commands of [`commands`] and calls it.
//!
//! A running sandbox lives in two places: its handle here (id -> `live::Live`)
//! and its record in the [`Store`] (tenant, workspace, spec, state, node,
//! monitor pid, times). Every lookup is by tenant, and another tenant's
//! sandbox is "not found". A background task destroys sandboxes that were
//! idle too long or reached their maximum lifetime; [`SandboxService::shutdown`]
//! destroys the rest; [`SandboxService::reconcile`] cleans up after a crash.

mod admission;
mod backends;
pub mod commands;
mod config;
mod console;
mod disk_quota;
mod error;
mod expiry;
mod file_ops;
mod live;
mod network;
mod ops;
mod pause;
mod ports;
mod quota;
mod reconcile;
pub mod secrets;
mod snapshots;
mod terminal;
mod views;
mod volume_mounts;
mod volume_snapshots;
mod volumes;
mod workspace_archive;
mod workspace_quota;
mod write_probe;
mod writer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_core::sandbox::{GuestError, SandboxId};
use paddock_core::store::{
    Clock, MAX_PAGE, Page, RecordedSpec, SandboxRecord, SandboxState, Store, SystemClock, Tenant,
    Workspace,
};
use tokio_util::sync::CancellationToken;

pub use backends::{BackendEntry, BackendRefused, Backends, BackendsError, KNOWN_BACKENDS};
pub use config::{
    DEFAULT_CPU_MILLIS, DEFAULT_EXEC_OUTPUT_CAP, LimitsPolicy, MAX_EXEC_OUTPUT_CAP, OnIdle,
    ServiceConfig,
};
pub use disk_quota::DiskUsage;
pub use error::ServiceError;
pub use live::ActivityGuard;
pub use network::{NetworkChanged, NetworkView, SetNetwork};
pub use ops::ExecStream;
pub use pause::{PauseSandbox, RESUME_TIMEOUT, full_refusal, pause_mode};
pub use ports::PortTunnel;
pub use quota::{
    CPU_OVERCOMMIT, DEFAULT_TENANT_RUNS, DEFAULT_TENANT_SANDBOXES, HostTotals, Quota, QuotaScope,
    Quotas,
};
pub use reconcile::ReconcileReport;
pub use secrets::{
    DuplicateSecret, OperatorSecret, SecretCatalog, SecretGrant, SecretRef, SecretRefused,
    SuppliedSecret,
};
pub use snapshots::{
    BlobSweep, CreateSnapshot, ImportSnapshot, MAX_RESTORE_COUNT, MAX_SNAPSHOT_BYTES,
    MAX_SNAPSHOT_FILES, RestoreSnapshot, SnapshotArchive, SnapshotView,
};
pub use terminal::ProcessFollow;
pub use views::{
    BackendHealth, ComponentHealth, ExecResult, ExitView, FileEntry, Health, PauseView,
    ProcessOutputView, ProcessView, SandboxView, SearchView, StoreWrites, WorkspaceView,
};
pub use volume_snapshots::{CreateVolumeSnapshot, SnapshotSource, VolumeSnapshotView};
pub use volumes::{CreateVolume, VolumeView};
pub use workspace_archive::{ExportWorkspace, ImportWorkspace, WorkspaceArchive};

pub(super) use admission::RunAdmission;
use commands::{CreateSandbox, CreateWorkspace};
use live::Live;

/// Which sandboxes to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxFilter {
    pub state: Option<SandboxState>,
    /// Ids sort by creation time: the page after this id.
    pub after: Option<SandboxId>,
    pub limit: Option<u32>,
}

#[derive(Debug)]
pub struct SandboxService {
    store: Arc<dyn Store>,
    backends: Backends,
    config: ServiceConfig,
    clock: Arc<dyn Clock>,
    live: Mutex<HashMap<SandboxId, Arc<Live>>>,
    /// Creations under way, counted against `max_sandboxes`.
    creating: Mutex<usize>,
    /// Granted limits of starting and running sandboxes, against the quotas.
    quotas: quota::QuotaLedger,
    /// Agent runs' and subagents' sandboxes admitted (`admission`), counted
    /// against `max_sandboxes` with the live ones.
    run_sandboxes: std::sync::atomic::AtomicUsize,
    /// Each tenant's last measured disk use (disk_quota.rs).
    disk: disk_quota::DiskLedger,
    /// Cancelled when the service shuts down: no new sandbox after that.
    shutdown: CancellationToken,
    /// Health's check that the store takes writes.
    write_probe: write_probe::WriteProbe,
    /// Held by a resume (pause.rs): one at a time, so two requests that
    /// find one sandbox paused start it once.
    resuming: tokio::sync::Mutex<()>,
    /// Read by a create that mounts volumes from resolving them until its
    /// row is stored (volume_mounts.rs), written by a volume delete: a
    /// delete never falls between a start's check and its row.
    volume_gate: tokio::sync::RwLock<()>,
}

impl SandboxService {
    /// `shutdown` is a child of the server's token tree: once it is cancelled
    /// the service refuses new sandboxes and its expiry task ends.
    pub fn new(
        store: Arc<dyn Store>,
        backends: impl Into<Backends>,
        config: ServiceConfig,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            backends: backends.into(),
            quotas: quota::QuotaLedger::new(config.quotas),
            config,
            clock: Arc::new(SystemClock),
            live: Mutex::new(HashMap::new()),
            creating: Mutex::new(0),
            run_sandboxes: std::sync::atomic::AtomicUsize::new(0),
            disk: disk_quota::DiskLedger::default(),
            shutdown,
            write_probe: write_probe::WriteProbe::default(),
            resuming: tokio::sync::Mutex::new(()),
            volume_gate: tokio::sync::RwLock::new(()),
        })
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The backends this server offers.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    /// Creates (or renames) the tenants the configured tokens name.
    pub async fn register_tenants(&self, tenants: &[TenantId]) -> Result<(), ServiceError> {
        for id in tenants {
            let tenant = Tenant {
                id: id.clone(),
                name: id.to_string(),
                created_at: self.store.now(),
            };
            self.store
                .ensure_tenant(&tenant)
                .await
                .map_err(ServiceError::store("ensure_tenant"))?;
        }
        Ok(())
    }

    /// The node's components as `tenant` may see them: whether each works,
    /// how many sandboxes each warm pool holds, and of the sandboxes only
    /// the tenant's own (how many the node runs tells of other tenants'
    /// work).
    pub async fn health(&self, tenant: &TenantId) -> views::Health {
        let database = self.store.ping().await.is_ok();
        let database_writes = if database {
            self.write_probe.check(&self.store).await
        } else {
            tracing::warn!("health: the store does not answer");
            StoreWrites::Failed
        };
        let mut backends = Vec::new();
        for entry in self.backends.entries() {
            let checked = entry.backend.check().await;
            if let Err(err) = &checked {
                tracing::warn!(backend = %entry.label(), error = %err, "health: a backend is unavailable");
            }
            backends.push(BackendHealth {
                name: entry.label(),
                ok: checked.is_ok() && !self.shutdown.is_cancelled(),
            });
        }
        views::Health {
            database: ComponentHealth {
                name: self.store.engine().to_owned(),
                ok: database,
            },
            database_writes,
            backend: ComponentHealth {
                name: self.backends.default_entry().label(),
                ok: backends.iter().all(|b| b.ok) && !self.shutdown.is_cancelled(),
            },
            backends,
            sandboxes: self
                .live_map()
                .values()
                .filter(|live| live.tenant == *tenant)
                .count(),
        }
    }

    // ---- workspaces ----

    pub async fn create_workspace(
        &self,
        tenant: &TenantId,
        command: CreateWorkspace,
    ) -> Result<WorkspaceView, ServiceError> {
        let name = command.name.trim();
        if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
            return Err(ServiceError::invalid(
                "name",
                "expected 1 to 200 characters without control characters",
            ));
        }
        let workspace = Workspace::new(tenant.clone(), name, self.clock.now());
        let quota_bytes = match command.quota_bytes {
            Some(bytes) => {
                let pool = self
                    .create_pool_workspace(tenant, &workspace.id, bytes)
                    .await?;
                Some(pool.quota.bytes)
            }
            None => {
                self.workspace_dir(&workspace.id).await?;
                None
            }
        };
        if let Err(e) = self.store.create_workspace(&workspace).await {
            // no subvolume left behind for a row that is not there
            if quota_bytes.is_some()
                && let Err(err) = self.remove_pool_workspace(tenant, &workspace.id).await
            {
                tracing::warn!(workspace_id = %workspace.id, error = %err, "removing the subvolume of a workspace that failed");
            }
            return Err(ServiceError::store("create_workspace")(e));
        }
        if let Some(bytes) = quota_bytes {
            tracing::info!(tenant_id = %tenant, workspace_id = %workspace.id, quota_bytes = bytes, "workspace created in the volume pool");
        }
        Ok(WorkspaceView {
            quota_bytes,
            ..WorkspaceView::from(&workspace)
        })
    }

    pub async fn get_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<WorkspaceView, ServiceError> {
        let workspace = self
            .store
            .get_workspace(tenant, id)
            .await
            .map_err(ServiceError::store("get_workspace"))?;
        let pool = self.pool_workspace(tenant, id).await?;
        Ok(WorkspaceView {
            quota_bytes: pool.map(|p| p.quota.bytes),
            ..WorkspaceView::from(&workspace)
        })
    }

    pub async fn list_workspaces(
        &self,
        tenant: &TenantId,
        after: Option<WorkspaceId>,
        limit: Option<u32>,
    ) -> Result<Vec<WorkspaceView>, ServiceError> {
        let page = page(after.map(String::from), limit)?;
        let rows = self
            .store
            .list_workspaces(tenant, &page)
            .await
            .map_err(ServiceError::store("list_workspaces"))?;
        Ok(rows.iter().map(WorkspaceView::from).collect())
    }

    /// Deletes the workspace's row and, for a server-managed workspace, its
    /// directory (a registered host directory is left alone). Refused (409,
    /// naming it) while a session works in it or a running sandbox uses it.
    pub async fn delete_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<WorkspaceView, ServiceError> {
        let workspace = self
            .store
            .get_workspace(tenant, id)
            .await
            .map_err(ServiceError::store("get_workspace"))?;
        self.store
            .delete_workspace(tenant, id)
            .await
            .map_err(ServiceError::store("delete_workspace"))?;
        if workspace.root.is_none() {
            self.remove_pool_workspace(tenant, id).await?;
            let dir = self.config.workspaces_root.join(id.as_str());
            match tokio::fs::remove_dir_all(&dir).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(ServiceError::Workspace {
                        id: id.to_string(),
                        source,
                    });
                }
            }
        }
        tracing::info!(workspace_id = %id, "workspace deleted");
        self.disk.forget(tenant);
        Ok(WorkspaceView::from(&workspace))
    }

    /// The workspace's host directory, made if missing.
    async fn workspace_dir(&self, id: &WorkspaceId) -> Result<PathBuf, ServiceError> {
        let dir = self.config.workspaces_root.join(id.as_str());
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|source| ServiceError::Workspace {
                id: id.to_string(),
                source,
            })?;
        Ok(dir)
    }

    // ---- sandboxes ----

    pub async fn create_sandbox(
        &self,
        tenant: &TenantId,
        command: CreateSandbox,
    ) -> Result<SandboxView, ServiceError> {
        self.create_sandbox_from(tenant, command, None).await
    }

    /// [`Self::create_sandbox`], recording the snapshot its workspace is
    /// restored from (lineage: the parent of snapshots taken in it).
    async fn create_sandbox_from(
        &self,
        tenant: &TenantId,
        command: CreateSandbox,
        restored_from: Option<paddock_core::ids::SnapshotId>,
    ) -> Result<SandboxView, ServiceError> {
        // A policy no backend could apply is the caller's mistake (400),
        // found before any sandbox starts.
        ServiceError::check_network(&self.config.network, &command.network)?;
        command.check_on_idle()?;
        command.check_labels()?;
        let secrets = self
            .config
            .secrets
            .resolve(tenant, &command.secrets, &command.network)
            .map_err(ServiceError::from)?;
        let entry = self
            .backends
            .choose(command.backend.as_deref(), command.image.as_deref())?;
        let limits = self.config.limits.for_workspace(
            command.limits.resolve(&self.config.limits)?,
            command.workspace.is_none() && !command.read_only,
        );
        let workspace = match &command.workspace {
            Some(id) => {
                self.store
                    .get_workspace(tenant, id)
                    .await
                    .map_err(ServiceError::store("get_workspace"))?;
                Some(self.workspace_location(tenant, id).await?)
            }
            None => None,
        };
        let _mounting = if command.volumes.is_empty() {
            None
        } else {
            Some(self.volume_gate.read().await)
        };
        let volumes = self.resolve_volume_mounts(tenant, &command.volumes).await?;
        self.refuse_held_volumes(tenant, &command.volumes).await?;
        if !volumes.is_empty() && !entry.backend.mounts_volumes() {
            return Err(ServiceError::invalid(
                "volumes",
                format!("the {} backend does not mount volumes", entry.name),
            ));
        }
        let (_slot, grant) = self.admit(tenant, quota::Grant::of(&limits)).await?;
        let (workspace_dir, workspace_quota) = match workspace {
            Some(w) => (Some(w.path), w.quota),
            None => (None, None),
        };
        let mut spec =
            self.config
                .sandbox_spec(workspace_dir, command.read_only, command.network, limits);
        spec.secrets = secrets;
        spec.policy.volumes = command.volumes.clone();
        spec.volume_dirs = volumes;
        spec.workspace_quota = workspace_quota;
        let stored = RecordedSpec {
            restored_from,
            image: entry.image.clone(),
            console: command.console,
            on_idle: command.on_idle,
            metadata: command.metadata.clone(),
            env: command.env.clone(),
            ..RecordedSpec::of(&spec)
        };
        let sandbox = entry
            .backend
            .create(spec)
            .await
            .map_err(ServiceError::CreateSandbox)?;
        let id = sandbox.info().id.clone();
        // Held under its id from now on: its store row (about to exist)
        // must not count a second time as someone else's.
        grant.commit(&id);
        let leases = match self
            .take_leases(
                tenant,
                &id,
                command.workspace.as_ref(),
                command.read_only,
                &command.volumes,
            )
            .await
        {
            Ok(leases) => leases,
            Err(err) => {
                destroy_quietly(sandbox).await;
                self.quotas.release(&id);
                return Err(err);
            }
        };
        let now = self.clock.now();
        let record = SandboxRecord {
            id: id.clone(),
            tenant: tenant.clone(),
            workspace: command.workspace.clone(),
            backend: entry.name.clone(),
            node: self.config.node.clone(),
            state: SandboxState::Running,
            spec: stored,
            pid: sandbox.host_pid(),
            created_at: now,
            updated_at: now,
            last_active_at: now,
            expires_at: Some(now.saturating_add(self.config.max_lifetime)),
            run: None,
            pause: None,
        };
        if let Err(err) = self.store.create_sandbox(&record).await {
            destroy_quietly(sandbox).await;
            self.quotas.release(&id);
            self.release_leases(&leases).await;
            return Err(ServiceError::store("create_sandbox")(err));
        }
        let mut live = Live::new(
            sandbox,
            tenant.clone(),
            now,
            record.expires_at.unwrap_or(now),
            leases.writer,
            command
                .console
                .then(|| now.saturating_add(console::KEEPALIVE)),
        );
        live.secrets = !command.secrets.is_empty();
        live.volume_leases = leases.volumes;
        live.env = Arc::new(command.env);
        let live = Arc::new(live);
        self.live_map().insert(id.clone(), live);
        tracing::info!(sandbox_id = %id, tenant = %tenant, "sandbox created");
        // A shutdown that began while this sandbox was starting has already
        // swept the map; this sandbox must not outlive it.
        if self.shutdown.is_cancelled() {
            self.retire(&id, SandboxState::Stopped, "shutdown").await?;
            return Err(ServiceError::ShuttingDown);
        }
        Ok(self.view(&record))
    }

    pub async fn get_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<SandboxView, ServiceError> {
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        Ok(self.view(&record))
    }

    pub async fn list_sandboxes(
        &self,
        tenant: &TenantId,
        filter: SandboxFilter,
    ) -> Result<Vec<SandboxView>, ServiceError> {
        let page = page(filter.after.map(String::from), filter.limit)?;
        let rows = self
            .store
            .list_sandboxes(tenant, filter.state, &page)
            .await
            .map_err(ServiceError::store("list_sandboxes"))?;
        Ok(rows.iter().map(|r| self.view(r)).collect())
    }

    /// Destroys a running sandbox (its record stays, as `stopped`); deleting
    /// one that no longer runs just answers its record. A running agent
    /// run's sandbox is refused ([`ServiceError::OwnedByRun`]): deleting a
    /// resource never cancels a run behind the caller's back, and doing
    /// nothing while answering 200 would be a lie.
    pub async fn delete_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<SandboxView, ServiceError> {
        let owned = self.live_map().get(id).is_some_and(|l| &l.tenant == tenant);
        if owned {
            self.retire(id, SandboxState::Stopped, "deleted").await?;
            return self.get_sandbox(tenant, id).await;
        }
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        refuse_if_run_owned(&record)?;
        if record.state == SandboxState::Paused {
            self.stop_paused(&record).await?;
            return self.get_sandbox(tenant, id).await;
        }
        Ok(self.view(&record))
    }

    /// Destroys every running sandbox (state `stopped`). Called once the
    /// shutdown token is cancelled; new sandboxes are refused from then on.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let ids: Vec<SandboxId> = self.live_map().keys().cloned().collect();
        tracing::info!(sandboxes = ids.len(), "destroying running sandboxes");
        let retirements = ids
            .iter()
            .map(|id| self.retire(id, SandboxState::Stopped, "shutdown"));
        for result in futures_util::future::join_all(retirements).await {
            if let Err(err) = result {
                tracing::warn!(error = %err, "recording a stopped sandbox at shutdown");
            }
        }
    }

    /// Takes the sandbox out of the live map, records `state`, then destroys
    /// it: once it can no longer be used, its record already says so. Only
    /// the first caller for an id does anything.
    async fn retire(
        &self,
        id: &SandboxId,
        state: SandboxState,
        reason: &'static str,
    ) -> Result<(), ServiceError> {
        let Some(live) = self.live_map().remove(id) else {
            return Ok(());
        };
        let recorded = self
            .store
            .set_sandbox_state(&live.tenant, id, state)
            .await
            .map_err(ServiceError::store("set_sandbox_state"));
        self.release_live(id, &live).await;
        tracing::info!(sandbox_id = %id, state = %state, reason, "sandbox retired");
        recorded.map(|_| ())
    }

    /// The tenant's running sandbox, marked in use (a paused one is
    /// resumed first); why not otherwise.
    async fn use_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<(Arc<Live>, ActivityGuard), ServiceError> {
        if let Some(used) = self.use_live(tenant, id) {
            return Ok(used);
        }
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        if record.state == SandboxState::Paused {
            match self.resume_sandbox(tenant, id).await {
                Ok(_) => {}
                // another request resumed it meanwhile
                Err(ServiceError::Conflict { .. }) if self.use_live(tenant, id).is_some() => {}
                Err(err) => return Err(err),
            }
            tracing::info!(sandbox_id = %id, "paused sandbox resumed by a request");
        }
        self.use_recorded(tenant, id).await
    }

    fn use_live(&self, tenant: &TenantId, id: &SandboxId) -> Option<(Arc<Live>, ActivityGuard)> {
        let live = self.live_map().get(id).cloned()?;
        (&live.tenant == tenant).then(|| {
            let guard = live.use_now(self.clock.clone());
            (live, guard)
        })
    }

    async fn use_recorded(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<(Arc<Live>, ActivityGuard), ServiceError> {
        let live = self.live_map().get(id).cloned();
        match live {
            Some(live) if &live.tenant == tenant => {
                let guard = live.use_now(self.clock.clone());
                Ok((live, guard))
            }
            _ => {
                let record = self
                    .store
                    .get_sandbox(tenant, id)
                    .await
                    .map_err(ServiceError::store("get_sandbox"))?;
                refuse_if_run_owned(&record)?;
                Err(ServiceError::NotRunning {
                    id: id.clone(),
                    // Recorded running but not here: another node's, or it died
                    // and reconciliation has not run yet.
                    state: match record.state {
                        SandboxState::Running => SandboxState::Lost,
                        other => other,
                    },
                })
            }
        }
    }

    /// A guest error; when the connection is gone the sandbox died on its own:
    /// it is torn down and recorded `lost`.
    async fn guest_failed(
        &self,
        id: &SandboxId,
        op: &'static str,
        source: GuestError,
    ) -> ServiceError {
        if matches!(source, GuestError::Disconnected { .. }) {
            let still_live = self.live_map().contains_key(id);
            if still_live {
                tracing::warn!(sandbox_id = %id, op, "guest connection lost: sandbox recorded lost");
                if let Err(err) = self
                    .retire(id, SandboxState::Lost, "guest disconnected")
                    .await
                {
                    tracing::warn!(sandbox_id = %id, error = %err, "recording a lost sandbox");
                }
            }
            let state = if still_live {
                SandboxState::Lost
            } else {
                SandboxState::Stopped
            };
            return ServiceError::NotRunning {
                id: id.clone(),
                state,
            };
        }
        ServiceError::Guest {
            id: id.clone(),
            op,
            source,
        }
    }

    fn view(&self, record: &SandboxRecord) -> SandboxView {
        let (last_active, keepalive_until) = self
            .live_map()
            .get(&record.id)
            .map(|live| (Some(live.last_active()), live.keepalive_until()))
            .unwrap_or_default();
        let mut view = SandboxView::new(
            record,
            last_active,
            keepalive_until,
            self.config.idle_timeout,
            self.config.on_idle,
        );
        // A change while it runs is kept by the live sandbox, not its record.
        if let Some(live) = self.live_map().get(&record.id) {
            view.network = live.network().policy.clone();
        }
        view
    }

    /// Gives back what a live sandbox holds: its handle (destroyed), its
    /// share of the quotas, its writer lease and its volume leases.
    pub(super) async fn release_live(&self, id: &SandboxId, live: &Live) {
        self.release_all_but_volumes(id, live).await;
        self.release_volumes(&live.volume_leases).await;
    }

    /// [`Self::release_live`] but the volume leases (a paused sandbox keeps them).
    pub(super) async fn release_all_but_volumes(&self, id: &SandboxId, live: &Live) {
        let handle = live.handle.lock().await.take();
        if let Some(sandbox) = handle {
            destroy_quietly(sandbox).await;
        }
        self.quotas.release(id);
        if let Some(lease) = &live.writer {
            writer::release(self.store.as_ref(), lease).await;
        }
    }

    fn live_map(&self) -> MutexGuard<'_, HashMap<SandboxId, Arc<Live>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The grants of sandboxes recorded running on this node that this
    /// service does not run: the agent runtime's run sandboxes.
    async fn other_grants(&self) -> Result<quota::OtherGrants, ServiceError> {
        let running = self
            .store
            .list_node_sandboxes(&self.config.node, SandboxState::Running)
            .await
            .map_err(ServiceError::store("list_node_sandboxes"))?;
        let live = self.live_map();
        Ok(running
            .into_iter()
            .filter(|r| !live.contains_key(&r.id))
            .map(|r| {
                let grant = quota::Grant::recorded(&r.spec.policy.limits);
                (r.id, r.tenant, grant)
            })
            .collect())
    }

    /// The one slot and quota check of every sandbox, the service's own
    /// and agent runs' (`admission`): a place under `max_sandboxes`, then
    /// `asked` against the tenant's and the node's quotas.
    async fn admit(
        &self,
        tenant: &TenantId,
        asked: quota::Grant,
    ) -> Result<(SlotGuard<'_>, quota::Reservation<'_>), ServiceError> {
        let slot = self.reserve_slot()?;
        let others = self.other_grants().await?;
        let grant = self.quotas.reserve_grant(tenant, asked, &others)?;
        Ok((slot, grant))
    }

    fn reserve_slot(&self) -> Result<SlotGuard<'_>, ServiceError> {
        if self.shutdown.is_cancelled() {
            return Err(ServiceError::ShuttingDown);
        }
        let running =
            self.live_map().len() + self.run_sandboxes.load(std::sync::atomic::Ordering::SeqCst);
        let mut creating = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        if running + *creating >= self.config.max_sandboxes {
            return Err(ServiceError::TooManySandboxes {
                limit: self.config.max_sandboxes,
            });
        }
        *creating += 1;
        Ok(SlotGuard(&self.creating))
    }
}

/// A creation counted against the node's sandbox limit until it ends.
struct SlotGuard<'a>(&'a Mutex<usize>);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let mut creating = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *creating = creating.saturating_sub(1);
    }
}

async fn destroy_quietly(sandbox: Box<dyn paddock_core::sandbox::Sandbox>) {
    let id = sandbox.info().id.clone();
    if let Err(err) = sandbox.destroy().await {
        tracing::warn!(sandbox_id = %id, error = %err, "destroying sandbox");
    }
}

fn page(after: Option<String>, limit: Option<u32>) -> Result<Page, ServiceError> {
    let limit = limit.unwrap_or(100);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ServiceError::invalid(
            "limit",
            format!("expected 1 to {MAX_PAGE}"),
        ));
    }
    Ok(Page { after, limit })
}

/// A sandbox an agent run owns and still runs is the run's to drive and to
/// end (it is in the runtime's hands, not this service's live map).
fn refuse_if_run_owned(record: &SandboxRecord) -> Result<(), ServiceError> {
    match &record.run {
        Some(run) if record.state == SandboxState::Running => Err(ServiceError::OwnedByRun {
            id: record.id.clone(),
            run: run.clone(),
        }),
        _ => Ok(()),
    }
}
