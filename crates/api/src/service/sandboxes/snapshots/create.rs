//! Taking a snapshot: a running sandbox's workspace exported into the blob
//! store and recorded, its parent the snapshot the sandbox was restored from.

use tokio::io::AsyncWriteExt;

use super::{
    BlobError, CreateSnapshot, PIPE_BYTES, SandboxId, SandboxRecord, SandboxService, ServiceError,
    SnapshotExportOptions, SnapshotId, SnapshotRecord, SnapshotView, StoreError, SyncIoBridge,
    TenantId, check_limits, io, joined, over_quota, snapshot_record, write_blob,
};

impl SandboxService {
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
        let Some(parent) = sandbox.spec.restored_from.clone() else {
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
}
