//! A run request checked against what the server allows: goal, criteria
//! and instructions within bounds, budgets within the server's, the
//! backend, network, secrets and models it may choose.

use std::collections::BTreeMap;
use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_core::store::{Budgets, DriverKind, RunMode};
use paddock_proto::{NetworkPolicy, NetworkRefused};
use paddock_runtime::subagents::ModelsByKey;
use paddock_runtime::{AgentDriver, RunBackend, StartRun, SubagentModels};

use super::models::ModelChoiceError;
use super::{AgentError, AgentService, ModelChoice, StartRunCommand};
use crate::service::commands::SnapshotLimitsRequest;

/// Longest goal, criterion and instructions accepted, in characters.
const MAX_GOAL_CHARS: usize = 20_000;
const MAX_CRITERIA: usize = 50;
/// Most entries of a run's `subagent_models`.
const MAX_SUBAGENT_MODELS: usize = 16;
/// Longest key of `subagent_models` (a task id or a profile).
const MAX_MODEL_KEY_CHARS: usize = 100;

impl AgentService {
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
        let driver = self.driver(command.driver.unwrap_or_default(), &command.model)?;
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
            driver,
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

    /// The driver of `kind` for a run of `model`, if this server offers it.
    pub(super) fn driver(
        &self,
        kind: DriverKind,
        model: &ModelChoice,
    ) -> Result<Arc<dyn AgentDriver>, AgentError> {
        let target = if kind == DriverKind::Builtin {
            None
        } else {
            self.models.target(model)?
        };
        self.drivers
            .driver(kind, target)
            .map_err(|refused| AgentError::invalid("driver", refused.to_string()))
    }

    /// The network a run asks for (None: the server's default), if the
    /// server allows tenants that much.
    pub(super) fn grant_network(
        &self,
        asked: Option<NetworkPolicy>,
    ) -> Result<NetworkPolicy, AgentError> {
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
    pub(super) fn subagent_models(
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

    pub(super) fn snapshot_limits(
        &self,
        asked: Option<SnapshotLimitsRequest>,
    ) -> Result<Option<paddock_snapshot::Limits>, AgentError> {
        let settings = &self.runtime.config().snapshot;
        asked
            .map(|asked| asked.resolve(settings.limits, settings.request_max()))
            .transpose()
            .map_err(|(field, reason)| AgentError::invalid(field, reason))
    }

    /// A request's budgets, each above 0 and within the server's bound
    /// (`RuntimeConfig::budget_max`): one asked over it is refused naming
    /// the budget and the bound, one left at its default is lowered to it.
    pub(super) fn bounded_budgets(&self, budgets: Budgets) -> Result<Budgets, AgentError> {
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

pub(super) fn check_instructions(instructions: Option<&str>) -> Result<(), AgentError> {
    if instructions.is_some_and(|i| i.chars().count() > MAX_GOAL_CHARS) {
        return Err(AgentError::invalid(
            "instructions",
            format!("at most {MAX_GOAL_CHARS} characters"),
        ));
    }
    Ok(())
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
