//! Phase 5 of a launch, the run task: leases renewed (`hold_leases`), a
//! subagent's running slot (`enter_gate`), the sandbox up
//! (`start_sandbox`), the agent loop in it (`work_in`, `run_agent`), the
//! sandbox down, then the end recorded and every lease let go (`wind_up`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use paddock_core::store::{EndReason, Lease, Run, RunMode, RunUsage};
use paddock_proto::NetworkPolicy;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::super::driver::Ending;
use super::super::egress_events::EgressEvents;
use super::super::sandbox::{RunSandbox, WorkspaceAccess};
use super::super::{FamilyBudget, finish, renew, writer};
use super::{DriveContext, Launched, run_backend};
use crate::runtime::Shared;
use crate::util::error_chain;

/// The renewals of the run's session lease and writer lease; either lost
/// sets `lost`, which stops the run.
struct Renewals {
    session: CancellationToken,
    writer: Option<CancellationToken>,
    lost: Arc<AtomicBool>,
}

/// What the loop produced: how the run ended, its usage and the sandbox it
/// ran in (None: it never got one).
struct Worked {
    ending: Ending,
    usage: RunUsage,
    sandbox: Option<paddock_core::sandbox::SandboxId>,
}

/// The run task: sandbox up, loop, sandbox down, snapshot, final state.
pub(super) async fn drive(
    shared: Arc<Shared>,
    launched: Launched,
    done: watch::Sender<Option<Run>>,
) -> Run {
    let span = tracing::info_span!(
        "run",
        session_id = %launched.run.session,
        run_id = %launched.run.id,
        sandbox_id = tracing::field::Empty,
    );
    async move {
        let mut launched = launched;
        let renewals = hold_leases(&shared, &launched);
        // a subagent waits for a running slot; its clock starts once it has one
        let (admitted, slot) = enter_gate(&mut launched).await;
        let started = Instant::now();
        let family_budget = match launched.options.family_budget.take() {
            Some(family) => {
                family.join();
                family
            }
            None => FamilyBudget::new(launched.run.budgets, started),
        };
        let worked = if admitted {
            work_in_sandbox(&shared, &mut launched, &renewals, &family_budget, started).await
        } else {
            Worked {
                ending: Ending::Cancelled,
                usage: launched.run.usage,
                sandbox: None,
            }
        };
        let finished = wind_up(&shared, launched, renewals, worked, started, done).await;
        drop(slot);
        finished
    }
    .instrument(span)
    .await
}

/// Keeps the session lease and the writer lease (a lost writer lease stops
/// the run like a lost session lease) renewed until the run ends.
fn hold_leases(shared: &Shared, launched: &Launched) -> Renewals {
    let lost = Arc::new(AtomicBool::new(false));
    let renew = |lease: &Lease| {
        renew::spawn(
            Arc::clone(&shared.store),
            lease.clone(),
            shared.config.lease_ttl,
            launched.cancel.clone(),
            Arc::clone(&lost),
        )
    };
    Renewals {
        session: renew(launched.journal.lease()),
        writer: launched.writer.as_ref().map(renew),
        lost: Arc::clone(&lost),
    }
}

/// A subagent's running slot (held until the run ends); false when the
/// run was cancelled while it waited.
async fn enter_gate(launched: &mut Launched) -> (bool, Option<OwnedSemaphorePermit>) {
    match launched.options.gate.take() {
        Some(gate) => match gate.enter(&launched.cancel).await {
            Some(permit) => (true, Some(permit)),
            None => (false, None),
        },
        None => (true, None),
    }
}

