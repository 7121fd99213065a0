//! E2B's network update (`PUT /sandboxes/{id}/network`) on Paddock's
//! `set_network`. E2B's egress rules map onto Paddock's policy as a create's
//! do (`sandboxes.rs`), plus E2B's "deny all" (`denyOut: ["0.0.0.0/0"]`);
//! then Paddock's rule for running sandboxes holds: only an allowlist can
//! become another (409 otherwise). Asking for the network a sandbox has
//! already changes nothing (204). E2B's DNS servers, egress proxy and
//! request rules have no Paddock counterpart and are refused (400).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use paddock_core::store::SandboxState;
use paddock_proto::NetworkPolicy;
use serde::Deserialize;

use super::auth::ApiKey;
use super::error::E2bError;
use super::lifecycle::paused_conflict;
use super::sandboxes::for_sandbox;
use super::sandboxes::shown_sandbox;
use crate::http::AppState;
use crate::service::SetNetwork;

/// Every destination: E2B's `ALL_TRAFFIC`, and its IPv6 form.
const ALL_TRAFFIC: [&str; 2] = ["0.0.0.0/0", "::/0"];

/// `SandboxNetworkUpdateConfig`: the whole egress configuration, each
/// field left out cleared.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkUpdate {
    allow_out: Option<Vec<String>>,
    deny_out: Option<Vec<String>>,
    dns_servers: Option<Vec<String>>,
    egress_proxy: Option<serde_json::Value>,
    rules: Option<serde_json::Value>,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
}

/// `PUT /sandboxes/{id}/network`: replaces a running sandbox's egress
/// rules (see the module doc); 204, or 409 where Paddock cannot change
/// the network of a running sandbox that way.
pub async fn update_network(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    Json(body): Json<NetworkUpdate>,
) -> Result<StatusCode, E2bError> {
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    if view.state == SandboxState::Paused {
        return Err(paused_conflict(&id, "change its network"));
    }
    let full_allowed = state
        .service
        .config()
        .network
        .check(&NetworkPolicy::Full)
        .is_ok();
    let wanted = policy_of(&body, full_allowed)?;
    let current = state
        .service
        .get_network(&tenant, &sandbox)
        .await
        .map_err(for_sandbox(&id))?
        .network;
    if current == wanted {
        return Ok(StatusCode::NO_CONTENT);
    }
    state
        .service
        .set_network(&tenant, &sandbox, SetNetwork { network: wanted })
        .await
        .map_err(for_sandbox(&id))?;
    Ok(StatusCode::NO_CONTENT)
}

fn bad_request(message: impl Into<String>) -> E2bError {
    E2bError::new(StatusCode::BAD_REQUEST, message)
}

/// The policy an update asks for: the allowlist when `allowOut` names
/// hosts (E2B's allow entries win over its deny entries), none when all
/// traffic is denied or internet access refused, else `full` where the
/// server allows it (E2B's default is internet access) and `none` where
/// it does not. What Paddock's egress cannot do is refused.
fn policy_of(body: &NetworkUpdate, full_allowed: bool) -> Result<NetworkPolicy, E2bError> {
    if body.egress_proxy.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(bad_request(
            "egressProxy is not supported: Paddock's sandboxes reach out through its own egress proxy",
        ));
    }
    if body
        .rules
        .as_ref()
        .is_some_and(|v| v.as_object().is_none_or(|rules| !rules.is_empty()))
    {
        return Err(bad_request(
            "rules (request transforms) are not supported by Paddock's egress",
        ));
    }
    if body.dns_servers.is_some() {
        return Err(bad_request(
            "dnsServers is not supported: Paddock's egress proxy resolves names for the sandbox",
        ));
    }
    let deny = body.deny_out.as_deref().unwrap_or_default();
    if let Some(other) = deny.iter().find(|d| !ALL_TRAFFIC.contains(&d.trim())) {
        return Err(bad_request(format!(
            "denyOut {other:?} is not supported: Paddock's egress is an allowlist (name the hosts in allowOut, or deny 0.0.0.0/0 for none)"
        )));
    }
    let allow = body.allow_out.as_deref().unwrap_or_default();
    if !allow.is_empty() {
        return format!("allow:{}", allow.join(","))
            .parse()
            .map_err(|e| bad_request(format!("allowOut: {e}")));
    }
    if !deny.is_empty() || body.allow_internet_access == Some(false) {
        return Ok(NetworkPolicy::None);
    }
    if full_allowed {
        Ok(NetworkPolicy::Full)
    } else if body.allow_internet_access == Some(true) {
        Err(bad_request(
            "this server does not allow sandboxes full internet access; name hosts in allowOut",
        ))
    } else {
        Ok(NetworkPolicy::None)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn update(json: serde_json::Value) -> NetworkUpdate {
        serde_json::from_value(json).unwrap()
    }

    fn policy(json: serde_json::Value) -> Result<NetworkPolicy, E2bError> {
        policy_of(&update(json), true)
    }

    #[test]
    fn allow_out_is_an_allowlist_even_beside_deny_all() {
        let want: NetworkPolicy = "allow:a.test,b.test:8080".parse().unwrap();
        assert_eq!(
            policy(serde_json::json!({"allowOut": ["a.test", "b.test:8080"]})).unwrap(),
            want
        );
        assert_eq!(
            policy(
                serde_json::json!({"allowOut": ["a.test", "b.test:8080"], "denyOut": ["0.0.0.0/0"]})
            )
            .unwrap(),
            want
        );
    }

    #[test]
    fn deny_all_or_no_internet_is_none_and_an_empty_update_is_full() {
        assert_eq!(
            policy(serde_json::json!({"denyOut": ["0.0.0.0/0"]})).unwrap(),
            NetworkPolicy::None
        );
        assert_eq!(
            policy(serde_json::json!({"allow_internet_access": false})).unwrap(),
            NetworkPolicy::None
        );
        assert_eq!(policy(serde_json::json!({})).unwrap(), NetworkPolicy::Full);
        assert_eq!(
            policy(serde_json::json!({"egressProxy": null, "rules": {}})).unwrap(),
            NetworkPolicy::Full
        );
    }

    #[test]
    fn without_full_an_empty_update_is_none_and_asking_internet_is_refused() {
        assert_eq!(
            policy_of(&update(serde_json::json!({})), false).unwrap(),
            NetworkPolicy::None
        );
        let err = policy_of(
            &update(serde_json::json!({"allow_internet_access": true})),
            false,
        )
        .unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn what_the_egress_cannot_do_is_a_400_naming_it() {
        for (body, names) in [
            (serde_json::json!({"denyOut": ["10.0.0.0/8"]}), "denyOut"),
            (serde_json::json!({"dnsServers": []}), "dnsServers"),
            (
                serde_json::json!({"egressProxy": {"address": "p:1080"}}),
                "egressProxy",
            ),
            (serde_json::json!({"rules": {"a.test": []}}), "rules"),
            (serde_json::json!({"allowOut": ["*bad*"]}), "allowOut"),
        ] {
            let err = policy(body.clone()).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{body}");
            assert!(err.message.contains(names), "{body}: {}", err.message);
        }
    }
}
