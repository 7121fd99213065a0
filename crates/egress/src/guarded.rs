//! What the address guard refuses: one table, a reason per row, read by
//! the proxy's guard ([`crate::guard::refusal`]) and written as the `full`
//! NAT's packet filter rules ([`crate::nat`], its IPv4 rows; the sandbox
//! has no IPv6 there). Every range of IANA's IPv4 and IPv6 special-purpose
//! address registries is here, plus multicast and deprecated site-local,
//! whether the registry calls it globally reachable or not: a sandbox has
//! no business with any of them. IPv4-mapped (`::ffff:0:0/96`) and NAT64
//! (`64:ff9b::/96`) addresses are judged by the IPv4 address they carry.
//! The host's own addresses and the networks it is directly connected to
//! are read from its interfaces ([`crate::guard::HostNetworks`]).
//! docs/security.md lists every row (a test checks it).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4 or IPv6 network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpNet {
    V4(Ipv4Addr, u8),
    V6(Ipv6Addr, u8),
}

impl IpNet {
    /// The network of `ip` with `prefix` (host bits cleared).
    pub fn of(ip: IpAddr, prefix: u8) -> Self {
        match ip {
            IpAddr::V4(v4) => {
                let prefix = prefix.min(32);
                Self::V4(Ipv4Addr::from(u32::from(v4) & mask_v4(prefix)), prefix)
            }
            IpAddr::V6(v6) => {
                let prefix = prefix.min(128);
                Self::V6(Ipv6Addr::from(u128::from(v6) & mask_v6(prefix)), prefix)
            }
        }
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Self::V4(net, prefix), IpAddr::V4(ip)) => {
                u32::from(ip) & mask_v4(*prefix) == u32::from(*net)
            }
            (Self::V6(net, prefix), IpAddr::V6(ip)) => {
                u128::from(ip) & mask_v6(*prefix) == u128::from(*net)
            }
            _ => false,
        }
    }

    pub fn prefix(&self) -> u8 {
        match self {
            Self::V4(_, p) | Self::V6(_, p) => *p,
        }
    }

    /// The first and the last address of the network.
    pub fn bounds(&self) -> (IpAddr, IpAddr) {
        match self {
            Self::V4(net, p) => (
                IpAddr::V4(*net),
                IpAddr::V4(Ipv4Addr::from(u32::from(*net) | !mask_v4(*p))),
            ),
            Self::V6(net, p) => (
                IpAddr::V6(*net),
                IpAddr::V6(Ipv6Addr::from(u128::from(*net) | !mask_v6(*p))),
            ),
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(net, p) => write!(f, "{net}/{p}"),
            Self::V6(net, p) => write!(f, "{net}/{p}"),
        }
    }
}

fn mask_v4(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask_v6(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

/// One refused range and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guarded {
    pub net: IpNet,
    /// What the range is, shown in a refusal (`X is <reason>`).
    pub reason: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, reason: &'static str) -> Guarded {
    Guarded {
        net: IpNet::V4(Ipv4Addr::new(a, b, c, d), prefix),
        reason,
    }
}

const fn v6(s: [u16; 8], prefix: u8, reason: &'static str) -> Guarded {
    Guarded {
        net: IpNet::V6(
            Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]),
            prefix,
        ),
        reason,
    }
}

/// The cloud metadata service (AWS, GCP, Azure, OpenStack).
pub const METADATA_ADDRESS: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);

