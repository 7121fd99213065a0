//! Crash recovery at startup: runs left unfinished by a process that died
//! are marked `interrupted` (old processes are never revived; a resume is a
//! new run on the session).

use std::sync::Arc;

use paddock_core::ids::RunId;
use paddock_core::store::{
    EndReason, Lease, Run, RunState, RunUpdate, StoreError, ToolOutcome, ToolStatus,
};
use serde::Serialize;

use crate::error::RuntimeError;
use crate::events::RunFinished;
use crate::events::journal::{Encoded, Journal};
use crate::runtime::Runtime;
use crate::util::error_chain;

/// What [`Runtime::recover`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryReport {
    /// Runs now `interrupted`.
    pub interrupted: Vec<RunId>,
    /// Runs left alone because a live driver may still hold their session.
    pub skipped: Vec<SkippedRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedRun {
    pub run: RunId,
    pub reason: String,
}

/// The last part of the owner a recovery takes a session lease as
/// (`NODE/recover`): it holds the lease only while it writes the run's end.
pub(crate) const RECOVERY_OWNER: &str = "recover";

/// Whether `owner` is a recovery of some node, which lets go of the lease
/// within moments.
pub(crate) fn is_recovery(owner: &str) -> bool {
    owner
        .rsplit_once('/')
        .is_some_and(|(_, last)| last == RECOVERY_OWNER)
}

impl Runtime {
    /// Marks every unfinished run whose driver is gone as `interrupted`, with
    /// a `run.finished` event. A driver is gone when the session lease is
    /// free or expired, held by this node under an owner no task of this
    /// process has (the node restarted), or held by an owner whose process
    /// the config's `owner_probe` knows to be gone. Runs waiting for the user are not
    /// running and are left as they are.
    pub async fn recover(&self) -> Result<RecoveryReport, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        let unfinished = store
            .list_unfinished_runs()
            .await
            .map_err(RuntimeError::store("list_unfinished_runs"))?;
        let mut report = RecoveryReport::default();
        for run in unfinished {
            // a queued run never started: it stays queued for the front end to
            // take up again (`Runtime::queued_runs`)
            if run.state == RunState::AwaitingUser
                || run.state == RunState::Queued
                || shared.active().contains_key(&run.id)
            {
                continue;
            }
            let resource = Lease::session_resource(&run.session);
            let holder = store
                .get_lease(&resource)
                .await
                .map_err(RuntimeError::store("get_lease"))?;
            let owner = match self.takeover_owner(holder.as_ref()) {
                Ok(owner) => owner,
                Err(reason) => {
                    report.skipped.push(SkippedRun {
                        run: run.id.clone(),
                        reason,
                    });
                    continue;
                }
            };
            let lease = match store
                .acquire_lease(&resource, &owner, shared.config.lease_ttl)
                .await
            {
                Ok(lease) => lease,
                Err(StoreError::LeaseHeld { owner, .. }) => {
                    report.skipped.push(SkippedRun {
                        run: run.id.clone(),
                        reason: format!("the session lease was taken by {owner} meanwhile"),
                    });
                    continue;
                }
                Err(err) => return Err(RuntimeError::store("acquire_lease")(err)),
            };
            let journal = Journal::new(Arc::clone(store), Arc::clone(&shared.bus), &run, lease);
            let result = interrupt(&*self.shared.store, &journal, &run).await;
            journal.release().await;
            result?;
            // the dead driver's writer lease on the workspace goes with it
            if let Some(dead) = holder.as_ref().map(|h| h.owner.as_str())
                && let Ok(session) = store.get_session(&run.tenant, &run.session).await
            {
                crate::run::release_dead_writer(store, &session.workspace, dead).await;
            }
            tracing::warn!(run_id = %run.id, session_id = %run.session, state = %run.state, "run interrupted by a restart");
            report.interrupted.push(run.id);
        }
        Ok(report)
    }

    /// The owner to take a session lease over with, or why not to.
    fn takeover_owner(&self, holder: Option<&Lease>) -> Result<String, String> {
        let node = &self.shared.config.node;
        let recover_owner = format!("{node}/{RECOVERY_OWNER}");
        let Some(lease) = holder else {
            return Ok(recover_owner);
        };
        if lease.expires_at <= self.shared.store.now() {
            return Ok(recover_owner);
        }
        // Its process is gone (killed, not stopped): the lease would only
        // make the next command wait for it to expire.
        if let Some(probe) = &self.shared.config.owner_probe
            && probe.is_gone(&lease.owner)
        {
            return Ok(lease.owner.clone());
        }
        let ours = lease
            .owner
            .strip_prefix(node.as_str())
            .and_then(|rest| rest.strip_prefix('/'));
        match ours {
            // an owner of this node that no task here drives: the node restarted
            Some(run) if !self.shared.active().keys().any(|id| id.as_str() == run) => {
                Ok(lease.owner.clone())
            }
            _ => Err(format!(
                "the session lease is held by {} until {}",
                lease.owner, lease.expires_at
            )),
        }
    }
}

async fn interrupt(
    store: &dyn paddock_core::store::Store,
    journal: &Journal,
    run: &Run,
) -> Result<(), RuntimeError> {
    let error = format!(
        "the process driving this run stopped while it was {}",
        run.state
    );
    let update = RunUpdate {
        error: Some(error.clone()),
        end_reason: Some(EndReason::Interrupted),
        ..RunUpdate::state(RunState::Interrupted)
    };
    // the run's usage is not changed by the update: its end event can be
    // written with it, in one transaction
    let finished = RunFinished {
        state: RunState::Interrupted,
        end_reason: EndReason::Interrupted,
        usage: run.usage,
        total_usage: crate::usage::total(store, run).await.ok(),
        error: Some(error),
        verdict: None,
        question: None,
        end_snapshot: None,
        snapshot_error: None,
        snapshot_limit: None,
        undelivered: crate::steering::close_for_end(journal).await,
    };
    journal
        .update_run_emitting(&update, vec![Encoded::of(&finished)?])
        .await?;
    close_calls_in_flight(store, journal, run).await;
    Ok(())
}

/// The run's invocations still `running` are closed `failed`, their outcome
/// unknown, so the log never shows a dead process's call as under way (a
/// resume reads what happened from the events, not from these rows).
/// Failures are logged.
async fn close_calls_in_flight(
    store: &dyn paddock_core::store::Store,
    journal: &Journal,
    run: &Run,
) {
    let invocations = match store.list_tool_invocations(&run.tenant, &run.id).await {
        Ok(invocations) => invocations,
        Err(err) => {
            tracing::warn!(run_id = %run.id, error = %error_chain(&err), "listing the interrupted run's tool calls");
            return;
        }
    };
    let outcome = ToolOutcome {
        status: ToolStatus::Failed,
        output: serde_json::json!({
            "error": "interrupted",
            "message": "the process driving the run stopped while this call was in flight; \
                        its outcome is unknown",
        })
        .to_string(),
    };
    for invocation in invocations
        .iter()
        .filter(|i| i.status == ToolStatus::Running)
    {
        if let Err(err) = store
            .finish_tool_invocation(journal.lease(), &run.tenant, &invocation.id, &outcome)
            .await
        {
            tracing::warn!(run_id = %run.id, invocation_id = %invocation.id, error = %error_chain(&err), "closing a call of the interrupted run");
        }
    }
}
