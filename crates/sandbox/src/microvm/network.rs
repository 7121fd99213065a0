//! The network of a microVM with egress: the same host-side egress as a
//! native sandbox's (its namespace, proxy, DNS, guard, and NAT for `full`),
//! reached through a tap in that namespace which QEMU backs the VM's one
//! virtio-net device with. QEMU is started inside the namespace (its
//! hardening is unchanged: it opens the tap as root, then `-runas`), so the
//! tap it opens by name is the namespace's; the VM's packets arrive on it.

use std::path::PathBuf;

use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_egress::{Egress, EgressConfig, PROXY_ENV, PROXY_URL, VmLink};
use paddock_jail::MicroVmNetwork;
use tokio::process::{Child, Command};

use super::qemu::VmNet;
use crate::shared::egress::EgressReceiver;

/// The host's roots, which the VM (its /etc the image's) lacks: with
/// secrets they go into its bundle beside the sandbox's CA.
const HOST_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A started egress with its tap, and what the VM and its guest get of it.
pub(super) struct VmEgress {
    pub egress: Egress,
    pub decisions: EgressReceiver,
    pub net: VmNet,
    pub guest: MicroVmNetwork,
}

/// Starts the egress of a sandbox with network and attaches the VM's tap;
/// on failure nothing of it is left.
pub(super) async fn start(
    id: &SandboxId,
    owner: &str,
    spec: &SandboxSpec,
    config: &EgressConfig,
) -> Result<VmEgress, paddock_egress::EgressError> {
    let (egress, decisions) = Egress::start(
        id.as_str(),
        owner,
        spec.policy.network.clone(),
        spec.secrets.clone(),
        config.clone(),
    )
    .await?;
    let link = match egress.attach_tap().await {
        Ok(link) => link,
        Err(e) => {
            egress.stop().await;
            return Err(e);
        }
    };
    let host_roots = match egress.ca_pem() {
        Some(_) => std::fs::read_to_string(HOST_CA_BUNDLE).unwrap_or_default(),
        None => String::new(),
    };
    let guest = guest_network(&link, spec, egress.ca_pem(), &host_roots);
    let net = VmNet {
        tap: link.tap.to_owned(),
        address: format!("{}/{}", link.address, link.prefix),
        gateway: link.gateway.to_string(),
    };
    Ok(VmEgress {
        egress,
        decisions,
        net,
        guest,
    })
}

/// What the guest is told: the resolver, the proxy's variables pointing at
/// the gateway (the VM's 127.0.0.1 is its own), and with secrets (only
/// where the proxy intercepts, `ca` present) their placeholders and the
/// CA bundle, as the native jail's `egress_env`.
fn guest_network(
    link: &VmLink,
    spec: &SandboxSpec,
    ca: Option<&str>,
    host_roots: &str,
) -> MicroVmNetwork {
    let proxy = link.proxy_url();
    let mut egress_env: Vec<(String, String)> = PROXY_ENV
        .iter()
        .map(|(k, v)| {
            let v = if *v == PROXY_URL { proxy.as_str() } else { v };
            ((*k).to_owned(), v.to_owned())
        })
        .collect();
    let (secrets, ca_bundle) = match ca {
        Some(ca) => {
            egress_env.extend(
                spec.secrets
                    .iter()
                    .map(|s| (s.name.clone(), s.placeholder())),
            );
            egress_env.extend(
                paddock_jail::CA_BUNDLE_VARS
                    .iter()
                    .map(|var| ((*var).to_owned(), paddock_jail::CA_BUNDLE_PATH.to_owned())),
            );
            (
                spec.secrets.iter().map(|s| s.notice()).collect(),
                Some(format!("{host_roots}\n{ca}")),
            )
        }
        None => (Vec::new(), None),
    };
    MicroVmNetwork {
        resolver: link.gateway,
        egress_env,
        secrets,
        ca_bundle,
    }
}

/// Spawns `command` with the network namespace at `netns` (from a thread of
/// its own that joins it and ends: a thread of the runtime's pool must
/// never change namespace); the child's other namespaces are the host's.
pub(super) async fn spawn_in(netns: PathBuf, mut command: Command) -> std::io::Result<Child> {
    let runtime = tokio::runtime::Handle::current();
    let joined = tokio::task::spawn_blocking(move || {
        std::thread::spawn(move || -> std::io::Result<Child> {
            let _entered = runtime.enter();
            let ns = std::fs::File::open(&netns)?;
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)?;
            command.spawn()
        })
        .join()
    })
    .await;
    match joined {
        Ok(Ok(spawned)) => spawned,
        Ok(Err(_)) | Err(_) => Err(std::io::Error::other("the spawning thread panicked")),
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::sandbox::SandboxPolicy;
    use paddock_egress::tap::{TAP_GATEWAY, TAP_NAME, TAP_PREFIX, VM_ADDRESS};
    use paddock_proto::{NetworkPolicy, SecretSpec};

    use super::*;

    fn link() -> VmLink {
        VmLink {
            tap: TAP_NAME,
            address: VM_ADDRESS,
            gateway: TAP_GATEWAY,
            prefix: TAP_PREFIX,
        }
    }

    fn spec(secrets: Vec<SecretSpec>) -> SandboxSpec {
        let mut spec = SandboxSpec::with_policy(SandboxPolicy {
            network: NetworkPolicy::Full,
            ..SandboxPolicy::default()
        });
        spec.secrets = secrets;
        spec
    }

    #[test]
    fn the_proxy_variables_point_at_the_gateway_never_at_the_vms_loopback() {
        let net = guest_network(&link(), &spec(Vec::new()), None, "");
        assert_eq!(net.resolver, TAP_GATEWAY);
        let https = net
            .egress_env
            .iter()
            .find(|(k, _)| k == "HTTPS_PROXY")
            .map(|(_, v)| v.as_str());
        assert_eq!(https, Some("http://100.127.255.253:3128"));
        assert!(
            net.egress_env
                .iter()
                .all(|(k, v)| !v.contains("127.0.0.1:3128") && k != "SSL_CERT_FILE"),
            "{:?}",
            net.egress_env
        );
        assert_eq!(net.egress_env.len(), PROXY_ENV.len());
        assert_eq!((net.secrets.len(), net.ca_bundle), (0, None));
    }

    #[test]
    fn secrets_bring_placeholders_and_a_bundle_of_the_hosts_roots_and_the_ca() {
        let secret = SecretSpec::new(
            "API_KEY",
            paddock_proto::SecretValue::new("sk-real"),
            &["api.test"],
            None,
        )
        .unwrap();
        let net = guest_network(&link(), &spec(vec![secret.clone()]), Some("CA"), "ROOTS");
        assert_eq!(net.ca_bundle.as_deref(), Some("ROOTS\nCA"));
        assert!(
            net.egress_env
                .contains(&("API_KEY".to_owned(), secret.placeholder()))
        );
        assert!(!net.egress_env.iter().any(|(_, v)| v.contains("sk-real")));
        assert!(
            net.egress_env
                .iter()
                .any(|(k, v)| k == "SSL_CERT_FILE" && v == paddock_jail::CA_BUNDLE_PATH)
        );
        assert_eq!(net.secrets, vec![secret.notice()]);
    }
}
