//! Snapshots of named volumes: a read-only btrfs snapshot of the volume's
//! subvolume (instant: it shares the volume's blocks until the volume
//! changes), listed and deleted per volume, and the source of a new volume
//! (`POST /v1/volumes` with `from_snapshot`). The row is the store's, the
//! bytes the [`VolumeHost`](paddock_core::volume::VolumeHost)'s. A volume
//! with snapshots is not deleted (409 naming one): nothing is lost by a
//! delete that did not say it meant the snapshots too.

use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, Page};
use paddock_core::volume::{VolumeError, VolumeName, VolumeRecord, VolumeSnapshotRecord};
use serde::{Deserialize, Serialize};

use super::{SandboxService, ServiceError};

/// `POST /v1/volumes/{name}/snapshots`, `paddock volume snapshot create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVolumeSnapshot {
    /// Unique per volume, with a volume name's rules.
    pub name: VolumeName,
}

/// A volume's snapshot to make a new volume from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSource {
    pub volume: VolumeName,
    pub snapshot: VolumeName,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeSnapshotView {
    pub volume: VolumeName,
    pub name: VolumeName,
    /// Bytes only the snapshot holds (what deleting it frees), counted in
    /// the tenant's disk usage; only the list reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_bytes: Option<u64>,
    pub created_at: String,
}

impl VolumeSnapshotView {
    fn of(record: &VolumeSnapshotRecord, exclusive_bytes: Option<u64>) -> Self {
        Self {
            volume: record.volume.clone(),
            name: record.name.clone(),
            exclusive_bytes,
            created_at: record.created_at.to_string(),
        }
    }
}

fn host_error(op: &'static str) -> impl FnOnce(VolumeError) -> ServiceError {
    move |source| ServiceError::Volume { op, source }
}

