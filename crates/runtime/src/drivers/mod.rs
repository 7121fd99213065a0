//! The seam between a run and what drives its agent: Paddock's own loop
//! ([`BuiltinDriver`]) or an agent CLI run inside the run's sandbox. The
//! runtime owns everything around the agent (the sandbox, leases,
//! checkpoints, budgets, the journal, the end snapshot and the review); a
//! driver owns the agent between "the sandbox is up" and "the run ended".
//!
//! A driver's life, in the terms a front end knows:
//! - start: [`AgentDriver::drive`] is called once the run's sandbox is up;
//! - events: it records what the agent does through the run's journal;
//! - steer: a driver that declares [`DriverCapabilities::steer`] reads the
//!   run's steering messages; steering any other is refused up front;
//! - cancel: the run's cancellation token, which the driver must obey;
//! - resume: a resumed run hands the driver what its predecessor left
//!   ([`DriverCapabilities::resume`] says how it picks the work up).
//!
//! What a driver cannot do is declared, so the rest degrades honestly:
//! `run.started` names the driver and its capabilities.

pub mod external;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use paddock_core::model::ProviderKind;
use paddock_core::store::{DriverKind, RunUsage};
use paddock_proto::{Destination, SecretSpec, SecretValue};
use serde::{Deserialize, Serialize};

use crate::run::{DriveContext, Ending};
use external::{ExternalDriver, ExternalSettings, ExternalSettingsError};

/// How a driver picks up the work of an interrupted run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeSupport {
    /// From the session's history: the new run sees every message and the
    /// calls left without results.
    History,
    /// Through the agent's own session, kept in the sandbox's workspace.
    Native,
}

/// What a driver can do; the runtime and the front ends refuse or degrade
/// what it cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverCapabilities {
    /// Takes steering messages while it runs.
    pub steer: bool,
    /// Starts Paddock subagents, each in a sandbox of its own.
    pub subagents: bool,
    /// Reports each tool batch, so each is a checkpoint (else the driver
    /// checkpoints on a timer while the workspace changes).
    pub tool_checkpoints: bool,
    /// Reads and proposes project memory.
    pub memory: bool,
    pub resume: ResumeSupport,
}

/// What a driver's agent needs of the run's sandbox besides the run's own
/// network: the destinations it calls (its model provider) and the secrets
/// injected into those calls. A run's network and secrets are widened by
/// them before it starts (`run.started` shows the result).
#[derive(Debug, Clone, Default)]
pub struct DriverEgress {
    pub allow: Vec<Destination>,
    pub secrets: Vec<SecretSpec>,
}

/// How a driven run ended and what it used.
#[derive(Debug)]
pub struct DriveOutcome {
    pub(crate) ending: Ending,
    pub(crate) usage: RunUsage,
}

/// What drives a run's agent once its sandbox is up.
#[async_trait]
pub trait AgentDriver: Send + Sync + fmt::Debug {
    fn kind(&self) -> DriverKind;

    fn capabilities(&self) -> DriverCapabilities;

    /// What the agent needs of the sandbox's network (none by default).
    fn egress(&self) -> DriverEgress {
        DriverEgress::default()
    }

    /// Drives the agent until the run ends: it completes, fails, runs out
    /// of budget or is cancelled (`ctx`'s token).
    async fn drive(&self, ctx: DriveContext<'_>) -> DriveOutcome;
}

/// Paddock's own loop: model turns, tools in the sandbox, subagents,
/// memory, compaction and steering.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinDriver;

impl BuiltinDriver {
    pub const CAPABILITIES: DriverCapabilities = DriverCapabilities {
        steer: true,
        subagents: true,
        tool_checkpoints: true,
        memory: true,
        resume: ResumeSupport::History,
    };

    pub fn shared() -> Arc<dyn AgentDriver> {
        Arc::new(Self)
    }
}

#[async_trait]
impl AgentDriver for BuiltinDriver {
    fn kind(&self) -> DriverKind {
        DriverKind::Builtin
    }

    fn capabilities(&self) -> DriverCapabilities {
        Self::CAPABILITIES
    }

    async fn drive(&self, ctx: DriveContext<'_>) -> DriveOutcome {
        crate::run::drive_builtin(ctx).await
    }
}

/// The model an agent CLI is told to call: its provider's endpoint and
/// the key the egress proxy injects (never given to the sandbox).
#[derive(Clone)]
pub struct ModelTarget {
    pub provider: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub key: Option<SecretValue>,
}

impl fmt::Debug for ModelTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelTarget")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Why a run cannot have the driver it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverRefused {
    #[error(
        "the {kind} driver is not enabled on this server (its operator lists it in [drivers] \
         enabled)"
    )]
    NotEnabled { kind: DriverKind },
    #[error(
        "the {kind} driver calls its model provider itself: give it a model of {wants} (a spec such as {wants}:MODEL), not a scripted one"
    )]
    NoModel {
        kind: DriverKind,
        wants: ProviderKind,
    },
    #[error("the {kind} driver speaks {wants}'s API, not {got}'s: give it a model of {wants}")]
    WrongProvider {
        kind: DriverKind,
        wants: ProviderKind,
        got: ProviderKind,
    },
    #[error(transparent)]
    Settings(#[from] ExternalSettingsError),
}

