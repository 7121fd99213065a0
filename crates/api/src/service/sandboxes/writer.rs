//! A sandbox's side of the one-writer-per-workspace lease
//! ([`paddock_core::store::acquire_writer`]): a read-write sandbox over a
//! workspace holds it (owner `NODE/SANDBOX`), renewed by the expiry task
//! and given up when the sandbox is retired. Read-only sandboxes take none.

use std::time::Duration;

use paddock_core::ids::WorkspaceId;
use paddock_core::store::{Lease, Store, Timestamp, WriterLeaseError};

use super::ServiceError;

/// How long a sandbox's writer lease lasts without renewal: a few expiry
/// passes, and never less than a run's lease (30 s), so a slow pass does
/// not let it lapse.
pub(super) fn ttl(expiry_interval: Duration) -> Duration {
    (expiry_interval * 3).max(Duration::from_secs(30))
}

/// Takes the writer lease of `workspace` for `owner`; a refusal names the
/// holder as `describe` says (its owner and lease end in, a sentence out).
pub(super) async fn acquire(
    store: &dyn Store,
    workspace: &WorkspaceId,
    owner: &str,
    ttl: Duration,
    describe: impl FnOnce(&str, Timestamp) -> String,
) -> Result<Lease, ServiceError> {
    paddock_core::store::acquire_writer(store, workspace, owner, ttl)
        .await
        .map_err(|err| match err {
            WriterLeaseError::Held { holder, until, .. } => ServiceError::WorkspaceBusy {
                workspace: workspace.to_string(),
                held_by: describe(&holder, until),
            },
            WriterLeaseError::Store { source, .. } => ServiceError::store("acquire_lease")(source),
        })
}

/// Gives the lease up; a failure is only logged (it expires on its own).
pub(super) async fn release(store: &dyn Store, lease: &Lease) {
    if let Err(err) = store.release_lease(lease).await {
        tracing::warn!(resource = %lease.resource, error = %err, "releasing the workspace lease");
    }
}

/// The leases a started sandbox holds while it lives: the workspace's
/// writer lease (a read-write sandbox over a workspace) and one per
/// read-write volume mount.
#[derive(Debug, Default)]
pub(super) struct SandboxLeases {
    pub writer: Option<Lease>,
    pub volumes: Vec<Lease>,
}

impl super::SandboxService {
    /// Takes the leases of sandbox `id` (just started, on this node): all of
    /// them, or none (those taken are given back) and the refusal naming
    /// the holder.
    pub(super) async fn take_leases(
        &self,
        tenant: &paddock_core::ids::TenantId,
        id: &paddock_core::sandbox::SandboxId,
        workspace: Option<&WorkspaceId>,
        read_only: bool,
        mounts: &[paddock_proto::VolumeMount],
    ) -> Result<SandboxLeases, ServiceError> {
        let owner = format!("{}/{id}", self.config.node);
        let ttl = ttl(self.config.effective_expiry_interval());
        let writer = match workspace.filter(|_| !read_only) {
            Some(workspace) => {
                let describe = |holder: &str, until| self.describe_writer(holder, until);
                Some(acquire(self.store.as_ref(), workspace, &owner, ttl, describe).await?)
            }
            None => None,
        };
        match self.lease_volumes(tenant, mounts, &owner, ttl).await {
            Ok(volumes) => Ok(SandboxLeases { writer, volumes }),
            Err(err) => {
                if let Some(lease) = &writer {
                    release(self.store.as_ref(), lease).await;
                }
                Err(err)
            }
        }
    }

    /// Gives back what [`Self::take_leases`] took.
    pub(super) async fn release_leases(&self, leases: &SandboxLeases) {
        if let Some(lease) = &leases.writer {
            release(self.store.as_ref(), lease).await;
        }
        self.release_volumes(&leases.volumes).await;
    }
}
