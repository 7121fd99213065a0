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

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use paddock_core::store::{DriverKind, RunUsage};
use serde::{Deserialize, Serialize};

use crate::run::{DriveContext, Ending};

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

/// Why a run cannot have the driver it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {kind} driver is not enabled on this server{}", hint(.kind))]
pub struct DriverUnavailable {
    pub kind: DriverKind,
}

fn hint(kind: &DriverKind) -> String {
    match kind {
        DriverKind::Builtin => String::new(),
        other => format!(" (its operator enables it under [drivers.{other}])"),
    }
}

/// The drivers a server offers, by kind; the built-in loop always.
#[derive(Debug, Clone)]
pub struct Drivers {
    by_kind: BTreeMap<&'static str, Arc<dyn AgentDriver>>,
}

impl Default for Drivers {
    fn default() -> Self {
        let mut drivers = Self {
            by_kind: BTreeMap::new(),
        };
        drivers.add(BuiltinDriver::shared());
        drivers
    }
}

impl Drivers {
    /// Offers `driver` (replacing one of the same kind).
    pub fn add(&mut self, driver: Arc<dyn AgentDriver>) {
        self.by_kind.insert(driver.kind().as_str(), driver);
    }

    /// The driver of `kind`, if this server offers it.
    pub fn get(&self, kind: DriverKind) -> Result<Arc<dyn AgentDriver>, DriverUnavailable> {
        self.by_kind
            .get(kind.as_str())
            .cloned()
            .ok_or(DriverUnavailable { kind })
    }

    /// The kinds offered, builtin first.
    pub fn kinds(&self) -> Vec<DriverKind> {
        DriverKind::ALL
            .iter()
            .copied()
            .filter(|k| self.by_kind.contains_key(k.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_builtin_loop_is_offered_until_an_operator_adds_a_driver() {
        let drivers = Drivers::default();
        assert_eq!(drivers.kinds(), vec![DriverKind::Builtin]);
        assert_eq!(
            drivers.get(DriverKind::Builtin).map(|d| d.kind()),
            Ok(DriverKind::Builtin)
        );
        let refused = drivers.get(DriverKind::ClaudeCode).map(|d| d.kind());
        assert_eq!(
            refused,
            Err(DriverUnavailable {
                kind: DriverKind::ClaudeCode
            })
        );
        assert_eq!(
            DriverUnavailable {
                kind: DriverKind::ClaudeCode
            }
            .to_string(),
            "the claude-code driver is not enabled on this server (its operator enables it \
             under [drivers.claude-code])"
        );
    }
}
