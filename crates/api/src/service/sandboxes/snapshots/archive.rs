//! Archives in and out: a snapshot's archive downloaded, an uploaded archive
//! checked by a full safe restore and stored as a snapshot.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    AsyncRead, BlobError, BlobKey, BlobReader, ImportSnapshot, PIPE_BYTES, PathBuf, Read,
    SandboxService, ServiceError, SnapshotArchive, SnapshotError, SnapshotId, SnapshotView,
    StoreError, SyncIoBridge, TenantId, blob_key, check_limits, copy, error_chain, io, joined,
    over_quota, snapshot_record, unpack_options, write_blob,
};

impl SandboxService {
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
    pub(super) async fn open_blob(
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
