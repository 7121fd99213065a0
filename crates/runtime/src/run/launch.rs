//! Starting a run: the lease, the run and goal rows, the opening message and
//! `run.started` are written before `start_run` returns; the sandbox and the
//! loop follow on a task of their own.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use paddock_core::ids::{CheckpointId, GoalId, SessionId, TenantId};
use paddock_core::model::{Message, Role};
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{
    CheckpointReason, EndReason, Goal, GoalStatus, Lease, Run, RunMode, RunState, RunUpdate,
    SessionStatus, StoreError, Workspace,
};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::admission::{AdmissionAsk, AdmissionGrant};
use super::driver::{Driver, DriverParts, Ending};
use super::egress_events::EgressEvents;
use super::resume::{self, ResumeTail};
use super::sandbox::{RunSandbox, WorkspaceAccess};
use super::{
    FamilyBudget, RunHandle, RunOptions, StartRun, finish, history, live, prompt, renew, writer,
};
use crate::checkpoints::{Checkpointer, Place};
use crate::context::{self, ContextBase};
use crate::error::RuntimeError;
use crate::events::journal::Journal;
use crate::events::{CheckpointFailed, RunFinished, RunStarted, SandboxReady, SandboxStopped};
use crate::memory::{self, MemoryPlace};
use crate::runtime::{ActiveRun, Runtime, Shared, SubagentDesk};
use crate::subagents::{self, Family, FamilyParts};
use crate::tools::{ToolContext, ToolRegistry};
use crate::util::error_chain;
use crate::workspace;

/// What the run task needs besides the shared state.
#[derive(Debug)]
struct Launched {
    journal: Arc<Journal>,
    run: Run,
    goal: Goal,
    history: Vec<Message>,
    context: ContextBase,
    request: StartRun,
    options: RunOptions,
    workspace: Workspace,
    dir: PathBuf,
    cancel: CancellationToken,
    /// The workspace's writer lease; None for a read-only run.
    writer: Option<Lease>,
    checkpoints: Option<Checkpointer>,
    /// A resumed run's calls its predecessor left without results.
    resume: Option<ResumeTail>,
    /// The run's sandbox slot (None: no admission configured).
    grant: Option<Box<dyn AdmissionGrant>>,
}

impl Runtime {
    /// Starts working on `request.goal` in the session: returns once the run
    /// is recorded (state `preparing`); the run proceeds on its own task.
    /// A session runs one run at a time ([`RuntimeError::SessionBusy`]); a
    /// new run continues the session's history.
    pub async fn start_run(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        request: StartRun,
    ) -> Result<RunHandle, RuntimeError> {
        self.launch(tenant, session, request, RunOptions::default())
            .await
    }

    pub(crate) async fn launch(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        mut request: StartRun,
        options: RunOptions,
    ) -> Result<RunHandle, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        let goal_text = request.goal.trim().to_owned();
        if goal_text.is_empty() {
            return Err(RuntimeError::Invalid {
                reason: "the goal is empty".to_owned(),
            });
        }
        let price = shared.config.prices.of(request.provider.name());
        if request.budgets.max_cost_micro_usd.is_some() && price.is_none() {
            return Err(RuntimeError::Invalid {
                reason: format!(
                    "a cost limit needs the price of model {}, and none is configured",
                    request.provider.name()
                ),
            });
        }
        // the policy in force from here on: in run.started and the sandbox
        let network = request
            .network
            .take()
            .unwrap_or_else(|| shared.config.network.default.clone());
        network.validate().map_err(|e| RuntimeError::Invalid {
            reason: format!("network: {e}"),
        })?;
        request.network = Some(network);
        let session = self.get_session(tenant, session_id).await?;
        if session.status == SessionStatus::Archived {
            return Err(RuntimeError::SessionArchived {
                session: session.id,
            });
        }
        let workspace = store
            .get_workspace(tenant, &session.workspace)
            .await
            .map_err(RuntimeError::store("get_workspace"))?;
        let dir = workspace::workspace_dir(&shared.config, &workspace);
        workspace::ensure_dir(&dir).await?;

