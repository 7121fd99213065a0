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

use super::super::driver::{Driver, DriverParts, Ending};
use super::super::egress_events::EgressEvents;
use super::super::sandbox::{RunSandbox, WorkspaceAccess};
use super::super::{FamilyBudget, finish, live, prompt, renew, writer};
use super::{Launched, run_backend};
use crate::memory::{self, MemoryPlace};
use crate::runtime::{Shared, SubagentDesk};
use crate::subagents::{self, Family, FamilyParts};
use crate::tools::{ToolContext, ToolRegistry};
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
        Ok(_) => run_agent(shared, launched, &sandbox, renewals, family_budget, started).await,
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
fn network_of(launched: &Launched) -> NetworkPolicy {
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

/// The agent loop in the sandbox: a root run's subagent family and memory,
/// the tools its mode offers, the system prompt; the family ends (and is
/// reported) while the run still holds its lease.
async fn run_agent(
    shared: &Arc<Shared>,
    launched: &mut Launched,
    sandbox: &RunSandbox,
    renewals: &Renewals,
    family_budget: &Arc<FamilyBudget>,
    started: Instant,
) -> (Ending, RunUsage) {
    let run = launched.run.clone();
    let request = &launched.request;
    let snapshot_limits = snapshot_limits(shared, launched);
    let root = launched.options.parent_run.is_none();
    let family = (root && shared.config.subagents.max_per_run > 0).then(|| {
        Family::new(FamilyParts {
            shared: Arc::clone(shared),
            journal: Arc::clone(&launched.journal),
            parent: run.clone(),
            workspace: launched.workspace.clone(),
            dir: launched.dir.clone(),
            cancel: launched.cancel.clone(),
            provider: Arc::clone(&request.provider),
            models: request.subagent_models.clone(),
            backend: request.backend.clone(),
            budget: Arc::clone(family_budget),
            snapshot_limits,
            network: network_of(launched),
            secrets: request.secrets.clone(),
        })
    });
    let place = MemoryPlace {
        store: Arc::clone(&shared.store),
        tenant: run.tenant.clone(),
        workspace: launched.workspace.id.clone(),
        session: run.session.clone(),
        run: run.id.clone(),
    };
    let mut registry = ToolRegistry::clone(&shared.registry);
    if let Some(family) = &family {
        subagents::register_tools(&mut registry, family);
    }
    memory::tools::register(&mut registry, &place);
    let registry = Arc::new(registry);
    let system = system_prompt(&run, request.instructions.as_deref(), &place).await;
    let ctx = ToolContext {
        guest: sandbox.guest(),
        mode: run.mode,
        write_scope: launched.options.write_scope.clone(),
        session: run.session.clone(),
        run: run.id.clone(),
        cancel: launched.cancel.clone(),
        live: live::tool_output(&launched.journal),
        idempotency_key: None,
    };
    if family.is_some()
        && let Some(active) = shared.active().get_mut(&run.id)
    {
        active.subagents = Some(Arc::new(SubagentDesk {
            registry: Arc::clone(&registry),
            ctx: ctx.clone(),
        }));
    }
    let parts = DriverParts {
        journal: Arc::clone(&launched.journal),
        schemas: registry.schemas(run.mode),
        registry,
        provider: Arc::clone(&request.provider),
        criteria: request.success_criteria.clone(),
        ctx,
        system,
        history: std::mem::take(&mut launched.history),
        context: launched.context.clone(),
        started,
        lease_lost: Arc::clone(&renewals.lost),
        inbox: launched.options.inbox.take(),
        memory: root.then(|| (place, shared.config.memory_review)),
        price: shared.config.prices.of(request.provider.name()),
        run,
        family: Arc::clone(family_budget),
        checkpoints: launched.checkpoints.take(),
        resume: launched.resume.take(),
    };
    let (ending, used) = Driver::new(parts).run().await;
    // children end (and are reported) while the parent still holds its lease
    if let Some(family) = family {
        family.shutdown().await;
    }
    (ending, used)
}

/// The run's system prompt, with the project memory its goal retrieves.
async fn system_prompt(run: &Run, instructions: Option<&str>, place: &MemoryPlace) -> String {
    let mut system = prompt::system_prompt(run.mode, instructions);
    match place.for_goal(&run.goal).await {
        Ok(records) => {
            if let Some(section) = memory::prompt_section(&records) {
                system.push('\n');
                system.push_str(&section);
            }
        }
        Err(err) => tracing::warn!(
            error = %error_chain(&err),
            "retrieving project memory for the system prompt"
        ),
    }
    system
}

/// The limits of the run's end snapshot and its subagents' copies.
fn snapshot_limits(shared: &Shared, launched: &Launched) -> paddock_snapshot::Limits {
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
