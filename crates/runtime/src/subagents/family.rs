//! The children of one root run: spawning them (limit per run, running
//! slots), following each to its end (status events in the parent's
//! session, the change set), and stopping them all when the parent ends.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use paddock_core::ids::{RunId, SessionId};
use paddock_core::model::ModelProvider;
use paddock_core::store::{Run, RunMode, RunState, Session, SubagentProfile, Workspace};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::changes::{self, ChangeSet};
use super::child_dir::{self, ChildDir};
use super::contract::Contract;
use super::prepare::{Base, Batcher, Source};
use super::report::{ChangeSetState, ChildReport};
use crate::events::journal::Journal;
use crate::events::{SubagentPhase, SubagentStatus, cap_text};
use crate::run::{
    Admission, FamilyBudget, Gate, RunBackend, RunHandle, RunOptions, StartRun, SubagentModels,
};
use crate::runtime::{Runtime, Shared};
use crate::tools::WriteScope;
use crate::util::error_chain;
use crate::workspace;
use paddock_proto::NetworkPolicy;

/// Most characters of a child's summary in `subagent.status`.
const STATUS_SUMMARY_CAP: usize = 500;

/// What a root run's family is made from.
#[derive(Debug)]
pub(crate) struct FamilyParts {
    pub(crate) shared: Arc<Shared>,
    /// The parent's writer: status events go to its session.
    pub(crate) journal: Arc<Journal>,
    pub(crate) parent: Run,
    pub(crate) workspace: Workspace,
    pub(crate) dir: PathBuf,
    pub(crate) cancel: CancellationToken,
    pub(crate) provider: Arc<dyn ModelProvider>,
    pub(crate) models: Option<Arc<dyn SubagentModels>>,
    /// The parent's sandbox backend, if it named one: children use it too.
    pub(crate) backend: Option<RunBackend>,
    /// The root's budget: children draw from what is left of it.
    pub(crate) budget: Arc<FamilyBudget>,
    /// The parent run's snapshot limits: the children's copies, change sets
    /// and end snapshots use them too.
    pub(crate) snapshot_limits: paddock_snapshot::Limits,
    /// The parent's network: a child gets it or a narrower one.
    pub(crate) network: NetworkPolicy,
    /// The parent's secrets: a child's sandbox gets them too.
    pub(crate) secrets: Vec<paddock_proto::SecretSpec>,
}

#[derive(Debug, Default)]
struct FamilyState {
    /// Spawns admitted (failed ones give their place back).
    reserved: u32,
    /// The parent is ending: no more spawns.
    closed: bool,
    children: Vec<Arc<Child>>,
}

#[derive(Debug)]
pub(crate) struct Family {
    parts: FamilyParts,
    slots: Arc<Semaphore>,
    /// Makes the children's workspace copies.
    batcher: Arc<Batcher>,
    state: Mutex<FamilyState>,
    /// Spawns under way (a spawn runs on its own task, so a cancelled tool
    /// call never leaves a child half made or unfollowed).
    spawning: watch::Sender<u32>,
}

/// Why a spawn did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpawnError {
    /// A limit or the parent's state refuses it.
    Refused(String),
    /// Making the workspace, session or run failed.
    Failed(String),
}

/// What `spawn_subagent` asks for.
#[derive(Debug, Clone)]
pub(crate) struct SpawnRequest {
    pub(crate) task_id: String,
    pub(crate) profile: SubagentProfile,
    pub(crate) prompt: String,
    pub(crate) write_scope: Option<WriteScope>,
    /// The child's network, within the parent's; None: the parent's.
    pub(crate) network: Option<NetworkPolicy>,
}

/// Where a build child's changes stand, with the changes while pending.
#[derive(Debug)]
pub(crate) struct Changes {
    pub(crate) state: ChangeSetState,
    pub(crate) set: Arc<ChangeSet>,
}

