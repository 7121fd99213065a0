//! Named volumes: create, list, get, delete. The row is the store's, the
//! bytes the [`VolumeHost`](paddock_core::volume::VolumeHost)'s; a volume
//! is a tenant's, and another tenant's is "not found".

use paddock_core::ids::TenantId;
use paddock_core::volume::{VOLUME_MIN_BYTES, VolumeError, VolumeHost, VolumeName, VolumeRecord};
use serde::{Deserialize, Serialize};

use super::{SandboxService, ServiceError};

/// How long a volume delete waits for the starts under way that mount
/// volumes (a microVM's boot under TCG takes tens of seconds).
const VOLUME_GATE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// `POST /v1/volumes`, `paddock volume create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVolume {
    pub name: VolumeName,
    /// Bytes the volume may hold (at least 1 MiB, at most the tenant's disk
    /// quota); the kernel refuses the write past it ("Disk quota exceeded").
    #[schema(minimum = 1048576)]
    pub quota_bytes: u64,
    /// Start as a writable copy of this snapshot of one of the tenant's
    /// volumes (its quota is this volume's own `quota_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_snapshot: Option<super::volume_snapshots::SnapshotSource>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeView {
    pub name: VolumeName,
    pub quota_bytes: u64,
    /// Bytes it holds now as its quota counts them (an empty volume's
    /// metadata counts too); only `GET /v1/volumes/{name}` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_bytes: Option<u64>,
    pub created_at: String,
}

impl VolumeView {
    fn of(record: &VolumeRecord, used_bytes: Option<u64>) -> Self {
        Self {
            name: record.name.clone(),
            quota_bytes: record.quota_bytes,
            used_bytes,
            created_at: record.created_at.to_string(),
        }
    }
}

impl SandboxService {
    pub(super) fn volume_host(&self) -> Result<&dyn VolumeHost, ServiceError> {
        self.config
            .volumes
            .as_deref()
            .ok_or(ServiceError::VolumesUnavailable)
    }

    pub async fn create_volume(
        &self,
        tenant: &TenantId,
        command: CreateVolume,
    ) -> Result<VolumeView, ServiceError> {
        let host = self.volume_host()?;
        let max = self.config.tenant_disk_quota;
        if !(VOLUME_MIN_BYTES..=max).contains(&command.quota_bytes) {
            return Err(ServiceError::invalid(
                "quota_bytes",
                format!("must be between {VOLUME_MIN_BYTES} and {max} (the tenant's disk quota)"),
            ));
        }
        let record = VolumeRecord {
            tenant: tenant.clone(),
            name: command.name,
            quota_bytes: command.quota_bytes,
            created_at: self.store.now(),
        };
        self.store
            .create_volume(&record)
            .await
            .map_err(ServiceError::store("create_volume"))?;
        let made = match &command.from_snapshot {
            Some(source) => {
                self.create_volume_from_snapshot(tenant, &record, source)
                    .await
            }
            None => host
                .create(tenant, &record.name, record.quota_bytes)
                .await
                .map(drop)
                .map_err(|source| ServiceError::Volume {
                    op: "create",
                    source,
                }),
        };
        if let Err(e) = made {
            // no row for a volume the host could not make (with its quota)
            if let Err(err) = self.store.delete_volume(tenant, &record.name).await {
                tracing::warn!(volume = %record.name, error = %err, "removing the row of a volume that failed");
            }
            return Err(e);
        }
        tracing::info!(tenant_id = %tenant, volume = %record.name, quota_bytes = record.quota_bytes, "volume created");
        Ok(VolumeView::of(&record, None))
    }

    pub async fn list_volumes(
        &self,
        tenant: &TenantId,
        after: Option<VolumeName>,
        limit: Option<u32>,
    ) -> Result<Vec<VolumeView>, ServiceError> {
        let page = super::page(after.map(String::from), limit)?;
        let records = self
            .store
            .list_volumes(tenant, &page)
            .await
            .map_err(ServiceError::store("list_volumes"))?;
        Ok(records.iter().map(|r| VolumeView::of(r, None)).collect())
    }

    /// The volume with the bytes it holds now.
    pub async fn get_volume(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
    ) -> Result<VolumeView, ServiceError> {
        let record = self
            .store
            .get_volume(tenant, name)
            .await
            .map_err(ServiceError::store("get_volume"))?;
        let used = self
            .volume_host()?
            .used_bytes(tenant, name)
            .await
            .map_err(|source| ServiceError::Volume {
                op: "usage",
                source,
            })?;
        Ok(VolumeView::of(&record, Some(used)))
    }

    /// Deletes the volume and its bytes.
    pub async fn delete_volume(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
    ) -> Result<VolumeView, ServiceError> {
        let record = self
            .store
            .get_volume(tenant, name)
            .await
            .map_err(ServiceError::store("get_volume"))?;
        // Starts under way that mount volumes finish (stored, or failed) first.
        let _deleting = tokio::time::timeout(VOLUME_GATE_WAIT, self.volume_gate.write())
            .await
            .map_err(|_| ServiceError::Conflict {
                entity: "volume",
                id: name.to_string(),
                reason: format!(
                    "sandboxes mounting volumes were still starting after {} s; try again",
                    VOLUME_GATE_WAIT.as_secs()
                ),
            })?;
        if let Some(user) = self.volume_user(tenant, name).await? {
            return Err(ServiceError::Conflict {
                entity: "volume",
                id: name.to_string(),
                reason: format!("{user} mounts it; delete or stop that sandbox first"),
            });
        }
        self.refuse_volume_with_snapshots(tenant, name).await?;
        match self.volume_host()?.remove(tenant, name).await {
            Ok(()) | Err(VolumeError::Missing { .. }) => {}
            Err(source) => {
                return Err(ServiceError::Volume {
                    op: "delete",
                    source,
                });
            }
        }
        self.store
            .delete_volume(tenant, name)
            .await
            .map_err(ServiceError::store("delete_volume"))?;
        tracing::info!(tenant_id = %tenant, volume = %name, "volume deleted");
        Ok(VolumeView::of(&record, None))
    }
}
