//! The snapshot rows: listed, read, deleted (with their blob when nothing
//! else names it).

use super::{
    SandboxService, ServiceError, SnapshotFilter, SnapshotId, SnapshotView, TenantId, blob_key,
    page,
};

impl SandboxService {
    pub async fn list_snapshots(
        &self,
        tenant: &TenantId,
        after: Option<SnapshotId>,
        limit: Option<u32>,
    ) -> Result<Vec<SnapshotView>, ServiceError> {
        let page = page(after.map(String::from), limit)?;
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
}
