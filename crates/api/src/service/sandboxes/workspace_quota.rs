//! Persistent workspaces under a quota: a workspace made with `quota_bytes`
//! is a btrfs subvolume with a qgroup limit in the volume pool (the
//! [`VolumeHost`](paddock_core::volume::VolumeHost)), so the host's kernel
//! refuses the write past it whichever backend binds or shares it. The pool
//! is the record of which workspaces have one: a workspace without its
//! subvolume (made without a quota, or before workspaces could have one) is
//! a plain directory under the workspaces root, and a sandbox asking a
//! workspace quota on it is refused unless `workspace_quota` is downgraded.

use std::path::PathBuf;

use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_core::volume::{PoolWorkspace, VOLUME_MIN_BYTES};
use paddock_proto::WorkspaceQuotaEnforcement;

use super::{SandboxService, ServiceError};

/// Where a workspace's files are on this host, and the quota the kernel
/// holds them to, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkspaceLocation {
    pub path: PathBuf,
    pub quota: Option<WorkspaceQuotaEnforcement>,
}

impl SandboxService {
    /// Makes the workspace's subvolume with its quota; the caller has not
    /// stored the row yet.
    pub(super) async fn create_pool_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
        quota_bytes: u64,
    ) -> Result<PoolWorkspace, ServiceError> {
        let max = self.config.tenant_disk_quota;
        if !(VOLUME_MIN_BYTES..=max).contains(&quota_bytes) {
            return Err(ServiceError::invalid(
                "quota_bytes",
                format!("must be between {VOLUME_MIN_BYTES} and {max} (the tenant's disk quota)"),
            ));
        }
        let host = self
            .config
            .volumes
            .as_deref()
            .ok_or(ServiceError::VolumesUnavailable)?;
        host.create_workspace(tenant, id, quota_bytes)
            .await
            .map_err(|source| ServiceError::Volume {
                op: "create workspace",
                source,
            })
    }

    /// The workspace's subvolume in the pool, if it has one.
    pub(super) async fn pool_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Option<PoolWorkspace>, ServiceError> {
        let Some(host) = self.config.volumes.as_deref() else {
            return Ok(None);
        };
        host.workspace(tenant, id)
            .await
            .map_err(|source| ServiceError::Volume {
                op: "workspace quota",
                source,
            })
    }

    /// Where a server-managed workspace's files are: its subvolume in the
    /// pool with its quota, or else its directory under the workspaces root
    /// (made if missing).
    pub(crate) async fn workspace_location(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<WorkspaceLocation, ServiceError> {
        if let Some(pool) = self.pool_workspace(tenant, id).await? {
            return Ok(WorkspaceLocation {
                path: pool.path,
                quota: Some(pool.quota),
            });
        }
        Ok(WorkspaceLocation {
            path: self.workspace_dir(id).await?,
            quota: None,
        })
    }

    /// Removes the workspace's subvolume, where it has one.
    pub(super) async fn remove_pool_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), ServiceError> {
        let Some(host) = self.config.volumes.as_deref() else {
            return Ok(());
        };
        host.remove_workspace(tenant, id)
            .await
            .map_err(|source| ServiceError::Volume {
                op: "delete workspace",
                source,
            })
    }
}
