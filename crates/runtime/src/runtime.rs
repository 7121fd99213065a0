//! The runtime handle: what front ends (HTTP API, CLI) call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use paddock_core::blob::BlobStore;
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{Run, RunUsage, Store};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{RuntimeConfig, RuntimeDeps};
use crate::error::RuntimeError;
use crate::events::bus::EventBus;
use crate::events::stream::{self, EventStream};
use crate::tools::{ToolContext, ToolRegistry};

/// A run driven by a task of this process.
#[derive(Debug, Clone)]
pub(crate) struct ActiveRun {
    pub(crate) session: SessionId,
    pub(crate) cancel: CancellationToken,
    /// Holds the final run once the task is done.
    pub(crate) done: watch::Receiver<Option<Run>>,
    /// A root run's subagent tools and its tool context, once its sandbox
    /// runs: a person's apply or reject goes through the same tools.
    pub(crate) subagents: Option<Arc<SubagentDesk>>,
    pub(crate) tenant: TenantId,
    /// What drives the run, and whether it takes steering messages.
    pub(crate) driver: paddock_core::store::DriverKind,
    pub(crate) steerable: bool,
}

/// What deciding on a child's change set from outside the run needs.
#[derive(Debug)]
pub(crate) struct SubagentDesk {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) ctx: ToolContext,
}

/// A person's decision on a build subagent's change set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangesDecision {
    /// Write the child's changes into the parent's workspace.
    Apply,
    /// Drop them.
    Reject,
}

/// How a decision went: `done` false when nothing changed (a conflict,
/// the set is not pending), with the reason in `message`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangesDecided {
    pub done: bool,
    pub message: String,
    /// The tool's structured result (`written`, `conflicts`, ...).
    pub data: serde_json::Value,
}

/// What every run task and API call shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) backend: Arc<dyn SandboxBackend>,
    pub(crate) blobs: Arc<dyn BlobStore>,
    pub(crate) config: RuntimeConfig,
    pub(crate) bus: Arc<EventBus>,
    /// What runs are offered; a root run with subagents gets its own copy
    /// with the subagent tools added, a subagent is refused their names.
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) active: Mutex<HashMap<RunId, ActiveRun>>,
    /// Admits every run's sandbox (set once by the front end that owns the
    /// quotas); unset: no check (a local `paddock run`).
    pub(crate) admission: std::sync::OnceLock<Arc<dyn crate::run::SandboxAdmission>>,
    /// The tenant disk quota, once the API installed it
    /// ([`Runtime::set_disk_guard`]).
    pub(crate) disk_guard: std::sync::OnceLock<Arc<dyn crate::config::DiskGuard>>,
    /// Root runs waiting for a sandbox slot (`RuntimeConfig::queue`).
    pub(crate) queue: crate::run::RunQueue,
}

impl Shared {
    /// What bounds checkpoints: the tenant disk quota and the per-session cap.
    pub(crate) fn storage(&self) -> crate::checkpoints::Storage {
        crate::checkpoints::Storage {
            guard: self.disk_guard.get().cloned(),
            max_per_session: self.config.storage.max_checkpoints_per_session,
        }
    }

    pub(crate) fn active(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, ActiveRun>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The agent runtime: sessions, runs and their events. Cheap to share
/// (`Arc<Runtime>`); every run proceeds on its own tokio task.
#[derive(Debug)]
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
}

impl Runtime {
    /// A runtime offering the built-in tools.
    pub fn new(deps: RuntimeDeps) -> Arc<Self> {
        Self::with_registry(deps, ToolRegistry::builtin())
    }

    /// A runtime offering the tools of `registry` (the built-ins plus extra
    /// ones); root runs also get the subagent tools unless
    /// `config.subagents.max_per_run` is 0. Each run still gets only what its
    /// mode allows.
    pub fn with_registry(deps: RuntimeDeps, mut registry: ToolRegistry) -> Arc<Self> {
        crate::subagents::withhold_tools(&mut registry);
        Arc::new(Self {
            shared: Arc::new(Shared {
                store: deps.store,
                backend: deps.backend,
                blobs: deps.blobs,
                config: deps.config,
                bus: Arc::new(EventBus::default()),
                registry: Arc::new(registry),
                active: Mutex::new(HashMap::new()),
                admission: std::sync::OnceLock::new(),
                disk_guard: std::sync::OnceLock::new(),
                queue: crate::run::RunQueue::default(),
            }),
        })
    }

    /// Every run's and subagent's sandbox passes `admission` from now on
    /// (the front end's slot and quota check). Set once; false when one
    /// was set already (that one stays).
    pub fn admit_sandboxes_through(
        &self,
        admission: Arc<dyn crate::run::SandboxAdmission>,
    ) -> bool {
        self.shared.admission.set(admission).is_ok()
    }