        let mut run = Run::new(tenant.clone(), session.id.clone(), goal_text, store.now());
        run.mode = options.profile.map_or(request.mode, |p| p.mode());
        run.budgets = request.budgets;
        run.parent_run = options.parent_run.clone();
        run.profile = options.profile;
        run.task_key = options.task_key.clone();
        run.resumed_from = options.resumed_from.clone();
        // its sandbox's slot first: a refused run leaves nothing behind
        let grant = match shared.admission.get() {
            Some(admission) => {
                let ask = AdmissionAsk {
                    tenant,
                    run: &run.id,
                    subagent: options.parent_run.is_some(),
                    limits: &shared.config.sandbox.policy.limits,
                };
                match admission.admit(ask).await {
                    Ok(grant) => Some(grant),
                    Err(source) => {
                        tracing::info!(run_id = %run.id, tenant = %tenant, reason = %source, "run not admitted");
                        return Err(RuntimeError::NotAdmitted { source });
                    }
                }
            }
            None => None,
        };

        let owner = format!("{}/{}", shared.config.node, run.id);
        let lease = acquire_session_lease(shared, &session.id, &owner).await?;
        let read_only =
            WorkspaceAccess::of(run.mode == RunMode::Plan, options.write_scope.as_ref())
                == WorkspaceAccess::ReadOnly;
        let writer = if read_only {
            None
        } else {
            match writer::acquire(store, &workspace.id, &owner, shared.config.lease_ttl).await {
                Ok(writer) => Some(writer),
                Err(err) => {
                    if let Err(e) = store.release_lease(&lease).await {
                        tracing::warn!(error = %error_chain(&e), "releasing the session lease");
                    }
                    return Err(err);
                }
            }
        };
        let cancel = options
            .parent_cancel
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        let journal = Arc::new(
            Journal::new(Arc::clone(store), Arc::clone(&shared.bus), &run, lease)
                .waiting_for_space(cancel.clone(), shared.config.store_full_wait),
        );
        let release_early = |journal: Arc<Journal>| {
            let writer = writer.clone();
            async move {
                if let Some(writer) = &writer {
                    writer::release(journal.store(), writer).await;
                }
                journal.release().await;
            }
        };
        // a writing root run records where the user can go back to
        let mut checkpoints = match (&writer, &options.parent_run) {
            (Some(_), None) => {
                let place = Place {
                    tenant: tenant.clone(),
                    session: session.id.clone(),
                    run: run.id.clone(),
                    workspace: workspace.id.clone(),
                    dir: dir.clone(),
                };
                Some(
                    Checkpointer::new(store, &shared.blobs, self.capture_options(), place)
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
                match resume::plan_restore(self, tenant, from, checkpointer, options.force_restore)
                    .await
                {
                    Ok(planned) => planned,
                    Err(err) => {
                        release_early(journal).await;
                        return Err(err);
                    }
                }
            }
            _ => None,
        };
        if let Err(err) = journal.create_run(&run).await {
            release_early(journal).await;
            return Err(err);
        }
        let (restored, safety) = match (planned, checkpoints.as_mut()) {
            (Some(plan), Some(checkpointer)) => {
                match resume::restore(self, journal.lease(), checkpointer, &dir, plan).await {
                    Ok((restored, safety)) => (Some(restored), safety),
                    Err(err) => {
                        fail_early(&journal, &err).await;
                        release_early(journal).await;
                        return Err(err);
                    }
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
            fail_early(&journal, &err).await;
            release_early(journal).await;
            return Err(err);
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
            Err(err) => {
                fail_early(&journal, &err).await;
                release_early(journal).await;
                return Err(err);
            }
        };

        if let Some((_, created)) = &safety
            && let Err(err) = journal.emit(created).await
        {
            tracing::warn!(error = %error_chain(&err), "recording the checkpoint taken before the restore");
        }
        let recorded = match &start_checkpoint {
            Some(Ok(created)) => journal.emit(created).await.map(|_| ()),
            Some(Err(failed)) => journal.emit(failed).await.map(|_| ()),
            None => Ok(()),
        };
        if let Err(err) = recorded {
            tracing::warn!(error = %error_chain(&err), "recording the run's start checkpoint");
        }

        let (done_tx, done_rx) = watch::channel(None);
        shared.active().insert(
            run.id.clone(),
            ActiveRun {
                session: session.id.clone(),
                cancel: cancel.clone(),
                done: done_rx,
                subagents: None,
            },
        );
        tracing::info!(session_id = %session.id, run_id = %run.id, mode = %run.mode, "run started");
        let launched = Launched {
            journal,
            run: run.clone(),
            goal,
            history,
            context,
            request,
            options,
            workspace,
            dir,
            cancel,
            writer,
            checkpoints,
            resume,
            grant,
        };
        let task = tokio::spawn(drive(Arc::clone(shared), launched, done_tx));
        Ok(RunHandle {
            run,
            safety_checkpoint: safety.map(|(id, _)| id),
            task,
        })
    }
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

/// The backend the run's sandbox comes from: the one it asked for, else
/// the runtime's.
fn run_backend<'a>(shared: &'a Shared, request: &'a StartRun) -> &'a Arc<dyn SandboxBackend> {
    request
        .backend
        .as_ref()
        .map_or(&shared.backend, |chosen| &chosen.backend)
}

/// Records a run that failed before its task started; failures are logged.
async fn fail_early(journal: &Journal, err: &RuntimeError) {
    let error = error_chain(err);
    let update = RunUpdate {
        error: Some(error.clone()),
        end_reason: Some(EndReason::InfrastructureError),
        ..RunUpdate::state(RunState::Failed)
    };
    let finished = RunFinished {
        state: RunState::Failed,
        end_reason: EndReason::InfrastructureError,
        usage: Default::default(),
        total_usage: Some(Default::default()),
        error: Some(error),
        verdict: None,
        question: None,
        end_snapshot: None,
        snapshot_error: None,
        snapshot_limit: None,
        undelivered: crate::steering::close_for_end(journal).await,
    };
    if let Err(e) = journal.update_run(&update).await {
        tracing::warn!(error = %error_chain(&e), "recording a run that failed to start");
    }
    if let Err(e) = journal.emit(&finished).await {
        tracing::warn!(error = %error_chain(&e), "recording a run that failed to start");
    }
}

/// The run task: sandbox up, loop, sandbox down, snapshot, final state.
async fn drive(shared: Arc<Shared>, launched: Launched, done: watch::Sender<Option<Run>>) -> Run {
    let span = tracing::info_span!(
        "run",
        session_id = %launched.run.session,
        run_id = %launched.run.id,
        sandbox_id = tracing::field::Empty,
    );
    async move {
        let Launched {
            journal,
            run,
            goal,
            history,
            context,
            request,
            mut options,
            workspace,
            dir,
            cancel,
            writer,
            checkpoints,
            resume,
            grant,
        } = launched;
        let snapshot_limits = request
            .snapshot_limits
            .unwrap_or(shared.config.snapshot.limits);
        let lease_lost = Arc::new(AtomicBool::new(false));
        let renewal = renew::spawn(
            Arc::clone(&shared.store),
            journal.lease().clone(),
            shared.config.lease_ttl,
            cancel.clone(),
            Arc::clone(&lease_lost),
        );
        // a lost writer lease stops the run like a lost session lease
        let writer_renewal = writer.as_ref().map(|writer| {
            renew::spawn(
                Arc::clone(&shared.store),
                writer.clone(),
                shared.config.lease_ttl,
                cancel.clone(),
                Arc::clone(&lease_lost),
            )
        });
        // a subagent waits for a running slot; its clock starts once it has one
        let (admitted, _slot) = match options.gate.take() {
            Some(gate) => match gate.enter(&cancel).await {
                Some(permit) => (true, Some(permit)),
                None => (false, None),
            },
            None => (true, None),
        };
        let started = Instant::now();
        let family_budget = match options.family_budget.take() {
            Some(family) => {
                family.join();
                family
            }
            None => FamilyBudget::new(run.budgets, started),
        };
        let price = shared.config.prices.of(request.provider.name());
        let mut usage = run.usage;
        let mut sandbox_id = None;
        let network = request.network.clone().unwrap_or_default();
        let sandbox = if admitted {
            let access =
                WorkspaceAccess::of(run.mode == RunMode::Plan, options.write_scope.as_ref());
            let mut template = paddock_core::sandbox::SandboxSpec {
                secrets: request.secrets.clone(),
                ..shared.config.sandbox.clone()
            };
            template.policy.network = network.clone();
            Some(
                RunSandbox::start(
                    run_backend(&shared, &request),
                    &shared.store,
                    &shared.config.node,
                    &template,
                    &run.tenant,
                    &workspace.id,
                    dir.clone(),
                    access,
                    &run.id,
                    grant,
                )
                .await,
            )
        } else {
            None
        };
        let ending = match sandbox {
            None => Ending::Cancelled,
            Some(Err(err)) => Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: error_chain(&err),
            },
            Some(Ok(sandbox)) => {
                tracing::Span::current()
                    .record("sandbox_id", tracing::field::display(sandbox.id()));
                sandbox_id = Some(sandbox.id().clone());
                let ready = SandboxReady {
                    sandbox_id: sandbox.id().clone(),
                    backend: sandbox.backend().to_owned(),
                    read_only: sandbox.read_only(),
                };
                let egress_events = sandbox.egress_log().map(|log| {
                    EgressEvents::start(Arc::clone(&journal), log, sandbox.id().clone())
                });
                let ending = match journal.emit(&ready).await {
                    Err(err) => Ending::Failed {
                        reason: EndReason::InfrastructureError,
                        error: error_chain(&err),
                    },
                    Ok(_) => {
                        let root = options.parent_run.is_none();
                        let family = (root && shared.config.subagents.max_per_run > 0).then(|| {
                            Family::new(FamilyParts {
                                shared: Arc::clone(&shared),
                                journal: Arc::clone(&journal),
                                parent: run.clone(),
                                workspace: workspace.clone(),
                                dir: dir.clone(),
                                cancel: cancel.clone(),
                                provider: Arc::clone(&request.provider),
                                models: request.subagent_models.clone(),
                                backend: request.backend.clone(),
                                budget: Arc::clone(&family_budget),
                                snapshot_limits,
                                network: network.clone(),
                                secrets: request.secrets.clone(),
                            })
                        });
                        let place = MemoryPlace {
                            store: Arc::clone(&shared.store),
                            tenant: run.tenant.clone(),
                            workspace: workspace.id.clone(),
                            session: run.session.clone(),
                            run: run.id.clone(),
                        };
                        let mut registry = ToolRegistry::clone(&shared.registry);
                        if let Some(family) = &family {
                            subagents::register_tools(&mut registry, family);
                        }
                        memory::tools::register(&mut registry, &place);
                        let registry = Arc::new(registry);
                        let mut system =
                            prompt::system_prompt(run.mode, request.instructions.as_deref());
                        match place.for_goal(&run.goal).await {
                            Ok(records) => {
                                if let Some(section) = memory::prompt_section(&records) {
                                    system.push('\n');
                                    system.push_str(&section);
                                }
                            }
                            Err(err) => tracing::warn!(
                                error = %error_chain(&err),
                                "retrieving project memory for the system prompt"
                            ),
                        }
                        let ctx = ToolContext {
                            guest: sandbox.guest(),
                            mode: run.mode,
                            write_scope: options.write_scope.clone(),
                            session: run.session.clone(),
                            run: run.id.clone(),
                            cancel: cancel.clone(),
                            live: live::tool_output(&journal),
                            idempotency_key: None,
                        };
                        if family.is_some()
                            && let Some(active) = shared.active().get_mut(&run.id)
                        {
                            active.subagents = Some(Arc::new(SubagentDesk {
                                registry: Arc::clone(&registry),
                                ctx: ctx.clone(),
                            }));
                        }
                        let parts = DriverParts {
                            journal: Arc::clone(&journal),
                            schemas: registry.schemas(run.mode),
                            registry,
                            provider: Arc::clone(&request.provider),
                            criteria: request.success_criteria.clone(),
                            ctx,
                            system,
                            history,
                            context,
                            started,
                            lease_lost,
                            inbox: options.inbox.take(),
                            memory: root.then(|| (place, shared.config.memory_review)),
                            run: run.clone(),
                            family: Arc::clone(&family_budget),
                            price,
                            checkpoints,
                            resume,
                        };
                        let (ending, used) = Driver::new(parts).run().await;
                        usage = used;
                        // children end (and are reported) while the parent still holds its lease
                        if let Some(family) = family {
                            family.shutdown().await;
                        }
                        ending
                    }
                };
                let sandbox_id = sandbox.id().clone();
                let error = sandbox.stop(&shared.store).await;
                // the last decisions (connections the stop closed) before sandbox.stopped
                if let Some(events) = egress_events {
                    events.stop().await;
                }
                let stopped = SandboxStopped { sandbox_id, error };
                if let Err(err) = journal.emit(&stopped).await {
                    tracing::warn!(error = %error_chain(&err), "recording the stopped sandbox");
                }
                ending
            }
        };
        usage.wall_clock_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let finished = finish::finish(
            &shared,
            &journal,
            run,
            &goal,
            ending,
            usage,
            finish::SnapshotPlace {
                workspace,
                dir,
                sandbox: sandbox_id,
                limits: snapshot_limits,
            },
        )
        .await;
        renewal.cancel();
        if let (Some(renewal), Some(writer)) = (writer_renewal, &writer) {
            renewal.cancel();
            writer::release(&shared.store, writer).await;
        }
        journal.release().await;
        shared.active().remove(&finished.id);
        tracing::info!(
            state = %finished.state,
            end_reason = ?finished.end_reason.map(|r| r.as_str()),
            "run finished"
        );
        done.send_replace(Some(finished.clone()));
        finished
    }
    .instrument(span)
    .await
}

/// Longest a new run waits for a recovery (of this node or another) that
/// holds its session's lease while it ends an interrupted run.
const RECOVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The session's lease for a new run. A recovery holding it lets go within
/// moments, so that is waited for (at most [`RECOVERY_WAIT`]); any other
/// holder is [`RuntimeError::SessionBusy`].
async fn acquire_session_lease(
    shared: &Shared,
    session: &SessionId,
    owner: &str,
) -> Result<Lease, RuntimeError> {
    let store = &shared.store;
    let resource = Lease::session_resource(session);
    let deadline = Instant::now() + RECOVERY_WAIT;
    loop {
        match store
            .acquire_lease(&resource, owner, shared.config.lease_ttl)
            .await
        {
            Ok(lease) => return Ok(lease),
            Err(StoreError::LeaseHeld { owner: holder, .. })
                if crate::recover::is_recovery(&holder) && Instant::now() < deadline =>
            {
                tracing::debug!(session_id = %session, holder, "a recovery holds the session: waiting for it");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(StoreError::LeaseHeld { .. }) => {
                return Err(RuntimeError::SessionBusy {
                    session: session.clone(),
                });
            }
            Err(err) => return Err(RuntimeError::store("acquire_lease")(err)),
        }
    }
}
