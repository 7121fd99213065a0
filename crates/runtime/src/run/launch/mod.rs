//! Starting a run, in named phases:
//!
//! 1. `check` (check.rs): the request, its session and workspace; the run
//!    as it will be recorded.
//! 2. `admit` (check.rs): its sandbox's slot, or the queue.
//! 3. `claim` (enter.rs): the session lease and the run's journal.
//! 4. `enter` (enter.rs): the workspace's writer lease, checkpoints and a
//!    resume's restore, the run, goal and history rows and `run.started`.
//! 5. `drive` (drive.rs), on a task of its own: sandbox up, loop, sandbox
//!    down, snapshot, final state.
//!
//! Phases 1 to 4 are done before `start_run` returns. A run that finds no
//! slot where the operator asks for queueing (queued.rs) is recorded
//! `queued` after `claim` instead, and waits on its task for a slot before
//! it enters.

mod builtin;
mod check;
mod drive;
mod enter;
mod lease;
mod queued;

use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::ids::{SessionId, TenantId};
use paddock_core::model::Message;
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{Goal, Lease, Run, Workspace};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::admission::AdmissionGrant;
use super::resume::ResumeTail;
use super::{RunHandle, RunOptions, StartRun};
use crate::checkpoints::Checkpointer;
use crate::context::ContextBase;
use crate::error::RuntimeError;
use crate::events::journal::Journal;
use crate::runtime::{ActiveRun, Runtime, Shared};

pub use builtin::DriveContext;
pub(crate) use builtin::{AgentParts, drive_builtin};
pub use queued::QueuedRun;

use check::Admitted;
use enter::{Entry, claim};

/// What the run task needs besides the shared state.
#[derive(Debug)]
pub(crate) struct Launched {
    journal: Arc<Journal>,
    run: Run,
    goal: Goal,
    history: Vec<Message>,
    context: ContextBase,
    request: StartRun,
    options: RunOptions,
    workspace: Workspace,
    dir: PathBuf,
    /// The quota the host's kernel holds `dir` to (a pool workspace's): the
    /// sandbox reports it.
    workspace_quota: Option<paddock_proto::WorkspaceQuotaEnforcement>,
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
    /// is recorded (state `preparing`, or `queued` where the operator asks
    /// for queueing and no slot is free); the run proceeds on its own task.
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

    /// [`Runtime::start_run`], keeping `record` in the `run.queued` event
    /// of a run that is queued: what the front end needs to start the run
    /// again after a restart ([`Runtime::queued_runs`]). It must hold no
    /// secret.
    pub async fn start_run_recorded(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        request: StartRun,
        record: serde_json::Value,
    ) -> Result<RunHandle, RuntimeError> {
        let options = RunOptions {
            queue_record: Some(record),
            ..RunOptions::default()
        };
        self.launch(tenant, session, request, options).await
    }

    pub(crate) async fn launch(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        mut request: StartRun,
        options: RunOptions,
    ) -> Result<RunHandle, RuntimeError> {
        let checked = self
            .check(tenant, session_id, &mut request, &options)
            .await?;
        let grant = match check::admit(&self.shared, &checked.run, &options).await? {
            Admitted::Granted(grant) => grant,
            Admitted::Queue { reason } => {
                return self.queue(checked, request, options, reason).await;
            }
        };
        let claimed = claim(&self.shared, &checked.run, &options).await?;
        let journal = Arc::clone(&claimed.journal);
        let entered = match self
            .enter(checked, claimed, request, options, grant, Entry::New)
            .await
        {
            Ok(entered) => entered,
            Err(err) => {
                journal.release().await;
                return Err(err);
            }
        };
        let (done_tx, done_rx) = watch::channel(None);
        let launched = entered.launched;
        let steerable = launched.request.driver.capabilities().steer;
        register(
            &self.shared,
            &launched.run,
            steerable,
            &launched.cancel,
            done_rx,
        );
        let run = launched.run.clone();
        let task = tokio::spawn(drive::drive(Arc::clone(&self.shared), launched, done_tx));
        Ok(RunHandle {
            run,
            safety_checkpoint: entered.safety_checkpoint,
            task,
        })
    }
}

/// Makes the run cancellable through [`Runtime::cancel_run`] and waitable
/// through [`Runtime::wait_run`].
fn register(
    shared: &Shared,
    run: &Run,
    steerable: bool,
    cancel: &CancellationToken,
    done: watch::Receiver<Option<Run>>,
) {
    shared.active().insert(
        run.id.clone(),
        ActiveRun {
            session: run.session.clone(),
            cancel: cancel.clone(),
            done,
            subagents: None,
            tenant: run.tenant.clone(),
            driver: run.driver,
            steerable,
        },
    );
}

/// The backend the run's sandbox comes from: the one it asked for, else
/// the runtime's.
fn run_backend<'a>(shared: &'a Shared, request: &'a StartRun) -> &'a Arc<dyn SandboxBackend> {
    request
        .backend
        .as_ref()
        .map_or(&shared.backend, |chosen| &chosen.backend)
}