    /// Holds checkpoints to the tenant disk quota (set once; later calls
    /// are ignored): a checkpoint that would go over fails its batch with a
    /// `checkpoint.failed` event naming the quota.
    pub fn set_disk_guard(&self, guard: Arc<dyn crate::config::DiskGuard>) {
        let _ = self.shared.disk_guard.set(guard);
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.shared.config
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    pub async fn get_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, RuntimeError> {
        self.shared
            .store
            .get_run(tenant, id)
            .await
            .map_err(RuntimeError::store("get_run"))
    }

    /// The session's runs, oldest first.
    pub async fn list_runs(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Run>, RuntimeError> {
        self.shared
            .store
            .list_runs(tenant, session)
            .await
            .map_err(RuntimeError::store("list_runs"))
    }

    /// `run`'s usage plus every subagent run's under it (own + descendants),
    /// as recorded now.
    pub async fn total_usage(&self, run: &Run) -> Result<RunUsage, RuntimeError> {
        crate::usage::total(&*self.shared.store, run)
            .await
            .map_err(RuntimeError::store("list_child_runs"))
    }

    /// Subagent runs spawned by `parent`, oldest first.
    pub async fn list_child_runs(
        &self,
        tenant: &TenantId,
        parent: &RunId,
    ) -> Result<Vec<Run>, RuntimeError> {
        self.shared
            .store
            .list_child_runs(tenant, parent)
            .await
            .map_err(RuntimeError::store("list_child_runs"))
    }

    /// The run once it ended (any terminal state, or `awaiting_user`).
    pub async fn wait_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, RuntimeError> {
        let run = self.get_run(tenant, id).await?;
        let active = self.shared.active().get(id).cloned();
        match active {
            Some(active) => wait_done(id, active.done).await,
            None => Ok(run),
        }
    }

    /// Asks the run to stop and waits until it did: its model call and tool
    /// calls are stopped, its sandbox torn down, and it ends `cancelled`. A run
    /// that already ended is returned as it is.
    pub async fn cancel_run(&self, tenant: &TenantId, id: &RunId) -> Result<Run, RuntimeError> {
        let run = self.get_run(tenant, id).await?;
        let active = self.shared.active().get(id).cloned();
        match active {
            Some(active) => {
                tracing::info!(run_id = %id, session_id = %active.session, "cancelling run");
                active.cancel.cancel();
                wait_done(id, active.done).await
            }
            None if run.state.is_terminal()
                || run.state == paddock_core::store::RunState::AwaitingUser =>
            {
                Ok(run)
            }
            None => Err(RuntimeError::RunNotActive { run: id.clone() }),
        }
    }

    /// Applies or rejects the change set of `child`, a finished build
    /// subagent of the running root run `parent`, through the parent's own
    /// `apply_subagent_changes` / `reject_subagent_changes` (the same checks,
    /// conflict detection and state as when its model decides).
    pub async fn decide_child_changes(
        &self,
        tenant: &TenantId,
        parent: &RunId,
        child: &RunId,
        decision: ChangesDecision,
    ) -> Result<ChangesDecided, RuntimeError> {
        let run = self.get_run(tenant, parent).await?;
        // a run recorded finished may still be in the active map for a moment
        // while its driver winds down: it takes no decisions any more
        let desk = self
            .shared
            .active()
            .get(parent)
            .and_then(|active| active.subagents.clone())
            .filter(|_| !run.state.is_terminal());
        let Some(desk) = desk else {
            return Err(RuntimeError::RunNotActive {
                run: parent.clone(),
            });
        };
        let tool = match decision {
            ChangesDecision::Apply => crate::subagents::APPLY,
            ChangesDecision::Reject => crate::subagents::REJECT,
        };
        tracing::info!(run_id = %parent, child = %child, tool, "change set decided from outside the run");
        let arguments = serde_json::json!({ "run_id": child.to_string() });
        let out = desk
            .registry
            .call(&desk.ctx, tool, arguments)
            .await
            .map_err(|source| RuntimeError::ChildChanges {
                run: child.clone(),
                source: Box::new(source),
            })?;
        Ok(ChangesDecided {
            done: !out.is_error,
            message: out.content,
            data: out.data,
        })
    }

    /// The session's events with a sequence number above `after_seq`, then
    /// live ones as they are written: each exactly once, in order. Reconnect
    /// with the last sequence received to resume without loss or repeats.
    pub async fn event_stream(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<EventStream, RuntimeError> {
        self.shared
            .store
            .get_session(tenant, session)
            .await
            .map_err(RuntimeError::store("get_session"))?;
        // subscribe before reading the store: nothing written in between is lost
        let live = self.shared.bus.subscribe(session);
        Ok(stream::event_stream(
            Arc::clone(&self.shared.store),
            tenant.clone(),
            session.clone(),
            after_seq,
            live,
        ))
    }
}

impl Runtime {
    /// The events of one run (in its session's sequence) after `after_seq`,
    /// then live ones; the stream ends after the run's `run.finished`. A
    /// subagent's run has a session of its own; a root run shares its
    /// session's sequence with the session's other runs.
    pub async fn run_event_stream(
        &self,
        tenant: &TenantId,
        run: &RunId,
        after_seq: u64,
    ) -> Result<EventStream, RuntimeError> {
        let found = self.get_run(tenant, run).await?;
        let events = self.event_stream(tenant, &found.session, after_seq).await?;
        Ok(stream::run_events(events, found.id))
    }
}

async fn wait_done(
    id: &RunId,
    mut done: watch::Receiver<Option<Run>>,
) -> Result<Run, RuntimeError> {
    let finished = done
        .wait_for(Option::is_some)
        .await
        .map_err(|_| RuntimeError::Task {
            what: format!("run {id}"),
            reason: "the run task ended without reporting".to_owned(),
        })?;
    finished.clone().ok_or_else(|| RuntimeError::Task {
        what: format!("run {id}"),
        reason: "no final run".to_owned(),
    })
}