#[derive(Debug)]
pub(crate) struct Child {
    pub(crate) run: RunId,
    pub(crate) session: SessionId,
    pub(crate) task_id: String,
    pub(crate) profile: SubagentProfile,
    base: Base,
    dir: ChildDir,
    cancel: Option<CancellationToken>,
    inbox: mpsc::UnboundedSender<String>,
    finished: watch::Receiver<Option<Run>>,
    pub(crate) changes: Mutex<Changes>,
}

impl Child {
    pub(crate) fn stop(&self) {
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.finished.borrow().is_some()
    }

    /// The final run, once the child ended and its change set is known.
    pub(crate) async fn finished(&self) -> Option<Run> {
        let mut finished = self.finished.clone();
        finished
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|run| run.clone())
    }

    pub(crate) fn changes(&self) -> MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The child's result, once it finished.
    pub(crate) fn report(&self) -> Option<ChildReport> {
        let run = self.finished.borrow().clone()?;
        let changes = self.changes();
        Some(ChildReport::of(
            &run,
            &self.task_id,
            self.profile,
            changes.set.paths(),
            changes.state.clone(),
        ))
    }

    /// Hands a message to the child's model before its next turn.
    pub(crate) fn message(&self, text: String) -> Result<(), String> {
        if self.is_finished() {
            return Err(format!("subagent {} already finished", self.run));
        }
        self.inbox
            .send(text)
            .map_err(|_| format!("subagent {} is no longer taking messages", self.run))
    }
}

impl Family {
    pub(crate) fn new(parts: FamilyParts) -> Arc<Self> {
        let running = parts.shared.config.subagents.max_running.max(1) as usize;
        let batcher = Batcher::new(Source {
            shared: Arc::clone(&parts.shared),
            parent: parts.parent.clone(),
            workspace: parts.workspace.clone(),
            dir: parts.dir.clone(),
            limits: parts.snapshot_limits,
        });
        Arc::new(Self {
            parts,
            slots: Arc::new(Semaphore::new(running)),
            batcher,
            state: Mutex::new(FamilyState::default()),
            spawning: watch::Sender::new(0),
        })
    }

