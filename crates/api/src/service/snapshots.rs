//! Workspace snapshots: export a running sandbox's workspace into the blob
//! store, restore (or fork) a snapshot into fresh sandboxes, and move archives
//! in and out (download, import).
//!
//! Archives stream through bounded pipes between the guest connection (or
//! the HTTP body) and the blocking blob store; none is held whole in memory.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::blob::{BlobError, BlobKey, BlobStore, BlobWriter};
use paddock_core::ids::{SnapshotId, TenantId};
use paddock_core::sandbox::{SandboxId, SnapshotExportOptions, SnapshotImportOptions};
use paddock_core::store::{SnapshotFilter, SnapshotRecord};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_util::io::SyncIoBridge;

use super::commands::{CreateSandbox, CreateWorkspace, LimitsRequest};
use super::{SandboxService, SandboxView, ServiceError};
use paddock_proto::NetworkMode;
use paddock_snapshot::SnapshotError;

/// Bytes buffered between the async and the blocking side of a transfer.
const PIPE_BYTES: usize = 1 << 20;
/// Most sandboxes one restore (fork) makes.
pub const MAX_RESTORE_COUNT: u32 = 16;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSnapshot {
    /// Patterns left out, added to the defaults (node_modules, target, ...).
    #[serde(default)]
    pub excludes: Vec<String>,
    #[serde(default)]
    pub max_files: Option<u64>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreSnapshot {
    /// How many sandboxes to make (more than one is a fork).
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub limits: LimitsRequest,
    #[serde(default)]
    pub network: NetworkMode,
    #[serde(default)]
    pub read_only: bool,
}

fn one() -> u32 {
    1
}

impl Default for RestoreSnapshot {
    fn default() -> Self {
        Self {
            count: 1,
            limits: LimitsRequest::default(),
            network: NetworkMode::default(),
            read_only: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotView {
    pub id: SnapshotId,
    pub workspace: Option<paddock_core::ids::WorkspaceId>,
    pub source_sandbox: Option<SandboxId>,
    pub parent: Option<SnapshotId>,
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

impl SandboxService {
    fn blobs(&self) -> Result<Arc<dyn BlobStore>, ServiceError> {
        self.config
            .blobs
            .clone()
            .ok_or(ServiceError::SnapshotsUnavailable)
    }

    /// Packs the sandbox's workspace into a new snapshot.
    pub async fn create_snapshot(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: CreateSnapshot,
    ) -> Result<SnapshotView, ServiceError> {
        let blobs = self.blobs()?;
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let (mut pipe, rx) = tokio::io::duplex(PIPE_BYTES);
        let bridge = SyncIoBridge::new(rx);
        let store_task = tokio::task::spawn_blocking(move || write_blob(&*blobs, bridge));
        let options = SnapshotExportOptions {
            excludes: command.excludes.clone(),
            max_files: command.max_files,
            max_bytes: command.max_bytes,
        };
        let exported = live.guest.snapshot_export(options, &mut pipe).await;
        let _ = pipe.shutdown().await;
        drop(pipe);
        let stored = store_task.await.map_err(joined("put"))?;
        let stats = match exported {
            Ok(stats) => stats,
            Err(e) => return Err(self.guest_failed(id, "snapshot_export", e).await),
        };
        let writer = stored.map_err(|source| ServiceError::Blob { op: "put", source })?;
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
        let snapshot = SnapshotRecord {
            id: SnapshotId::generate(),
            tenant: tenant.clone(),
            workspace: record.workspace.clone(),
            source_sandbox: Some(id.clone()),
            session: None,
            parent: None,
            file_count: stats.files,
            bytes_raw: stats.bytes_raw,
            bytes_compressed: info.size,
            excludes: command.excludes,
            blob_hash: info.key.to_string(),
            created_at: self.clock.now(),
        };
        self.store
            .create_snapshot(&snapshot)
            .await
            .map_err(ServiceError::store("create_snapshot"))?;
        tracing::info!(sandbox_id = %id, snapshot_id = %snapshot.id, files = stats.files, bytes = info.size, "snapshot created");
        Ok(SnapshotView::from(&snapshot))
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

    /// Deletes the snapshot's row. The blob stays: another snapshot (of any
    /// tenant) with the same content shares it, and restores already reading
    /// it keep going.
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
        Ok(SnapshotView::from(&record))
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
        if command.read_only {
            return Err(ServiceError::invalid(
                "read_only",
                "a restore writes the workspace through the guest; read-only restores are not supported yet",
            ));
        }
        command.limits.resolve(&self.config.limits)?;
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        let restores =
            (0..command.count).map(|_| self.restore_one(tenant, &record.id, &key, &command));
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
            }
            return Err(err);
        }
        tracing::info!(snapshot_id = %id, count = views.len(), "snapshot restored");
        Ok(views)
    }

    async fn restore_one(
        &self,
        tenant: &TenantId,
        snapshot: &SnapshotId,
        key: &BlobKey,
        command: &RestoreSnapshot,
    ) -> Result<SandboxView, ServiceError> {
        let workspace = self
            .create_workspace(
                tenant,
                CreateWorkspace {
                    name: format!("restore of {snapshot}"),
                },
            )
            .await?;
        let view = self
            .create_sandbox(
                tenant,
                CreateSandbox {
                    workspace: Some(workspace.id),
                    limits: command.limits.clone(),
                    network: command.network,
                    read_only: false,
                },
            )
            .await?;
        if let Err(err) = self.import_blob(tenant, &view.id, key).await {
            if let Err(e) = self.delete_sandbox(tenant, &view.id).await {
                tracing::warn!(sandbox_id = %view.id, error = %e, "destroying a sandbox of a failed restore");
            }
            return Err(err);
        }
        Ok(view)
    }

    /// Streams a blob into the sandbox's (empty) workspace.
    async fn import_blob(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        key: &BlobKey,
    ) -> Result<(), ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let mut archive = self.open_archive(key).await?;
        let imported = live
            .guest
            .snapshot_import(SnapshotImportOptions::default(), &mut archive.body)
            .await;
        match imported {
            Ok(_) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "snapshot_import", e).await),
        }
    }

    /// The snapshot's archive, streamed from the blob store.
    pub async fn snapshot_archive(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotArchive, ServiceError> {
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        self.open_archive(&key).await
    }

    async fn open_archive(&self, key: &BlobKey) -> Result<SnapshotArchive, ServiceError> {
        let blobs = self.blobs()?;
        let key = key.clone();
        let blob = tokio::task::spawn_blocking(move || blobs.open(&key))
            .await
            .map_err(joined("open"))?
            .map_err(|source| ServiceError::Blob { op: "open", source })?;
        let size = blob.size;
        let (tx, rx) = tokio::io::duplex(PIPE_BYTES);
        let mut bridge = SyncIoBridge::new(tx);
        tokio::task::spawn_blocking(move || {
            let mut blob = blob;
            // A failed read ends the stream early; the reader sees a truncated archive.
            if let Err(err) = io::copy(&mut blob, &mut bridge) {
                tracing::debug!(error = %err, "streaming a snapshot archive stopped");
            }
        });
        Ok(SnapshotArchive { size, body: rx })
    }

    /// Stores an uploaded archive as a snapshot. While it is stored it is
    /// also restored into a scratch directory with every safety check; only
    /// an archive that passed is kept.
    pub async fn import_snapshot(
        &self,
        tenant: &TenantId,
        body: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotView, ServiceError> {
        let blobs = self.blobs()?;
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
        let store_task = tokio::task::spawn_blocking(move || write_blob(&*blobs, blob_bridge));
        let scratch = self
            .config
            .workspaces_root
            .join(format!(".import-{}", SnapshotId::generate().as_str()));
        let check_task = tokio::task::spawn_blocking(move || check_archive(check_bridge, scratch));

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
            SnapshotError::Refused { .. }
            | SnapshotError::OverLimit { .. }
            | SnapshotError::Decompress { .. }
            | SnapshotError::ReadArchive { .. }
            | SnapshotError::Truncated { .. } => ServiceError::SnapshotRefused {
                reason: chain(&err),
            },
            source => ServiceError::CheckArchive { source },
        })?;
        let writer = writer.map_err(|source| ServiceError::Blob { op: "put", source })?;
        let info = tokio::task::spawn_blocking(move || writer.commit())
            .await
            .map_err(joined("commit"))?
            .map_err(|source| ServiceError::Blob {
                op: "commit",
                source,
            })?;
        let snapshot = SnapshotRecord {
            id: SnapshotId::generate(),
            tenant: tenant.clone(),
            workspace: None,
            source_sandbox: None,
            session: None,
            parent: None,
            file_count: stats.files,
            bytes_raw: stats.bytes,
            bytes_compressed: info.size,
            excludes: Vec::new(),
            blob_hash: info.key.to_string(),
            created_at: self.clock.now(),
        };
        self.store
            .create_snapshot(&snapshot)
            .await
            .map_err(ServiceError::store("create_snapshot"))?;
        tracing::info!(snapshot_id = %snapshot.id, files = stats.files, "snapshot imported");
        Ok(SnapshotView::from(&snapshot))
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

/// Copies everything `data` yields into a new, uncommitted blob.
fn write_blob(
    blobs: &dyn BlobStore,
    mut data: impl Read,
) -> Result<Box<dyn BlobWriter>, BlobError> {
    let mut writer = blobs.writer()?;
    io::copy(&mut data, &mut writer).map_err(|source| BlobError::Put { source })?;
    Ok(writer)
}

/// Restores the archive into `scratch` with every safety check, then removes it.
fn check_archive(
    archive: impl Read,
    scratch: PathBuf,
) -> Result<paddock_snapshot::UnpackStats, SnapshotError> {
    let restored = paddock_snapshot::unpack(
        archive,
        &scratch,
        &paddock_snapshot::UnpackOptions::default(),
    );
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

fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
