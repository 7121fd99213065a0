//! Rewinding a session to a checkpoint, as a new run: under the session's
//! lease and the workspace's writer lease (so no run and no writable
//! sandbox is on it), the workspace as it is is checked against the
//! session's last checkpoint and recorded as a checkpoint of the rewind's
//! run (safety.rs: a change made since is named, and refused unless forced;
//! a rewind to that checkpoint undoes this one), then restored in place
//! (only what differs), the history after the checkpoint leaves the context
//! of later runs (a [`Rewind`] row; the messages stay stored), and the
//! restored state is recorded as a checkpoint of its own.

use std::sync::Arc;

use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{
    CheckpointReason, EndReason, Lease, Rewind, Run, RunState, RunUpdate, SessionStatus, StoreError,
};
use serde::Serialize;

use super::{Baseline, Checkpointer, Place, guard, load_manifest};
use crate::error::RuntimeError;
use crate::events::journal::{Encoded, Journal};
use crate::events::{RunFinished, RunStarted};
use crate::run::{acquire_writer, release_writer};
use crate::runtime::Runtime;
use crate::util::error_chain;
use crate::workspace;

/// What a rewind did.
#[derive(Debug, Clone, Serialize)]
pub struct Rewound {
    /// The run that did it (completed).
    pub run: Run,
    /// The checkpoint rewound to.
    pub to: CheckpointId,
    /// The checkpoint of the restored state.
    pub checkpoint: Option<CheckpointId>,
    /// The checkpoint of the workspace as it was before the rewind: a
    /// rewind to it undoes this one.
    pub safety_checkpoint: CheckpointId,
    /// The paths that had changed since the session's last checkpoint
    /// (kept in `safety_checkpoint`; a rewind goes on over them only when
    /// forced).
    pub changed: Vec<String>,
    pub files_written: u64,
    pub bytes_written: u64,
    pub removed: u64,
}

impl Runtime {
    /// Puts the session's workspace and history back to `checkpoint`, as a
    /// new run of the session, after recording the workspace as it is.
    /// Refused while the session runs or another writer has the workspace,
    /// and, unless `force`, when the workspace changed since the session's
    /// last checkpoint ([`RuntimeError::WorkspaceChanged`]).
    pub async fn rewind_session(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        checkpoint_id: &CheckpointId,
        force: bool,
    ) -> Result<Rewound, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        let session = self.get_session(tenant, session_id).await?;
        if session.status == SessionStatus::Archived {
            return Err(RuntimeError::SessionArchived {
                session: session.id,
            });
        }
        let checkpoint = self
            .get_checkpoint(tenant, session_id, checkpoint_id)
            .await?;
        if checkpoint.workspace != session.workspace {
            return Err(RuntimeError::Invalid {
                reason: format!(
                    "checkpoint {checkpoint_id} is of another workspace than the session's"
                ),
            });
        }
        let workspace = self.workspace_of(&session).await?;
        let dir = workspace::locate(&shared.config, &workspace).await?.dir;
        let target = load_manifest(&shared.blobs.tenant(tenant), &checkpoint.manifest_hash).await?;

