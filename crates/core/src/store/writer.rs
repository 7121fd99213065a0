//! One writer per workspace: a run or a sandbox that may write a workspace
//! holds its writer lease (`workspace:<id>`, the store's fenced lease, owner
//! `NODE/RUN` or `NODE/SANDBOX`) while it may write; a second writer of
//! either kind is refused naming the holder. Readers (plan-mode runs,
//! read-only sandboxes) take none. The runtime and the sandbox API both take
//! it through these functions and map [`WriterLeaseError`] to their own
//! errors.

use std::time::Duration;

use super::{Lease, Store, StoreError, Timestamp};
use crate::ids::WorkspaceId;

/// Why the writer lease of a workspace was not taken.
#[derive(Debug, thiserror::Error)]
pub enum WriterLeaseError {
    /// Another run or sandbox holds it.
    #[error("workspace {workspace} already has a writer: {holder} (lease until {until})")]
    Held {
        workspace: WorkspaceId,
        holder: String,
        until: Timestamp,
    },
    #[error("acquiring the writer lease of workspace {workspace}")]
    Store {
        workspace: WorkspaceId,
        #[source]
        source: StoreError,
    },
}

/// Takes the writer lease of `workspace` for `owner` for `ttl`.
pub async fn acquire_writer(
    store: &dyn Store,
    workspace: &WorkspaceId,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, WriterLeaseError> {
    store
        .acquire_lease(&Lease::workspace_resource(workspace), owner, ttl)
        .await
        .map_err(|err| match err {
            StoreError::LeaseHeld {
                owner, expires_at, ..
            } => WriterLeaseError::Held {
                workspace: workspace.clone(),
                holder: owner,
                until: expires_at,
            },
            source => WriterLeaseError::Store {
                workspace: workspace.clone(),
                source,
            },
        })
}

/// Frees the writer lease a dead holder (`owner`) left on the workspace, so
/// the next writer need not wait for it to expire; another holder's lease
/// is left alone. True when there was one to free.
pub async fn release_dead_writer(
    store: &dyn Store,
    workspace: &WorkspaceId,
    owner: &str,
) -> Result<bool, StoreError> {
    release_dead_holder(store, &Lease::workspace_resource(workspace), owner).await
}

/// Frees the lease a dead holder (`owner`) left on `resource` (a workspace's
/// or a volume's), so the next holder need not wait for it to expire;
/// another holder's lease is left alone. True when there was one to free.
pub async fn release_dead_holder(
    store: &dyn Store,
    resource: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    match store.get_lease(resource).await? {
        Some(held) if held.owner == owner => {
            // acquiring as the same owner hands its lease over, then it is given up
            let lease = store
                .acquire_lease(resource, owner, Duration::from_secs(1))
                .await?;
            store.release_lease(&lease).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}
