//! A microVM's way into its sandbox's namespace: a tap device inside it,
//! which QEMU (started in that namespace) backs the VM's virtio-net with.
//! The tap plays the part the veth's inner end plays for a native sandbox,
//! but the VM's packets *arrive* on it: they are redirected in PREROUTING
//! (not OUTPUT) to the proxy's listeners on 127.0.0.1 (DNAT, with
//! `route_localnet` on the tap only), and with `full` forwarded out
//! `egress0` under the namespace's own address, so the host's NAT and
//! guard rules hold for them unchanged.

use std::net::Ipv4Addr;

use crate::netns::{PROXY_PORT, run};
use crate::{Egress, EgressError};

/// The tap's name inside the namespace.
pub const TAP_NAME: &str = "vmtap0";
/// The namespace's end of the tap: the VM's gateway, resolver and proxy.
pub const TAP_GATEWAY: Ipv4Addr = Ipv4Addr::new(100, 127, 255, 253);
/// The tap's hardware address, the same for every VM: a VM restored from a
/// saved state keeps the gateway's address in its ARP cache, and a new
/// random one would leave it unreachable until that entry went stale.
pub const TAP_MAC: &str = "02:70:64:00:00:01";
/// The VM's own address on its eth0.
pub const VM_ADDRESS: Ipv4Addr = Ipv4Addr::new(100, 127, 255, 254);
/// The tap's /30 (shared address space, refused by the guard, so no
/// proxied or routed connection can name the gateway).
pub const TAP_PREFIX: u8 = 30;

/// `allowlist`: what arrives from the VM; one reason per line in
/// docs/security.md ("The microVM's tap").
pub const TAP_IPTABLES_RULES: &str = "\
*nat
:PREROUTING ACCEPT [0:0]
-A PREROUTING -i vmtap0 -p udp --dport 53 -j DNAT --to-destination 127.0.0.1:53
-A PREROUTING -i vmtap0 -p tcp -d 100.127.255.253 --dport 3128 -j DNAT --to-destination 127.0.0.1:3128
-A PREROUTING -i vmtap0 -p tcp -j DNAT --to-destination 127.0.0.1:3129
COMMIT
*filter
:INPUT ACCEPT [0:0]
-A INPUT -i vmtap0 -m conntrack --ctstate DNAT -j ACCEPT
-A INPUT -i vmtap0 -j DROP
COMMIT
";

/// `full`: DNS and the explicit proxy as with `allowlist`, the rest
/// forwarded out `egress0` under the namespace's own address.
pub const TAP_FULL_IPTABLES_RULES: &str = "\
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
-A PREROUTING -i vmtap0 -p udp -d 100.127.255.253 --dport 53 -j DNAT --to-destination 127.0.0.1:53
-A PREROUTING -i vmtap0 -p tcp -d 100.127.255.253 --dport 3128 -j DNAT --to-destination 127.0.0.1:3128
-A POSTROUTING -s 100.127.255.254 -o egress0 -j MASQUERADE
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
-A INPUT -i vmtap0 -m conntrack --ctstate DNAT -j ACCEPT
-A INPUT -i vmtap0 -j DROP
-A FORWARD -i vmtap0 -o egress0 -s 100.127.255.254 -j ACCEPT
-A FORWARD -i egress0 -o vmtap0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
COMMIT
";

/// The VM's side of its tap, for its kernel command line and its spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmLink {
    pub tap: &'static str,
    pub address: Ipv4Addr,
    pub gateway: Ipv4Addr,
    pub prefix: u8,
}

impl VmLink {
    /// The explicit proxy as the VM reaches it (the gateway, not 127.0.0.1).
    pub fn proxy_url(&self) -> String {
        format!("http://{}:{PROXY_PORT}", self.gateway)
    }
}

