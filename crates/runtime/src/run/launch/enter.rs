//! Phases 3 and 4 of a launch: the session lease and the run's journal
//! (`claim`), then everything recorded before the run's task starts
//! (`enter`): the writer lease, checkpoints and a resume's restore, the
//! run, goal and history rows, `run.started`.

use std::sync::Arc;

use paddock_core::ids::{CheckpointId, GoalId};
use paddock_core::model::{Message, Role};
use paddock_core::store::{
    CheckpointReason, EndReason, Goal, GoalStatus, Lease, Run, RunMode, RunState, RunUpdate,
};
use tokio_util::sync::CancellationToken;

use super::super::admission::AdmissionGrant;
use super::super::resume::{self, ResumeTail};
use super::super::sandbox::WorkspaceAccess;
use super::super::{RunOptions, StartRun, history, prompt, writer};
use super::check::Checked;
use super::lease::acquire_session_lease;
use super::{Launched, run_backend};
use crate::checkpoints::{Checkpointer, Place};
use crate::context::{self, ContextBase};
use crate::error::RuntimeError;
use crate::events::journal::{Encoded, Journal};
use crate::events::{CheckpointFailed, RunFinished, RunStarted};
use crate::runtime::{Runtime, Shared};
use crate::util::error_chain;

/// The session's lease, held by the run's journal, and the run's
/// cancellation (a child of its parent's).
#[derive(Debug)]
pub(super) struct Claimed {
    pub(super) journal: Arc<Journal>,
    pub(super) cancel: CancellationToken,
}

/// Whether the run's row is written by `enter` or exists (queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    New,
    Dequeued,
}

/// A run ready for its task, and the checkpoint a resume's restore took of
/// the changes it overwrote.
#[derive(Debug)]
pub(super) struct Entered {
    pub(super) launched: Launched,
    pub(super) safety_checkpoint: Option<CheckpointId>,
}

/// Takes the session's lease for `run` (a session runs one run at a time)
/// and opens the run's journal under it.
pub(super) async fn claim(
    shared: &Shared,
    run: &Run,
    options: &RunOptions,
) -> Result<Claimed, RuntimeError> {
    let owner = lease_owner(shared, run);
    let lease = acquire_session_lease(shared, &run.session, &owner).await?;
    let cancel = options
        .parent_cancel
        .as_ref()
        .map_or_else(CancellationToken::new, CancellationToken::child_token);
    let journal = Arc::new(
        Journal::new(
            Arc::clone(&shared.store),
            Arc::clone(&shared.bus),
            run,
            lease,
        )
        .waiting_for_space(cancel.clone(), shared.config.store_full_wait),
    );
    Ok(Claimed { journal, cancel })
}

/// `NODE/RUN`: the owner of the leases a run holds.
pub(super) fn lease_owner(shared: &Shared, run: &Run) -> String {
    format!("{}/{}", shared.config.node, run.id)
}

