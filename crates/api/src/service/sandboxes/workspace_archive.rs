//! Workspaces moved as archives: one made from an uploaded tar.zst (what
//! `paddock run --server` sends instead of one PUT per file), and a
//! workspace's files packed for download (`paddock workspace download`).
//!
//! The upload is unpacked straight into the new workspace's directory by
//! `paddock_snapshot::unpack`, with every hostile-archive check of a
//! snapshot import and held to the tenant's disk quota; an archive that
//! fails leaves neither the row nor the directory. The download packs into
//! a scratch file first, so an over-limit workspace is a clean 400 rather
//! than a truncated stream.

use std::io;
use std::path::PathBuf;

use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_proto::error_chain;
use paddock_snapshot::{PackOptions, SnapshotError};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio_util::io::SyncIoBridge;

use super::commands::CreateWorkspace;
use super::snapshots::{check_limits, unpack_options};
use super::{SandboxService, ServiceError, WorkspaceView};

/// Bytes buffered between the HTTP body and the blocking unpack.
const PIPE_BYTES: usize = 1 << 20;

/// `POST /v1/workspaces/import`'s query: the new workspace's name and the
/// limits of the archive's check (each missing one is the snapshot default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ImportWorkspace {
    /// The workspace's name (default "upload").
    #[serde(default)]
    pub name: Option<String>,
    /// Most entries the archive may hold.
    #[serde(default)]
    #[param(minimum = 1, maximum = 1000000)]
    pub max_files: Option<u64>,
    /// Most file bytes before compression.
    #[serde(default)]
    #[param(minimum = 1, maximum = 8589934592_u64)]
    pub max_bytes: Option<u64>,
}

/// `GET /v1/workspaces/{id}/archive`'s query: the limits of the pack.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams,
)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExportWorkspace {
    /// Most entries the archive may hold.
    #[serde(default)]
    #[param(minimum = 1, maximum = 1000000)]
    pub max_files: Option<u64>,
    /// Most file bytes before compression.
    #[serde(default)]
    #[param(minimum = 1, maximum = 8589934592_u64)]
    pub max_bytes: Option<u64>,
}

/// A workspace packed for download: an open (already unlinked) file.
#[derive(Debug)]
pub struct WorkspaceArchive {
    pub size: u64,
    pub file: tokio::fs::File,
}

