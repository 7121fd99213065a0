//! A running sandbox's network change, for every backend that has an
//! [`Egress`]: the backend hands its egress (None: network none) and the
//! change is made there, so docker, gVisor and the microVM delegate the
//! same way native does.

use paddock_core::sandbox::{NetworkSwap, SandboxError, SandboxId};
use paddock_egress::Egress;
use paddock_proto::NetworkPolicy;

/// Replaces the allowlist of the sandbox's egress proxy, cutting the open
/// connections the new one refuses; refused without an egress.
pub(crate) fn set_network(
    id: &SandboxId,
    egress: Option<&Egress>,
    policy: NetworkPolicy,
) -> Result<NetworkSwap, SandboxError> {
    let Some(egress) = egress else {
        return Err(SandboxError::NetworkChange {
            id: id.clone(),
            source: NetworkPolicy::None.change_to(&policy).err().map_or_else(
                || "the sandbox has no egress proxy".into(),
                |refused| Box::new(refused) as _,
            ),
        });
    };
    let change = egress
        .set_policy(policy)
        .map_err(|e| SandboxError::NetworkChange {
            id: id.clone(),
            source: Box::new(e),
        })?;
    Ok(NetworkSwap {
        old: change.old,
        cut: change
            .cut
            .into_iter()
            .map(|(host, port)| format!("{host}:{port}"))
            .collect(),
    })
}
