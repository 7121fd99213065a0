//! The address guard: after the proxy resolved a name itself, every address
//! it would connect to is checked here, so neither a listed name nor a DNS
//! answer that changes between look-ups (rebinding) reaches the host, the
//! networks it is directly connected to, a special-purpose range
//! ([`crate::guarded::GUARDED`]) or the cloud metadata service.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::guarded::guarded;
pub use crate::guarded::{GUARDED, Guarded, IpNet, METADATA_ADDRESS};

/// The reason of an address of the host's own interfaces.
pub const HOST_ADDRESS: &str = "an address of the host itself";
/// The reason of an address on a network the host is directly connected to.
pub const HOST_NETWORK: &str = "on a network the host is directly connected to";

/// The host's own addresses and the networks its interfaces are on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostView {
    pub addresses: Vec<IpAddr>,
    pub networks: Vec<IpNet>,
}

/// Why an address is refused, or None when it may be connected to.
/// `host` is what the host's interfaces hold; `allowed_private` the
/// addresses the operator named explicitly (an internal registry).
pub fn refusal(ip: IpAddr, host: &HostView, allowed_private: &[IpAddr]) -> Option<&'static str> {
    let ip = canonical(ip);
    if allowed_private.iter().any(|a| canonical(*a) == ip) {
        return None;
    }
    if let Some(row) = guarded(ip) {
        return Some(row.reason);
    }
    if host.addresses.iter().any(|a| canonical(*a) == ip) {
        return Some(HOST_ADDRESS);
    }
    host.networks
        .iter()
        .any(|n| n.contains(ip))
        .then_some(HOST_NETWORK)
}

/// An IPv4-mapped or NAT64 IPv6 address is judged as the IPv4 one it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b, c, d] = v6.octets()[12..] else {
                    return ip;
                };
                return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
            }
            ip
        }
        v4 => v4,
    }
}

/// The host's addresses and networks, read from its interfaces at most
/// once a second (an address or network added later is seen within that
/// time).
#[derive(Debug, Default)]
pub struct HostNetworks {
    cached: Mutex<Option<(Instant, HostView)>>,
}

const REFRESH: Duration = Duration::from_secs(1);

impl HostNetworks {
    pub fn current(&self) -> HostView {
        let Ok(mut cached) = self.cached.lock() else {
            return read_host();
        };
        if let Some((at, view)) = cached.as_ref()
            && at.elapsed() < REFRESH
        {
            return view.clone();
        }
        let view = read_host();
        *cached = Some((Instant::now(), view.clone()));
        view
    }
}

/// The addresses of the host's interfaces and the networks they are on
/// (address and netmask: the subnets the host is directly connected to).
pub fn read_host() -> HostView {
    let mut view = HostView::default();
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return view;
    };
    for a in addrs {
        let Some(address) = a.address else { continue };
        let (ip, prefix) = if let Some(v4) = address.as_sockaddr_in() {
            let mask = a
                .netmask
                .and_then(|m| m.as_sockaddr_in().map(|m| u32::from(m.ip()).leading_ones()));
            (IpAddr::V4(v4.ip()), mask.unwrap_or(32))
        } else if let Some(v6) = address.as_sockaddr_in6() {
            let mask = a.netmask.and_then(|m| {
                m.as_sockaddr_in6()
                    .map(|m| u128::from(m.ip()).leading_ones())
            });
            (IpAddr::V6(v6.ip()), mask.unwrap_or(128))
        } else {
            continue;
        };
        view.addresses.push(ip);
        let net = IpNet::of(ip, u8::try_from(prefix).unwrap_or(128));
        if !view.networks.contains(&net) {
            view.networks.push(net);
        }
    }
    view
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn none() -> HostView {
        HostView::default()
    }

    #[test]
    fn refuses_every_special_range_in_every_form() {
        for (addr, why) in [
            ("127.0.0.1", "loopback (RFC 1122)"),
            ("169.254.169.254", "the cloud metadata address"),
            ("169.254.1.1", "link-local (RFC 3927)"),
            (
                "10.0.0.5",
                "private (RFC 1918), other sandboxes' NAT pool in it",
            ),
            (
                "192.0.0.9",
                "IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, PCP and TURN anycast",
            ),
            ("192.0.2.2", "documentation, TEST-NET-1 (RFC 5737)"),
            ("203.0.113.5", "documentation, TEST-NET-3 (RFC 5737)"),
            ("::ffff:127.0.0.1", "loopback (RFC 1122)"),
            ("::ffff:169.254.169.254", "the cloud metadata address"),
            (
                "64:ff9b::a00:5",
                "private (RFC 1918), other sandboxes' NAT pool in it",
            ),
            ("fe80::1", "link-local (RFC 4291)"),
            ("fd00::1", "unique local, private (RFC 4193)"),
            ("2001:db8::1", "documentation (RFC 3849)"),
            ("::", "the unspecified address (RFC 4291)"),
        ] {
            assert_eq!(refusal(ip(addr), &none(), &[]), Some(why), "{addr}");
        }
    }

    #[test]
    fn the_hosts_addresses_and_networks_are_refused_and_operator_ones_pass() {
        let host = HostView {
            addresses: vec![ip("8.8.4.1")],
            networks: vec![IpNet::of(ip("8.8.4.1"), 24), IpNet::of(ip("2606:1::1"), 64)],
        };
        assert_eq!(refusal(ip("8.8.4.1"), &host, &[]), Some(HOST_ADDRESS));
        assert_eq!(refusal(ip("8.8.4.200"), &host, &[]), Some(HOST_NETWORK));
        assert_eq!(
            refusal(ip("::ffff:8.8.4.9"), &host, &[]),
            Some(HOST_NETWORK)
        );
        assert_eq!(refusal(ip("2606:1::99"), &host, &[]), Some(HOST_NETWORK));
        assert_eq!(refusal(ip("8.8.5.1"), &host, &[]), None);
        assert_eq!(refusal(ip("8.8.4.7"), &host, &[ip("8.8.4.7")]), None);
        assert_eq!(refusal(ip("10.1.2.3"), &host, &[ip("10.1.2.3")]), None);
        assert_eq!(
            refusal(ip("10.1.2.4"), &host, &[ip("10.1.2.3")]),
            Some("private (RFC 1918), other sandboxes' NAT pool in it")
        );
    }

    #[test]
    fn the_host_view_holds_loopback_and_each_interfaces_network() {
        let view = HostNetworks::default().current();
        assert!(view.addresses.contains(&ip("127.0.0.1")));
        assert!(view.networks.contains(&IpNet::of(ip("127.0.0.1"), 8)));
        // every address is on one of the networks read
        for a in &view.addresses {
            assert!(view.networks.iter().any(|n| n.contains(*a)), "{a}");
        }
    }
}