/// The drivers a server offers: the built-in loop always, and the agent
/// CLIs its operator enabled, installed under an agents directory.
#[derive(Debug, Clone, Default)]
pub struct Drivers {
    /// Enabled agent CLIs, each with the directory it is installed under.
    external: BTreeMap<&'static str, String>,
}

impl Drivers {
    /// Offers the agent CLI `kind`, installed under `agents_dir` (as
    /// images/agents-image.sh installs them).
    pub fn enable(&mut self, kind: DriverKind, agents_dir: &str) {
        if kind != DriverKind::Builtin {
            self.external.insert(kind.as_str(), agents_dir.to_owned());
        }
    }

    /// The kinds offered, builtin first.
    pub fn kinds(&self) -> Vec<DriverKind> {
        DriverKind::ALL
            .iter()
            .copied()
            .filter(|k| *k == DriverKind::Builtin || self.external.contains_key(k.as_str()))
            .collect()
    }

    /// The driver of `kind` for a run whose model is `target` (None: a
    /// model no CLI can call, such as a script), if this server offers it.
    pub fn driver(
        &self,
        kind: DriverKind,
        target: Option<ModelTarget>,
    ) -> Result<Arc<dyn AgentDriver>, DriverRefused> {
        if kind == DriverKind::Builtin {
            return Ok(BuiltinDriver::shared());
        }
        let agents_dir = self
            .external
            .get(kind.as_str())
            .ok_or(DriverRefused::NotEnabled { kind })?;
        let wants = match kind {
            DriverKind::ClaudeCode => ProviderKind::Anthropic,
            _ => ProviderKind::OpenAi,
        };
        let target = target.ok_or(DriverRefused::NoModel { kind, wants })?;
        if target.provider != wants {
            return Err(DriverRefused::WrongProvider {
                kind,
                wants,
                got: target.provider,
            });
        }
        let settings = ExternalSettings {
            program: ExternalDriver::program_in(kind, agents_dir),
            model: Some(target.model),
            base_url: target.base_url,
            key: target.key,
        };
        Ok(Arc::new(ExternalDriver::new(kind, settings)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(provider: ProviderKind) -> ModelTarget {
        ModelTarget {
            provider,
            model: "m".to_owned(),
            base_url: "https://api.anthropic.com".to_owned(),
            key: None,
        }
    }

    #[test]
    fn only_the_builtin_loop_is_offered_until_an_operator_enables_a_cli() {
        let mut drivers = Drivers::default();
        assert_eq!(drivers.kinds(), vec![DriverKind::Builtin]);
        let kind = |d: Result<Arc<dyn AgentDriver>, DriverRefused>| d.map(|d| d.kind());
        assert_eq!(
            kind(drivers.driver(DriverKind::Builtin, None)),
            Ok(DriverKind::Builtin)
        );
        let refused = kind(drivers.driver(
            DriverKind::ClaudeCode,
            Some(target(ProviderKind::Anthropic)),
        ));
        assert_eq!(
            refused,
            Err(DriverRefused::NotEnabled {
                kind: DriverKind::ClaudeCode
            })
        );
        assert_eq!(
            DriverRefused::NotEnabled {
                kind: DriverKind::ClaudeCode
            }
            .to_string(),
            "the claude-code driver is not enabled on this server (its operator lists it in \
             [drivers] enabled)"
        );

        drivers.enable(DriverKind::ClaudeCode, "/opt/agents");
        assert_eq!(
            drivers.kinds(),
            vec![DriverKind::Builtin, DriverKind::ClaudeCode]
        );
        assert_eq!(
            kind(drivers.driver(
                DriverKind::ClaudeCode,
                Some(target(ProviderKind::Anthropic))
            )),
            Ok(DriverKind::ClaudeCode)
        );
        assert!(matches!(
            kind(drivers.driver(DriverKind::ClaudeCode, Some(target(ProviderKind::OpenAi)))),
            Err(DriverRefused::WrongProvider { .. })
        ));
        assert!(matches!(
            kind(drivers.driver(DriverKind::ClaudeCode, None)),
            Err(DriverRefused::NoModel { .. })
        ));
    }
}
