//! The built-in driver's side of a launch: Paddock's own loop
//! ([`crate::drivers::BuiltinDriver`]) in the run's sandbox, and the
//! context every driver is handed.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use paddock_core::store::Run;
use tokio::time::Instant;

use super::super::driver::{Driver, DriverParts};
use super::super::sandbox::RunSandbox;
use super::super::{FamilyBudget, live, prompt};
use super::Launched;
use super::drive::{network_of, snapshot_limits};
use crate::drivers::DriveOutcome;
use crate::memory::{self, MemoryPlace};
use crate::runtime::{Shared, SubagentDesk};
use crate::subagents::{self, Family, FamilyParts};
use crate::tools::{ToolContext, ToolRegistry};
use crate::util::error_chain;

/// What a driver is handed once the run's sandbox is up.
#[derive(Debug)]
pub struct DriveContext<'a> {
    pub(crate) shared: &'a Arc<Shared>,
    pub(crate) launched: &'a mut Launched,
    pub(crate) sandbox: &'a RunSandbox,
    /// Set when the run lost its session or writer lease: stop.
    pub(crate) lease_lost: &'a Arc<AtomicBool>,
    pub(crate) family_budget: &'a Arc<FamilyBudget>,
    /// When the run's clock started.
    pub(crate) started: Instant,
}

/// What a driver other than the built-in loop works with.
#[derive(Debug)]
pub(crate) struct AgentParts {
    pub(crate) journal: Arc<crate::events::journal::Journal>,
    pub(crate) run: Run,
    pub(crate) criteria: Vec<String>,
    pub(crate) instructions: Option<String>,
    /// The session's history up to this run's goal (which it ends with).
    pub(crate) history: Vec<paddock_core::model::Message>,
    /// The run resumes an interrupted one.
    pub(crate) resumed: bool,
    pub(crate) guest: Arc<dyn paddock_core::sandbox::GuestOps>,
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    pub(crate) checkpoints: Option<crate::checkpoints::Checkpointer>,
    pub(crate) family: Arc<FamilyBudget>,
    pub(crate) started: Instant,
    pub(crate) lease_lost: Arc<AtomicBool>,
    /// The price of the model the agent calls, if the operator set one.
    pub(crate) price: Option<paddock_core::model::Price>,
}

impl DriveContext<'_> {
    /// The parts a driver other than the built-in loop works with;
    /// `model` names its model for the operator's prices (`provider:model`).
    pub(crate) fn agent_parts(self, model: &str) -> AgentParts {
        let launched = self.launched;
        AgentParts {
            journal: Arc::clone(&launched.journal),
            run: launched.run.clone(),
            criteria: launched.request.success_criteria.clone(),
            instructions: launched.request.instructions.clone(),
            history: std::mem::take(&mut launched.history),
            resumed: launched.options.resumed_from.is_some(),
            guest: self.sandbox.guest(),
            cancel: launched.cancel.clone(),
            checkpoints: launched.checkpoints.take(),
            family: Arc::clone(self.family_budget),
            started: self.started,
            lease_lost: Arc::clone(self.lease_lost),
            price: self.shared.config.prices.of(model),
        }
    }
}

/// Paddock's own loop in the sandbox: a root run's subagent family and
/// memory, the tools its mode offers, the system prompt; the family ends
/// (and is reported) while the run still holds its lease.
pub(crate) async fn drive_builtin(ctx: DriveContext<'_>) -> DriveOutcome {
    let DriveContext {
        shared,
        launched,
        sandbox,
        lease_lost,
        family_budget,
        started,
    } = ctx;
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
        lease_lost: Arc::clone(lease_lost),
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
    DriveOutcome {
        ending,
        usage: used,
    }
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
