//! The address guard: after the proxy resolved a name itself, every address
//! it would connect to is checked here, so neither a listed name nor a DNS
//! answer that changes between look-ups (rebinding) reaches the host, its
//! private networks or the cloud metadata service.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The cloud metadata service (AWS, GCP, Azure, OpenStack).
pub const METADATA_ADDRESS: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);

/// Why an address is refused, or None when it may be connected to.
/// `host_addresses` are the host's own; `allowed_private` the private
/// addresses the operator named explicitly (an internal registry).
pub fn refusal(
    ip: IpAddr,
    host_addresses: &[IpAddr],
    allowed_private: &[IpAddr],
) -> Option<&'static str> {
    let ip = canonical(ip);
    if allowed_private.contains(&ip) {
        return None;
    }
    let range = match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    };
    range.or_else(|| {
        host_addresses
            .contains(&ip)
            .then_some("an address of the host itself")
    })
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

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip == METADATA_ADDRESS {
        Some("the cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some("a private address")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking address (the sandbox's own name mapping)")
    } else {
        None
    }
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if first & 0xffc0 == 0xfe80 || first & 0xffc0 == 0xfec0 {
        Some("a link-local address")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a private address")
    } else if ip.is_multicast() {
        Some("a multicast, broadcast or reserved address")
    } else {
        None
    }
}

/// The host's own addresses, read from its interfaces at most once a second
/// (an address added later is seen within that time).
#[derive(Debug, Default)]
pub struct HostAddresses {
    cached: Mutex<Option<(Instant, Vec<IpAddr>)>>,
}

const REFRESH: Duration = Duration::from_secs(1);

impl HostAddresses {
    pub fn current(&self) -> Vec<IpAddr> {
        let Ok(mut cached) = self.cached.lock() else {
            return read_host_addresses();
        };
        if let Some((at, list)) = cached.as_ref()
            && at.elapsed() < REFRESH
        {
            return list.clone();
        }
        let list = read_host_addresses();
        *cached = Some((Instant::now(), list.clone()));
        list
    }
}

fn read_host_addresses() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    addrs
        .filter_map(|a| a.address)
        .filter_map(|a| {
            a.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn refuses_every_non_public_range() {
        for (addr, why) in [
            ("127.0.0.1", "a loopback address"),
            ("127.8.9.10", "a loopback address"),
            ("169.254.169.254", "the cloud metadata address"),
            ("169.254.1.1", "a link-local address"),
            ("10.0.0.5", "a private address"),
            ("172.16.3.4", "a private address"),
            ("192.168.1.1", "a private address"),
            ("100.64.0.1", "a private address"),
            ("0.0.0.0", "an unspecified address"),
            ("224.0.0.1", "a multicast, broadcast or reserved address"),
            (
                "255.255.255.255",
                "a multicast, broadcast or reserved address",
            ),
            (
                "198.18.0.7",
                "a benchmarking address (the sandbox's own name mapping)",
            ),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:169.254.169.254", "the cloud metadata address"),
            ("64:ff9b::a00:5", "a private address"),
            ("fe80::1", "a link-local address"),
            ("fd00::1", "a private address"),
            ("::", "an unspecified address"),
        ] {
            assert_eq!(refusal(ip(addr), &[], &[]), Some(why), "{addr}");
        }
    }

    #[test]
    fn public_and_documentation_addresses_pass() {
        for addr in [
            "198.51.100.10",
            "203.0.113.5",
            "93.184.216.34",
            "2001:db8::1",
        ] {
            assert_eq!(refusal(ip(addr), &[], &[]), None, "{addr}");
        }
    }

    #[test]
    fn the_hosts_own_addresses_are_refused_and_operator_private_ones_pass() {
        let host = [ip("203.0.113.1")];
        assert_eq!(
            refusal(ip("203.0.113.1"), &host, &[]),
            Some("an address of the host itself")
        );
        assert_eq!(refusal(ip("10.1.2.3"), &host, &[ip("10.1.2.3")]), None);
        assert_eq!(
            refusal(ip("10.1.2.4"), &host, &[ip("10.1.2.3")]),
            Some("a private address")
        );
    }

    #[test]
    fn host_addresses_include_loopback() {
        assert!(
            HostAddresses::default()
                .current()
                .contains(&ip("127.0.0.1"))
        );
    }
}