impl Runtime {
    /// Records the run up to `run.started`. On an error nothing is left
    /// held but the session lease (the caller releases the journal): a
    /// recorded run has been recorded failed.
    pub(super) async fn enter(
        &self,
        checked: Checked,
        claimed: Claimed,
        request: StartRun,
        options: RunOptions,
        grant: Option<Box<dyn AdmissionGrant>>,
        entry: Entry,
    ) -> Result<Entered, RuntimeError> {
        let shared = &self.shared;
        let Checked {
            run,
            workspace,
            dir,
            quota,
        } = checked;
        let Claimed { journal, cancel } = claimed;
        let mut recorded = entry == Entry::Dequeued;
        let writer = match claim_writer(shared, &run, &options, &workspace.id).await {
            Ok(writer) => writer,
            Err(err) => {
                if recorded {
                    fail_early(&journal, &err).await;
                }
                return Err(err);
            }
        };
        let fail = |err: RuntimeError, recorded: bool| {
            let journal = Arc::clone(&journal);
            let writer = writer.clone();
            async move {
                if recorded {
                    fail_early(&journal, &err).await;
                }
                if let Some(writer) = &writer {
                    writer::release(journal.store(), writer).await;
                }
                err
            }
        };
        // a writing root run records where the user can go back to
        let mut checkpoints = match (&writer, &options.parent_run) {
            (Some(_), None) => {
                let place = Place {
                    tenant: run.tenant.clone(),
                    session: run.session.clone(),
                    run: run.id.clone(),
                    workspace: workspace.id.clone(),
                    dir: dir.clone(),
                };
                Some(
                    Checkpointer::new(&shared.store, &shared.blobs, self.capture_options(), place)
                        .await
                        .with_storage(shared.storage()),
                )
            }
            _ => None,
        };
        // a resumed run that writes starts from the last checkpoint, what
        // that overwrites checked first (resume.rs)
        let planned = match (&options.resumed_from, checkpoints.as_mut()) {
            (Some(from), Some(checkpointer)) => {
                match resume::plan_restore(
                    self,
                    &run.tenant,
                    from,
                    checkpointer,
                    options.force_restore,
                )
                .await
                {
                    Ok(planned) => planned,
                    Err(err) => return Err(fail(err, recorded).await),
                }
            }
            _ => None,
        };
        let written = match entry {
            Entry::New => journal.create_run(&run).await,
            Entry::Dequeued => journal
                .update_run(&RunUpdate::state(RunState::Preparing))
                .await
                .map(|_| ()),
        };
        if let Err(err) = written {
            return Err(fail(err, recorded).await);
        }
        recorded = true;
        let (restored, safety) = match (planned, checkpoints.as_mut()) {
            (Some(plan), Some(checkpointer)) => {
                match resume::restore(self, journal.lease(), checkpointer, &dir, plan).await {
                    Ok((restored, safety)) => (Some(restored), safety),
                    Err(err) => return Err(fail(err, recorded).await),
                }
            }
            _ => (None, None),
        };
        let start_checkpoint = match checkpoints.as_mut() {
            Some(checkpointer) => match checkpointer
                .take(journal.lease(), CheckpointReason::RunStart)
                .await
            {
                Ok(taken) => taken.map(|(_, event)| Ok(event)),
                Err(err) => {
                    tracing::warn!(error = %error_chain(&err), "checkpointing the workspace before the run");
                    Some(Err(CheckpointFailed {
                        reason: CheckpointReason::RunStart,
                        error: error_chain(&err),
                    }))
                }
            },
            None => None,
        };
        if request.require_checkpoint
            && let Some(Err(failed)) = &start_checkpoint
        {
            let err = RuntimeError::NoUndo {
                path: dir.clone(),
                reason: failed.error.clone(),
            };
            return Err(fail(err, recorded).await);
        }
        let (goal, history, context, resume) = match prepare(
            &journal,
            &run,
            &request,
            &options,
            run_backend(shared, &request).name(),
            restored.map(|c| c.id),
        )
        .await
        {
            Ok(prepared) => prepared,
            Err(err) => return Err(fail(err, recorded).await),
        };

        if let Some((_, created)) = &safety
            && let Err(err) = journal.emit(created).await
        {
            tracing::warn!(error = %error_chain(&err), "recording the checkpoint taken before the restore");
        }
        let emitted = match &start_checkpoint {
            Some(Ok(created)) => journal.emit(created).await.map(|_| ()),
            Some(Err(failed)) => journal.emit(failed).await.map(|_| ()),
            None => Ok(()),
        };
        if let Err(err) = emitted {
            tracing::warn!(error = %error_chain(&err), "recording the run's start checkpoint");
        }
        tracing::info!(session_id = %run.session, run_id = %run.id, mode = %run.mode, "run started");
        let mut run = run;
        run.state = RunState::Preparing;
        Ok(Entered {
            launched: Launched {
                journal,
                run,
                goal,
                history,
                context,
                request,
                options,
                workspace,
                dir,
                workspace_quota: quota,
                cancel,
                writer,
                checkpoints,
                resume,
                grant,
            },
            safety_checkpoint: safety.map(|(id, _)| id),
        })
    }
}