impl Egress {
    /// Makes the tap in this egress's namespace, with its address, its
    /// sysctls and its rules. Removed with the namespace ([`Egress::stop`]).
    pub async fn attach_tap(&self) -> Result<VmLink, EgressError> {
        let netns = self.netns.as_ref().ok_or(EgressError::NoEgress)?;
        let n = netns.name();
        let routed = self.nat.is_some();
        let gateway = format!("{TAP_GATEWAY}/{TAP_PREFIX}");
        let conf = |key: &str| format!("net.ipv4.conf.{TAP_NAME}.{key}=1");
        let localnet = conf("route_localnet");
        let no_v6 = format!("net.ipv6.conf.{TAP_NAME}.disable_ipv6=1");
        let rules = if routed {
            TAP_FULL_IPTABLES_RULES
        } else {
            TAP_IPTABLES_RULES
        };
        let mut steps: Vec<(Vec<&str>, Option<&str>)> = vec![
            (
                vec!["-n", n, "tuntap", "add", "dev", TAP_NAME, "mode", "tap"],
                None,
            ),
            (
                vec!["-n", n, "link", "set", TAP_NAME, "address", TAP_MAC],
                None,
            ),
            (
                vec!["-n", n, "addr", "add", &gateway, "dev", TAP_NAME],
                None,
            ),
            (
                vec!["netns", "exec", n, "sysctl", "-qw", &localnet, &no_v6],
                None,
            ),
            (vec!["-n", n, "link", "set", TAP_NAME, "up"], None),
            (
                vec!["netns", "exec", n, "iptables-restore", "--noflush"],
                Some(rules),
            ),
        ];
        if routed {
            steps.push((
                vec!["netns", "exec", n, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
                None,
            ));
        }
        for (args, stdin) in steps {
            run("ip", &args, stdin).await?;
        }
        Ok(VmLink {
            tap: TAP_NAME,
            address: VM_ADDRESS,
            gateway: TAP_GATEWAY,
            prefix: TAP_PREFIX,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netns::TRANSPARENT_PORT;

    #[test]
    fn the_rules_name_the_tap_addresses_and_ports() {
        let gw = TAP_GATEWAY.to_string();
        for rules in [TAP_IPTABLES_RULES, TAP_FULL_IPTABLES_RULES] {
            assert!(rules.contains(&format!("-d {gw} --dport {PROXY_PORT} ")));
            assert!(rules.contains("--to-destination 127.0.0.1:53\n"));
            // every packet from the VM not redirected to a listener is dropped
            assert!(rules.contains(&format!("-A INPUT -i {TAP_NAME} -j DROP\n")));
            assert!(
                rules
                    .lines()
                    .filter(|l| l.starts_with("-A"))
                    .all(|l| l.contains(TAP_NAME) || l.contains(&VM_ADDRESS.to_string()))
            );
        }
        assert!(TAP_IPTABLES_RULES.contains(&format!(
            "-A PREROUTING -i {TAP_NAME} -p tcp -j DNAT --to-destination 127.0.0.1:{TRANSPARENT_PORT}\n"
        )));
        assert!(!TAP_FULL_IPTABLES_RULES.contains(&TRANSPARENT_PORT.to_string()));
        assert!(
            TAP_FULL_IPTABLES_RULES.contains(&format!("-s {VM_ADDRESS} -o egress0 -j MASQUERADE"))
        );
    }

    #[test]
    fn the_tap_is_refused_by_the_guard() {
        for ip in [TAP_GATEWAY, VM_ADDRESS] {
            assert!(
                crate::guarded::guarded(std::net::IpAddr::V4(ip)).is_some(),
                "{ip}"
            );
        }
    }

    #[test]
    fn the_vm_reaches_the_proxy_at_its_gateway() {
        let link = VmLink {
            tap: TAP_NAME,
            address: VM_ADDRESS,
            gateway: TAP_GATEWAY,
            prefix: TAP_PREFIX,
        };
        assert_eq!(link.proxy_url(), "http://100.127.255.253:3128");
    }
}
