//! Runs: starting one, the loop that drives it, and how it ends.

mod admission;
mod budget;
mod checkpointed;
mod compact;
mod driver;
mod egress_events;
mod family_budget;
mod finish;
mod gate;
mod history;
mod launch;
mod live;
mod prompt;
mod queue;
mod remember;
mod renew;
mod repeat;
mod resume;
mod resume_budget;
mod review;
mod sandbox;
mod settled;
mod writer;

use std::fmt;
use std::sync::Arc;

use paddock_core::ids::{CheckpointId, RunId};
use paddock_core::model::ModelProvider;
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{Budgets, Run, RunMode, SubagentProfile};
use tokio::task::JoinHandle;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::drivers::{AgentDriver, BuiltinDriver};
use crate::error::RuntimeError;
use crate::tools::WriteScope;

pub use admission::{AdmissionAsk, AdmissionGrant, AdmissionRefused, SandboxAdmission};
pub(crate) use budget::{Budget, Exceeded, Scope};
pub(crate) use checkpointed::append as append_with_checkpoint;
pub(crate) use driver::Ending;
pub(crate) use family_budget::FamilyBudget;
pub(crate) use family_budget::deadline_after;
pub(crate) use gate::{Admission, Gate};
pub(crate) use launch::{AgentParts, drive_builtin};
pub use launch::{DriveContext, QueuedRun};
pub(crate) use queue::RunQueue;
pub use queue::{MAX_QUEUE_WAIT, MAX_QUEUED_PER_TENANT, QueueSettings, WhenFull};
pub use resume::ResumeRun;
pub(crate) use review::{Call as ReviewedCall, Evidence, observed, review};
pub(crate) use writer::{
    acquire as acquire_writer, release as release_writer, release_dead as release_dead_writer,
};

/// Where the model of each subagent comes from (a test gives each child its
/// own script; a product may pick a cheaper model for `explore`).
pub trait SubagentModels: Send + Sync + fmt::Debug {
    /// The model for the child working on `task_id` with `profile`; None:
    /// the parent's model.
    fn model(&self, profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>>;
}

/// A request to work on a goal in a session.
#[derive(Debug, Clone)]
pub struct StartRun {
    pub goal: String,
    pub success_criteria: Vec<String>,
    pub mode: RunMode,
    pub budgets: Budgets,
    pub provider: Arc<dyn ModelProvider>,
    /// What drives the run's agent ([`crate::drivers::BuiltinDriver`]
    /// unless the front end picked another it offers).
    pub driver: Arc<dyn AgentDriver>,
    /// Extra instructions appended to the system prompt.
    pub instructions: Option<String>,
    /// Where the models of this run's subagents come from; None: they use
    /// `provider` too.
    pub subagent_models: Option<Arc<dyn SubagentModels>>,
    /// The snapshot limits of this run's end snapshot and of its subagents'
    /// workspace copies; None: the runtime's (`RuntimeConfig::snapshot`).
    pub snapshot_limits: Option<paddock_snapshot::Limits>,
    /// The network of the run's sandbox (its subagents get it or a
    /// narrower one); None: the runtime's default
    /// (`RuntimeConfig::network`). Not bounded by the runtime's max: the
    /// API checks a tenant's request against it.
    pub network: Option<paddock_proto::NetworkPolicy>,
    /// Secrets injected at egress into the run's sandbox and its
    /// subagents' (never stored: `SandboxSpec::secrets` is not serialized).
    pub secrets: Vec<paddock_proto::SecretSpec>,
    /// The sandbox backend of this run and its subagents; None: the
    /// runtime's (`RuntimeDeps::backend`).
    pub backend: Option<RunBackend>,
    /// Refuse to start ([`RuntimeError::NoUndo`]) when the workspace cannot
    /// be checkpointed before the run; false: the run goes on with a
    /// `checkpoint.failed` event (no undo).
    pub require_checkpoint: bool,
}

/// A sandbox backend a run asked for by name (a server picks it from the
/// backends its operator enabled).
#[derive(Debug, Clone)]
pub struct RunBackend {
    pub backend: Arc<dyn SandboxBackend>,
    /// The container image it starts, for `run.started` (None: native, or
    /// the backend's own default).
    pub image: Option<String>,
}

impl StartRun {
    /// A build-mode run with default budgets and no criteria.
    pub fn new(goal: impl Into<String>, provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            goal: goal.into(),
            success_criteria: Vec::new(),
            mode: RunMode::Build,
            budgets: Budgets::default(),
            provider,
            driver: BuiltinDriver::shared(),
            instructions: None,
            subagent_models: None,
            snapshot_limits: None,
            backend: None,
            network: None,
            secrets: Vec::new(),
            require_checkpoint: false,
        }
    }
}

/// What makes a run a subagent's; a root run uses the default (none of it).
#[derive(Debug, Default)]
pub(crate) struct RunOptions {
    pub(crate) parent_run: Option<RunId>,
    /// Overrides the mode: read-only profiles always run in plan mode.
    pub(crate) profile: Option<SubagentProfile>,
    pub(crate) task_key: Option<String>,
    pub(crate) write_scope: Option<WriteScope>,
    /// The parent's token: the run's own token is a child of it, so
    /// cancelling the parent cancels the run.
    pub(crate) parent_cancel: Option<CancellationToken>,
    /// A running slot the run waits for before its sandbox starts.
    pub(crate) gate: Option<Gate>,
    /// Messages from the parent, handed to the model before its next turn.
    pub(crate) inbox: Option<mpsc::UnboundedReceiver<String>>,
    /// The family's budget a subagent draws from; None: a root run, which
    /// starts its family's.
    pub(crate) family_budget: Option<Arc<FamilyBudget>>,
    /// The interrupted run this one resumes (a root run only).
    pub(crate) resumed_from: Option<RunId>,
    /// A resumed run: where its budgets came from, for `run.started`.
    pub(crate) resume_budget: Option<crate::events::ResumeBudget>,
    /// A resumed run: restore over changes made since the last checkpoint
    /// (`ResumeRun::force`).
    pub(crate) force_restore: bool,
    /// What the front end needs to start the run again after a restart,
    /// kept in `run.queued` when the run is queued
    /// ([`crate::Runtime::start_run_recorded`]).
    pub(crate) queue_record: Option<serde_json::Value>,
}

/// A started run. Dropping the handle does not stop the run.
#[derive(Debug)]
pub struct RunHandle {
    /// The run as it was created (state `preparing`, or `queued`).
    pub run: Run,
    /// A resumed run that restored its workspace over changes: the
    /// checkpoint that kept the workspace as it was (a rewind to it undoes
    /// the restore).
    pub safety_checkpoint: Option<CheckpointId>,
    task: JoinHandle<Run>,
}

impl RunHandle {
    /// The run once it ended (any terminal state, or `awaiting_user`).
    pub async fn wait(self) -> Result<Run, RuntimeError> {
        let id = self.run.id;
        self.task.await.map_err(|err| RuntimeError::Task {
            what: format!("run {id}"),
            reason: err.to_string(),
        })
    }
}
