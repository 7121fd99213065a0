//! One writer per workspace. A run whose sandbox may write the workspace
//! holds the workspace lease (`workspace:<id>`, the store's fenced lease,
//! owner `NODE/RUN` like its session lease) from before its sandbox starts
//! until it ended; a second writer, a run or a read-write sandbox of the
//! API, is refused naming the holder. Read-only runs take no lease.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::WorkspaceId;
use paddock_core::store::{Lease, Store, StoreError};

use crate::error::RuntimeError;
use crate::util::error_chain;

/// Takes the workspace's writer lease for `owner`.
pub(crate) async fn acquire(
    store: &Arc<dyn Store>,
    workspace: &WorkspaceId,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, RuntimeError> {
    store
        .acquire_lease(&Lease::workspace_resource(workspace), owner, ttl)
        .await
        .map_err(|err| match err {
            StoreError::LeaseHeld {
                owner, expires_at, ..
            } => RuntimeError::WorkspaceBusy {
                workspace: workspace.clone(),
                holder: owner,
                until: expires_at,
            },
            err => RuntimeError::store("acquire_lease")(err),
        })
}

/// Gives the lease up; a failure is only logged (it expires on its own).
pub(crate) async fn release(store: &Arc<dyn Store>, lease: &Lease) {
    if let Err(err) = store.release_lease(lease).await {
        tracing::warn!(resource = %lease.resource, error = %error_chain(&err), "releasing the workspace lease");
    }
}

/// Frees the writer lease a dead driver (`owner`) left on the workspace, so
/// the next writer need not wait for it to expire; another holder's lease
/// is left alone.
pub(crate) async fn release_dead(store: &Arc<dyn Store>, workspace: &WorkspaceId, owner: &str) {
    let resource = Lease::workspace_resource(workspace);
    match store.get_lease(&resource).await {
        Ok(Some(held)) if held.owner == owner => {
            // acquiring as the same owner hands over its lease, then it is given up
            match store
                .acquire_lease(&resource, owner, Duration::from_secs(1))
                .await
            {
                Ok(lease) => release(store, &lease).await,
                Err(err) => {
                    tracing::warn!(%resource, error = %error_chain(&err), "taking over a dead writer's lease");
                }
            }
        }
        Ok(_) => {}
        Err(err) => {
            tracing::warn!(%resource, error = %error_chain(&err), "reading the workspace lease");
        }
    }
}