        let run = Run::new(
            tenant.clone(),
            session.id.clone(),
            format!("Rewind to checkpoint {checkpoint_id}"),
            store.now(),
        );
        let owner = format!("{}/{}", shared.config.node, run.id);
        let lease = store
            .acquire_lease(
                &Lease::session_resource(&session.id),
                &owner,
                shared.config.lease_ttl,
            )
            .await
            .map_err(|err| match err {
                StoreError::LeaseHeld { .. } => RuntimeError::SessionBusy {
                    session: session.id.clone(),
                },
                err => RuntimeError::store("acquire_lease")(err),
            })?;
        let writer =
            match acquire_writer(store, &workspace.id, &owner, shared.config.lease_ttl).await {
                Ok(writer) => writer,
                Err(err) => {
                    release(store, &lease).await;
                    return Err(err);
                }
            };
        let journal = Journal::new(Arc::clone(store), Arc::clone(&shared.bus), &run, lease);
        let mut checkpointer = Checkpointer::new(
            store,
            &shared.blobs,
            self.capture_options(),
            Place {
                tenant: tenant.clone(),
                session: session.id.clone(),
                run: run.id.clone(),
                workspace: workspace.id.clone(),
                dir: dir.clone(),
            },
        )
        .await
        .with_storage(shared.storage());
        // what the rewind would overwrite, checked and captured under the leases
        let guarded = match self.latest_checkpoint(&session).await {
            Ok(latest) => {
                let last = latest.as_ref().map_or(&checkpoint.id, |c| &c.id);
                let manifest = checkpointer.last().cloned();
                let recorded = Baseline {
                    checkpoint: last,
                    manifest: manifest.as_ref(),
                };
                guard(&mut checkpointer, &session.id, recorded, force).await
            }
            Err(err) => Err(err),
        };
        let guarded = match guarded {
            Ok(guarded) => guarded,
            Err(err) => {
                release_writer(store, &writer).await;
                journal.release().await;
                return Err(err);
            }
        };
        let outcome = async {
            journal.create_run(&run).await?;
            journal
                .emit(&RunStarted {
                    goal: run.goal.clone(),
                    success_criteria: Vec::new(),
                    mode: run.mode,
                    budgets: run.budgets,
                    model: "none (rewind)".to_owned(),
                    // no agent drives a rewind
                    driver: None,
                    parent_run: None,
                    profile: None,
                    task_key: None,
                    // a rewind starts no sandbox
                    backend: None,
                    image: None,
                    network: None,
                    secrets: Vec::new(),
                    resumed_from: None,
                    restored_checkpoint: None,
                    resume_budget: None,
                })
                .await?;
            // the workspace as it is, on record before anything is overwritten
            let hint = guarded.manifest().clone();
            let changed = guarded.changed;
            let (safety, created) = checkpointer
                .record(journal.lease(), guarded.capture)
                .await?;
            journal.emit(&created).await?;
            let stats = self
                .restore_manifest(tenant, &dir, target.clone(), Some(hint))
                .await?;
            store
                .record_rewind(
                    journal.lease(),
                    &Rewind {
                        tenant: tenant.clone(),
                        session: session.id.clone(),
                        run: run.id.clone(),
                        checkpoint: checkpoint.id.clone(),
                        to_seq: checkpoint.message_seq,
                        to_event_seq: checkpoint.event_seq,
                        through_seq: 0,
                        through_event_seq: 0,
                        created_at: store.now(),
                    },
                )
                .await
                .map_err(RuntimeError::store("record_rewind"))?;
            checkpointer.set_last(Arc::new(target));
            let taken = checkpointer
                .take(journal.lease(), CheckpointReason::Rewind)
                .await?;
            let taken = match taken {
                Some((row, event)) => {
                    journal.emit(&event).await?;
                    Some(row.id)
                }
                None => None,
            };
            Ok::<_, RuntimeError>((stats, taken, safety.id, changed))
        }
        .await;
        let (state, end_reason, error) = match &outcome {
            Ok(_) => (RunState::Completed, EndReason::Completed, None),
            Err(err) => (
                RunState::Failed,
                EndReason::InfrastructureError,
                Some(error_chain(err)),
            ),
        };
        let update = RunUpdate {
            end_reason: Some(end_reason),
            error: error.clone(),
            ..RunUpdate::state(state)
        };
        let finished = RunFinished {
            state,
            end_reason,
            usage: Default::default(),
            total_usage: Some(Default::default()),
            error,
            verdict: None,
            question: None,
            end_snapshot: None,
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: crate::steering::close_for_end(&journal).await,
        };
        let recorded = async {
            let finished = Encoded::of(&finished)?;
            journal.update_run_emitting(&update, vec![finished]).await
        };
        let ended = match recorded.await {
            Ok(ended) => Some(ended),
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "recording the rewind's end");
                None
            }
        };
        release_writer(store, &writer).await;
        journal.release().await;
        let (stats, taken, safety_checkpoint, changed) = outcome?;
        tracing::info!(
            session_id = %session.id,
            run_id = %run.id,
            checkpoint_id = %checkpoint.id,
            files_written = stats.files_written,
            removed = stats.removed,
            safety_checkpoint_id = %safety_checkpoint,
            "session rewound"
        );
        Ok(Rewound {
            run: ended.unwrap_or(run),
            to: checkpoint.id,
            checkpoint: taken,
            safety_checkpoint,
            changed,
            files_written: stats.files_written,
            bytes_written: stats.bytes_written,
            removed: stats.removed,
        })
    }
}

async fn release(store: &Arc<dyn paddock_core::store::Store>, lease: &Lease) {
    if let Err(err) = store.release_lease(lease).await {
        tracing::warn!(error = %error_chain(&err), "releasing the session lease");
    }
}
