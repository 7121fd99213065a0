//! Named volumes mounted into a sandbox: the request's mounts checked (the
//! path rule of [`paddock_proto::check_volume_mounts`], each volume the
//! tenant's), resolved to the volume host's directories, and the one-writer
//! lease of each read-write mount (`volume:<tenant>/<name>`, the store's
//! fenced lease, owner `NODE/SANDBOX`): a second read-write mount is
//! refused naming the holder, read-only mounts take none. A volume any
//! running or paused sandbox mounts is not deleted.

use std::path::PathBuf;
use std::time::Duration;

use paddock_core::ids::TenantId;
use paddock_core::store::{Lease, Page, SandboxState, StoreError};
use paddock_core::volume::VolumeName;
use paddock_proto::VolumeMount;

use super::{SandboxService, ServiceError};

/// Sandboxes read per page while looking for a volume's users.
const SCAN_PAGE: u32 = 500;

fn volume_name(mount: &VolumeMount) -> Result<VolumeName, ServiceError> {
    VolumeName::parse(&mount.name).map_err(|err| ServiceError::invalid("volumes", err.to_string()))
}

impl SandboxService {
    /// Checks `mounts` and gives each volume its host directory. A volume the
    /// tenant does not have is "not found"; a path the rule refuses, a
    /// volume named twice or overlapping paths are invalid.
    pub(super) async fn resolve_volume_mounts(
        &self,
        tenant: &TenantId,
        mounts: &[VolumeMount],
    ) -> Result<Vec<(String, PathBuf)>, ServiceError> {
        if mounts.is_empty() {
            return Ok(Vec::new());
        }
        paddock_proto::check_volume_mounts(mounts)
            .map_err(|err| ServiceError::invalid("volumes", err.to_string()))?;
        let host = self
            .config
            .volumes
            .as_deref()
            .ok_or(ServiceError::VolumesUnavailable)?;
        let mut resolved = Vec::with_capacity(mounts.len());
        for mount in mounts {
            let name = volume_name(mount)?;
            self.store
                .get_volume(tenant, &name)
                .await
                .map_err(ServiceError::store("get_volume"))?;
            let dir = host
                .path(tenant, &name)
                .await
                .map_err(|source| ServiceError::Volume { op: "path", source })?;
            resolved.push((mount.name.clone(), dir));
        }
        Ok(resolved)
    }

    /// A conflict naming the holder when a read-write mount's volume has a
    /// writer now: checked before a sandbox starts, so the refusal is the
    /// conflict and no start is spent (the lease itself is taken after,
    /// [`Self::lease_volumes`], which decides a race).
    pub(super) async fn refuse_held_volumes(
        &self,
        tenant: &TenantId,
        mounts: &[VolumeMount],
    ) -> Result<(), ServiceError> {
        let now = self.clock.now();
        for mount in mounts.iter().filter(|m| !m.read_only) {
            let name = volume_name(mount)?;
            let held = self
                .store
                .get_lease(&Lease::volume_resource(tenant, &name))
                .await
                .map_err(ServiceError::store("get_lease"))?;
            if let Some(lease) = held.filter(|l| l.expires_at > now) {
                return Err(self.volume_busy(&name, &lease.owner, lease.expires_at));
            }
        }
        Ok(())
    }

    fn volume_busy(
        &self,
        name: &VolumeName,
        holder: &str,
        until: paddock_core::store::Timestamp,
    ) -> ServiceError {
        ServiceError::Conflict {
            entity: "volume",
            id: name.to_string(),
            reason: format!(
                "it is mounted read-write by {}; a read-only mount may still use it",
                self.describe_holder(holder, until, "the volume")
            ),
        }
    }