impl SandboxService {
    /// A new workspace holding the files of the uploaded archive. All or
    /// nothing: a refused or broken archive removes the workspace again.
    pub async fn import_workspace(
        &self,
        tenant: &TenantId,
        query: ImportWorkspace,
        body: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<WorkspaceView, ServiceError> {
        check_limits(query.max_files, query.max_bytes)?;
        let _writing = self.disk_writer(tenant).await;
        let disk = self.disk_use(tenant).await?;
        if disk.left() == 0 {
            return Err(disk.exceeded("nothing is left for a new workspace".to_owned()));
        }
        let name = query.name.unwrap_or_else(|| "upload".to_owned());
        let workspace = self
            .create_workspace(
                tenant,
                CreateWorkspace {
                    name,
                    quota_bytes: None,
                },
            )
            .await?;
        let dir = self.config.workspaces_root.join(workspace.id.as_str());
        // The unpack moves its finished tree into place: the (new, empty)
        // directory must not be there yet.
        if let Err(source) = tokio::fs::remove_dir(&dir).await {
            self.remove_failed(tenant, &workspace.id).await;
            return Err(ServiceError::Workspace {
                id: workspace.id.to_string(),
                source,
            });
        }
        let mut options = unpack_options(query.max_files, query.max_bytes);
        let quota_bound = disk.left() < options.limits.max_bytes;
        options.limits.max_bytes = options.limits.max_bytes.min(disk.left());
        // every entry charged its blocks and inode as it is unpacked
        options.max_disk_bytes = disk.left();

        let (mut to_unpack, unpack_rx) = tokio::io::duplex(PIPE_BYTES);
        let bridge = SyncIoBridge::new(unpack_rx);
        let target = dir.clone();
        let unpack = tokio::task::spawn_blocking(move || {
            paddock_snapshot::unpack(bridge, &target, &options)
        });
        let mut upload = Ok(());
        match tokio::io::copy(body, &mut to_unpack).await {
            Ok(_) => {}
            // The unpack stopped reading (it failed): its error says why.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Err(source) => upload = Err(ServiceError::Upload { source }),
        }
        let _ = to_unpack.shutdown().await;
        drop(to_unpack);
        let unpacked = unpack.await.map_err(|e| ServiceError::Workspace {
            id: workspace.id.to_string(),
            source: io::Error::other(e),
        });
        let result = upload.and(unpacked).and_then(|r| {
            r.map_err(|err| match err {
                SnapshotError::OverLimit {
                    limit: paddock_snapshot::Limit::Bytes(left),
                    path,
                } if quota_bound => disk.exceeded(format!(
                    "the archive declares more than the {left} bytes left (at {path:?})"
                )),
                SnapshotError::OverLimit {
                    limit: paddock_snapshot::Limit::Disk(left),
                    path,
                } => disk.exceeded(format!(
                    "unpacking the archive would take more than the {left} bytes of disk left \
                     (each file's blocks and inode; stopped at {path:?}, nothing kept)"
                )),
                err => refusal(err),
            })
        });
        self.disk.forget(tenant);
        match result {
            Ok(stats) => {
                tracing::info!(workspace_id = %workspace.id, files = stats.files, "workspace imported");
                Ok(workspace)
            }
            Err(err) => {
                self.remove_failed(tenant, &workspace.id).await;
                Err(err)
            }
        }
    }

    /// Deletes the workspace of a failed import (row and directory).
    async fn remove_failed(&self, tenant: &TenantId, id: &WorkspaceId) {
        if let Err(e) = self.delete_workspace(tenant, id).await {
            tracing::warn!(workspace_id = %id, error = %e, "removing the workspace of a failed import");
        }
    }

    /// The workspace's files packed as a snapshot would pack them (the
    /// default excludes), within `query`'s limits.
    pub async fn export_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
        query: ExportWorkspace,
    ) -> Result<WorkspaceArchive, ServiceError> {
        check_limits(query.max_files, query.max_bytes)?;
        let workspace = self
            .store
            .get_workspace(tenant, id)
            .await
            .map_err(ServiceError::store("get_workspace"))?;
        let dir = match &workspace.root {
            Some(root) => PathBuf::from(root),
            None => self.workspace_location(tenant, id).await?.path,
        };
        let defaults = PackOptions::default();
        let options = PackOptions {
            limits: paddock_snapshot::Limits {
                max_files: query.max_files.unwrap_or(defaults.limits.max_files),
                max_bytes: query.max_bytes.unwrap_or(defaults.limits.max_bytes),
            },
            ..defaults
        };
        tokio::fs::create_dir_all(&self.config.workspaces_root)
            .await
            .map_err(|source| ServiceError::Workspace {
                id: id.to_string(),
                source,
            })?;
        let scratch = self.config.workspaces_root.join(format!(
            ".export-{}",
            paddock_core::ids::SnapshotId::generate().as_str()
        ));
        let ws = id.to_string();
        let packed = tokio::task::spawn_blocking(move || -> Result<std::fs::File, ServiceError> {
            let workspace_io = |source| ServiceError::Workspace {
                id: ws.clone(),
                source,
            };
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&scratch)
                .map_err(workspace_io)?;
            // Unlinked at once: the open file is all that is left of it.
            let _ = std::fs::remove_file(&scratch);
            paddock_snapshot::pack(&dir, &options, &mut file).map_err(refusal)?;
            io::Seek::rewind(&mut file).map_err(workspace_io)?;
            Ok(file)
        })
        .await
        .map_err(|e| ServiceError::Workspace {
            id: id.to_string(),
            source: io::Error::other(e),
        })??;
        let size = packed
            .metadata()
            .map_err(|source| ServiceError::Workspace {
                id: id.to_string(),
                source,
            })?
            .len();
        Ok(WorkspaceArchive {
            size,
            file: tokio::fs::File::from_std(packed),
        })
    }
}

/// An archive (or a workspace) the checks refused is the caller's 400; any
/// other failure is the server's.
fn refusal(err: SnapshotError) -> ServiceError {
    match err {
        SnapshotError::Refused { .. }
        | SnapshotError::OverLimit { .. }
        | SnapshotError::Decompress { .. }
        | SnapshotError::ReadArchive { .. }
        | SnapshotError::Truncated { .. }
        | SnapshotError::TooDeep { .. } => ServiceError::SnapshotRefused {
            reason: error_chain(&err),
        },
        source => ServiceError::CheckArchive { source },
    }
}