    fn state(&self) -> MutexGuard<'_, FamilyState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.parts.shared
    }

    pub(crate) fn parent(&self) -> &Run {
        &self.parts.parent
    }

    pub(crate) fn children(&self) -> Vec<Arc<Child>> {
        self.state().children.clone()
    }

    /// The child named by its run id, or else the latest one spawned for that task id.
    pub(crate) fn find(&self, reference: &str) -> Option<Arc<Child>> {
        let children = self.children();
        children
            .iter()
            .find(|c| c.run.as_str() == reference)
            .or_else(|| children.iter().rev().find(|c| c.task_id == reference))
            .cloned()
    }

    /// Spawns a child: its workspace copy, session and run; it starts when a
    /// running slot is free. Returns once the run exists.
    pub(crate) async fn spawn(
        self: &Arc<Self>,
        request: SpawnRequest,
    ) -> Result<(RunId, SessionId), SpawnError> {
        if self.parts.parent.mode == RunMode::Plan && request.profile.mode() != RunMode::Plan {
            return Err(SpawnError::Refused(format!(
                "this run is in plan mode, which is read-only all the way down: it may spawn \
                 explore, plan or review subagents, not a {} subagent (it would change files \
                 and run commands); put the build step in the plan instead",
                request.profile
            )));
        }
        let network = request
            .network
            .clone()
            .unwrap_or_else(|| self.parts.network.clone());
        if !network.within(&self.parts.network) {
            return Err(SpawnError::Refused(format!(
                "network {}: a subagent gets this run's network ({}) or a narrower one",
                network.label(),
                self.parts.network.label()
            )));
        }
        self.reserve()?;
        self.spawning.send_modify(|n| *n += 1);
        let family = Arc::clone(self);
        let task = tokio::spawn(async move {
            let result = family.spawn_child(request).await;
            if result.is_err() {
                let mut state = family.state();
                state.reserved = state.reserved.saturating_sub(1);
            }
            family.spawning.send_modify(|n| *n = n.saturating_sub(1));
            result
        });
        task.await
            .map_err(|err| SpawnError::Failed(format!("the spawn task failed: {err}")))?
    }

    fn reserve(&self) -> Result<(), SpawnError> {
        let max = self.parts.shared.config.subagents.max_per_run;
        let mut state = self.state();
        if state.closed {
            return Err(SpawnError::Refused(
                "the parent run is ending; it spawns no more subagents".to_owned(),
            ));
        }
        if state.reserved >= max {
            return Err(SpawnError::Refused(format!(
                "this run already spawned {} subagents, the most one run may have ({max}); \
                 wait for them and use their results",
                state.reserved
            )));
        }
        state.reserved += 1;
        Ok(())
    }

    async fn spawn_child(
        self: &Arc<Self>,
        request: SpawnRequest,
    ) -> Result<(RunId, SessionId), SpawnError> {
        let shared = &self.parts.shared;
        let parent = &self.parts.parent;
        let workspace = Workspace::new(
            parent.tenant.clone(),
            format!(
                "{} ({} {})",
                self.parts.workspace.name, request.profile, request.task_id
            ),
            shared.store.now(),
        );
        let dir = workspace::workspace_dir(&shared.config, &workspace);
        let read_only = request.profile.mode() == RunMode::Plan;
        // no sandbox has the directory until the run is launched: a failure removes it
        let started = match self.batcher.prepare(&dir, read_only).await {
            Ok(base) => {
                self.start_child(request, workspace, dir.clone(), base)
                    .await
            }
            Err(err) => Err(SpawnError::Failed(err)),
        };
        if started.is_err() {
            child_dir::remove(&dir).await;
        }
        started
    }

    /// Records the child's workspace and session and launches its run.
    async fn start_child(
        self: &Arc<Self>,
        request: SpawnRequest,
        workspace: Workspace,
        dir: PathBuf,
        base: Base,
    ) -> Result<(RunId, SessionId), SpawnError> {
        let shared = &self.parts.shared;
        let store = &shared.store;
        let parent = &self.parts.parent;
        let failed = |what: &str, err: &(dyn std::error::Error + 'static)| {
            SpawnError::Failed(format!("{what}: {}", error_chain(err)))
        };
        store
            .create_workspace(&workspace)
            .await
            .map_err(|err| failed("recording the subagent's workspace", &err))?;
        let plan = match store.get_plan(&parent.tenant, &parent.session).await {
            Ok(plan) => plan,
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "reading the parent's plan for a subagent");
                None
            }
        };
        let contract = Contract {
            task_id: &request.task_id,
            prompt: &request.prompt,
            profile: request.profile,
            write_scope: request.write_scope.as_ref(),
            parent_goal: &parent.goal,
            plan: plan.as_ref(),
        };
        let mut session = Session::new(
            parent.tenant.clone(),
            workspace.id.clone(),
            format!("{} subagent: {}", request.profile, request.task_id),
            store.now(),
        );
        session.parent_run = Some(parent.id.clone());
        session.forked_from = Some(parent.session.clone());
        store
            .create_session(&session)
            .await
            .map_err(|err| failed("recording the subagent's session", &err))?;

        let provider = self
            .parts
            .models
            .as_ref()
            .and_then(|models| models.model(request.profile, &request.task_id))
            .unwrap_or_else(|| Arc::clone(&self.parts.provider));
        let start = StartRun {
            goal: contract.goal(),
            success_criteria: Vec::new(),
            mode: request.profile.mode(),
            budgets: self.parts.budget.remaining(),
            provider,
            // subagents run Paddock's own loop (only it starts them)
            driver: crate::drivers::BuiltinDriver::shared(),
            instructions: Some(contract.instructions()),
            subagent_models: None,
            snapshot_limits: Some(self.parts.snapshot_limits),
            backend: self.parts.backend.clone(),
            network: Some(
                request
                    .network
                    .clone()
                    .unwrap_or_else(|| self.parts.network.clone()),
            ),
            secrets: self.parts.secrets.clone(),
            // a subagent takes no checkpoints of its own (its parent's do)
            require_checkpoint: false,
        };
        let (phases_tx, phases) = mpsc::unbounded_channel();
        let (inbox, inbox_rx) = mpsc::unbounded_channel();
        let options = RunOptions {
            parent_run: Some(parent.id.clone()),
            profile: Some(request.profile),
            task_key: Some(request.task_id.clone()),
            write_scope: request.write_scope.clone(),
            parent_cancel: Some(self.parts.cancel.clone()),
            gate: Some(Gate::new(Arc::clone(&self.slots), phases_tx)),
            inbox: Some(inbox_rx),
            family_budget: Some(Arc::clone(&self.parts.budget)),
            resumed_from: None,
            resume_budget: None,
            force_restore: false,
            // never queued (run/queue.rs): refused at once instead
            queue_record: None,
        };
        let runtime = Runtime {
            shared: Arc::clone(shared),
        };
        let handle = match runtime
            .launch(&parent.tenant, &session.id, start, options)
            .await
        {
            Ok(handle) => handle,
            // the tenant or node has no slot for its sandbox: a refusal the
            // model can act on (wait for its other subagents, then retry)
            Err(crate::RuntimeError::NotAdmitted { source }) => {
                return Err(SpawnError::Refused(format!(
                    "no sandbox slot for a subagent now: {source}; wait for running subagents \
                     to finish (wait_subagents) and spawn again, or do the task yourself"
                )));
            }
            Err(err) => return Err(failed("starting the subagent's run", &err)),
        };
        let run_id = handle.run.id.clone();
        let cancel = shared.active().get(&run_id).map(|a| a.cancel.clone());
        let (finished_tx, finished) = watch::channel(None);
        let child = Arc::new(Child {
            run: run_id.clone(),
            session: session.id.clone(),
            task_id: request.task_id,
            profile: request.profile,
            base,
            dir: ChildDir::new(dir),
            cancel,
            inbox,
            finished,
            changes: Mutex::new(Changes {
                state: ChangeSetState::None,
                set: Arc::new(ChangeSet::default()),
            }),
        });
        let closed = {
            let mut state = self.state();
            state.children.push(Arc::clone(&child));
            state.closed
        };
        if closed {
            child.stop();
        }
        tracing::info!(
            parent_run = %parent.id,
            run_id = %run_id,
            task_id = %child.task_id,
            profile = %child.profile,
            "subagent spawned"
        );
        tokio::spawn(follow(Arc::clone(self), child, handle, phases, finished_tx));
        Ok((run_id, session.id))
    }

    /// Stops every child and waits until each has ended and been reported,
    /// then removes the workspace directories still left: the parent calls
    /// this before its own sandbox goes down.
    pub(crate) async fn shutdown(&self) {
        self.state().closed = true;
        let mut spawning = self.spawning.subscribe();
        // the sender lives in self: this cannot fail
        let _ = spawning.wait_for(|n| *n == 0).await;
        let children = self.children();
        for child in &children {
            child.stop();
        }
        for child in &children {
            child.finished().await;
        }
        for child in &children {
            child.dir.release().await;
        }
    }

    async fn status(&self, child: &Child, status: SubagentPhase, report: Option<&ChildReport>) {
        let event = SubagentStatus {
            run_id: child.run.clone(),
            session_id: child.session.clone(),
            task_id: child.task_id.clone(),
            profile: child.profile,
            status,
            state: report.map(|r| r.status),
            verdict: report.and_then(|r| r.verdict),
            summary: report
                .and_then(|r| r.summary.as_deref())
                .map(|s| cap_text(s, STATUS_SUMMARY_CAP).0),
            changed_paths: report.map(|r| u32::try_from(r.changed_paths.len()).unwrap_or(u32::MAX)),
        };
        if let Err(err) = self.parts.journal.emit(&event).await {
            tracing::warn!(run_id = %child.run, error = %error_chain(&err), "recording a subagent's status");
        }
    }
}

