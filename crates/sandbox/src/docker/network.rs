//! The network of a container sandbox with egress (`allowlist` or `full`).
//!
//! Docker cannot start a container in a namespace the host made, so the
//! container starts with network none (the engine makes it a namespace of
//! its own, loopback only) and the host then names that namespace under
//! /run/netns (`ip netns attach`) and configures it from outside, through
//! the same [`Egress`] as a native sandbox's (veth, filter rules, the
//! proxy's sockets bound inside, NAT for `full`), before the guest takes
//! its spec: no command runs before the network is in place. The
//! namespace belongs to the host's user namespace and nothing in the
//! container holds a capability (cap-drop ALL, a non-root user, no new
//! privileges), so the sandbox cannot change its routes or rules.
//!
//! gVisor runs such a sandbox with host networking ([`Engine::runtime_for`]):
//! the sentry's sockets are host sockets in that namespace, so the
//! redirect to the proxy applies to them as to runc's.
//!
//! [`Engine::runtime_for`]: super::config::Engine::runtime_for

use std::path::PathBuf;

use paddock_core::sandbox::{BoxError, EgressLog, SandboxError, SandboxId, SandboxSpec};
use paddock_egress::{Egress, NetnsSource, SandboxCa};
use tokio::task::JoinHandle;

use super::config::DockerConfig;
use crate::shared::egress::{ca_bundle, fill_egress_log};

/// What a sandbox with egress needs before its container is made.
#[derive(Debug, Default)]
pub(super) struct Planned {
    /// The sandbox's CA, when its secrets are intercepted.
    pub ca: Option<SandboxCa>,
    /// The host file of its CA bundle, bound into the container.
    pub bundle: Option<PathBuf>,
    /// `<dir>/paddock-<id>-<random>`: holds the bundle, and marks the
    /// sandbox's namespace for the reaper of a dead owner (see
    /// [`crate::shared::egress::net_marker`]).
    pub marker: Option<tempfile::TempDir>,
}

/// The owner tag of this backend's NAT rules: its node, engine and cgroup
/// parent, so that one backend's reconciliation never removes another's.
pub(super) fn owner(config: &DockerConfig) -> String {
    crate::shared::host::owner_tag(&format!(
        "{}/{}/{}",
        config.node,
        config.engine.backend_name(),
        config.cgroup_parent
    ))
}

/// The CA and its bundle file of a sandbox with egress (nothing without).
pub(super) fn plan(
    id: &SandboxId,
    spec: &SandboxSpec,
    config: &DockerConfig,
) -> Result<Planned, SandboxError> {
    if !spec.policy.network.has_egress() {
        return Ok(Planned::default());
    }
    let root = config.temp_root.clone().unwrap_or_else(std::env::temp_dir);
    let marker = crate::shared::egress::net_marker(id, spec, Some(&root))?;
    let launch = |source: BoxError| SandboxError::Launch {
        id: id.clone(),
        source,
    };
    let ca = SandboxCa::for_secrets(id.as_str(), &spec.secrets, &config.egress)
        .map_err(|e| launch(Box::new(e)))?;
    let bundle = match (&ca, &marker) {
        (Some(ca), Some(dir)) => {
            let file = dir.path().join("ca.pem");
            std::fs::write(&file, ca_bundle(&ca.pem())).map_err(|e| launch(Box::new(e)))?;
            // Read by the container's user through the read-only bind.
            std::fs::set_permissions(
                &file,
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
            )
            .map_err(|e| launch(Box::new(e)))?;
            Some(file)
        }
        _ => None,
    };
    Ok(Planned { ca, bundle, marker })
}

/// The egress of a started container, in the namespace of its process
/// `pid`; decisions fill the returned log.
pub(super) async fn start(
    id: &SandboxId,
    spec: &SandboxSpec,
    config: &DockerConfig,
    pid: u32,
    ca: Option<SandboxCa>,
) -> Result<(Egress, EgressLog, JoinHandle<()>), BoxError> {
    let (egress, decisions) = Egress::start_in(
        id.as_str(),
        &owner(config),
        spec.policy.network.clone(),
        spec.secrets.clone(),
        config.egress.clone(),
        NetnsSource::Attach { pid },
        ca,
    )
    .await?;
    let (log, task) = fill_egress_log(decisions);
    Ok((egress, log, task))
}
