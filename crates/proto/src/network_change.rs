//! Which network changes a running sandbox can take. Only the destinations
//! of an allowlist change live: the proxy reads its policy for every new
//! connection and cuts those the new list no longer allows. `none` has no
//! namespace the proxy serves (its sandbox has no way out to open), and
//! `full` is routed with NAT and host filter rules made at start, not
//! through the allowlist; a change to or from either would need a
//! namespace (or rules) the sandbox does not have, so it is refused.

use crate::NetworkPolicy;

/// Why a running sandbox's network cannot become another.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("network {from} cannot become {to} while the sandbox runs: {why}")]
pub struct NetworkChangeRefused {
    pub from: String,
    pub to: String,
    pub why: &'static str,
}

impl NetworkPolicy {
    /// Whether a running sandbox with this network can switch to `to`
    /// (the rule is in the module doc).
    pub fn change_to(&self, to: &NetworkPolicy) -> Result<(), NetworkChangeRefused> {
        let why = match (self, to) {
            (NetworkPolicy::Allowlist(_), NetworkPolicy::Allowlist(_)) => return Ok(()),
            (NetworkPolicy::None, _) => {
                "a sandbox made with network none has no egress namespace or proxy to change; make a new sandbox with the network it needs"
            }
            (NetworkPolicy::Full, _) => {
                "network full is routed by NAT rules made at start, not by an allowlist; make a new sandbox with an allowlist"
            }
            (NetworkPolicy::Allowlist(_), NetworkPolicy::None) => {
                "a running sandbox keeps the namespace its allowlist was made with; list the destinations it still needs, or destroy it"
            }
            (NetworkPolicy::Allowlist(_), NetworkPolicy::Full) => {
                "network full needs NAT rules made at start; make a new sandbox with network full"
            }
        };
        Err(NetworkChangeRefused {
            from: self.label(),
            to: to.label(),
            why,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn allow(hosts: &str) -> NetworkPolicy {
        format!("allow:{hosts}").parse().unwrap()
    }

    #[test]
    fn only_an_allowlist_becomes_another_allowlist() {
        assert_eq!(allow("a.test").change_to(&allow("b.test")), Ok(()));
        for (from, to) in [
            (NetworkPolicy::None, allow("a.test")),
            (NetworkPolicy::None, NetworkPolicy::Full),
            (NetworkPolicy::Full, allow("a.test")),
            (NetworkPolicy::Full, NetworkPolicy::Full),
            (allow("a.test"), NetworkPolicy::None),
            (allow("a.test"), NetworkPolicy::Full),
        ] {
            let refused = from.change_to(&to).unwrap_err();
            assert_eq!((refused.from, refused.to), (from.label(), to.label()));
        }
    }
}
