//! Agent sessions and runs over the API: the [`Runtime`] with the rules a
//! tenant-facing front end adds (which models a request may choose, request
//! validation, views without internals), and the runs it started, so a
//! graceful shutdown can cancel them.

pub mod checkpoints;
pub mod doctor;
pub mod memory;
pub mod models;
mod queued_runs;
mod run_writer;
mod views;

pub use checkpoints::{
    CheckpointDiffView, CheckpointView, FileChangeView, RewindSession, RewindView,
};
pub use doctor::QuarantineView;
pub use memory::{AddMemory, MemoryQuery, MemoryView, WidenMemory};
pub use models::{ModelChoice, ModelPolicy};
pub use queued_runs::TakenUp;
pub use views::{RunView, SessionView};

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use paddock_core::ids::{CheckpointId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    Budgets, MAX_PAGE, Page, Run, RunEvent, RunMode, Session, SessionStatus,
};
use paddock_proto::{NetworkPolicy, NetworkRefused};
use paddock_runtime::subagents::ModelsByKey;
use paddock_runtime::{
    ChangesDecision, EventStream, ResumeRun, RunBackend, RunHandle, Runtime, RuntimeError,
    SessionDeleted, StartRun, SubagentModels,
};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::sandboxes::RunAdmission;
use super::secrets::{SecretCatalog, SecretRef, SecretRefused};
use super::{BackendRefused, Backends, SandboxService};
use models::ModelChoiceError;

/// Longest goal, title and instructions accepted, in characters.
const MAX_GOAL_CHARS: usize = 20_000;
const MAX_TITLE_CHARS: usize = 200;
const MAX_CRITERIA: usize = 50;
/// Most entries of a run's `subagent_models`.
const MAX_SUBAGENT_MODELS: usize = 16;
/// Longest key of `subagent_models` (a task id or a profile).
const MAX_MODEL_KEY_CHARS: usize = 100;
/// How long a shutdown waits for cancelled runs to wind down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("model refused: {reason}")]
    ModelRefused { reason: String },
    #[error("model unavailable: {reason}")]
    ModelUnavailable { reason: String },
    #[error("preparing the model")]
    Model(#[source] ModelChoiceError),
    #[error("runtime operation {op} failed")]
    Runtime {
        op: &'static str,
        #[source]
        source: Box<RuntimeError>,
    },
    #[error("the service is shutting down")]
    ShuttingDown,
    /// A change set could not be applied or rejected now (a conflict, it
    /// is not pending, the child is still running): the tool's reason.
    #[error("{message}")]
    ChangesRefused {
        message: String,
        data: serde_json::Value,
    },
    /// The network asked for is beyond what the operator allows tenants.
    #[error("{reason}")]
    NetworkNotAllowed { reason: String },
    /// An operator's secret the config does not grant to the tenant.
    #[error("{reason}")]
    SecretNotAllowed { reason: String },
    /// Another run or a sandbox may write the workspace (it holds the
    /// workspace lease); `held_by` names it, since when, and how to free it.
    #[error(
        "workspace {workspace} already has a writer: {held_by}; a plan-mode run or a read-only \
         sandbox may still read it"
    )]
    WorkspaceBusy { workspace: String, held_by: String },
}

