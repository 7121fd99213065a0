//! Agent sessions and runs over the API: the [`Runtime`] with the rules a
//! tenant-facing front end adds (which models a request may choose, request
//! validation, views without internals), and the runs it started, so a
//! graceful shutdown can cancel them.
//!
//! The service and its runs' lifetime are here; its commands in
//! `commands.rs`, its error in `error.rs`, request checks in `validate.rs`,
//! sessions in `sessions.rs`, runs in `runs.rs`, event streams in
//! `events.rs`, and what the API answers in `views.rs`.

pub mod checkpoints;
mod commands;
pub mod doctor;
mod error;
mod events;
pub mod memory;
pub mod models;
mod queued_runs;
mod run_writer;
mod runs;
mod sessions;
mod validate;
mod views;

pub use checkpoints::{
    CheckpointDiffView, CheckpointView, FileChangeView, RewindSession, RewindView,
};
pub use commands::{
    CreateSession, ForkSession, ResumeRunCommand, StartRunCommand, SteerRun, UpdateSession,
};
pub use doctor::QuarantineView;
pub use error::AgentError;
pub use memory::{AddMemory, MemoryQuery, MemoryView, WidenMemory};
pub use models::{ModelChoice, ModelPolicy};
pub use queued_runs::TakenUp;
pub use sessions::fork_title;
pub use views::{ResumedView, RunView, SessionView, SteeringView};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use paddock_core::ids::{RunId, TenantId};
use paddock_runtime::{Drivers, RunHandle, Runtime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::sandboxes::RunAdmission;
use super::secrets::SecretCatalog;
use super::{Backends, SandboxService};

/// How long a shutdown waits for cancelled runs to wind down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// A run this node drives, started over the API.
#[derive(Debug)]
struct Active {
    tenant: TenantId,
    task: JoinHandle<()>,
}

#[derive(Debug)]
pub struct AgentService {
    runtime: Arc<Runtime>,
    models: ModelPolicy,
    /// What a run may name as its sandbox backend.
    backends: Backends,
    /// The operator's secrets a run may name.
    secrets: SecretCatalog,
    /// What a run may name as its driver.
    drivers: Drivers,
    active: Mutex<HashMap<RunId, Active>>,
    /// The API's sandboxes: a run takes its workspace over from an idle
    /// console sandbox among them, and a refusal names the writer.
    sandboxes: Arc<SandboxService>,
    shutdown: CancellationToken,
}

impl AgentService {
    /// `backends`: what a run may name (its sandbox comes from the entry's
    /// backend); a run naming none gets the default entry. `secrets`: the
    /// operator's secrets a run may name. `sandboxes`: the API's sandbox
    /// service (a run may take its workspace from an idle console sandbox).
    /// `drivers`: what a run may name as its driver.
    pub fn new(
        runtime: Arc<Runtime>,
        models: ModelPolicy,
        backends: Backends,
        secrets: SecretCatalog,
        drivers: Drivers,
        sandboxes: Arc<SandboxService>,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        // every run's and subagent's sandbox passes the sandboxes' own
        // slot and quota check (one ledger)
        let admission = RunAdmission::new(Arc::clone(&sandboxes));
        if !runtime.admit_sandboxes_through(Arc::new(admission)) {
            tracing::warn!("the runtime already had a sandbox admission; it is kept");
        }
        // runs' checkpoints count against the same tenant disk quota
        runtime.set_disk_guard(sandboxes.clone());
        Arc::new(Self {
            runtime,
            models,
            backends,
            secrets,
            drivers,
            active: Mutex::new(HashMap::new()),
            sandboxes,
            shutdown,
        })
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    pub(super) fn sandboxes(&self) -> &SandboxService {
        &self.sandboxes
    }

    /// Cancelled when the service shuts down: event streams end then.
    pub fn closing(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Keeps the run's task until it ends, so a shutdown can cancel it.
    pub(super) fn track(self: &Arc<Self>, tenant: &TenantId, handle: RunHandle) {
        let id = handle.run.id.clone();
        let this = Arc::clone(self);
        let run_id = id.clone();
        // The map's lock is held while the task is registered, so the task's
        // own removal (when the run ends at once) cannot come first.
        let mut active = self.active_map();
        let task = tokio::spawn(async move {
            match handle.wait().await {
                Ok(run) => tracing::info!(run_id = %run.id, state = %run.state, "run ended"),
                Err(err) => tracing::warn!(run_id = %run_id, error = %err, "run ended abnormally"),
            }
            this.active_map().remove(&run_id);
        });
        active.insert(
            id,
            Active {
                tenant: tenant.clone(),
                task,
            },
        );
    }

    /// Cancels every run this service started and waits (a bounded time) for
    /// them to end, their sandboxes torn down. New runs are refused from the
    /// moment the shutdown token is cancelled.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        // queued runs stay queued for the next start (not cancelled below)
        self.runtime.let_go_of_queued();
        let runs: Vec<(RunId, TenantId)> = self
            .active_map()
            .iter()
            .map(|(id, a)| (id.clone(), a.tenant.clone()))
            .collect();
        if runs.is_empty() {
            return;
        }
        tracing::info!(runs = runs.len(), "cancelling runs in progress");
        for (id, tenant) in &runs {
            if let Err(err) = self.runtime.cancel_run(tenant, id).await {
                tracing::warn!(run_id = %id, error = %err, "cancelling a run at shutdown");
            }
        }
        let tasks: Vec<JoinHandle<()>> = self.active_map().drain().map(|(_, a)| a.task).collect();
        let all = futures_util::future::join_all(tasks);
        if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
            tracing::warn!("runs still winding down after the shutdown grace period");
        }
    }

    fn active_map(&self) -> MutexGuard<'_, HashMap<RunId, Active>> {
        self.active.lock().unwrap_or_else(|e| e.into_inner())
    }
}