    /// Takes the lease of each read-write mount for `owner`; when one is
    /// held by another, gives back those taken and answers a conflict
    /// naming the holder.
    pub(super) async fn lease_volumes(
        &self,
        tenant: &TenantId,
        mounts: &[VolumeMount],
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<Lease>, ServiceError> {
        let mut leases = Vec::new();
        for mount in mounts.iter().filter(|m| !m.read_only) {
            let name = volume_name(mount)?;
            let resource = Lease::volume_resource(tenant, &name);
            match self.store.acquire_lease(&resource, owner, ttl).await {
                Ok(lease) => leases.push(lease),
                Err(err) => {
                    self.release_volumes(&leases).await;
                    return Err(match err {
                        StoreError::LeaseHeld {
                            owner, expires_at, ..
                        } => self.volume_busy(&name, &owner, expires_at),
                        other => ServiceError::store("acquire_lease")(other),
                    });
                }
            }
        }
        Ok(leases)
    }

    /// Gives the leases up; a failure is only logged (they expire on their own).
    pub(super) async fn release_volumes(&self, leases: &[Lease]) {
        for lease in leases {
            if let Err(err) = self.store.release_lease(lease).await {
                tracing::warn!(resource = %lease.resource, error = %err, "releasing a volume lease");
            }
        }
    }

    /// Frees the volume leases a sandbox of this node that is gone (`lost`
    /// after a crash) left behind, so the next writer need not wait for
    /// them to expire.
    pub(super) async fn release_dead_volume_leases(
        &self,
        tenant: &TenantId,
        sandbox: &paddock_core::sandbox::SandboxId,
        mounts: &[VolumeMount],
    ) {
        let owner = format!("{}/{sandbox}", self.config.node);
        for mount in mounts.iter().filter(|m| !m.read_only) {
            let Ok(name) = VolumeName::parse(&mount.name) else {
                continue;
            };
            let resource = Lease::volume_resource(tenant, &name);
            if let Err(err) =
                paddock_core::store::release_dead_holder(self.store.as_ref(), &resource, &owner)
                    .await
            {
                tracing::warn!(sandbox_id = %sandbox, resource, error = %err, "freeing a lost sandbox's volume lease");
            }
        }
    }

    /// A running or paused sandbox of the tenant that mounts `name` (a
    /// paused one mounts it again when resumed); None when none does.
    pub(super) async fn volume_user(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
    ) -> Result<Option<String>, ServiceError> {
        for state in [SandboxState::Running, SandboxState::Paused] {
            let mut page = Page {
                after: None,
                limit: SCAN_PAGE,
            };
            loop {
                let records = self
                    .store
                    .list_sandboxes(tenant, Some(state), &page)
                    .await
                    .map_err(ServiceError::store("list_sandboxes"))?;
                if let Some(user) = records.iter().find(|r| {
                    r.spec
                        .policy
                        .volumes
                        .iter()
                        .any(|m| m.name == name.as_str())
                }) {
                    return Ok(Some(format!("{} sandbox {}", state, user.id)));
                }
                match records.last() {
                    Some(last) if records.len() == SCAN_PAGE as usize => {
                        page.after = Some(last.id.to_string());
                    }
                    _ => break,
                }
            }
        }
        Ok(None)
    }
}

impl SandboxService {
    /// Renews a live sandbox's volume leases; Some(reason) when one was
    /// taken over (the sandbox must stop writing: it is retired).
    pub(super) async fn renew_volume_leases(
        &self,
        sandbox: &super::live::Live,
        ttl: Duration,
    ) -> Option<&'static str> {
        for lease in &sandbox.volume_leases {
            match self.store.renew_lease(lease, ttl).await {
                Ok(_) => {}
                Err(err @ StoreError::StaleLease { .. }) => {
                    tracing::error!(sandbox_id = %sandbox.id, error = %err, "volume lease lost");
                    return Some("volume lease lost");
                }
                Err(err) => {
                    tracing::warn!(sandbox_id = %sandbox.id, error = %err, "renewing a volume lease");
                }
            }
        }
        None
    }
}

impl SandboxService {
    /// A paused sandbox keeps its volume leases (its resume mounts the
    /// volumes again): each is renewed until the sandbox's lifetime ends,
    /// since no expiry pass renews a paused sandbox's. Deleting the paused
    /// sandbox frees them ([`Self::release_dead_volume_leases`]).
    pub(super) async fn hold_volumes_paused(
        &self,
        record: &paddock_core::store::SandboxRecord,
        leases: &[Lease],
    ) {
        let floor = super::writer::ttl(self.config.effective_expiry_interval());
        let now = self.clock.now().as_millis();
        let left = record.expires_at.map_or(self.config.max_lifetime, |end| {
            Duration::from_millis(u64::try_from(end.as_millis() - now).unwrap_or(0))
        });
        for lease in leases {
            if let Err(err) = self.store.renew_lease(lease, left.max(floor)).await {
                tracing::warn!(sandbox_id = %record.id, resource = %lease.resource, error = %err, "keeping a paused sandbox's volume lease");
            }
        }
    }
}
