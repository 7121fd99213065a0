//! Workspace directories on the host and their snapshots: the end-of-run
//! snapshot packs the directory into the blob store (after the sandbox is
//! gone, so nothing writes meanwhile), and a fork restores one into a new
//! directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use paddock_core::blob::{BlobInfo, BlobKey, BlobStore};
use paddock_core::ids::{SessionId, TenantId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{SnapshotRecord, Store, Workspace};
use paddock_snapshot::{Limits, PackOptions, PackStats, UnpackOptions, snapshot_record};

use crate::config::RuntimeConfig;
use crate::error::RuntimeError;

/// Where an existing workspace's files are, and the quota the host's kernel
/// holds them to.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) dir: PathBuf,
    pub(crate) quota: Option<paddock_proto::WorkspaceQuotaEnforcement>,
}

/// Where an existing workspace's files are: its subvolume in the volume
/// pool when it was made with a quota (as the server's sandboxes find it),
/// else [`workspace_dir`].
pub(crate) async fn locate(
    config: &RuntimeConfig,
    workspace: &Workspace,
) -> Result<Located, RuntimeError> {
    if let Some(volumes) = &config.volumes
        && let Some(pool) = volumes
            .workspace(&workspace.tenant, &workspace.id)
            .await
            .map_err(|source| RuntimeError::WorkspacePool {
                workspace: workspace.id.clone(),
                source,
            })?
    {
        return Ok(Located {
            dir: pool.path,
            quota: Some(pool.quota),
        });
    }
    Ok(Located {
        dir: workspace_dir(config, workspace),
        quota: None,
    })
}

/// The host directory of a workspace: its registered root, or its default
/// place under the runtime's workspaces root. A new workspace (a fork's, a
/// subagent's) is always here; an existing one may be in the pool
/// ([`locate`]).
pub(crate) fn workspace_dir(config: &RuntimeConfig, workspace: &Workspace) -> PathBuf {
    match &workspace.root {
        Some(root) => PathBuf::from(root),
        None => config.workspaces_root.join(workspace.id.as_str()),
    }
}

/// Creates `dir` (and its parents) if it is missing.
pub(crate) async fn ensure_dir(dir: &Path) -> Result<(), RuntimeError> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|source| RuntimeError::WorkspaceDir {
            path: dir.to_path_buf(),
            source,
        })
}

/// Where a snapshot comes from, for its row.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotSource {
    pub(crate) tenant: TenantId,
    pub(crate) workspace: Workspace,
    pub(crate) dir: PathBuf,
    pub(crate) session: Option<SessionId>,
    pub(crate) sandbox: Option<SandboxId>,
}

/// Packs `source.dir` into the blob store and records the snapshot.
pub(crate) async fn snapshot_dir(
    store: &Arc<dyn Store>,
    blobs: &Arc<dyn BlobStore>,
    config: &RuntimeConfig,
    limits: Limits,
    source: SnapshotSource,
) -> Result<SnapshotRecord, RuntimeError> {
    let options = pack_options(config, limits);
    let excludes = options.excludes.clone();
    let dir = source.dir.clone();
    let blobs = Arc::clone(blobs);
    let packed = tokio::task::spawn_blocking(move || {
        let mut writer = blobs.writer().map_err(|source| RuntimeError::Blob {
            what: "write".to_owned(),
            source,
        })?;
        let stats = paddock_snapshot::pack(&dir, &options, &mut writer).map_err(|source| {
            match crate::snapshot_limits::limit_hit(&source) {
                Some(hit) => RuntimeError::SnapshotLimit {
                    path: dir.clone(),
                    hit,
                },
                None => RuntimeError::SnapshotPack {
                    path: dir.clone(),
                    source,
                },
            }
        })?;
        let info = writer.commit().map_err(|source| RuntimeError::Blob {
            what: "commit".to_owned(),
            source,
        })?;
        Ok::<_, RuntimeError>((stats, info))
    })
    .await
    .map_err(|e| RuntimeError::Task {
        what: format!("packing {}", source.dir.display()),
        reason: e.to_string(),
    })?;
    let (stats, info) = packed?;
    record_snapshot(store, source, &stats, &info, excludes).await
}

/// The pack options of the runtime's snapshots, within `limits` (the
/// runtime's, or a run's own).
pub(crate) fn pack_options(config: &RuntimeConfig, limits: Limits) -> PackOptions {
    PackOptions {
        excludes: config.snapshot.excludes.clone(),
        limits,
        ..PackOptions::default()
    }
}

/// Records a snapshot packed from `source.dir` and stored as `info`.
pub(crate) async fn record_snapshot(
    store: &Arc<dyn Store>,
    source: SnapshotSource,
    stats: &PackStats,
    info: &BlobInfo,
    excludes: Vec<String>,
) -> Result<SnapshotRecord, RuntimeError> {
    let record = SnapshotRecord {
        workspace: Some(source.workspace.id),
        source_sandbox: source.sandbox,
        session: source.session,
        ..snapshot_record(source.tenant, stats, info, excludes, store.now())
    };
    store
        .create_snapshot(&record)
        .await
        .map_err(RuntimeError::store("create_snapshot"))?;
    Ok(record)
}

/// Restores `snapshot` into `target`, which must not exist yet (or be empty).
pub(crate) async fn restore_into(
    blobs: &Arc<dyn BlobStore>,
    config: &RuntimeConfig,
    snapshot: &SnapshotRecord,
    target: &Path,
) -> Result<(), RuntimeError> {
    let key = BlobKey::parse(&snapshot.blob_hash).map_err(|e| RuntimeError::Invalid {
        reason: format!("snapshot {}: {e}", snapshot.id),
    })?;
    let options = UnpackOptions {
        limits: config.snapshot.limits,
        ..UnpackOptions::default()
    };
    let blobs = Arc::clone(blobs);
    let id = snapshot.id.clone();
    let path = target.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let reader = blobs.open(&key).map_err(|source| RuntimeError::Blob {
            what: format!("{id} ({key})"),
            source,
        })?;
        paddock_snapshot::unpack(reader, &path, &options)
            .map(drop)
            .map_err(|source| RuntimeError::SnapshotRestore {
                snapshot: id,
                path,
                source,
            })
    })
    .await
    .map_err(|e| RuntimeError::Task {
        what: format!("restoring into {}", target.display()),
        reason: e.to_string(),
    })?
}
