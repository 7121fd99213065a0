//! Phases 1 and 2 of a launch: the request checked against its session
//! and workspace, then its sandbox's slot (or the queue).

use std::path::PathBuf;

use paddock_core::ids::{SessionId, TenantId};
use paddock_core::store::{Run, SessionStatus, Workspace};

use super::super::admission::{AdmissionAsk, AdmissionGrant};
use super::super::queue::WhenFull;
use super::super::{RunOptions, StartRun};
use crate::error::RuntimeError;
use crate::runtime::{Runtime, Shared};
use crate::workspace;

/// A request that may start: the run as it will be recorded, in its
/// session's workspace.
#[derive(Debug)]
pub(super) struct Checked {
    pub(super) run: Run,
    pub(super) workspace: Workspace,
    pub(super) dir: PathBuf,
    /// The quota the host's kernel holds `dir` to (a pool workspace's).
    pub(super) quota: Option<paddock_proto::WorkspaceQuotaEnforcement>,
}

/// What the admission said.
pub(super) enum Admitted {
    /// Start now, in this slot (None: no admission configured).
    Granted(Option<Box<dyn AdmissionGrant>>),
    /// Wait in the tenant's queue; `reason` says why there is no slot.
    Queue { reason: String },
}

impl Runtime {
    /// The goal, cost limit and network of the request (the network in
    /// force from here on is written back into it: `run.started` and the
    /// sandbox carry it), the session (not archived) and its workspace's
    /// directory.
    pub(super) async fn check(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        request: &mut StartRun,
        options: &RunOptions,
    ) -> Result<Checked, RuntimeError> {
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
        // the driver's agent reaches its model provider, with its key
        let egress = request.driver.egress();
        request.network = Some(network.with_destinations(&egress.allow));
        for secret in egress.secrets {
            if !request.secrets.iter().any(|s| s.name == secret.name) {
                request.secrets.push(secret);
            }
        }
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
        let workspace::Located { dir, quota } =
            workspace::locate(&shared.config, &workspace).await?;
        workspace::ensure_dir(&dir).await?;

        let mut run = Run::new(tenant.clone(), session.id.clone(), goal_text, store.now());
        run.mode = options.profile.map_or(request.mode, |p| p.mode());
        run.driver = request.driver.kind();
        run.budgets = request.budgets;
        run.parent_run = options.parent_run.clone();
        run.profile = options.profile;
        run.task_key = options.task_key.clone();
        run.resumed_from = options.resumed_from.clone();
        Ok(Checked {
            run,
            workspace,
            dir,
            quota,
        })
    }
}

/// Whether a run that finds no slot waits for one: a new root run, where
/// the operator asks for queueing. A subagent is refused at once (its
/// parent holds a slot: waiting could deadlock the family, run/queue.rs);
/// so is a resume (it is asked for again as it was).
fn may_queue(shared: &Shared, options: &RunOptions) -> bool {
    shared.config.queue.when_full == WhenFull::Queue
        && options.parent_run.is_none()
        && options.resumed_from.is_none()
}

/// The slot of the run's sandbox, before anything is recorded: a refused
/// run leaves nothing behind. Where the operator asks for queueing, a root
/// run that finds the slots full (or its tenant's earlier runs queued) is
/// sent to the queue instead.
pub(super) async fn admit(
    shared: &Shared,
    run: &Run,
    options: &RunOptions,
) -> Result<Admitted, RuntimeError> {
    let Some(admission) = shared.admission.get() else {
        return Ok(Admitted::Granted(None));
    };
    let queueing = may_queue(shared, options);
    // first in, first out: no run overtakes its tenant's queued ones
    let ahead = shared.queue.queued(&run.tenant);
    if queueing && ahead > 0 {
        return Ok(Admitted::Queue {
            reason: format!(
                "{ahead} earlier run(s) of tenant {} wait for a slot",
                run.tenant
            ),
        });
    }
    let ask = AdmissionAsk {
        tenant: &run.tenant,
        run: &run.id,
        subagent: options.parent_run.is_some(),
        limits: &shared.config.sandbox.policy.limits,
    };
    match admission.admit(ask).await {
        Ok(grant) => Ok(Admitted::Granted(Some(grant))),
        Err(source) if queueing && admission.can_wait(source.as_ref()) => Ok(Admitted::Queue {
            reason: source.to_string(),
        }),
        Err(source) => {
            tracing::info!(run_id = %run.id, tenant = %run.tenant, reason = %source, "run not admitted");
            Err(RuntimeError::NotAdmitted { source })
        }
    }
}
