//! The runtime's admission port over this service's slot and quota check:
//! an agent run's or subagent's sandbox is admitted exactly as
//! `POST /v1/sandboxes` is ([`SandboxService::admit`]: `max_sandboxes`,
//! then the tenant's and the node's quotas, one ledger), and refused with
//! the same [`ServiceError`] (429 `quota_exceeded` / `too_many_sandboxes`).
//! A root run's grant also counts one concurrent run (`Quota::runs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use paddock_core::sandbox::SandboxId;
use paddock_runtime::{AdmissionAsk, AdmissionGrant, AdmissionRefused, SandboxAdmission};

use super::quota::{Grant, Key};
use super::{SandboxService, ServiceError};

/// [`SandboxAdmission`] for the runtime this service's server drives.
#[derive(Debug)]
pub(crate) struct RunAdmission {
    service: Arc<SandboxService>,
}

impl RunAdmission {
    pub(crate) fn new(service: Arc<SandboxService>) -> Self {
        Self { service }
    }
}

#[async_trait]
impl SandboxAdmission for RunAdmission {
    async fn admit(
        &self,
        ask: AdmissionAsk<'_>,
    ) -> Result<Box<dyn AdmissionGrant>, AdmissionRefused> {
        // the service's own error, unwrapped: the API answers it as its own
        let grant = self
            .service
            .admit_run(&ask)
            .await
            .map_err(|refused| Box::new(refused) as AdmissionRefused)?;
        Ok(Box::new(grant))
    }

    /// Slots and quotas in use free up; a sandbox that asks more than a
    /// quota holds in all, or any other refusal, never gets one.
    fn can_wait(&self, refused: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
        match refused.downcast_ref::<ServiceError>() {
            Some(ServiceError::TooManySandboxes { .. }) => true,
            Some(ServiceError::QuotaExceeded { limit, asked, .. }) => asked <= limit,
            _ => false,
        }
    }
}

impl SandboxService {
    /// Reserves a slot and the grant of a run's sandbox, held by the
    /// returned [`RunGrant`] until it is dropped.
    async fn admit_run(self: &Arc<Self>, ask: &AdmissionAsk<'_>) -> Result<RunGrant, ServiceError> {
        let asked = Grant {
            runs: u64::from(!ask.subagent),
            ..Grant::of(ask.limits)
        };
        let (slot, reservation) = self.admit(ask.tenant, asked).await?;
        // counted running before the creation slot is given back
        self.run_sandboxes.fetch_add(1, Ordering::SeqCst);
        drop(slot);
        let key = reservation.detach();
        tracing::debug!(run_id = %ask.run, tenant = %ask.tenant, subagent = ask.subagent, "run sandbox admitted");
        Ok(RunGrant {
            service: Arc::clone(self),
            key,
        })
    }
}

/// A run's slot and grant in the service's ledger: under a starting key,
/// then its sandbox's id; released (and its `max_sandboxes` place freed)
/// when dropped.
#[derive(Debug)]
pub(crate) struct RunGrant {
    service: Arc<SandboxService>,
    key: Option<Key>,
}

impl AdmissionGrant for RunGrant {
    fn started(&mut self, sandbox: &SandboxId) {
        if let Some(key) = &self.key {
            self.key = Some(self.service.quotas.commit_key(key, sandbox));
        }
    }
}

impl Drop for RunGrant {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.service.quotas.release_key(&key);
        }
        self.service.run_sandboxes.fetch_sub(1, Ordering::SeqCst);
    }
}
