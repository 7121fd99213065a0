//! Workspace snapshots: export a running sandbox's workspace into the blob
//! store, restore (or fork) a snapshot into fresh sandboxes, move archives
//! in and out (download, import), and collect blobs no snapshot names.
//!
//! Archives stream through bounded pipes between the guest connection (or
//! the HTTP body) and the blocking blob store; none is held whole in memory.
//!
//! Blob collection: deleting a row removes its blob when no row of any
//! tenant names it and it was last written more than `blob_grace` ago; a
//! sweeper removes the younger ones later. Recording a snapshot commits its
//! blob (which sets its written time to now) before inserting the row, and
//! the blob store checks the written time and unlinks atomically with
//! respect to commits, so a collection that found no row for a blob never
//! removes one a concurrent snapshot of the same content is recording.
//! Restores and downloads read from an open file, which outlives an unlink.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use paddock_core::blob::{BlobError, BlobKey, BlobReader, BlobStore, BlobWriter};
use paddock_core::ids::{SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::{SandboxId, SnapshotExportOptions, SnapshotImportOptions};
use paddock_core::store::{SandboxRecord, SnapshotFilter, SnapshotRecord, StoreError};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::task::JoinHandle;
use tokio_util::io::SyncIoBridge;

use super::commands::{CreateSandbox, CreateWorkspace, LimitsRequest};
use super::{SandboxService, SandboxView, ServiceError, StoredSpec, destroy_quietly};
use paddock_proto::{NetworkPolicy, error_chain};
use paddock_snapshot::{DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, SnapshotError, snapshot_record};

/// Bytes buffered between the async and the blocking side of a transfer.
const PIPE_BYTES: usize = 1 << 20;
/// Chunks of a blob read once for all the restores of a fork, and how many
/// each restore may have queued.
const SHARED_CHUNK: usize = 1 << 20;
const SHARED_DEPTH: usize = 4;
/// Bytes moved per read on the blocking side: each crossing of the bridge
/// wakes the other side, so few large ones (std's copy moves 8 KiB).
const COPY_BYTES: usize = 256 * 1024;
/// Most sandboxes one restore (fork) makes.
pub const MAX_RESTORE_COUNT: u32 = 16;
/// Highest `max_files` a snapshot or an import may ask for.
pub const MAX_SNAPSHOT_FILES: u64 = paddock_snapshot::MAX_REQUEST_FILES;
/// Highest `max_bytes` (file content before compression) a snapshot or an
/// import may ask for; an import unpacks into a scratch directory on the host.
pub const MAX_SNAPSHOT_BYTES: u64 = paddock_snapshot::MAX_REQUEST_BYTES;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSnapshot {
    /// Patterns left out, added to the defaults (node_modules, target, ...).
    #[serde(default)]
    pub excludes: Vec<String>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_files: Option<u64>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 8589934592_u64)]
    pub max_bytes: Option<u64>,
    /// The agent session the snapshot belongs to, recorded on its row.
    #[serde(default)]
    pub session: Option<SessionId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreSnapshot {
    /// How many sandboxes to make (more than one is a fork).
    #[serde(default = "one")]
    #[schema(minimum = 1, maximum = 16)]
    pub count: u32,
    #[serde(default)]
    pub limits: LimitsRequest,
    #[serde(default)]
    pub network: NetworkPolicy,
    /// The sandboxes' workspaces are read-only (the restore itself writes
    /// them before the sandboxes start).
    #[serde(default)]
    pub read_only: bool,
    /// The backend of the new sandboxes (as in `CreateSandbox`).
    #[serde(default)]
    pub backend: Option<String>,
    /// Their image (as in `CreateSandbox`).
    #[serde(default)]
    pub image: Option<String>,
}

fn one() -> u32 {
    1
}

impl Default for RestoreSnapshot {
    fn default() -> Self {
        Self {
            count: 1,
            limits: LimitsRequest::default(),
            network: NetworkPolicy::default(),
            read_only: false,
            backend: None,
            image: None,
        }
    }
}