impl AgentError {
    pub(crate) fn runtime(op: &'static str) -> impl FnOnce(RuntimeError) -> AgentError {
        move |source| AgentError::Runtime {
            op,
            source: Box::new(source),
        }
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        AgentError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

impl From<BackendRefused> for AgentError {
    fn from(refused: BackendRefused) -> Self {
        AgentError::Invalid {
            field: refused.field,
            reason: refused.reason,
        }
    }
}

impl From<SecretRefused> for AgentError {
    fn from(refused: SecretRefused) -> Self {
        match refused {
            refused @ SecretRefused::NotGranted { .. } => AgentError::SecretNotAllowed {
                reason: refused.to_string(),
            },
            other => AgentError::invalid("secrets", other.to_string()),
        }
    }
}

impl From<ModelChoiceError> for AgentError {
    fn from(err: ModelChoiceError) -> Self {
        match err {
            ModelChoiceError::Refused { reason } => AgentError::ModelRefused { reason },
            ModelChoiceError::Unavailable { reason } => AgentError::ModelUnavailable { reason },
            other => AgentError::Model(other),
        }
    }
}

/// `POST /v1/sessions`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    pub workspace: WorkspaceId,
    #[serde(default)]
    pub title: Option<String>,
}

/// `PATCH /v1/sessions/{id}`
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSession {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub archived: Option<bool>,
}

/// `POST /v1/sessions/{id}/fork`
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSession {
    /// Fork from the end of this run of the session (default: its latest state).
    #[serde(default)]
    pub at_run: Option<RunId>,
    /// Fork at this checkpoint of the session instead (not with `at_run`).
    #[serde(default)]
    pub at_checkpoint: Option<paddock_core::ids::CheckpointId>,
    #[serde(default)]
    pub title: Option<String>,
}

/// `POST /v1/runs/{id}/messages`: a message for the run's next model turn.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SteerRun {
    #[schema(
        example = "use the v2 API instead",
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub text: String,
}

/// A steering message as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize, utoipa::ToSchema)]
pub struct SteeringView {
    pub id: u64,
    pub run: RunId,
    pub text: String,
    pub created_at: String,
}

/// `POST /v1/sessions/{id}/runs`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRunCommand {
    #[schema(
        max_length = 20000,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub goal: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub mode: Option<RunMode>,
    /// Missing fields keep their defaults.
    #[serde(default)]
    pub budgets: Option<Budgets>,
    pub model: ModelChoice,
    /// The models of some subagents, keyed by task id or profile (`explore`,
    /// `plan`, `review`, `build`; a task id wins); the others use `model`.
    /// A scripted model is replayed from its first turn for each child.
    #[serde(default)]
    pub subagent_models: BTreeMap<String, ModelChoice>,
    /// Extra instructions for the agent, added to its system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
    /// This run's snapshot limits (default: the server's).
    #[serde(default)]
    pub snapshot_limits: Option<super::commands::SnapshotLimitsRequest>,
    /// The sandbox backend of the run and its subagents (`native`,
    /// `docker`, `gvisor`), among those the server enabled; None: the
    /// server's default.
    #[serde(default)]
    pub backend: Option<String>,
    /// The container image, among those the server enabled for that
    /// backend; None: the backend's first.
    #[serde(default)]
    pub image: Option<String>,
    /// The network of the run's sandbox (default: the server's); 403
    /// beyond the most the server allows tenants.
    #[serde(default)]
    pub network: Option<NetworkPolicy>,
    /// Secrets injected at egress into the run's sandbox and its
    /// subagents' (each sees only a placeholder in the secret's variable):
    /// names of secrets this server defines and grants to the tenant, or
    /// the caller's own (whose value is write-only). They need a network
    /// that allows their hosts. A resumed run has none.
    #[serde(default)]
    pub secrets: Vec<SecretRef>,
}

/// `POST /v1/runs/{id}/resume`: the goal, criteria and mode are the
/// interrupted run's, and so are its sandbox's backend, image and network
/// (from its `run.started`, re-checked against what this server enables and
/// allows); the model is chosen again (as for a new run). A run that had
/// secrets is not resumed here: they were never stored, and the API takes
/// none.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRunCommand {
    pub model: ModelChoice,
    /// Default: what the interrupted run and its subagents left of its
    /// budgets, the wall clock less the time it ran; given: these, raising the
    /// limit (`run.started` `resume_budget` says which).
    #[serde(default)]
    pub budgets: Option<Budgets>,
    #[serde(default)]
    pub subagent_models: BTreeMap<String, ModelChoice>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub snapshot_limits: Option<super::commands::SnapshotLimitsRequest>,
    /// Restore the last checkpoint even over changes made since it (they
    /// are checkpointed first); false: such a resume is refused with 409
    /// `workspace_changed`, naming the paths.
    #[serde(default)]
    pub force: bool,
}

