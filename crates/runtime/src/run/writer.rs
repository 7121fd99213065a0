//! A run's side of the one-writer-per-workspace lease
//! ([`paddock_core::store::acquire_writer`]): a run whose sandbox may write
//! the workspace holds it (owner `NODE/RUN` like its session lease) from
//! before its sandbox starts until it ended. Read-only runs take none.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::WorkspaceId;
use paddock_core::store::{Lease, Store, WriterLeaseError};

use crate::error::RuntimeError;
use crate::util::error_chain;

/// Takes the workspace's writer lease for `owner`.
pub(crate) async fn acquire(
    store: &Arc<dyn Store>,
    workspace: &WorkspaceId,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, RuntimeError> {
    paddock_core::store::acquire_writer(store.as_ref(), workspace, owner, ttl)
        .await
        .map_err(|err| match err {
            WriterLeaseError::Held {
                workspace,
                holder,
                until,
            } => RuntimeError::WorkspaceBusy {
                workspace,
                holder,
                until,
            },
            WriterLeaseError::Store { source, .. } => RuntimeError::store("acquire_lease")(source),
        })
}

/// Gives the lease up; a failure is only logged (it expires on its own).
pub(crate) async fn release(store: &Arc<dyn Store>, lease: &Lease) {
    if let Err(err) = store.release_lease(lease).await {
        tracing::warn!(resource = %lease.resource, error = %error_chain(&err), "releasing the workspace lease");
    }
}

/// Frees the writer lease a dead driver (`owner`) left on the workspace;
/// a failure is only logged.
pub(crate) async fn release_dead(store: &Arc<dyn Store>, workspace: &WorkspaceId, owner: &str) {
    if let Err(err) =
        paddock_core::store::release_dead_writer(store.as_ref(), workspace, owner).await
    {
        tracing::warn!(workspace_id = %workspace, error = %error_chain(&err), "freeing a dead writer's lease");
    }
}
