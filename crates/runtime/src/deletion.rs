//! Deleting a session: its rows (events, messages, runs, steering,
//! checkpoints and the rest, with the sessions of the subagents its runs
//! spawned) and the checkpoint files no other checkpoint names.
//!
//! Refused while a run of it has not ended, while another node or request
//! holds its lease, and while a session was forked from it: a fork reads
//! the history it shares with its parent from the parent's rows, so the
//! forks go first. A file blob is removed only when no remaining checkpoint
//! of the tenant names it (their manifests are read under the tenant's
//! collection lock, [`collect_lock`], so no capture can start naming it
//! meanwhile) and no row of any tenant keeps it; a blob a remaining
//! checkpoint names gets that checkpoint's row.

use std::collections::HashSet;

use paddock_core::blob::BlobKey;
use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{Lease, SessionDeletion, StoreError};
use paddock_snapshot::checkpoint::Node;
use serde::Serialize;

use crate::checkpoints::{collect_lock, load_manifest};
use crate::error::RuntimeError;
use crate::runtime::Runtime;
use crate::util::error_chain;

/// What a deletion removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionDeleted {
    /// The session, then the subagents' sessions deleted with it.
    pub sessions: Vec<SessionId>,
    pub checkpoints: u64,
    /// Checkpoint files (and manifests) removed from the tenant's blob store.
    pub blobs_removed: u64,
    pub bytes_freed: u64,
}

impl Runtime {
    /// Deletes the session, its subagents' sessions and their rows, and the
    /// checkpoint files only they used. See the module doc for when it is
    /// refused.
    pub async fn delete_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionDeleted, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        store
            .get_session(tenant, id)
            .await
            .map_err(RuntimeError::store("get_session"))?;
        let running_here = shared
            .active()
            .iter()
            .find(|(_, active)| active.session == *id)
            .map(|(run, _)| run.clone());
        if let Some(run) = running_here {
            return Err(RuntimeError::RunInProgress {
                session: id.clone(),
                run,
            });
        }
        let lease = store
            .acquire_lease(
                &Lease::session_resource(id),
                &format!("{}/delete", shared.config.node),
                shared.config.lease_ttl,
            )
            .await
            .map_err(|err| match err {
                StoreError::LeaseHeld { .. } => RuntimeError::SessionBusy {
                    session: id.clone(),
                },
                err => RuntimeError::store("acquire_lease")(err),
            })?;
        let deleted = self.delete_leased(tenant, id).await;
        if let Err(err) = store.release_lease(&lease).await {
            tracing::warn!(session_id = %id, error = %error_chain(&err), "releasing a deleted session's lease");
        }
        let deleted = deleted?;
        tracing::info!(
            session_id = %id,
            sessions = deleted.sessions.len(),
            checkpoints = deleted.checkpoints,
            blobs_removed = deleted.blobs_removed,
            bytes_freed = deleted.bytes_freed,
            "session deleted"
        );
        Ok(deleted)
    }

    async fn delete_leased(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionDeleted, RuntimeError> {
        let store = &self.shared.store;
        let in_use = |op: &'static str| {
            move |err: StoreError| match err {
                StoreError::Conflict { entity, id, reason } => {
                    RuntimeError::InUse { entity, id, reason }
                }
                err => RuntimeError::store(op)(err),
            }
        };
        let plan = store
            .plan_session_delete(tenant, id)
            .await
            .map_err(in_use("plan_session_delete"))?;
        let _collect = collect_lock::collecting(tenant)
            .await
            .ok_or(RuntimeError::CheckpointsBusy)?;
        let keep = self.still_named(tenant, &plan).await?;
        let freed = store
            .delete_sessions(tenant, &plan, &keep)
            .await
            .map_err(in_use("delete_sessions"))?;
        let (blobs_removed, bytes_freed) = self.remove_blobs(tenant, freed).await;
        Ok(SessionDeleted {
            checkpoints: plan.checkpoints.len() as u64,
            sessions: plan.sessions,
            blobs_removed,
            bytes_freed,
        })
    }

    /// The blobs of `plan.owned_blobs` a checkpoint of the tenant that is
    /// not deleted names, each with one such checkpoint.
    async fn still_named(
        &self,
        tenant: &TenantId,
        plan: &SessionDeletion,
    ) -> Result<Vec<(String, CheckpointId)>, RuntimeError> {
        let owned: HashSet<&str> = plan.owned_blobs.iter().map(String::as_str).collect();
        if owned.is_empty() {
            return Ok(Vec::new());
        }
        let deleted: HashSet<&SessionId> = plan.sessions.iter().collect();
        let part = self.shared.blobs.tenant(tenant);
        let rows = self
            .shared
            .store
            .list_checkpoint_manifests(tenant)
            .await
            .map_err(RuntimeError::store("list_checkpoint_manifests"))?;
        let mut read = HashSet::new();
        let mut keep = Vec::new();
        let mut found = HashSet::new();
        for (checkpoint, session, manifest) in rows {
            if deleted.contains(&session) || !read.insert(manifest.clone()) {
                continue;
            }
            let manifest = load_manifest(&part, &manifest).await?;
            for entry in manifest.entries.values() {
                if let Node::File { hash, .. } = &entry.node {
                    let hash = hash.to_string();
                    if owned.contains(hash.as_str()) && found.insert(hash.clone()) {
                        keep.push((hash, checkpoint.clone()));
                    }
                }
            }
            if found.len() == owned.len() {
                break;
            }
        }
        Ok(keep)
    }

    /// Removes the tenant's copies of `freed` that no row of any tenant
    /// keeps; how many it removed and their bytes. A failure is logged and
    /// left to the blob sweeper.
    async fn remove_blobs(&self, tenant: &TenantId, freed: Vec<String>) -> (u64, u64) {
        let part = self.shared.blobs.tenant(tenant);
        let (mut removed, mut bytes) = (0, 0);
        for hash in freed {
            match self.shared.store.snapshot_blob_referenced(&hash).await {
                Ok(false) => {}
                Ok(true) => continue,
                Err(err) => {
                    tracing::warn!(blob = %hash, error = %error_chain(&err), "checking a freed blob");
                    continue;
                }
            }
            let Ok(key) = BlobKey::parse(&hash) else {
                continue;
            };
            let part = part.clone();
            let gone = tokio::task::spawn_blocking(move || {
                let size = part.size(&key)?;
                let deleted = part.delete(&key)?;
                Ok::<_, paddock_core::blob::BlobError>(size.filter(|_| deleted))
            })
            .await;
            match gone {
                Ok(Ok(Some(size))) => {
                    removed += 1;
                    bytes += size;
                }
                Ok(Ok(None)) => {}
                Ok(Err(err)) => {
                    tracing::warn!(blob = %hash, error = %error_chain(&err), "removing a freed blob");
                }
                Err(err) => {
                    tracing::warn!(blob = %hash, error = %err, "removing a freed blob");
                }
            }
        }
        (removed, bytes)
    }
}