/// Limits of an imported archive's check; each missing one is the snapshot default.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams,
)]
#[serde(deny_unknown_fields)]
pub struct ImportSnapshot {
    #[serde(default)]
    pub max_files: Option<u64>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SnapshotView {
    pub id: SnapshotId,
    pub workspace: Option<WorkspaceId>,
    pub source_sandbox: Option<SandboxId>,
    pub session: Option<SessionId>,
    /// The snapshot the source sandbox was restored from.
    pub parent: Option<SnapshotId>,
    /// Entries a restore of the archive creates: what `max_files` counts
    /// (see [`SnapshotRecord::file_count`]).
    pub file_count: u64,
    pub bytes_raw: u64,
    pub bytes_compressed: u64,
    pub excludes: Vec<String>,
    /// sha256 of the archive, its key in the blob store.
    pub blob_hash: String,
    pub created_at: String,
}

impl From<&SnapshotRecord> for SnapshotView {
    fn from(r: &SnapshotRecord) -> Self {
        Self {
            id: r.id.clone(),
            workspace: r.workspace.clone(),
            source_sandbox: r.source_sandbox.clone(),
            session: r.session.clone(),
            parent: r.parent.clone(),
            file_count: r.file_count,
            bytes_raw: r.bytes_raw,
            bytes_compressed: r.bytes_compressed,
            excludes: r.excludes.clone(),
            blob_hash: r.blob_hash.clone(),
            created_at: r.created_at.to_string(),
        }
    }
}

/// A snapshot's archive being downloaded: `size` bytes read from `body`.
#[derive(Debug)]
pub struct SnapshotArchive {
    pub size: u64,
    pub body: DuplexStream,
}

/// What one sweep of the blob store did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BlobSweep {
    /// Blobs old enough to be collected, checked for rows naming them.
    pub checked: u64,
    pub removed: u64,
    pub bytes_freed: u64,
}

impl SandboxService {
    fn blobs(&self) -> Result<Arc<dyn BlobStore>, ServiceError> {
        self.config
            .blobs
            .clone()
            .ok_or(ServiceError::SnapshotsUnavailable)
    }

    /// Packs the sandbox's workspace into a new snapshot. Its parent is the
    /// snapshot the sandbox was restored from (when that still exists).
    pub async fn create_snapshot(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: CreateSnapshot,
    ) -> Result<SnapshotView, ServiceError> {
        let blobs = self.blobs()?;
        check_limits(command.max_files, command.max_bytes)?;
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        if let Some(session) = &command.session {
            self.store
                .get_session(tenant, session)
                .await
                .map_err(ServiceError::store("get_session"))?;
        }
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        // the archive is stored on this server's disk: held to what is left
        let _writing = self.disk_writer(tenant).await;
        let disk = self.disk_use(tenant).await?;
        if disk.left() == 0 {
            return Err(disk.exceeded("nothing is left for a snapshot".to_owned()));
        }
        let (mut pipe, rx) = tokio::io::duplex(PIPE_BYTES);
        let bridge = SyncIoBridge::new(rx);
        let store_task =
            tokio::task::spawn_blocking(move || write_blob(&*blobs, bridge, disk.left()));
        let options = SnapshotExportOptions {
            excludes: command.excludes.clone(),
            max_files: command.max_files,
            max_bytes: command.max_bytes,
        };
        let exported = live.guest.snapshot_export(options, &mut pipe).await;
        let _ = pipe.shutdown().await;
        drop(pipe);
        let stored = store_task.await.map_err(joined("put"))?;
        // over the quota: the guest saw its pipe close, which says less
        if let Err(BlobError::Put { source }) = &stored
            && source.kind() == io::ErrorKind::FileTooLarge
        {
            return Err(disk.exceeded(format!(
                "the snapshot's archive is larger than the {} bytes left; nothing was kept",
                disk.left()
            )));
        }
        let stats = match exported {
            Ok(stats) => stats,
            Err(e) => return Err(self.guest_failed(id, "snapshot_export", e).await),
        };
        let writer =
            stored.map_err(|source| over_quota(source, &disk, "the snapshot's archive"))?;
        let info = tokio::task::spawn_blocking(move || writer.commit())
            .await
            .map_err(joined("commit"))?
            .map_err(|source| ServiceError::Blob {
                op: "commit",
                source,
            })?;
        if info.key.as_str() != stats.key {
            tracing::warn!(sandbox_id = %id, stored = %info.key, guest = %stats.key, "archive hash mismatch");
        }
        let mut snapshot = SnapshotRecord {
            workspace: record.workspace.clone(),
            source_sandbox: Some(id.clone()),
            session: command.session,
            parent: self.lineage_parent(tenant, &record).await?,
            ..snapshot_record(
                tenant.clone(),
                &stats,
                &info,
                command.excludes,
                self.clock.now(),
            )
        };
        match self.store.create_snapshot(&snapshot).await {
            // The parent was deleted since it was looked up: no lineage.
            Err(StoreError::NotFound {
                entity: "snapshot", ..
            }) if snapshot.parent.is_some() => {
                snapshot.parent = None;
                self.store.create_snapshot(&snapshot).await
            }
            other => other,
        }
        .map_err(ServiceError::store("create_snapshot"))?;
        self.charge_disk(tenant, paddock_snapshot::disk::estimate(info.size));
        tracing::info!(sandbox_id = %id, snapshot_id = %snapshot.id, parent = ?snapshot.parent, files = stats.files, bytes = info.size, "snapshot created");
        Ok(SnapshotView::from(&snapshot))
    }

