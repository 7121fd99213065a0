//! Rewinding a session to a checkpoint, as a new run: under the session's
//! lease and the workspace's writer lease (so no run and no writable
//! sandbox is on it), the workspace is restored in place (only what
//! differs), the history after the checkpoint leaves the context of later
//! runs (a [`Rewind`] row; the messages stay stored), and the restored
//! state is recorded as a checkpoint of its own.

use std::sync::Arc;

use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{
    CheckpointReason, EndReason, Lease, Rewind, Run, RunState, RunUpdate, SessionStatus, StoreError,
};
use paddock_snapshot::checkpoint::RestoreStats;
use serde::Serialize;

use super::{Checkpointer, Place, load_manifest};
use crate::error::RuntimeError;
use crate::events::journal::Journal;
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
    pub files_written: u64,
    pub bytes_written: u64,
    pub removed: u64,
}

impl Runtime {
    /// Puts the session's workspace and history back to `checkpoint`, as a
    /// new run of the session. Refused while the session runs or another
    /// writer has the workspace.
    pub async fn rewind_session(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        checkpoint_id: &CheckpointId,
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
        let dir = workspace::workspace_dir(&shared.config, &workspace);
        let blobs = shared.blobs.tenant(tenant);
        let target = load_manifest(&blobs, &checkpoint.manifest_hash).await?;
        let hint = match self.latest_checkpoint(&session).await? {
            Some(latest) => load_manifest(&blobs, &latest.manifest_hash).await.ok(),
            None => None,
        };

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
        let outcome = async {
            journal.create_run(&run).await?;
            journal
                .emit(&RunStarted {
                    goal: run.goal.clone(),
                    success_criteria: Vec::new(),
                    mode: run.mode,
                    budgets: run.budgets,
                    model: "none (rewind)".to_owned(),
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
            let stats = self
                .restore_manifest(tenant, &dir, target.clone(), hint)
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
                        through_seq: 0,
                        created_at: store.now(),
                    },
                )
                .await
                .map_err(RuntimeError::store("record_rewind"))?;
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
            .await;
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
            Ok::<(RestoreStats, Option<CheckpointId>), RuntimeError>((stats, taken))
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
        let ended = match journal.update_run(&update).await {
            Ok(ended) => {
                if let Err(err) = journal.emit(&finished).await {
                    tracing::warn!(error = %error_chain(&err), "recording the rewind's end");
                }
                Some(ended)
            }
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "recording the rewind's end");
                None
            }
        };
        release_writer(store, &writer).await;
        journal.release().await;
        let (stats, taken) = outcome?;
        tracing::info!(
            session_id = %session.id,
            run_id = %run.id,
            checkpoint_id = %checkpoint.id,
            files_written = stats.files_written,
            removed = stats.removed,
            "session rewound"
        );
        Ok(Rewound {
            run: ended.unwrap_or(run),
            to: checkpoint.id,
            checkpoint: taken,
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