/// The workspace's writer lease for a run that writes (None for a
/// read-only one).
async fn claim_writer(
    shared: &Shared,
    run: &Run,
    options: &RunOptions,
    workspace: &paddock_core::ids::WorkspaceId,
) -> Result<Option<Lease>, RuntimeError> {
    let read_only = WorkspaceAccess::of(run.mode == RunMode::Plan, options.write_scope.as_ref())
        == WorkspaceAccess::ReadOnly;
    if read_only {
        return Ok(None);
    }
    let owner = lease_owner(shared, run);
    writer::acquire(&shared.store, workspace, &owner, shared.config.lease_ttl)
        .await
        .map(Some)
}

/// The goal row, the history (from the latest compaction) with the run's
/// opening message, and `run.started`. A resumed run has no opening message
/// (the history holds the goal): it gets the calls left without results.
async fn prepare(
    journal: &Journal,
    run: &Run,
    request: &StartRun,
    options: &RunOptions,
    backend_name: &str,
    restored: Option<CheckpointId>,
) -> Result<(Goal, Vec<Message>, ContextBase, Option<ResumeTail>), RuntimeError> {
    let now = journal.store().now();
    let goal = Goal {
        id: GoalId::generate(),
        tenant: run.tenant.clone(),
        session: run.session.clone(),
        run: run.id.clone(),
        description: run.goal.clone(),
        success_criteria: request.success_criteria.clone(),
        status: GoalStatus::Open,
        created_at: now,
        updated_at: now,
    };
    journal.create_goal(&goal).await?;
    let (mut history, context) = context::load_history(
        journal.store().as_ref(),
        journal.tenant(),
        journal.session(),
    )
    .await?;
    let resume = match &options.resumed_from {
        Some(from) => {
            let tail = resume::tail(
                journal.store().as_ref(),
                &run.tenant,
                from,
                &history,
                restored.is_some(),
            )
            .await?;
            if tail.calls.is_empty() && history.last().is_some_and(|m| m.role == Role::Assistant) {
                let nudge = Message::user(prompt::RESUMED.to_owned());
                journal.append_message(nudge.clone()).await?;
                history.push(nudge);
            }
            Some(tail)
        }
        None => {
            if let Some(repair) = history::unanswered_calls(&history) {
                journal.append_message(repair.clone()).await?;
                history.push(repair);
            }
            let opening = Message::user(prompt::goal_message(&run.goal, &request.success_criteria));
            journal.append_message(opening.clone()).await?;
            history.push(opening);
            None
        }
    };
    let started = RunStarted {
        goal: run.goal.clone(),
        success_criteria: request.success_criteria.clone(),
        mode: run.mode,
        budgets: run.budgets,
        model: request.provider.name().to_owned(),
        driver: Some(crate::events::DriverNotice {
            kind: run.driver,
            capabilities: request.driver.capabilities(),
        }),
        parent_run: options.parent_run.clone(),
        profile: options.profile,
        task_key: options.task_key.clone(),
        backend: Some(backend_name.to_owned()),
        image: request.backend.as_ref().and_then(|b| b.image.clone()),
        network: request.network.clone(),
        secrets: request.secrets.iter().map(|s| s.notice()).collect(),
        resumed_from: options.resumed_from.clone(),
        restored_checkpoint: restored,
        resume_budget: options.resume_budget,
    };
    journal.emit(&started).await?;
    Ok((goal, history, context, resume))
}

/// Records a run that failed before its task started; failures are logged.
pub(super) async fn fail_early(journal: &Journal, err: &RuntimeError) {
    end_early(
        journal,
        RunState::Failed,
        EndReason::InfrastructureError,
        Some(error_chain(err)),
    )
    .await;
}

/// Records the end of a run that never had a task of its own running the
/// loop (failed before it, or cancelled or timed out in the queue), with
/// its `run.finished`; failures are logged.
pub(super) async fn end_early(
    journal: &Journal,
    state: RunState,
    end_reason: EndReason,
    error: Option<String>,
) {
    let update = RunUpdate {
        error: error.clone(),
        end_reason: Some(end_reason),
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
        undelivered: crate::steering::close_for_end(journal).await,
    };
    let recorded = async {
        let finished = Encoded::of(&finished)?;
        journal.update_run_emitting(&update, vec![finished]).await
    };
    if let Err(e) = recorded.await {
        tracing::warn!(error = %error_chain(&e), "recording a run that ended before it started");
    }
}