/// The run's sandbox up, the agent loop in it, the sandbox down.
async fn work_in_sandbox(
    shared: &Arc<Shared>,
    launched: &mut Launched,
    renewals: &Renewals,
    family_budget: &Arc<FamilyBudget>,
    started: Instant,
) -> Worked {
    let sandbox = match start_sandbox(shared, launched).await {
        Ok(sandbox) => sandbox,
        Err(err) => {
            return Worked {
                ending: Ending::Failed {
                    reason: EndReason::InfrastructureError,
                    error: error_chain(&err),
                },
                usage: launched.run.usage,
                sandbox: None,
            };
        }
    };
    tracing::Span::current().record("sandbox_id", tracing::field::display(sandbox.id()));
    let journal = Arc::clone(&launched.journal);
    let ready = crate::events::SandboxReady {
        sandbox_id: sandbox.id().clone(),
        backend: sandbox.backend().to_owned(),
        read_only: sandbox.read_only(),
    };
    let egress_events = sandbox
        .egress_log()
        .map(|log| EgressEvents::start(Arc::clone(&journal), log, sandbox.id().clone()));
    let (ending, usage) = match journal.emit(&ready).await {
        Err(err) => (
            Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: error_chain(&err),
            },
            launched.run.usage,
        ),
        Ok(_) => {
            let driver = Arc::clone(&launched.request.driver);
            let outcome = driver
                .drive(DriveContext {
                    shared,
                    launched,
                    sandbox: &sandbox,
                    lease_lost: &renewals.lost,
                    family_budget,
                    started,
                })
                .await;
            (outcome.ending, outcome.usage)
        }
    };
    let sandbox_id = sandbox.id().clone();
    let error = sandbox.stop(&shared.store).await;
    // the last decisions (connections the stop closed) before sandbox.stopped
    if let Some(events) = egress_events {
        events.stop().await;
    }
    let stopped = crate::events::SandboxStopped {
        sandbox_id: sandbox_id.clone(),
        error,
    };
    if let Err(err) = journal.emit(&stopped).await {
        tracing::warn!(error = %error_chain(&err), "recording the stopped sandbox");
    }
    Worked {
        ending,
        usage,
        sandbox: Some(sandbox_id),
    }
}

/// The run's network, as checked at its start (none when it had none).
pub(super) fn network_of(launched: &Launched) -> NetworkPolicy {
    launched.request.network.clone().unwrap_or_default()
}

/// Starts the run's sandbox on its backend, holding its slot.
async fn start_sandbox(
    shared: &Shared,
    launched: &mut Launched,
) -> Result<RunSandbox, crate::error::RuntimeError> {
    let access = WorkspaceAccess::of(
        launched.run.mode == RunMode::Plan,
        launched.options.write_scope.as_ref(),
    );
    let mut template = paddock_core::sandbox::SandboxSpec {
        secrets: launched.request.secrets.clone(),
        workspace_quota: launched.workspace_quota.clone(),
        ..shared.config.sandbox.clone()
    };
    template.policy.network = network_of(launched);
    RunSandbox::start(
        run_backend(shared, &launched.request),
        &shared.store,
        &shared.config.node,
        &template,
        &launched.run.tenant,
        &launched.workspace.id,
        launched.dir.clone(),
        access,
        &launched.run.id,
        launched.grant.take(),
    )
    .await
}

/// The limits of the run's end snapshot and its subagents' copies.
pub(super) fn snapshot_limits(shared: &Shared, launched: &Launched) -> paddock_snapshot::Limits {
    launched
        .request
        .snapshot_limits
        .unwrap_or(shared.config.snapshot.limits)
}

/// The end recorded (`finish`), the leases let go, the run off the active
/// map, the waiting runs told a slot may be free, the final run published.
async fn wind_up(
    shared: &Arc<Shared>,
    launched: Launched,
    renewals: Renewals,
    worked: Worked,
    started: Instant,
    done: watch::Sender<Option<Run>>,
) -> Run {
    let limits = snapshot_limits(shared, &launched);
    let Launched {
        journal,
        run,
        goal,
        workspace,
        dir,
        writer,
        ..
    } = launched;
    let mut usage = worked.usage;
    usage.wall_clock_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let finished = finish::finish(
        shared,
        &journal,
        run,
        &goal,
        worked.ending,
        usage,
        finish::SnapshotPlace {
            workspace,
            dir,
            sandbox: worked.sandbox,
            limits,
        },
    )
    .await;
    renewals.session.cancel();
    if let (Some(renewal), Some(writer)) = (renewals.writer, &writer) {
        renewal.cancel();
        writer::release(&shared.store, writer).await;
    }
    journal.release().await;
    shared.active().remove(&finished.id);
    shared.queue.freed();
    tracing::info!(
        state = %finished.state,
        end_reason = ?finished.end_reason.map(|r| r.as_str()),
        "run finished"
    );
    done.send_replace(Some(finished.clone()));
    finished
}