impl SandboxService {
    pub async fn create_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        command: CreateVolumeSnapshot,
    ) -> Result<VolumeSnapshotView, ServiceError> {
        let host = self.volume_host()?;
        let record = VolumeSnapshotRecord {
            tenant: tenant.clone(),
            volume: volume.clone(),
            name: command.name,
            created_at: self.store.now(),
        };
        self.store
            .create_volume_snapshot(&record)
            .await
            .map_err(ServiceError::store("create_volume_snapshot"))?;
        if let Err(source) = host.snapshot(tenant, volume, &record.name).await {
            // no row for a snapshot the host could not take
            if let Err(e) = self
                .store
                .delete_volume_snapshot(tenant, volume, &record.name)
                .await
            {
                tracing::warn!(volume = %volume, snapshot = %record.name, error = %e, "removing the row of a snapshot that failed");
            }
            return Err(host_error("snapshot")(source));
        }
        self.disk.forget(tenant);
        tracing::info!(tenant_id = %tenant, volume = %volume, snapshot = %record.name, "volume snapshot taken");
        Ok(VolumeSnapshotView::of(&record, None))
    }

    /// The volume's snapshots by name, with the bytes each holds alone.
    pub async fn list_volume_snapshots(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        after: Option<VolumeName>,
        limit: Option<u32>,
    ) -> Result<Vec<VolumeSnapshotView>, ServiceError> {
        let host = self.volume_host()?;
        self.store
            .get_volume(tenant, volume)
            .await
            .map_err(ServiceError::store("get_volume"))?;
        let page = super::page(after.map(String::from), limit)?;
        let records = self
            .store
            .list_volume_snapshots(tenant, volume, &page)
            .await
            .map_err(ServiceError::store("list_volume_snapshots"))?;
        let mut views = Vec::with_capacity(records.len());
        for record in &records {
            let bytes = host
                .snapshot_bytes(tenant, volume, &record.name)
                .await
                .map_err(host_error("snapshot usage"))?;
            views.push(VolumeSnapshotView::of(record, Some(bytes)));
        }
        Ok(views)
    }

    pub async fn delete_volume_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        name: &VolumeName,
    ) -> Result<VolumeSnapshotView, ServiceError> {
        let host = self.volume_host()?;
        let record = self
            .store
            .get_volume_snapshot(tenant, volume, name)
            .await
            .map_err(ServiceError::store("get_volume_snapshot"))?;
        match host.remove_snapshot(tenant, volume, name).await {
            Ok(()) | Err(VolumeError::Missing { .. }) => {}
            Err(source) => return Err(host_error("delete snapshot")(source)),
        }
        self.store
            .delete_volume_snapshot(tenant, volume, name)
            .await
            .map_err(ServiceError::store("delete_volume_snapshot"))?;
        self.disk.forget(tenant);
        tracing::info!(tenant_id = %tenant, volume = %volume, snapshot = %name, "volume snapshot deleted");
        Ok(VolumeSnapshotView::of(&record, None))
    }

    /// Refuses (409, naming one) to delete a volume that has snapshots.
    pub(super) async fn refuse_volume_with_snapshots(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
    ) -> Result<(), ServiceError> {
        let page = Page {
            after: None,
            limit: 1,
        };
        let first = self
            .store
            .list_volume_snapshots(tenant, volume, &page)
            .await
            .map_err(ServiceError::store("list_volume_snapshots"))?;
        match first.first() {
            None => Ok(()),
            Some(snapshot) => Err(ServiceError::Conflict {
                entity: "volume",
                id: volume.to_string(),
                reason: format!(
                    "it has snapshots (e.g. {}); delete them first \
                     (DELETE /v1/volumes/{volume}/snapshots/{}, `paddock volume snapshot delete`)",
                    snapshot.name, snapshot.name
                ),
            }),
        }
    }

    /// Makes the host's bytes of `record` (its row is stored) a writable
    /// copy of `source`'s snapshot.
    pub(super) async fn create_volume_from_snapshot(
        &self,
        tenant: &TenantId,
        record: &VolumeRecord,
        source: &SnapshotSource,
    ) -> Result<(), ServiceError> {
        self.store
            .get_volume_snapshot(tenant, &source.volume, &source.snapshot)
            .await
            .map_err(ServiceError::store("get_volume_snapshot"))?;
        self.volume_host()?
            .create_from_snapshot(
                tenant,
                &source.volume,
                &source.snapshot,
                &record.name,
                record.quota_bytes,
            )
            .await
            .map_err(host_error("create from snapshot"))?;
        Ok(())
    }

    /// Bytes the tenant's volume snapshots hold alone (the disk usage's
    /// `volume_snapshots`; the volumes themselves are bounded by their
    /// quotas, within the tenant's disk quota, and not counted here).
    pub(super) async fn volume_snapshot_bytes(
        &self,
        tenant: &TenantId,
    ) -> Result<u64, ServiceError> {
        let Some(host) = self.config.volumes.as_deref() else {
            return Ok(0);
        };
        let mut total = 0u64;
        let mut after = None;
        loop {
            let page = Page {
                after: after.take(),
                limit: MAX_PAGE,
            };
            let volumes = self
                .store
                .list_volumes(tenant, &page)
                .await
                .map_err(ServiceError::store("list_volumes"))?;
            for volume in &volumes {
                let mut snap_after = None;
                loop {
                    let page = Page {
                        after: snap_after.take(),
                        limit: MAX_PAGE,
                    };
                    let snapshots = self
                        .store
                        .list_volume_snapshots(tenant, &volume.name, &page)
                        .await
                        .map_err(ServiceError::store("list_volume_snapshots"))?;
                    for s in &snapshots {
                        let bytes = host
                            .snapshot_bytes(tenant, &s.volume, &s.name)
                            .await
                            .map_err(host_error("snapshot usage"))?;
                        total = total.saturating_add(bytes);
                    }
                    if snapshots.len() < MAX_PAGE as usize {
                        break;
                    }
                    snap_after = snapshots.last().map(|s| s.name.to_string());
                }
            }
            if volumes.len() < MAX_PAGE as usize {
                break;
            }
            after = volumes.last().map(|v| v.name.to_string());
        }
        Ok(total)
    }
}