/// Every range the guard refuses, the first matching row naming the
/// reason (so the metadata address comes before link-local).
pub const GUARDED: &[Guarded] = &[
    v4(
        0,
        0,
        0,
        0,
        8,
        "\"this network\" (RFC 791), the unspecified address 0.0.0.0 in it",
    ),
    v4(
        10,
        0,
        0,
        0,
        8,
        "private (RFC 1918), other sandboxes' NAT pool in it",
    ),
    v4(
        100,
        64,
        0,
        0,
        10,
        "shared address space, carrier-grade NAT (RFC 6598)",
    ),
    v4(127, 0, 0, 0, 8, "loopback (RFC 1122)"),
    v4(169, 254, 169, 254, 32, "the cloud metadata address"),
    v4(169, 254, 0, 0, 16, "link-local (RFC 3927)"),
    v4(
        172,
        16,
        0,
        0,
        12,
        "private (RFC 1918), Docker's networks in it",
    ),
    v4(
        192,
        0,
        0,
        0,
        24,
        "IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, PCP and TURN anycast",
    ),
    v4(192, 0, 2, 0, 24, "documentation, TEST-NET-1 (RFC 5737)"),
    v4(192, 31, 196, 0, 24, "AS112 service (RFC 7535)"),
    v4(192, 52, 193, 0, 24, "AMT relays (RFC 7450)"),
    v4(
        192,
        88,
        99,
        0,
        24,
        "deprecated 6to4 relay anycast (RFC 7526)",
    ),
    v4(192, 168, 0, 0, 16, "private (RFC 1918)"),
    v4(192, 175, 48, 0, 24, "AS112 direct delegation (RFC 7534)"),
    v4(
        198,
        18,
        0,
        0,
        15,
        "benchmarking (RFC 2544), the allowlist's stand-in addresses in it",
    ),
    v4(198, 51, 100, 0, 24, "documentation, TEST-NET-2 (RFC 5737)"),
    v4(203, 0, 113, 0, 24, "documentation, TEST-NET-3 (RFC 5737)"),
    v4(224, 0, 0, 0, 4, "multicast (RFC 5771)"),
    v4(
        240,
        0,
        0,
        0,
        4,
        "reserved (RFC 1112), the limited broadcast address 255.255.255.255 in it",
    ),
    v6(
        [0, 0, 0, 0, 0, 0, 0, 0],
        128,
        "the unspecified address (RFC 4291)",
    ),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback (RFC 4291)"),
    v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        "local-use IPv4/IPv6 translation (RFC 8215)",
    ),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only (RFC 6666)"),
    v6(
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        "the dummy IPv6 prefix (RFC 9780)",
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF protocol assignments (RFC 2928): Teredo, PCP and AMT anycast, benchmarking, AS112, ORCHID",
    ),
    v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "documentation (RFC 3849)",
    ),
    v6(
        [0x2002, 0, 0, 0, 0, 0, 0, 0],
        16,
        "6to4 (RFC 3056), which carries any IPv4 address",
    ),
    v6(
        [0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0],
        48,
        "AS112 direct delegation (RFC 7534)",
    ),
    v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "documentation (RFC 9637)",
    ),
    v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "segment routing SIDs (RFC 9602)",
    ),
    v6(
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        "unique local, private (RFC 4193)",
    ),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local (RFC 4291)"),
    v6(
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        "deprecated site-local (RFC 3879)",
    ),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast (RFC 4291)"),
];

/// The first row of [`GUARDED`] holding `ip` (as given: the caller maps
/// IPv4-mapped and NAT64 forms first).
pub fn guarded(ip: IpAddr) -> Option<&'static Guarded> {
    GUARDED.iter().find(|g| g.net.contains(ip))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_row_is_a_network_with_a_reason() {
        for g in GUARDED {
            assert_eq!(
                IpNet::of(g.net.bounds().0, g.net.prefix()),
                g.net,
                "{}",
                g.net
            );
            assert!(
                !g.reason.is_empty() && !g.reason.contains('\n'),
                "{}",
                g.net
            );
        }
        let mut seen: Vec<String> = GUARDED.iter().map(|g| g.net.to_string()).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), GUARDED.len(), "a row is given twice");
    }

    #[test]
    fn iana_special_purpose_ranges_are_all_refused_at_both_ends() {
        // IANA's IPv4 and IPv6 special-purpose registries (2025), those
        // judged as IPv4 left out; each must be inside a row.
        for range in [
            "0.0.0.0/8",
            "0.0.0.0/32",
            "10.0.0.0/8",
            "100.64.0.0/10",
            "127.0.0.0/8",
            "169.254.0.0/16",
            "172.16.0.0/12",
            "192.0.0.0/24",
            "192.0.0.0/29",
            "192.0.0.8/32",
            "192.0.0.9/32",
            "192.0.0.10/32",
            "192.0.0.170/32",
            "192.0.0.171/32",
            "192.0.2.0/24",
            "192.31.196.0/24",
            "192.52.193.0/24",
            "192.88.99.0/24",
            "192.88.99.2/32",
            "192.168.0.0/16",
            "192.175.48.0/24",
            "198.18.0.0/15",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "240.0.0.0/4",
            "255.255.255.255/32",
            "224.0.0.0/4",
            "::1/128",
            "::/128",
            "64:ff9b:1::/48",
            "100::/64",
            "100:0:0:1::/64",
            "2001::/23",
            "2001::/32",
            "2001:1::1/128",
            "2001:1::2/128",
            "2001:1::3/128",
            "2001:2::/48",
            "2001:3::/32",
            "2001:4:112::/48",
            "2001:10::/28",
            "2001:20::/28",
            "2001:30::/28",
            "2001:db8::/32",
            "2002::/16",
            "2620:4f:8000::/48",
            "3fff::/20",
            "5f00::/16",
            "fc00::/7",
            "fe80::/10",
            "ff00::/8",
        ] {
            let (ip, prefix) = range.split_once('/').unwrap();
            let net = IpNet::of(ip.parse().unwrap(), prefix.parse().unwrap());
            let (first, last) = net.bounds();
            assert!(guarded(first).is_some(), "{first} of {range}");
            assert!(guarded(last).is_some(), "{last} of {range}");
        }
    }

    #[test]
    fn public_addresses_pass_and_the_metadata_address_is_named() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "192.0.3.1",
            "198.51.99.255",
            "2606:4700::1111",
        ] {
            assert_eq!(guarded(ip.parse().unwrap()), None, "{ip}");
        }
        assert_eq!(
            guarded(IpAddr::V4(METADATA_ADDRESS)).unwrap().reason,
            "the cloud metadata address"
        );
    }
}
