//! Runs over the API: start (or queue), resume, read, cancel, steer, a
//! build subagent's change set decided, and the views answered for them.

use std::sync::Arc;

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::Run;
use paddock_runtime::{ChangesDecision, ResumeRun, RunBackend, RuntimeError};

use super::validate::check_instructions;
use super::{
    AgentError, AgentService, ResumeRunCommand, ResumedView, RunView, StartRunCommand, SteerRun,
    SteeringView, checkpoints,
};

impl AgentService {
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
        let interrupted = self
            .runtime
            .get_run(tenant, id)
            .await
            .map_err(AgentError::runtime("get_run"))?;
        let resume = ResumeRun {
            provider: self.models.resolve(&command.model)?,
            driver: Some(self.driver(interrupted.driver, &command.model)?),
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
}