    /// The snapshot `sandbox` was restored from, if its row still exists.
    async fn lineage_parent(
        &self,
        tenant: &TenantId,
        sandbox: &SandboxRecord,
    ) -> Result<Option<SnapshotId>, ServiceError> {
        let spec: Option<StoredSpec> = serde_json::from_str(&sandbox.spec).ok();
        let Some(parent) = spec.and_then(|spec| spec.restored_from) else {
            return Ok(None);
        };
        match self.store.get_snapshot(tenant, &parent).await {
            Ok(_) => Ok(Some(parent)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(source) => Err(ServiceError::Store {
                op: "get_snapshot",
                source,
            }),
        }
    }

    pub async fn list_snapshots(
        &self,
        tenant: &TenantId,
        after: Option<SnapshotId>,
        limit: Option<u32>,
    ) -> Result<Vec<SnapshotView>, ServiceError> {
        let page = super::page(after.map(String::from), limit)?;
        let rows = self
            .store
            .list_snapshots(tenant, &SnapshotFilter::default(), &page)
            .await
            .map_err(ServiceError::store("list_snapshots"))?;
        Ok(rows.iter().map(SnapshotView::from).collect())
    }

    pub async fn get_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotView, ServiceError> {
        Ok(SnapshotView::from(&self.snapshot_record(tenant, id).await?))
    }

    async fn snapshot_record(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotRecord, ServiceError> {
        self.store
            .get_snapshot(tenant, id)
            .await
            .map_err(ServiceError::store("get_snapshot"))
    }

    /// Deletes the snapshot's row (refused while snapshots taken from it
    /// exist), then its blob if no other row of any tenant names it and it
    /// is older than the grace period (else the sweeper removes it later).
    /// Restores and downloads already reading it finish.
    pub async fn delete_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotView, ServiceError> {
        let record = self.snapshot_record(tenant, id).await?;
        self.store
            .delete_snapshot(tenant, id)
            .await
            .map_err(ServiceError::store("delete_snapshot"))?;
        self.disk.forget(tenant);
        if let (Some(blobs), Ok(key)) = (self.config.blobs.clone(), blob_key(&record)) {
            match self.collect_blob(&blobs, &key, self.blob_cutoff()).await {
                Ok(true) => tracing::info!(snapshot_id = %id, blob = %key, "blob removed"),
                Ok(false) => {}
                // The sweeper tries again.
                Err(err) => {
                    tracing::warn!(snapshot_id = %id, blob = %key, error = %err, "collecting a blob")
                }
            }
        }
        Ok(SnapshotView::from(&record))
    }

    /// Removes every blob no row names that was last written before the
    /// grace period: in the store and in each tenant's part (checkpoint
    /// files, [`BlobStore::tenant`]).
    pub async fn sweep_blobs(&self) -> Result<BlobSweep, ServiceError> {
        let blobs = self.blobs()?;
        let cutoff = self.blob_cutoff();
        let tenants = {
            let blobs = blobs.clone();
            tokio::task::spawn_blocking(move || blobs.tenants())
                .await
                .map_err(joined("list"))?
                .map_err(|source| ServiceError::Blob { op: "list", source })?
        };
        let parts = std::iter::once(blobs.clone()).chain(tenants.iter().map(|t| blobs.tenant(t)));
        let mut sweep = BlobSweep::default();
        for part in parts {
            self.sweep_part(&part, cutoff, &mut sweep).await?;
        }
        if sweep.removed > 0 {
            tracing::info!(
                removed = sweep.removed,
                bytes_freed = sweep.bytes_freed,
                "unreferenced blobs removed"
            );
        }
        Ok(sweep)
    }

    /// Removes the blobs of one part of the store that no row names and
    /// were last written before `cutoff`. A row of any tenant keeps a blob
    /// in every part (more kept than needed, never less).
    async fn sweep_part(
        &self,
        blobs: &Arc<dyn BlobStore>,
        cutoff: SystemTime,
        sweep: &mut BlobSweep,
    ) -> Result<(), ServiceError> {
        let listed = {
            let blobs = blobs.clone();
            tokio::task::spawn_blocking(move || blobs.list())
                .await
                .map_err(joined("list"))?
                .map_err(|source| ServiceError::Blob { op: "list", source })?
        };
        for info in listed.into_iter().filter(|info| info.written < cutoff) {
            sweep.checked += 1;
            if self.collect_blob(blobs, &info.key, cutoff).await? {
                sweep.removed += 1;
                sweep.bytes_freed += info.size;
            }
        }
        Ok(())
    }

    /// Sweeps the blob store now and then every grace period, until the
    /// service shuts down; None without a blob store.
    pub fn spawn_blob_sweeper(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        self.config.blobs.as_ref()?;
        let service = self.clone();
        let interval = self.config.blob_grace.max(Duration::from_secs(1));
        Some(tokio::spawn(async move {
            loop {
                if let Err(err) = service.sweep_blobs().await {
                    tracing::warn!(error = %err, "sweeping the blob store");
                }
                tokio::select! {
                    () = service.shutdown.cancelled() => break,
                    () = tokio::time::sleep(interval) => {}
                }
            }
        }))
    }

    /// Blobs last written before this may be collected.
    fn blob_cutoff(&self) -> SystemTime {
        SystemTime::now()
            .checked_sub(self.config.blob_grace)
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// Removes the blob if no snapshot row names it and it was last written
    /// before `cutoff`; whether it did.
    async fn collect_blob(
        &self,
        blobs: &Arc<dyn BlobStore>,
        key: &BlobKey,
        cutoff: SystemTime,
    ) -> Result<bool, ServiceError> {
        let referenced = self
            .store
            .snapshot_blob_referenced(key.as_str())
            .await
            .map_err(ServiceError::store("snapshot_blob_referenced"))?;
        if referenced {
            return Ok(false);
        }
        let (blobs, key) = (blobs.clone(), key.clone());
        tokio::task::spawn_blocking(move || blobs.delete_if_written_before(&key, cutoff))
            .await
            .map_err(joined("delete"))?
            .map_err(|source| ServiceError::Blob {
                op: "delete",
                source,
            })
    }

    /// Makes `count` fresh sandboxes, each with a new workspace restored from
    /// the snapshot, concurrently. All or nothing: if one fails, the others
    /// are destroyed.
    pub async fn restore_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        command: RestoreSnapshot,
    ) -> Result<Vec<SandboxView>, ServiceError> {
        if command.count == 0 || command.count > MAX_RESTORE_COUNT {
            return Err(ServiceError::invalid(
                "count",
                format!("expected 1 to {MAX_RESTORE_COUNT}"),
            ));
        }
        command.limits.resolve(&self.config.limits)?;
        ServiceError::check_network(&self.config.network, &command.network)?;
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        // Every sandbox of a fork gets its own copy of the files.
        let needed = restore_cost(&record).saturating_mul(u64::from(command.count));
        let _writing = self.disk_writer(tenant).await;
        self.disk_use(tenant).await?.check(needed, || {
            format!(
                "restoring snapshot {id} ({} bytes) {} time(s)",
                record.bytes_raw, command.count
            )
        })?;
        // One read of the blob feeds every sandbox of a fork.
        let sources = self
            .open_shared(tenant, &record.id, &key, command.count as usize)
            .await?;
        let restores = sources
            .into_iter()
            .map(|source| self.restore_one(tenant, &record, source, &command));
        let results = futures_util::future::join_all(restores).await;
        let mut views = Vec::new();
        let mut failure = None;
        for result in results {
            match result {
                Ok(view) => views.push(view),
                Err(err) => failure = failure.or(Some(err)),
            }
        }
        if let Some(err) = failure {
            for view in &views {
                if let Err(e) = self.delete_sandbox(tenant, &view.id).await {
                    tracing::warn!(sandbox_id = %view.id, error = %e, "destroying a sandbox of a failed restore");
                }
                if let Some(workspace) = &view.workspace {
                    self.remove_failed_workspace(tenant, workspace).await;
                }
            }
            return Err(err);
        }
        self.disk.forget(tenant);
        tracing::info!(snapshot_id = %id, count = views.len(), read_only = command.read_only, "snapshot restored");
        Ok(views)
    }

    /// One sandbox of a restore in a new workspace; on failure neither the
    /// sandbox nor the workspace (row and directory) is left.
    async fn restore_one(
        &self,
        tenant: &TenantId,
        snapshot: &SnapshotRecord,
        source: SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<SandboxView, ServiceError> {
        let workspace = self
            .create_workspace(
                tenant,
                CreateWorkspace {
                    name: format!("restore of {}", snapshot.id),
                },
            )
            .await?;
        let restored = self
            .restore_into(tenant, &workspace.id, snapshot, source, command)
            .await;
        if restored.is_err() {
            self.remove_failed_workspace(tenant, &workspace.id).await;
        }
        restored
    }

    /// Deletes the workspace of a failed restore (its sandbox is gone).
    async fn remove_failed_workspace(&self, tenant: &TenantId, workspace: &WorkspaceId) {
        if let Err(e) = self.delete_workspace(tenant, workspace).await {
            tracing::warn!(workspace_id = %workspace, error = %e, "removing the workspace of a failed restore");
        }
    }

    async fn restore_into(
        &self,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        snapshot: &SnapshotRecord,
        mut source: SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<SandboxView, ServiceError> {
        let create = CreateSandbox {
            workspace: Some(workspace.clone()),
            limits: command.limits.clone(),
            network: command.network.clone(),
            read_only: command.read_only,
            backend: command.backend.clone(),
            image: command.image.clone(),
            // a restore names no secrets (not in its request)
            secrets: Vec::new(),
            // a restored sandbox is the caller's, not a console page's
            console: false,
        };
        let origin = Some(snapshot.id.clone());
        if command.read_only {
            // The guest of a read-only sandbox cannot write its workspace:
            // the files go in first, through a short-lived sandbox.
            self.fill_workspace(workspace, snapshot, &mut source, command)
                .await?;
            return self.create_sandbox_from(tenant, create, origin).await;
        }
        let view = self.create_sandbox_from(tenant, create, origin).await?;
        if let Err(err) = self
            .import_blob(tenant, &view.id, snapshot, &mut source)
            .await
        {
            if let Err(e) = self.delete_sandbox(tenant, &view.id).await {
                tracing::warn!(sandbox_id = %view.id, error = %e, "destroying a sandbox of a failed restore");
            }
            return Err(err);
        }
        Ok(view)
    }

    /// Restores the snapshot into the (new, empty) workspace through a
    /// read-write sandbox that is neither recorded nor kept: the same guest
    /// restore as any other, with the owners a sandbox of this backend sees.
    async fn fill_workspace(
        &self,
        workspace: &WorkspaceId,
        snapshot: &SnapshotRecord,
        source: &mut SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<(), ServiceError> {
        let entry = self
            .backends
            .choose(command.backend.as_deref(), command.image.as_deref())?;
        let spec = self.config.sandbox_spec(
            Some(self.workspace_dir(workspace).await?),
            false,
            NetworkPolicy::None,
            command.limits.resolve(&self.config.limits)?,
        );
        let sandbox = {
            let _slot = self.reserve_slot()?;
            entry
                .backend
                .create(spec)
                .await
                .map_err(ServiceError::CreateSandbox)?
        };
        let id = sandbox.info().id.clone();
        let guest = sandbox.guest();
        let imported = guest.snapshot_import(import_limits(snapshot), source).await;
        drop(guest);
        destroy_quietly(sandbox).await;
        match imported.map(|_| ()) {
            Ok(()) => Ok(()),
            Err(source) => Err(ServiceError::Guest {
                id,
                op: "snapshot_import",
                source,
            }),
        }
    }

    /// Streams the archive into the sandbox's (empty) workspace.
    async fn import_blob(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        snapshot: &SnapshotRecord,
        source: &mut SharedArchive,
    ) -> Result<(), ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live
            .guest
            .snapshot_import(import_limits(snapshot), source)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "snapshot_import", e).await),
        }
    }

    /// Opens the blob of snapshot `id` once and hands its chunks to `count`
    /// readers; a reader that is dropped stops being fed, the others go on.
    async fn open_shared(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        key: &BlobKey,
        count: usize,
    ) -> Result<Vec<SharedArchive>, ServiceError> {
        let blob = self.open_blob(tenant, id, key).await?;
        let (senders, readers): (Vec<_>, Vec<_>) = (0..count)
            .map(|_| {
                let (tx, rx) = tokio::sync::mpsc::channel(SHARED_DEPTH);
                (tx, SharedArchive::new(rx))
            })
            .unzip();
        tokio::task::spawn_blocking(move || broadcast(blob, senders));
        Ok(readers)
    }

    /// The snapshot's archive, streamed from the blob store.
    pub async fn snapshot_archive(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotArchive, ServiceError> {
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        self.open_archive(tenant, id, &key).await
    }

    /// Opens the blob of snapshot `id` and streams it from a blocking task.
    async fn open_archive(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        key: &BlobKey,
    ) -> Result<SnapshotArchive, ServiceError> {
        let blob = self.open_blob(tenant, id, key).await?;
        let size = blob.size;
        let (tx, rx) = tokio::io::duplex(PIPE_BYTES);
        let mut bridge = SyncIoBridge::new(tx);
        tokio::task::spawn_blocking(move || {
            let mut blob = blob;
            // A failed read ends the stream early; the reader sees a truncated archive.
            if let Err(err) = copy(&mut blob, &mut bridge) {
                tracing::debug!(error = %err, "streaming a snapshot archive stopped");
            }
        });
        Ok(SnapshotArchive { size, body: rx })
    }

    /// Opens the blob of snapshot `id`; once open, it reads to the end even
    /// if the blob is collected meanwhile.
    async fn open_blob(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        key: &BlobKey,
    ) -> Result<BlobReader, ServiceError> {
        let blobs = self.blobs()?;
        let blob = {
            let key = key.clone();
            tokio::task::spawn_blocking(move || blobs.open(&key))
                .await
                .map_err(joined("open"))?
        };
        let blob = match blob {
            Ok(blob) => blob,
            // Deleted (and collected) since its row was read: the snapshot is gone.
            Err(BlobError::NotFound { .. })
                if matches!(
                    self.store.get_snapshot(tenant, id).await,
                    Err(StoreError::NotFound { .. })
                ) =>
            {
                return Err(ServiceError::NotFound {
                    entity: "snapshot",
                    id: id.to_string(),
                });
            }
            Err(source) => return Err(ServiceError::Blob { op: "open", source }),
        };
        Ok(blob)
    }

    /// Stores an uploaded archive as a snapshot. While it is stored it is
    /// also restored into a scratch directory with every safety check
    /// (within `limits`); only an archive that passed is kept.
    pub async fn import_snapshot(
        &self,
        tenant: &TenantId,
        limits: ImportSnapshot,
        body: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotView, ServiceError> {
        let blobs = self.blobs()?;
        check_limits(limits.max_files, limits.max_bytes)?;
        let _writing = self.disk_writer(tenant).await;
        let disk = self.disk_use(tenant).await?;
        if disk.left() == 0 {
            return Err(disk.exceeded("nothing is left for an import".to_owned()));
        }
        tokio::fs::create_dir_all(&self.config.workspaces_root)
            .await
            .map_err(|source| ServiceError::Workspace {
                id: "(import scratch)".to_owned(),
                source,
            })?;
        let (mut to_blob, blob_rx) = tokio::io::duplex(PIPE_BYTES);
        let (mut to_check, check_rx) = tokio::io::duplex(PIPE_BYTES);
        let blob_bridge = SyncIoBridge::new(blob_rx);
        let check_bridge = SyncIoBridge::new(check_rx);
        let store_task =
            tokio::task::spawn_blocking(move || write_blob(&*blobs, blob_bridge, disk.left() / 2));
        let scratch = self
            .config
            .workspaces_root
            .join(format!(".import-{}", SnapshotId::generate().as_str()));
        let mut options = unpack_options(limits.max_files, limits.max_bytes);
        // The import is unpacked on this server's disk: its declared sizes
        // are held to what the quota leaves, before anything is written.
        let quota_bound = disk.left() < options.limits.max_bytes;
        options.limits.max_bytes = options.limits.max_bytes.min(disk.left());
        // the check's scratch tree and the stored archive share what is left
        let share = disk.left() / 2;
        options.max_disk_bytes = share;
        let check_task =
            tokio::task::spawn_blocking(move || check_archive(check_bridge, scratch, &options));

        let mut buf = vec![0u8; 64 * 1024];
        let mut checking = true;
        let mut upload = Ok(());
        loop {
            let n = match body.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => n,
                Err(source) => {
                    upload = Err(ServiceError::Upload { source });
                    break;
                }
            };
            // The check may be done (or have failed) before the body ends.
            if checking && to_check.write_all(&buf[..n]).await.is_err() {
                checking = false;
            }
            if to_blob.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_check.shutdown().await;
        let _ = to_blob.shutdown().await;
        drop((to_check, to_blob));
        let checked = check_task.await.map_err(joined("check"))?;
        let writer = store_task.await.map_err(joined("put"))?;
        upload?;
        let stats = checked.map_err(|err| match err {
            SnapshotError::OverLimit {
                limit: paddock_snapshot::Limit::Bytes(left),
                path,
            } if quota_bound => disk.exceeded(format!(
                "the archive declares more than the {left} bytes left (at {path:?})"
            )),
            SnapshotError::OverLimit {
                limit: paddock_snapshot::Limit::Disk(share),
                path,
            } => disk.exceeded(format!(
                "checking the archive would take more than its share of the disk left, \
                 {share} bytes (each file's blocks and inode; stopped at {path:?}, nothing kept)"
            )),
            SnapshotError::Refused { .. }
            | SnapshotError::OverLimit { .. }
            | SnapshotError::Decompress { .. }
            | SnapshotError::ReadArchive { .. }
            | SnapshotError::Truncated { .. } => ServiceError::SnapshotRefused {
                reason: error_chain(&err),
            },
            source => ServiceError::CheckArchive { source },
        })?;
        let writer = writer.map_err(|source| over_quota(source, &disk, "the imported archive"))?;
        let info = tokio::task::spawn_blocking(move || writer.commit())
            .await
            .map_err(joined("commit"))?
            .map_err(|source| ServiceError::Blob {
                op: "commit",
                source,
            })?;
        let snapshot = snapshot_record(tenant.clone(), &stats, &info, Vec::new(), self.clock.now());
        self.store
            .create_snapshot(&snapshot)
            .await
            .map_err(ServiceError::store("create_snapshot"))?;
        self.disk.forget(tenant);
        tracing::info!(snapshot_id = %snapshot.id, files = stats.files, "snapshot imported");
        Ok(SnapshotView::from(&snapshot))
    }
}

/// Limits a caller may set on a snapshot or an import: at least 1, at most the ceilings.
pub(super) fn check_limits(
    max_files: Option<u64>,
    max_bytes: Option<u64>,
) -> Result<(), ServiceError> {
    for (field, value, ceiling) in [
        ("max_files", max_files, MAX_SNAPSHOT_FILES),
        ("max_bytes", max_bytes, MAX_SNAPSHOT_BYTES),
    ] {
        if let Some(value) = value
            && !(1..=ceiling).contains(&value)
        {
            return Err(ServiceError::invalid(
                field,
                format!("expected 1 to {ceiling}"),
            ));
        }
    }
    Ok(())
}

/// Limits of restoring a recorded snapshot: what it holds, and at least the defaults.
fn import_limits(snapshot: &SnapshotRecord) -> SnapshotImportOptions {
    SnapshotImportOptions {
        max_files: Some(snapshot.file_count.max(DEFAULT_MAX_FILES)),
        max_bytes: Some(snapshot.bytes_raw.max(DEFAULT_MAX_BYTES)),
    }
}

pub(super) fn unpack_options(
    max_files: Option<u64>,
    max_bytes: Option<u64>,
) -> paddock_snapshot::UnpackOptions {
    let defaults = paddock_snapshot::UnpackOptions::default();
    let limits = paddock_snapshot::Limits {
        max_files: max_files.unwrap_or(defaults.limits.max_files),
        max_bytes: max_bytes.unwrap_or(defaults.limits.max_bytes),
    };
    paddock_snapshot::UnpackOptions {
        limits,
        max_file_bytes: defaults.max_file_bytes.max(limits.max_bytes),
        ..defaults
    }
}

/// A blocking task that panicked or was cancelled.
fn joined(op: &'static str) -> impl FnOnce(tokio::task::JoinError) -> ServiceError {
    move |e| ServiceError::Blob {
        op,
        source: BlobError::Put {
            source: io::Error::other(e),
        },
    }
}

/// Copies everything `data` yields into a new, uncommitted blob of at most
/// `max` bytes of disk ([`paddock_snapshot::disk::estimate`]); more fails
/// with [`BlobError::Put`] of kind `FileTooLarge` (and the blob is dropped).
fn write_blob(
    blobs: &dyn BlobStore,
    data: impl Read,
    max: u64,
) -> Result<Box<dyn BlobWriter>, BlobError> {
    let mut writer = blobs.writer()?;
    let allowed = max.saturating_sub(paddock_snapshot::disk::INODE_BYTES)
        / paddock_snapshot::disk::BLOCK_BYTES
        * paddock_snapshot::disk::BLOCK_BYTES;
    let mut data = data.take(allowed.saturating_add(1));
    let copied = copy(&mut data, &mut writer).map_err(|source| BlobError::Put { source })?;
    if copied > allowed {
        return Err(BlobError::Put {
            source: io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("more than the {allowed} bytes the tenant disk quota leaves"),
            ),
        });
    }
    Ok(writer)
}

/// A blob write that failed; over the quota when `write_blob` said so.
fn over_quota(source: BlobError, disk: &super::disk_quota::DiskUse, what: &str) -> ServiceError {
    match &source {
        BlobError::Put { source: e } if e.kind() == io::ErrorKind::FileTooLarge => {
            disk.exceeded(format!("{what}: {e}; nothing was kept"))
        }
        _ => ServiceError::Blob { op: "put", source },
    }
}

/// What restoring the snapshot takes on disk at most: its content in
/// blocks, and a block and an inode per entry.
fn restore_cost(record: &SnapshotRecord) -> u64 {
    paddock_snapshot::disk::estimate(record.bytes_raw).saturating_add(
        record
            .file_count
            .saturating_mul(paddock_snapshot::disk::DIR_BYTES),
    )
}

/// Chunks of a blob shared by the restores of a fork; a read error is
/// passed on as its kind.
type Chunk = Result<Arc<Vec<u8>>, io::ErrorKind>;

/// Reads `blob` to its end in [`SHARED_CHUNK`] pieces and sends each to every
/// reader still there; the slowest reader sets the pace.
fn broadcast(mut blob: BlobReader, mut senders: Vec<tokio::sync::mpsc::Sender<Chunk>>) {
    loop {
        let mut chunk = vec![0u8; SHARED_CHUNK];
        let chunk: Chunk = match read_full(&mut blob, &mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                chunk.truncate(n);
                Ok(Arc::new(chunk))
            }
            Err(e) => Err(e.kind()),
        };
        let failed = chunk.is_err();
        senders.retain(|tx| tx.blocking_send(chunk.clone()).is_ok());
        if failed || senders.is_empty() {
            return;
        }
    }
}

fn read_full(from: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match from.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// One restore's view of a shared blob read: an [`AsyncRead`] over the
/// chunks [`broadcast`] sends; dropping it stops its feed.
#[derive(Debug)]
struct SharedArchive {
    rx: tokio::sync::mpsc::Receiver<Chunk>,
    current: Arc<Vec<u8>>,
    pos: usize,
}

impl SharedArchive {
    fn new(rx: tokio::sync::mpsc::Receiver<Chunk>) -> Self {
        Self {
            rx,
            current: Arc::new(Vec::new()),
            pos: 0,
        }
    }
}

impl AsyncRead for SharedArchive {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = &mut *self;
        while this.pos == this.current.len() {
            match std::task::ready!(this.rx.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.current = chunk;
                    this.pos = 0;
                }
                Some(Err(kind)) => {
                    return std::task::Poll::Ready(Err(io::Error::new(
                        kind,
                        "reading the snapshot's blob failed",
                    )));
                }
                // The whole blob was sent.
                None => return std::task::Poll::Ready(Ok(())),
            }
        }
        let n = buf.remaining().min(this.current.len() - this.pos);
        buf.put_slice(&this.current[this.pos..this.pos + n]);
        this.pos += n;
        std::task::Poll::Ready(Ok(()))
    }
}

/// `io::copy` in [`COPY_BYTES`] pieces.
fn copy(from: &mut impl Read, to: &mut (impl io::Write + ?Sized)) -> io::Result<u64> {
    let mut buf = vec![0u8; COPY_BYTES];
    let mut copied = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(copied),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        copied += n as u64;
    }
}

/// Restores the archive into `scratch` with every safety check, then removes it.
fn check_archive(
    archive: impl Read,
    scratch: PathBuf,
    options: &paddock_snapshot::UnpackOptions,
) -> Result<paddock_snapshot::UnpackStats, SnapshotError> {
    let restored = paddock_snapshot::unpack(archive, &scratch, options);
    if let Err(err) = std::fs::remove_dir_all(&scratch)
        && err.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(path = %scratch.display(), error = %err, "removing an import's scratch tree");
    }
    restored
}

/// The record's blob key; the store only ever holds valid ones.
fn blob_key(record: &SnapshotRecord) -> Result<BlobKey, ServiceError> {
    BlobKey::parse(&record.blob_hash).map_err(|source| ServiceError::BadBlobKey {
        id: record.id.to_string(),
        source,
    })
}