/// The phase a child's admission at its gate is reported as.
fn phase(admission: Admission) -> SubagentPhase {
    match admission {
        Admission::Queued => SubagentPhase::Queued,
        Admission::Running => SubagentPhase::Running,
    }
}

/// Follows one child to its end: its admissions as status events, then its
/// change set, then `finished`.
async fn follow(
    family: Arc<Family>,
    child: Arc<Child>,
    handle: RunHandle,
    mut phases: mpsc::UnboundedReceiver<Admission>,
    finished: watch::Sender<Option<Run>>,
) {
    family.status(&child, SubagentPhase::Spawned, None).await;
    let started = handle.run.clone();
    let wait = handle.wait();
    tokio::pin!(wait);
    let ended = loop {
        tokio::select! {
            biased;
            Some(admission) = phases.recv() => family.status(&child, phase(admission), None).await,
            ended = &mut wait => break ended,
        }
    };
    while let Ok(admission) = phases.try_recv() {
        family.status(&child, phase(admission), None).await;
    }
    let shared = family.shared();
    let (run, sandbox_gone) = match ended {
        Ok(run) => (run, true),
        Err(err) => {
            tracing::error!(run_id = %child.run, error = %error_chain(&err), "a subagent's task failed");
            let run = match shared.store.get_run(&started.tenant, &started.id).await {
                Ok(run) => run,
                Err(_) => Run {
                    state: RunState::Failed,
                    error: Some(error_chain(&err)),
                    ..started
                },
            };
            (run, false)
        }
    };
    if child.profile.mode() == RunMode::Build {
        let limits = family.parts.snapshot_limits;
        let (state, set) = change_set(shared, limits, &child.base, &run).await;
        let mut changes = child.changes();
        changes.state = state;
        changes.set = Arc::new(set);
    }
    // before `finished`: the parent's shutdown sees the directory gone or idle
    if sandbox_gone {
        child.dir.run_ended(run.end_snapshot.is_some()).await;
    } else {
        child.dir.run_lost();
    }
    finished.send_replace(Some(run));
    let report = child.report();
    family
        .status(&child, SubagentPhase::Finished, report.as_ref())
        .await;
    tracing::info!(run_id = %child.run, "subagent finished");
}

