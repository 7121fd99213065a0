//! What checkpoints may keep on disk: the tenant disk quota before a
//! capture stores anything, a cap on each session's checkpoints after one
//! is recorded, and the collection of the tenant's blobs that no
//! checkpoint names any more (docs/architecture.md, "Storage").
//!
//! The collection marks every blob named by a manifest of any checkpoint of
//! the tenant (the store de-duplicates content per tenant, so one blob may
//! serve many sessions) and removes the others. A capture holds the
//! tenant's [`super::collect_lock`] shared from before it stores its first blob
//! until its row is written (or it fails); the collection holds it
//! exclusive while it marks and removes, so it never removes a blob that a
//! capture in this process found already stored and is about to name. A
//! blob is only removed when it was last written before the collection
//! began ([`BlobStore::delete_if_written_before`]), which covers a commit
//! of the same content by another process.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use paddock_core::blob::{BlobKey, BlobStore};
use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{CheckpointReason, Lease, Store};

use super::{blocking, load_manifest};
use crate::config::DiskGuard;
use crate::error::RuntimeError;
use crate::events::CheckpointsPruned;

/// What bounds a checkpointer's storage.
#[derive(Debug, Clone)]
pub(crate) struct Storage {
    /// The tenant disk quota; None: not enforced here (no API).
    pub(crate) guard: Option<Arc<dyn DiskGuard>>,
    /// Checkpoints a session keeps.
    pub(crate) max_per_session: u32,
}

/// What one collection of a tenant's blobs removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Collected {
    pub(crate) removed: u64,
    pub(crate) bytes_freed: u64,
}

/// The oldest checkpoints of the session past `storage.max_per_session`
/// that may go: tool-batch checkpoints that are not the latest and that no
/// rewind went to.
pub(crate) async fn prunable(
    store: &Arc<dyn Store>,
    tenant: &TenantId,
    session: &SessionId,
    max: u32,
) -> Result<(Vec<CheckpointId>, usize), RuntimeError> {
    let all = store
        .list_checkpoints(tenant, session)
        .await
        .map_err(RuntimeError::store("list_checkpoints"))?;
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if all.len() <= max {
        return Ok((Vec::new(), all.len()));
    }
    let rewound_to: HashSet<CheckpointId> = store
        .list_rewinds(tenant, session)
        .await
        .map_err(RuntimeError::store("list_rewinds"))?
        .into_iter()
        .map(|r| r.checkpoint)
        .collect();
    let latest = all.last().map(|c| c.id.clone());
    let ids = all
        .iter()
        .filter(|c| {
            c.reason == CheckpointReason::ToolBatch
                && Some(&c.id) != latest.as_ref()
                && !rewound_to.contains(&c.id)
        })
        .take(all.len() - max)
        .map(|c| c.id.clone())
        .collect();
    Ok((ids, all.len()))
}

/// Prunes the session's checkpoints past the cap, then collects the
/// tenant's blobs; None when nothing was over the cap.
pub(crate) async fn prune(
    store: &Arc<dyn Store>,
    blobs: &Arc<dyn BlobStore>,
    storage: &Storage,
    lease: &Lease,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Option<CheckpointsPruned>, RuntimeError> {
    let (ids, count) = prunable(store, tenant, session, storage.max_per_session).await?;
    if ids.is_empty() {
        return Ok(None);
    }
    let pruned = store
        .prune_checkpoints(lease, tenant, session, &ids)
        .await
        .map_err(RuntimeError::store("prune_checkpoints"))?;
    if pruned.is_empty() {
        return Ok(None);
    }
    let collected = collect(store, blobs, storage, tenant).await?;
    tracing::info!(
        session_id = %session,
        pruned = pruned.len(),
        blobs_removed = collected.removed,
        bytes_freed = collected.bytes_freed,
        "checkpoints pruned past the session's cap"
    );
    Ok(Some(CheckpointsPruned {
        checkpoints: pruned.iter().map(|c| c.id.clone()).collect(),
        kept: u64::try_from(count - pruned.len()).unwrap_or(u64::MAX),
        max_per_session: storage.max_per_session,
        blobs_removed: collected.removed,
        bytes_freed: collected.bytes_freed,
    }))
}

/// Removes the blobs of the tenant's part that no manifest of the tenant's
/// checkpoints names, and were last written before this began. A manifest
/// that cannot be read stops the collection (nothing is removed).
pub(crate) async fn collect(
    store: &Arc<dyn Store>,
    blobs: &Arc<dyn BlobStore>,
    storage: &Storage,
    tenant: &TenantId,
) -> Result<Collected, RuntimeError> {
    let _exclusive = super::collect_lock::collecting(tenant)
        .await
        .ok_or(RuntimeError::CheckpointsBusy)?;
    let began = SystemTime::now();
    let manifests = store
        .checkpoint_manifests(tenant)
        .await
        .map_err(RuntimeError::store("checkpoint_manifests"))?;
    let mut keep: HashSet<BlobKey> = HashSet::new();
    for hash in &manifests {
        let manifest = load_manifest(blobs, hash).await?;
        keep.extend(manifest.blob_keys());
        keep.insert(BlobKey::parse(hash).map_err(|e| RuntimeError::Invalid {
            reason: format!("checkpoint manifest: {e}"),
        })?);
    }
    let part = Arc::clone(blobs);
    let collected = blocking(format!("collecting blobs of {tenant}"), move || {
        let blob_err = |what: String| {
            move |source| RuntimeError::Blob {
                what: what.clone(),
                source,
            }
        };
        let mut collected = Collected::default();
        for info in part.list().map_err(blob_err("list".to_owned()))? {
            if keep.contains(&info.key) {
                continue;
            }
            if part
                .delete_if_written_before(&info.key, began)
                .map_err(blob_err(format!("delete {}", info.key)))?
            {
                collected.removed += 1;
                collected.bytes_freed = collected.bytes_freed.saturating_add(info.size);
            }
        }
        Ok(collected)
    })
    .await?;
    if let Some(guard) = &storage.guard
        && collected.removed > 0
    {
        guard.changed(tenant);
    }
    Ok(collected)
}
