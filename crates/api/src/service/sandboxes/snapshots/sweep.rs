//! Collecting the blobs no row names once their grace period passed: on
//! demand and from a periodic sweeper.

use super::{
    Arc, BlobKey, BlobStore, BlobSweep, Duration, JoinHandle, SandboxService, ServiceError,
    SystemTime, joined,
};

impl SandboxService {
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
    pub(super) fn blob_cutoff(&self) -> SystemTime {
        SystemTime::now()
            .checked_sub(self.config.blob_grace)
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// Removes the blob if no snapshot row names it and it was last written
    /// before `cutoff`; whether it did.
    pub(super) async fn collect_blob(
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
}
