//! Queued runs over the API (`[runs] when_full = "queue"`; the queue
//! itself is the runtime's, `paddock_runtime` run/queue.rs): a run request
//! is kept in its run's `run.queued` event, without the values of the
//! caller's own secrets, so that a restart can take the run up again
//! ([`AgentService::take_up_queued`]) with its request checked again as a
//! new one is.

use std::sync::Arc;

use paddock_core::ids::{SessionId, TenantId};
use paddock_runtime::{QueuedRun, RunHandle, RuntimeError, StartRun, WhenFull};
use serde::{Deserialize, Serialize};

use super::{AgentError, AgentService, StartRunCommand};
use crate::service::secrets::SecretRef;

/// What a queued run's `run.queued` keeps of its request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueuedRequest {
    /// The request, with only the named secrets among its `secrets`.
    command: StartRunCommand,
    /// It had secrets of the caller's own (their values are never kept):
    /// it cannot be taken up after a restart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    own_secrets: bool,
}

/// What came of taking up the queued runs at a start.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TakenUp {
    /// Waiting again in their tenants' queues.
    pub queued: usize,
    /// Ended `failed`: their request could not start here any more.
    pub failed: usize,
    /// Left alone: another process holds them.
    pub skipped: usize,
}

impl AgentService {
    /// What a run request's `run.queued` keeps, where runs are queued.
    pub(super) fn queue_record(&self, command: &StartRunCommand) -> Option<serde_json::Value> {
        if self.runtime().config().queue.when_full != WhenFull::Queue {
            return None;
        }
        let mut command = command.clone();
        let before = command.secrets.len();
        command
            .secrets
            .retain(|secret| matches!(secret, SecretRef::Named(_)));
        let kept = QueuedRequest {
            own_secrets: command.secrets.len() != before,
            command,
        };
        match serde_json::to_value(&kept) {
            Ok(value) => Some(value),
            Err(err) => {
                tracing::warn!(error = %err, "encoding a run request for the queue");
                None
            }
        }
    }

    /// Starts the run, keeping `record` for a queued one.
    pub(super) async fn start_or_queue(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        start: StartRun,
        record: Option<serde_json::Value>,
    ) -> Result<RunHandle, RuntimeError> {
        match record {
            Some(record) => {
                self.runtime()
                    .start_run_recorded(tenant, session, start, record)
                    .await
            }
            None => self.runtime().start_run(tenant, session, start).await,
        }
    }

    /// Takes up the runs an earlier process left queued, oldest first: each
    /// waits again in its tenant's queue, its request checked again as a
    /// new run's is; one that cannot start here any more (a model or
    /// backend no longer allowed, secrets of the caller's own, an archived
    /// session) ends `failed` with the reason.
    pub async fn take_up_queued(self: &Arc<Self>) -> Result<TakenUp, AgentError> {
        let queued = self
            .runtime()
            .queued_runs()
            .await
            .map_err(AgentError::runtime("queued_runs"))?;
        let mut taken = TakenUp::default();
        for QueuedRun { run, record } in queued {
            let tenant = run.tenant.clone();
            let start = match self.rebuild(&tenant, record) {
                Ok(start) => start,
                Err(reason) => {
                    self.fail_queued(&run, &reason, &mut taken).await;
                    continue;
                }
            };
            match self.runtime().restart_queued(run.clone(), start).await {
                Ok(handle) => {
                    self.track(&tenant, handle);
                    taken.queued += 1;
                }
                Err(RuntimeError::SessionBusy { .. }) => {
                    tracing::info!(run_id = %run.id, "a queued run is held by another process");
                    taken.skipped += 1;
                }
                Err(
                    err @ (RuntimeError::Invalid { .. } | RuntimeError::SessionArchived { .. }),
                ) => {
                    self.fail_queued(&run, &err.to_string(), &mut taken).await;
                }
                Err(err) => {
                    tracing::warn!(run_id = %run.id, error = %paddock_proto::error_chain(&err), "taking up a queued run");
                    taken.skipped += 1;
                }
            }
        }
        if taken != TakenUp::default() {
            tracing::info!(
                queued = taken.queued,
                failed = taken.failed,
                skipped = taken.skipped,
                "queued runs taken up"
            );
        }
        Ok(taken)
    }

    /// The run request a queued run's record holds, checked as a new one.
    fn rebuild(
        &self,
        tenant: &TenantId,
        record: Option<serde_json::Value>,
    ) -> Result<StartRun, String> {
        let record = record.ok_or("its request was not kept")?;
        let kept: QueuedRequest = serde_json::from_value(record)
            .map_err(|err| format!("its kept request does not read back: {err}"))?;
        if kept.own_secrets {
            return Err(
                "it had secrets of the caller's own, whose values are never kept; start it again"
                    .to_owned(),
            );
        }
        self.validate(tenant, kept.command)
            .map_err(|err| match err {
                AgentError::Invalid { field, reason } => format!("{field}: {reason}"),
                other => other.to_string(),
            })
    }

    async fn fail_queued(&self, run: &paddock_core::store::Run, reason: &str, taken: &mut TakenUp) {
        match self.runtime().fail_queued(run, reason).await {
            Ok(_) => taken.failed += 1,
            Err(err) => {
                tracing::warn!(run_id = %run.id, error = %paddock_proto::error_chain(&err), "ending a queued run that cannot start");
                taken.skipped += 1;
            }
        }
    }
}