/// The child's changes against the spawn-time base.
async fn change_set(
    shared: &Shared,
    limits: paddock_snapshot::Limits,
    base: &Base,
    run: &Run,
) -> (ChangeSetState, ChangeSet) {
    let unavailable =
        |reason: String| (ChangeSetState::Unavailable { reason }, ChangeSet::default());
    let Some(end) = &run.end_snapshot else {
        return unavailable("the subagent's run kept no end snapshot".to_owned());
    };
    let end = match shared.store.get_snapshot(&run.tenant, end).await {
        Ok(end) => end,
        Err(err) => return unavailable(format!("reading its end snapshot: {}", error_chain(&err))),
    };
    let end_key = match paddock_core::blob::BlobKey::parse(&end.blob_hash) {
        Ok(key) => key,
        Err(err) => return unavailable(format!("its end snapshot's key: {err}")),
    };
    let blobs = Arc::clone(&shared.blobs);
    let base_key = base.key.clone();
    let computed = tokio::task::spawn_blocking(move || {
        let open = |key: &paddock_core::blob::BlobKey| {
            blobs
                .open(key)
                .map_err(|err| format!("opening snapshot {key}: {}", error_chain(&err)))
        };
        let read = |err: paddock_snapshot::SnapshotError| {
            format!("reading a snapshot: {}", error_chain(&err))
        };
        let before = changes::manifest(open(&base_key)?, &limits).map_err(read)?;
        let after = changes::manifest(open(&end_key)?, &limits).map_err(read)?;
        let changes = changes::diff(&before, &after);
        let wanted = changes
            .iter()
            .filter(|c| c.after.is_some())
            .map(|c| c.path.clone())
            .collect();
        let contents = changes::contents(open(&end_key)?, &limits, &wanted).map_err(read)?;
        Ok::<_, String>(ChangeSet { changes, contents })
    })
    .await;
    match computed {
        Ok(Ok(set)) if set.changes.is_empty() => (ChangeSetState::None, set),
        Ok(Ok(set)) => (ChangeSetState::Pending, set),
        Ok(Err(reason)) => unavailable(reason),
        Err(err) => unavailable(format!("the change set task failed: {err}")),
    }
}
