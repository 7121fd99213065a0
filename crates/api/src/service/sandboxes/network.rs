//! Changing the network of a running sandbox (`PUT
//! /v1/sandboxes/{id}/network`, `paddock sandbox network`): the new policy
//! is checked against the operator's bounds exactly as at create, then
//! against what a running sandbox can become
//! ([`NetworkPolicy::change_to`]: an allowlist by another), then the
//! backend swaps it in its egress proxy and cuts the open connections the
//! new one refuses. Every change is stored as a `network.changed` event of
//! the sandbox (old, new, by whom, when, what was cut), numbered from 1, and
//! listed after the sandbox stops and across restarts of the server
//! (`GET /v1/sandboxes/{id}/network/changes`).
//!
//! A run's sandbox is not this API's to drive (409 `sandbox_owned_by_run`),
//! so its changes never reach a session's events.

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxError, SandboxId};
use paddock_core::store::{MAX_PAGE, NetworkChangeRecord};
use paddock_proto::{NetworkPolicy, error_chain};
use serde::{Deserialize, Serialize};

use super::{SandboxService, ServiceError};

/// The body of `PUT /v1/sandboxes/{id}/network`: the network in the form a
/// sandbox create takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetNetwork {
    pub network: NetworkPolicy,
}

/// `network.changed`: one change of a running sandbox's network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NetworkChanged {
    /// Always `network.changed`.
    #[schema(example = "network.changed")]
    pub kind: String,
    pub sandbox_id: SandboxId,
    /// The sandbox's changes are numbered from 1 in the order they were made.
    #[schema(minimum = 1)]
    pub seq: u64,
    pub old: NetworkPolicy,
    pub new: NetworkPolicy,
    /// Who changed it: the tenant of the token the request carried.
    pub by: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The open connections the change cut (`host:port`).
    pub cut: Vec<String>,
}

impl From<NetworkChangeRecord> for NetworkChanged {
    fn from(r: NetworkChangeRecord) -> Self {
        Self {
            kind: "network.changed".to_owned(),
            sandbox_id: r.sandbox,
            seq: r.seq,
            old: r.old,
            new: r.new,
            by: r.by,
            at: r.at.to_string(),
            cut: r.cut,
        }
    }
}

/// `GET /v1/sandboxes/{id}/network`: the network of a running sandbox now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NetworkView {
    pub network: NetworkPolicy,
}

/// A live sandbox's network now.
#[derive(Debug)]
pub(crate) struct NetworkState {
    pub(crate) policy: NetworkPolicy,
}

impl NetworkState {
    pub(crate) fn new(policy: NetworkPolicy) -> Self {
        Self { policy }
    }
}

impl SandboxService {
    /// Replaces the network of a running sandbox (the rules are in the
    /// module doc).
    pub async fn set_network(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: SetNetwork,
    ) -> Result<NetworkChanged, ServiceError> {
        ServiceError::check_network(&self.config.network, &command.network)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        // Held across the swap and its record: changes of one sandbox go one
        // at a time, so they are stored in the order they were made.
        let handle = live.handle.lock().await;
        let Some(sandbox) = handle.as_ref() else {
            return Err(ServiceError::NotRunning {
                id: id.clone(),
                state: paddock_core::store::SandboxState::Stopped,
            });
        };
        let old = live.network().policy.clone();
        let conflict = |reason: String| ServiceError::Conflict {
            entity: "sandbox",
            id: id.to_string(),
            reason,
        };
        old.change_to(&command.network)
            .map_err(|refused| conflict(refused.to_string()))?;
        let swap =
            sandbox
                .set_network(command.network.clone())
                .await
                .map_err(|err| match &err {
                    SandboxError::NetworkChange { source, .. } => conflict(error_chain(&**source)),
                    _ => conflict(error_chain(&err)),
                })?;
        // The proxy follows the new policy from here on, whether or not the
        // record below is written.
        live.network().policy = command.network.clone();
        let record = NetworkChangeRecord {
            tenant: tenant.clone(),
            sandbox: id.clone(),
            seq: 0,
            old,
            new: command.network,
            by: tenant.to_string(),
            cut: swap.cut,
            at: self.clock.now(),
        };
        tracing::info!(
            sandbox_id = %id,
            tenant = %tenant,
            old = %record.old.label(),
            new = %record.new.label(),
            cut = record.cut.len(),
            "network.changed"
        );
        let stored = self
            .store
            .append_network_change(&record)
            .await
            .map_err(ServiceError::store("append_network_change"))?;
        Ok(stored.into())
    }

    /// The network of a running sandbox now.
    pub async fn get_network(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<NetworkView, ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let network = live.network().policy.clone();
        Ok(NetworkView { network })
    }

    /// The network a stopped or paused sandbox has now: the last change's,
    /// or `created` when it was never changed. A resume starts it with this
    /// one, not the one it was created with.
    pub(super) async fn current_network(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        created: &NetworkPolicy,
    ) -> Result<NetworkPolicy, ServiceError> {
        let mut current = None;
        let mut after = 0;
        loop {
            let changes = self
                .store
                .list_network_changes(tenant, id, after, MAX_PAGE)
                .await
                .map_err(ServiceError::store("list_network_changes"))?;
            let Some(last) = changes.last() else { break };
            after = last.seq;
            current = Some(last.new.clone());
        }
        Ok(current.unwrap_or_else(|| created.clone()))
    }

    /// The tenant's sandbox's network changes after `after_seq`, oldest
    /// first; running or not, across restarts.
    pub async fn list_network_changes(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        after_seq: u64,
        limit: Option<u32>,
    ) -> Result<Vec<NetworkChanged>, ServiceError> {
        let page = super::page(None, limit)?;
        self.store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        let changes = self
            .store
            .list_network_changes(tenant, id, after_seq, page.limit)
            .await
            .map_err(ServiceError::store("list_network_changes"))?;
        Ok(changes.into_iter().map(NetworkChanged::from).collect())
    }
}
