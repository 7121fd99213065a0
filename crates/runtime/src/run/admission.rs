//! Admission of a run's sandbox: the port a front end implements so that
//! every sandbox a run or subagent starts passes the same slot and quota
//! check as the front end's own sandboxes (the API's `SandboxService`
//! implements it over its quota ledger).
//!
//! The runtime asks once per run, before the run is recorded
//! ([`crate::Runtime::start_run`] and a subagent's spawn): a refusal
//! leaves nothing behind and reaches the caller as
//! [`crate::RuntimeError::NotAdmitted`] (a subagent's as the spawn tool's
//! error). The grant is held by the run's sandbox from its start and given
//! back when it is destroyed, or when the run ends without one (cancelled
//! while it waited, a sandbox that failed to start, a panicked task).
//! Without an admission (a local `paddock run`) nothing is checked.

use std::fmt;

use async_trait::async_trait;
use paddock_core::ids::{RunId, TenantId};
use paddock_core::sandbox::{SandboxId, SandboxLimits};

/// What a run's sandbox asks to be admitted with.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionAsk<'a> {
    pub tenant: &'a TenantId,
    /// The run the sandbox is for.
    pub run: &'a RunId,
    /// A subagent's sandbox: it counts against the sandbox quotas, not as
    /// one more concurrent run.
    pub subagent: bool,
    /// The limits the sandbox will be started with.
    pub limits: &'a SandboxLimits,
}

/// Why a run's sandbox was not admitted. The front end's own error, kept
/// whole so it answers as its own refusals do (429 naming the quota).
pub type AdmissionRefused = Box<dyn std::error::Error + Send + Sync>;

/// Admits run sandboxes against the operator's slots and quotas.
#[async_trait]
pub trait SandboxAdmission: Send + Sync + fmt::Debug {
    /// Reserves a slot for the sandbox of `ask.run` now, or says why not.
    async fn admit(
        &self,
        ask: AdmissionAsk<'_>,
    ) -> Result<Box<dyn AdmissionGrant>, AdmissionRefused>;

    /// Whether `refused` (an answer of [`SandboxAdmission::admit`]) may
    /// change by waiting: slots in use that a run or sandbox ending frees.
    /// Where the operator asks for queueing, such a root run is queued
    /// instead of refused; any other refusal is final (the default).
    fn can_wait(&self, refused: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
        let _ = refused;
        false
    }
}

/// A slot held for a run's sandbox; dropping it gives the slot back.
pub trait AdmissionGrant: Send + Sync + fmt::Debug {
    /// The sandbox now holds the grant (called once, right after it
    /// started and before it is recorded).
    fn started(&mut self, sandbox: &SandboxId);
}
