//! The operator's pool of /30s for `full` sandboxes ([`NatPool`]): parsed
//! and checked (private, host bits clear), a sandbox's pair of addresses,
//! and the check that no route of the host overlaps it.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::VETH_PREFIX;
use crate::EgressError;
use crate::netns::run;

/// The pool `full` sandboxes take their /30 from when the operator names
/// none (16384 sandboxes; private, so never routed beyond this host).
pub const DEFAULT_POOL: &str = "10.217.0.0/16";

/// An IPv4 range whose /30s `full` sandboxes get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatPool {
    base: Ipv4Addr,
    prefix: u8,
}

impl Default for NatPool {
    fn default() -> Self {
        Self {
            base: Ipv4Addr::new(10, 217, 0, 0),
            prefix: 16,
        }
    }
}

impl fmt::Display for NatPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

/// Why a pool was not understood.
#[derive(Debug, thiserror::Error)]
#[error("invalid NAT pool {text:?}: {why} (want an IPv4 network such as {DEFAULT_POOL})")]
pub struct InvalidNatPool {
    text: String,
    why: &'static str,
}

pub(crate) fn parse_net(text: &str) -> Option<(Ipv4Addr, u8)> {
    let (ip, prefix) = text.split_once('/').unwrap_or((text, "32"));
    Some((ip.parse().ok()?, prefix.parse().ok().filter(|p| *p <= 32)?))
}

pub(crate) fn mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

impl FromStr for NatPool {
    type Err = InvalidNatPool;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why| InvalidNatPool {
            text: text.to_owned(),
            why,
        };
        let (base, prefix) = parse_net(text).ok_or_else(|| bad("not address/prefix"))?;
        if !(8..=30).contains(&prefix) {
            return Err(bad("the prefix must be between /8 and /30"));
        }
        if u32::from(base) & !mask(prefix) != 0 {
            return Err(bad("host bits are set"));
        }
        if !base.is_private() {
            return Err(bad(
                "not a private range (the guard refuses private destinations, so a sandbox cannot reach another)",
            ));
        }
        Ok(Self { base, prefix })
    }
}

impl Serialize for NatPool {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NatPool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl NatPool {
    pub(super) fn slots(&self) -> u32 {
        1 << (30 - u32::from(self.prefix))
    }

    /// The host's and the sandbox's address of slot `i`.
    pub(super) fn pair(&self, i: u32) -> (Ipv4Addr, Ipv4Addr) {
        let net = u32::from(self.base) + 4 * i;
        (Ipv4Addr::from(net + 1), Ipv4Addr::from(net + 2))
    }

    pub(super) fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask(self.prefix) == u32::from(self.base)
    }

    fn overlaps(&self, net: Ipv4Addr, prefix: u8) -> bool {
        let common = mask(self.prefix.min(prefix));
        u32::from(net) & common == u32::from(self.base) & common
    }

    /// Fails when a route of the host (other than a sandbox's own veth)
    /// overlaps the pool: the sandboxes' addresses would shadow it. Run at
    /// the server's start and before each `full` sandbox.
    pub async fn check_against_host(&self) -> Result<(), EgressError> {
        let routes = run("ip", &["-4", "route", "show", "table", "all"], None).await?;
        match colliding_route(self, &routes) {
            Some(route) => Err(EgressError::NatPoolCollides {
                pool: self.to_string(),
                route,
            }),
            None => Ok(()),
        }
    }
}

/// The first route in `ip -4 route` output that overlaps `pool` and is not
/// on a sandbox's veth.
fn colliding_route(pool: &NatPool, routes: &str) -> Option<String> {
    const TYPES: [&str; 9] = [
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "anycast",
        "blackhole",
        "unreachable",
        "prohibit",
        "throw",
    ];
    routes.lines().find_map(|line| {
        let mut words = line.split_whitespace().peekable();
        if words.peek().is_some_and(|w| TYPES.contains(w)) {
            words.next();
        }
        let dest = words.next()?;
        let (net, prefix) = parse_net(dest)?;
        let dev = line
            .split_whitespace()
            .skip_while(|w| *w != "dev")
            .nth(1)
            .unwrap_or("");
        (pool.overlaps(net, prefix) && !dev.starts_with(VETH_PREFIX) && !vanishing(line, dev))
            .then(|| line.trim().to_owned())
    })
}

/// A kernel link route on a device `ip` could no longer name (it prints
/// `if<index>`): an interface being moved into another namespace or
/// deleted, as a sandbox veth is while another `full` sandbox starts or
/// stops beside this one. Not a route of the host's to collide with.
fn vanishing(line: &str, dev: &str) -> bool {
    dev.strip_prefix("if")
        .is_some_and(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
        && line.contains(" proto kernel ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pools_parse_and_refuse_public_or_odd_ranges() {
        let pool: NatPool = DEFAULT_POOL.parse().unwrap();
        assert_eq!(pool, NatPool::default());
        assert_eq!(pool.slots(), 16384);
        assert_eq!(
            pool.pair(1),
            (Ipv4Addr::new(10, 217, 0, 5), Ipv4Addr::new(10, 217, 0, 6))
        );
        for bad in ["10.217.0.1/16", "8.8.0.0/16", "10.0.0.0/31", "nonsense"] {
            assert!(bad.parse::<NatPool>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_route_overlapping_the_pool_collides_unless_it_is_a_sandbox_veth() {
        let pool = NatPool::default();
        let routes = "default via 192.0.2.1 dev eth0\n\
                      10.217.0.4/30 dev pdk0123456789ab proto kernel scope link src 10.217.0.5\n\
                      local 10.217.0.5 dev pdk0123456789ab table local proto kernel\n\
                      172.17.0.0/16 dev docker0 proto kernel scope link\n";
        assert_eq!(colliding_route(&pool, routes), None);
        let clash = format!("{routes}10.0.0.0/8 dev wg0 scope link\n");
        assert_eq!(
            colliding_route(&pool, &clash).as_deref(),
            Some("10.0.0.0/8 dev wg0 scope link")
        );
        let inner = "10.217.3.0/24 via 192.0.2.9 dev eth0\n";
        assert!(colliding_route(&pool, inner).is_some());
        // Another sandbox's veth caught mid-move (CI saw this one), but an
        // operator's route on an interface named so still collides.
        let moving = "10.217.17.184/30 dev if1210 proto kernel scope link src 10.217.17.185\n";
        assert_eq!(colliding_route(&pool, moving), None);
        let named = "10.217.9.0/24 dev if1210 proto static\n";
        assert!(colliding_route(&pool, named).is_some());
    }
}
