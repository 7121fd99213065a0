//! Changing the network of a running sandbox (`PUT
//! /v1/sandboxes/{id}/network`, `paddock sandbox network`): the new policy
//! is checked against the operator's bounds exactly as at create, then
//! against what a running sandbox can become
//! ([`NetworkPolicy::change_to`]: an allowlist by another), then the
//! backend swaps it in its egress proxy and cuts the open connections the
//! new one refuses. Every change is kept as a `network.changed` event of
//! the sandbox (old, new, by whom, when, what was cut), newest last.
//!
//! A run's sandbox is not this API's to drive (409 `sandbox_owned_by_run`),
//! so its changes never reach a session's events.

use std::collections::VecDeque;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxError, SandboxId};
use paddock_proto::{NetworkPolicy, error_chain};
use serde::{Deserialize, Serialize};

use super::{SandboxService, ServiceError};

/// How many changes a sandbox keeps; older ones go first.
pub const NETWORK_CHANGES_KEPT: usize = 64;

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
    pub old: NetworkPolicy,
    pub new: NetworkPolicy,
    /// Who changed it: the tenant of the token the request carried.
    pub by: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The open connections the change cut (`host:port`).
    pub cut: Vec<String>,
}

/// `GET /v1/sandboxes/{id}/network`: the network now and its changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NetworkView {
    pub network: NetworkPolicy,
    /// The last changes (at most 64), oldest first.
    pub changes: Vec<NetworkChanged>,
}

/// A live sandbox's network and its changes.
#[derive(Debug)]
pub(crate) struct NetworkState {
    pub(crate) policy: NetworkPolicy,
    changes: VecDeque<NetworkChanged>,
}

impl NetworkState {
    pub(crate) fn new(policy: NetworkPolicy) -> Self {
        Self {
            policy,
            changes: VecDeque::new(),
        }
    }

    fn push(&mut self, change: NetworkChanged) {
        if self.changes.len() == NETWORK_CHANGES_KEPT {
            self.changes.pop_front();
        }
        self.policy = change.new.clone();
        self.changes.push_back(change);
    }

    fn view(&self) -> NetworkView {
        NetworkView {
            network: self.policy.clone(),
            changes: self.changes.iter().cloned().collect(),
        }
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
        // Held across the swap: changes of one sandbox go one at a time.
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
        let change = NetworkChanged {
            kind: "network.changed".to_owned(),
            sandbox_id: id.clone(),
            old,
            new: command.network,
            by: tenant.to_string(),
            at: self.clock.now().to_string(),
            cut: swap.cut,
        };
        live.network().push(change.clone());
        tracing::info!(
            sandbox_id = %id,
            tenant = %tenant,
            old = %change.old.label(),
            new = %change.new.label(),
            cut = change.cut.len(),
            "network.changed"
        );
        Ok(change)
    }

    /// The network of a running sandbox now, and its changes.
    pub async fn get_network(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<NetworkView, ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        Ok(live.network().view())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn change(n: usize) -> NetworkChanged {
        NetworkChanged {
            kind: "network.changed".to_owned(),
            sandbox_id: SandboxId::parse("sb-1").unwrap_or_else(|_| SandboxId::generate()),
            old: "allow:a.test".parse().unwrap(),
            new: format!("allow:h{n}.test").parse().unwrap(),
            by: "acme".to_owned(),
            at: String::new(),
            cut: Vec::new(),
        }
    }

    #[test]
    fn the_state_keeps_the_newest_policy_and_a_bounded_history() {
        let mut state = NetworkState::new("allow:a.test".parse().unwrap());
        for n in 0..NETWORK_CHANGES_KEPT + 3 {
            state.push(change(n));
        }
        let view = state.view();
        assert_eq!(
            view.network,
            format!("allow:h{}.test", NETWORK_CHANGES_KEPT + 2)
                .parse()
                .unwrap()
        );
        assert_eq!(view.changes.len(), NETWORK_CHANGES_KEPT);
        assert_eq!(view.changes[0], change(3));
    }
}