/// A resumed run as it started, and how to undo its restore when it
/// overwrote changes.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResumedView {
    #[serde(flatten)]
    pub run: RunView,
    /// The checkpoint that kept the workspace as it was before the restore
    /// (None: the workspace was what the last checkpoint recorded, so
    /// nothing was overwritten).
    pub safety_checkpoint: Option<CheckpointId>,
    /// What undoes the restore: the rewind to `safety_checkpoint`.
    pub undo: Option<String>,
}

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
    pub fn new(
        runtime: Arc<Runtime>,
        models: ModelPolicy,
        backends: Backends,
        secrets: SecretCatalog,
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

    // ---- sessions ----

    pub async fn create_session(
        &self,
        tenant: &TenantId,
        command: CreateSession,
    ) -> Result<SessionView, AgentError> {
        let title = title_or(command.title.as_deref(), "untitled")?;
        let session = self
            .runtime
            .create_session(tenant, &command.workspace, &title)
            .await
            .map_err(AgentError::runtime("create_session"))?;
        Ok(SessionView::from(&session))
    }

    pub async fn get_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionView, AgentError> {
        let mut view = SessionView::from(&self.session(tenant, id).await?);
        view.memory = self.session_memory(tenant, id).await?;
        Ok(view)
    }

    async fn session_memory(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<Option<paddock_core::store::SessionMemory>, AgentError> {
        Ok(self
            .runtime
            .session_memory(tenant, id)
            .await
            .map_err(AgentError::runtime("session_memory"))?
            .map(|stored| stored.memory))
    }

    /// Oldest first; `after` (a session id) and `limit` page through them.
    pub async fn list_sessions(
        &self,
        tenant: &TenantId,
        workspace: Option<&WorkspaceId>,
        after: Option<SessionId>,
        limit: Option<u32>,
    ) -> Result<Vec<SessionView>, AgentError> {
        let limit = limit.unwrap_or(100);
        if limit == 0 || limit > MAX_PAGE {
            return Err(AgentError::invalid(
                "limit",
                format!("expected 1 to {MAX_PAGE}"),
            ));
        }
        let page = Page {
            after: after.map(String::from),
            limit,
        };
        let sessions = self
            .runtime
            .list_sessions(tenant, workspace, &page)
            .await
            .map_err(AgentError::runtime("list_sessions"))?;
        let mut views = Vec::with_capacity(sessions.len());
        for session in &sessions {
            let mut view = SessionView::from(session);
            view.memory = self.session_memory(tenant, &session.id).await?;
            views.push(view);
        }
        Ok(views)
    }

    /// Renames and/or archives. An archived session cannot be made active
    /// again (fork it instead).
    pub async fn update_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        command: UpdateSession,
    ) -> Result<SessionView, AgentError> {
        let current = self.session(tenant, id).await?;
        if command.archived == Some(false) && current.status == SessionStatus::Archived {
            return Err(AgentError::invalid(
                "archived",
                "an archived session stays archived; fork it to continue its work",
            ));
        }
        if command.title.is_none() && command.archived.is_none() {
            return Err(AgentError::invalid(
                "body",
                "give `title`, `archived` or both",
            ));
        }
        let mut session = current;
        if let Some(title) = command.title.as_deref() {
            let title = title_or(Some(title), "")?;
            session = self
                .runtime
                .rename_session(tenant, id, &title)
                .await
                .map_err(AgentError::runtime("rename_session"))?;
        }
        if command.archived == Some(true) && session.status != SessionStatus::Archived {
            session = self.archive(tenant, id).await?;
        }
        Ok(SessionView::from(&session))
    }

    /// Archives the session (idempotent); a run in progress is cancelled first.
    pub async fn archive_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionView, AgentError> {
        let session = self.session(tenant, id).await?;
        if session.status == SessionStatus::Archived {
            return Ok(SessionView::from(&session));
        }
        Ok(SessionView::from(&self.archive(tenant, id).await?))
    }

    /// Deletes the session for good (see [`Runtime::delete_session`]); with
    /// `force`, its unfinished runs are cancelled first and waited for (at
    /// most `CANCEL_WAIT`).
    pub async fn delete_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        force: bool,
    ) -> Result<SessionDeleted, AgentError> {
        if !force {
            return self
                .runtime
                .delete_session(tenant, id)
                .await
                .map_err(AgentError::runtime("delete_session"));
        }
        self.cancel_unfinished(tenant, id).await?;
        // a cancelled run lets go of its session just after it ends
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        loop {
            match self.runtime.delete_session(tenant, id).await {
                Err(RuntimeError::RunInProgress { .. } | RuntimeError::SessionBusy { .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                done => return done.map_err(AgentError::runtime("delete_session")),
            }
        }
    }

    /// Cancels the session's unfinished runs and waits until they end.
    async fn cancel_unfinished(&self, tenant: &TenantId, id: &SessionId) -> Result<(), AgentError> {
        let unfinished = |runs: Vec<Run>| -> Vec<RunId> {
            runs.into_iter()
                .filter(|run| !run.state.is_terminal())
                .map(|run| run.id)
                .collect()
        };
        let list = || async {
            self.runtime
                .list_runs(tenant, id)
                .await
                .map_err(AgentError::runtime("list_runs"))
        };
        for run in unfinished(list().await?) {
            match self.runtime.cancel_run(tenant, &run).await {
                Ok(_) | Err(RuntimeError::RunNotActive { .. }) => {}
                Err(err) => return Err(AgentError::runtime("cancel_run")(err)),
            }
        }
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        while !unfinished(list().await?).is_empty() {
            if tokio::time::Instant::now() >= deadline {
                return Err(AgentError::runtime("delete_session")(RuntimeError::InUse {
                    entity: "session",
                    id: id.to_string(),
                    reason: format!(
                        "its runs did not end within {} s of being cancelled",
                        CANCEL_WAIT.as_secs()
                    ),
                }));
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Before a workspace is deleted: refused (409 `workspace_in_use`,
    /// naming them) while a session in it is not archived; otherwise its
    /// archived sessions are deleted ([`Runtime::delete_session`], refused
    /// while one has forks elsewhere). The sandbox service then deletes the
    /// workspace.
    pub async fn delete_workspace_sessions(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), AgentError> {
        let mut sessions = Vec::new();
        let mut page = Page {
            after: None,
            limit: MAX_PAGE,
        };
        loop {
            let batch = self
                .runtime
                .list_sessions(tenant, Some(id), &page)
                .await
                .map_err(AgentError::runtime("list_sessions"))?;
            let Some(last) = batch.last() else { break };
            page.after = Some(last.id.to_string());
            sessions.extend(batch);
        }
        let live: Vec<String> = sessions
            .iter()
            .filter(|s| s.status != SessionStatus::Archived)
            .map(|s| s.id.to_string())
            .collect();
        if !live.is_empty() {
            let shown = live.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
            let more = live.len().saturating_sub(10);
            return Err(AgentError::runtime("delete_workspace")(
                RuntimeError::InUse {
                    entity: "workspace",
                    id: id.to_string(),
                    reason: format!(
                        "sessions not archived work in it: {shown}{}; archive or delete them first",
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    ),
                },
            ));
        }
        for session in &sessions {
            match self.runtime.delete_session(tenant, &session.id).await {
                // deleted with its parent session (a subagent's)
                Ok(_) | Err(RuntimeError::NotFound { .. }) => {}
                Err(err) => return Err(AgentError::runtime("delete_session")(err)),
            }
        }
        Ok(())
    }

    async fn archive(&self, tenant: &TenantId, id: &SessionId) -> Result<Session, AgentError> {
        self.runtime
            .archive_session(tenant, id)
            .await
            .map_err(AgentError::runtime("archive_session"))
    }

    pub async fn fork_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        command: ForkSession,
    ) -> Result<SessionView, AgentError> {
        let title = match command.title.as_deref() {
            Some(title) => title_or(Some(title), "")?,
            None => fork_title(&self.session(tenant, id).await?.title),
        };
        let session = match (&command.at_checkpoint, &command.at_run) {
            (Some(_), Some(_)) => {
                return Err(AgentError::invalid(
                    "at_checkpoint",
                    "give at_run or at_checkpoint, not both",
                ));
            }
            (Some(checkpoint), None) => self
                .runtime
                .fork_at_checkpoint(tenant, id, checkpoint, &title)
                .await
                .map_err(AgentError::runtime("fork_at_checkpoint"))?,
            (None, at_run) => self
                .runtime
                .fork_session(tenant, id, at_run.as_ref(), &title)
                .await
                .map_err(AgentError::runtime("fork_session"))?,
        };
        Ok(SessionView::from(&session))
    }

    async fn session(&self, tenant: &TenantId, id: &SessionId) -> Result<Session, AgentError> {
        self.runtime
            .get_session(tenant, id)
            .await
            .map_err(AgentError::runtime("get_session"))
    }

    // ---- runs ----

    pub async fn list_runs(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<RunView>, AgentError> {
        self.session(tenant, session).await?;
        let runs = self
            .runtime
            .list_runs(tenant, session)
            .await
            .map_err(AgentError::runtime("list_runs"))?;
        self.views(&runs).await
    }

    /// A run as the API answers it, with its subagents' usage added up.
    async fn view(&self, run: &Run) -> Result<RunView, AgentError> {
        let total = self
            .runtime
            .total_usage(run)
            .await
            .map_err(AgentError::runtime("total_usage"))?;
        Ok(RunView::new(run, total))
    }

    async fn views(&self, runs: &[Run]) -> Result<Vec<RunView>, AgentError> {
        let mut views = Vec::with_capacity(runs.len());
        for run in runs {
            views.push(self.view(run).await?);
        }
        Ok(views)
    }

    /// Starts a run in the background; answers it as it started.
    pub async fn start_run(
        self: &Arc<Self>,
        tenant: &TenantId,
        session: &SessionId,
        command: StartRunCommand,
    ) -> Result<RunView, AgentError> {
        if self.shutdown.is_cancelled() {
            return Err(AgentError::ShuttingDown);
        }
        // kept in a queued run's `run.queued` (queued_runs.rs)
        let record = self.queue_record(&command);
        let start = self.validate(tenant, command)?;
        let handle = self
            .taking_over_console(tenant, "start_run", || {
                self.start_or_queue(tenant, session, start.clone(), record.clone())
            })
            .await?;
        let run = handle.run.clone();
        self.track(tenant, handle);
        if self.shutdown.is_cancelled() {
            // a shutdown began while the run was starting: it must not outlive it
            let _ = self.runtime.cancel_run(tenant, &run.id).await;
        }
        // a run that just started has no children yet
        Ok(RunView::new(&run, run.usage))
    }

    /// Resumes the interrupted run `id` as a new run (in the background);
    /// answers the new run as it started.
    pub async fn resume_run(
        self: &Arc<Self>,
        tenant: &TenantId,
        id: &RunId,
        command: ResumeRunCommand,
    ) -> Result<ResumedView, AgentError> {
        if self.shutdown.is_cancelled() {
            return Err(AgentError::ShuttingDown);
        }
        let budgets = command
            .budgets
            .map(|budgets| self.bounded_budgets(budgets))
            .transpose()?;
        check_instructions(command.instructions.as_deref())?;
        // the interrupted run's sandbox, as its run.started names it, if this
        // server still enables that backend and allows that network
        let started = self
            .runtime
            .run_started(tenant, id)
            .await
            .map_err(AgentError::runtime("run_started"))?;
        let (backend, image, network) = started
            .map(|s| (s.backend, s.image, s.network))
            .unwrap_or_default();
        let chosen = self
            .backends
            .choose(backend.as_deref(), image.as_deref())
            .map_err(|refused| {
                AgentError::runtime("resume_run")(RuntimeError::NotResumable {
                    run: id.clone(),
                    reason: format!("its sandbox cannot start here: {}", refused.reason),
                })
            })?;
        let resume = ResumeRun {
            provider: self.models.resolve(&command.model)?,
            budgets,
            instructions: command.instructions,
            subagent_models: self.subagent_models(&command.subagent_models)?,
            snapshot_limits: self.snapshot_limits(command.snapshot_limits)?,
            backend: Some(RunBackend {
                backend: Arc::clone(&chosen.backend),
                image: chosen.image.clone(),
            }),
            network: Some(self.grant_network(network)?),
            // never taken over the API (a run that had some is refused)
            secrets: Vec::new(),
            force: command.force,
        };
        let handle = self
            .taking_over_console(tenant, "resume_run", || {
                self.runtime.resume_run(tenant, id, resume.clone())
            })
            .await?;
        let run = handle.run.clone();
        let safety_checkpoint = handle.safety_checkpoint.clone();
        self.track(tenant, handle);
        if self.shutdown.is_cancelled() {
            let _ = self.runtime.cancel_run(tenant, &run.id).await;
        }
        Ok(ResumedView {
            run: RunView::new(&run, run.usage),
            undo: safety_checkpoint
                .as_ref()
                .map(|safety| checkpoints::undo_command(&run.session, safety)),
            safety_checkpoint,
        })
    }

    fn snapshot_limits(
        &self,
        asked: Option<super::commands::SnapshotLimitsRequest>,
    ) -> Result<Option<paddock_snapshot::Limits>, AgentError> {
        let settings = &self.runtime.config().snapshot;
        asked
            .map(|asked| asked.resolve(settings.limits, settings.request_max))
            .transpose()
            .map_err(|(field, reason)| AgentError::invalid(field, reason))
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

    pub(super) fn validate(
        &self,
        tenant: &TenantId,
        command: StartRunCommand,
    ) -> Result<StartRun, AgentError> {
        let goal = command.goal.trim();
        if goal.is_empty() || goal.chars().count() > MAX_GOAL_CHARS {
            return Err(AgentError::invalid(
                "goal",
                format!("expected 1 to {MAX_GOAL_CHARS} characters"),
            ));
        }
        if command.success_criteria.len() > MAX_CRITERIA
            || command
                .success_criteria
                .iter()
                .any(|c| c.trim().is_empty() || c.chars().count() > MAX_GOAL_CHARS)
        {
            return Err(AgentError::invalid(
                "success_criteria",
                format!("at most {MAX_CRITERIA} non-empty criteria"),
            ));
        }
        check_instructions(command.instructions.as_deref())?;
        let budgets = self.bounded_budgets(command.budgets.unwrap_or_default())?;
        let snapshot_limits = self.snapshot_limits(command.snapshot_limits)?;
        let chosen = self
            .backends
            .choose(command.backend.as_deref(), command.image.as_deref())?;
        let backend = RunBackend {
            backend: Arc::clone(&chosen.backend),
            image: chosen.image.clone(),
        };
        let network = self.grant_network(command.network)?;
        let secrets = self
            .secrets
            .resolve(tenant, &command.secrets, &network)
            .map_err(AgentError::from)?;
        let provider = self.models.resolve(&command.model)?;
        let subagent_models = self.subagent_models(&command.subagent_models)?;
        Ok(StartRun {
            goal: goal.to_owned(),
            success_criteria: command
                .success_criteria
                .iter()
                .map(|c| c.trim().to_owned())
                .collect(),
            mode: command.mode.unwrap_or(RunMode::Build),
            budgets,
            provider,
            instructions: command.instructions,
            subagent_models,
            snapshot_limits,
            backend: Some(backend),
            network: Some(network),
            secrets,
            // a server's workspace is its own directory: a failed
            // checkpoint is reported (`checkpoint.failed`), not refused
            require_checkpoint: false,
        })
    }

    /// The network a run asks for (None: the server's default), if the
    /// server allows tenants that much.
    fn grant_network(&self, asked: Option<NetworkPolicy>) -> Result<NetworkPolicy, AgentError> {
        match self.runtime.config().network.grant(asked) {
            Ok(network) => Ok(network),
            Err(NetworkRefused::Invalid(e)) => Err(AgentError::invalid("network", e.to_string())),
            Err(above) => Err(AgentError::NetworkNotAllowed {
                reason: above.to_string(),
            }),
        }
    }

    /// The request's `subagent_models`, each choice under the same policy as
    /// `model`.
    fn subagent_models(
        &self,
        choices: &BTreeMap<String, ModelChoice>,
    ) -> Result<Option<Arc<dyn SubagentModels>>, AgentError> {
        if choices.is_empty() {
            return Ok(None);
        }
        if choices.len() > MAX_SUBAGENT_MODELS {
            return Err(AgentError::invalid(
                "subagent_models",
                format!("at most {MAX_SUBAGENT_MODELS} entries"),
            ));
        }
        let mut models = ModelsByKey::new();
        for (key, choice) in choices {
            let trimmed = key.trim();
            if trimmed.is_empty() || trimmed != key || key.chars().count() > MAX_MODEL_KEY_CHARS {
                return Err(AgentError::invalid(
                    "subagent_models",
                    format!(
                        "{key:?}: a key is a task id or a profile (explore, plan, review, \
                         build), 1 to {MAX_MODEL_KEY_CHARS} characters without surrounding spaces"
                    ),
                ));
            }
            let provider = self.models.resolve(choice).map_err(|err| match err {
                ModelChoiceError::Refused { reason } => AgentError::ModelRefused {
                    reason: format!("subagent_models.{key}: {reason}"),
                },
                other => AgentError::from(other),
            })?;
            models.insert(key.clone(), provider);
        }
        Ok(Some(Arc::new(models)))
    }

    pub async fn get_run(&self, tenant: &TenantId, id: &RunId) -> Result<RunView, AgentError> {
        let run = self
            .runtime
            .get_run(tenant, id)
            .await
            .map_err(AgentError::runtime("get_run"))?;
        self.view(&run).await
    }

    /// Asks the run to stop; answers it as it is now (a finished run as it ended).
    pub async fn cancel_run(&self, tenant: &TenantId, id: &RunId) -> Result<RunView, AgentError> {
        let run: Run = self
            .runtime
            .cancel_run(tenant, id)
            .await
            .map_err(AgentError::runtime("cancel_run"))?;
        self.view(&run).await
    }

    /// Applies or rejects a finished build subagent's change set while its
    /// parent run is active; the written paths (or why nothing changed).
    pub async fn decide_child_changes(
        &self,
        tenant: &TenantId,
        parent: &RunId,
        child: &RunId,
        decision: ChangesDecision,
    ) -> Result<serde_json::Value, AgentError> {
        let decided = self
            .runtime
            .decide_child_changes(tenant, parent, child, decision)
            .await
            .map_err(AgentError::runtime("decide_child_changes"))?;
        if decided.done {
            Ok(decided.data)
        } else {
            Err(AgentError::ChangesRefused {
                message: decided.message,
                data: decided.data,
            })
        }
    }

    /// Queues a message for the run's next model turn (the node driving
    /// the run takes it from the store).
    pub async fn steer_run(
        &self,
        tenant: &TenantId,
        id: &RunId,
        command: SteerRun,
    ) -> Result<SteeringView, AgentError> {
        let message = self
            .runtime
            .steer(tenant, id, &command.text)
            .await
            .map_err(AgentError::runtime("steer"))?;
        Ok(SteeringView {
            id: message.id,
            run: message.run,
            text: message.text,
            created_at: message.created_at.to_string(),
        })
    }

    /// The subagent runs `id` spawned, oldest first.
    pub async fn child_runs(
        &self,
        tenant: &TenantId,
        id: &RunId,
    ) -> Result<Vec<RunView>, AgentError> {
        self.runtime
            .get_run(tenant, id)
            .await
            .map_err(AgentError::runtime("get_run"))?;
        let runs = self
            .runtime
            .list_child_runs(tenant, id)
            .await
            .map_err(AgentError::runtime("list_child_runs"))?;
        self.views(&runs).await
    }

    // ---- events ----

    /// One run's events after `after_seq`, then live ones, until its `run.finished`.
    pub async fn run_events(
        &self,
        tenant: &TenantId,
        run: &RunId,
        after_seq: u64,
    ) -> Result<EventStream, AgentError> {
        self.runtime
            .run_event_stream(tenant, run, after_seq)
            .await
            .map_err(AgentError::runtime("run_event_stream"))
    }

    /// The session's events after `after_seq`, then live ones as they come.
    pub async fn events(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<EventStream, AgentError> {
        self.session(tenant, session).await?;
        self.runtime
            .event_stream(tenant, session, after_seq)
            .await
            .map_err(AgentError::runtime("event_stream"))
    }

    /// Up to `limit` stored events of the session after `after_seq`.
    pub async fn event_page(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, AgentError> {
        self.runtime
            .store()
            .list_events(tenant, session, after_seq, limit)
            .await
            .map_err(|source| AgentError::Runtime {
                op: "list_events",
                source: Box::new(RuntimeError::Store {
                    operation: "list_events",
                    source,
                }),
            })
    }

    // ---- lifetime ----

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

fn check_instructions(instructions: Option<&str>) -> Result<(), AgentError> {
    if instructions.is_some_and(|i| i.chars().count() > MAX_GOAL_CHARS) {
        return Err(AgentError::invalid(
            "instructions",
            format!("at most {MAX_GOAL_CHARS} characters"),
        ));
    }
    Ok(())
}

impl AgentService {
    /// A request's budgets, each above 0 and within the server's bound
    /// (`RuntimeConfig::budget_max`): one asked over it is refused naming
    /// the budget and the bound, one left at its default is lowered to it.
    fn bounded_budgets(&self, budgets: Budgets) -> Result<Budgets, AgentError> {
        check_budgets(&budgets)?;
        budgets
            .bounded_by(&self.runtime.config().budget_max)
            .map_err(|(name, asked, most)| {
                AgentError::invalid(
                    "budgets",
                    format!("{name} {asked} is over this server's bound of {most}"),
                )
            })
    }
}

fn check_budgets(budgets: &Budgets) -> Result<(), AgentError> {
    if budgets.max_turns == 0
        || budgets.max_tokens == 0
        || budgets.max_tool_calls == 0
        || budgets.max_wall_clock_ms == 0
        || budgets.max_cost_micro_usd == Some(0)
    {
        return Err(AgentError::invalid(
            "budgets",
            "every budget must be above 0",
        ));
    }
    Ok(())
}

/// The default title of a fork of a session titled `title`.
pub fn fork_title(title: &str) -> String {
    let mut title: String = title.chars().take(MAX_TITLE_CHARS - 7).collect();
    title.push_str(" (fork)");
    title
}

/// A trimmed title, `default` when none is given; refused when empty or too long.
fn title_or(title: Option<&str>, default: &str) -> Result<String, AgentError> {
    let title = title.map_or(default, str::trim);
    if title.is_empty()
        || title.chars().count() > MAX_TITLE_CHARS
        || title.chars().any(char::is_control)
    {
        return Err(AgentError::invalid(
            "title",
            format!("expected 1 to {MAX_TITLE_CHARS} characters without control characters"),
        ));
    }
    Ok(title.to_owned())
}

/// Longest a forced deletion waits for the runs it cancelled to end.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
