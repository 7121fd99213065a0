//! `full`: a routed, NATed way out of the sandbox's namespace with the
//! address guard as packet filter rules on the host, where the sandbox
//! (root only in its own user namespace) cannot reach them.
//!
//! Per sandbox: a veth pair, `pdk<tag>` on the host and `egress0` inside
//! (the tag a hash of the sandbox id, so the name fits IFNAMSIZ), a /30 of
//! the operator's pool ([`NatPool`]: host end .1, sandbox .2), a filter
//! chain `PDK-<tag>` for what comes in from that veth (only the sandbox's
//! own source address, the guard's ranges refused with a TCP reset or an
//! ICMP error, the rest accepted) and a masquerade rule for its address.
//! Shared by all (made with the first, removed with the last): `PADDOCK-FWD` (jumped to from FORWARD
//! for `pdk+` only: Docker's FORWARD policy and its rules for other
//! interfaces stay as they are), `PADDOCK-IN` (from INPUT: nothing from a
//! sandbox reaches a host service or a host address), `PADDOCK-REJECT`
//! and the nat chain `PADDOCK-NAT` (from POSTROUTING).
//!
//! Each refusal of the guard is logged to the sandbox's NFLOG group first
//! (its chain, and a rule of its own in `PADDOCK-IN`), which
//! `nat/log/` reads as a denied decision.
//!
//! The per-sandbox rules carry the comment `paddock-nat OWNER SANDBOX`, so
//! that [`reap`] finds what a killed server left behind, and only its own.
//! Every change to the host's rules and addresses is made under one file
//! lock, so servers on one host never pick the same /30.
//!
//! The pool is `pool.rs`, the names of a sandbox's things `names.rs`, the
//! host lock `lock.rs`, the rules `rules.rs`, the veth and routes
//! `link.rs`, crash reaping `reap.rs`, and the decisions read back from
//! netlink `log/`.

mod link;
mod lock;
pub(crate) mod log;
mod names;
mod pool;
mod reap;
mod rules;

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};

use crate::EgressError;
use crate::guarded::IpNet;
use crate::netns::Netns;

use link::remove_veth;
use lock::HostLock;
pub(crate) use names::seed;
pub use names::{SANDBOX_VETH, VETH_PREFIX, host_chain_name, host_veth_name};
use names::{chain_of, comment_of, tag, veth_of};
pub use pool::{DEFAULT_POOL, InvalidNatPool, NatPool};
use reap::remove_sandbox;
pub use reap::{leftovers, reap};
use rules::{
    FWD_CHAIN, IN_CHAIN, NAT_CHAIN, PacketGuard, host_log_rule, refused_v4,
    remove_shared_if_unused, restore, sandbox_rules, shared_chains_missing,
};

/// The host side of one `full` sandbox's way out; [`Nat::detach`] removes it.
#[derive(Debug)]
pub struct Nat {
    sandbox_id: String,
    owner: String,
    /// The sandbox's own address (the only source let out).
    pub sandbox_address: Ipv4Addr,
    /// The host end's address (the sandbox's gateway).
    pub gateway: Ipv4Addr,
    /// The NFLOG group its refused packets are logged to.
    nflog_group: u16,
    detached: bool,
}

impl Nat {
    /// Routes `netns` out through the host: pair, addresses, rules,
    /// forwarding. On any failure what was made is removed again.
    pub async fn attach(
        netns: &Netns,
        sandbox_id: &str,
        owner: &str,
        pool: &NatPool,
        allowed_private: &[IpAddr],
        nflog_group: u16,
    ) -> Result<Self, EgressError> {
        pool.check_against_host().await?;
        let lock = HostLock::take().await?;
        let host = crate::guard::read_host();
        let used: BTreeSet<Ipv4Addr> = host
            .addresses
            .iter()
            .copied()
            .filter_map(|ip| match ip {
                IpAddr::V4(v4) if pool.contains(v4) => Some(v4),
                _ => None,
            })
            .collect();
        let slots = pool.slots();
        let start = u32::from_str_radix(&tag(sandbox_id)[..8], 16).unwrap_or(0) % slots;
        let slot = (0..slots)
            .map(|i| (start + i) % slots)
            .find(|i| !used.contains(&pool.pair(*i).0))
            .ok_or_else(|| EgressError::NatPoolFull {
                pool: pool.to_string(),
            })?;
        let (gateway, sandbox_address) = pool.pair(slot);
        let nat = Nat {
            sandbox_id: sandbox_id.to_owned(),
            owner: owner.to_owned(),
            sandbox_address,
            gateway,
            nflog_group,
            detached: false,
        };
        let refused = refused_v4(&host);
        if let Err(e) = nat
            .install(netns, allowed_private, &refused, nflog_group)
            .await
        {
            nat.remove_locked().await;
            drop(lock);
            return Err(e);
        }
        drop(lock);
        tracing::debug!(sandbox_id, address = %sandbox_address, veth = %veth_of(sandbox_id), "full egress routed through NAT");
        Ok(nat)
    }

    async fn install(
        &self,
        netns: &Netns,
        allowed_private: &[IpAddr],
        refused: &[IpNet],
        nflog_group: u16,
    ) -> Result<(), EgressError> {
        let id = self.sandbox_id.as_str();
        let veth = veth_of(id);
        // One transaction: the shared chains when missing, then this
        // sandbox's chain and its tagged jump and masquerade (a crash after
        // it leaves rules that reap() finds by their comment).
        let mut filter = String::new();
        let mut nat = String::new();
        shared_chains_missing(&mut filter, &mut nat).await?;
        sandbox_rules(
            &mut filter,
            &mut nat,
            &self.owner,
            id,
            self.sandbox_address,
            PacketGuard {
                allowed_private,
                refused,
            },
            nflog_group,
        );
        restore(&filter, &nat).await?;
        link::route_out(netns, &veth, self.gateway, self.sandbox_address).await
    }

    /// Removes the sandbox's rules, chain and veth.
    pub async fn detach(mut self) {
        self.detached = true;
        match HostLock::take().await {
            Ok(lock) => {
                self.remove_locked().await;
                drop(lock);
            }
            Err(e) => {
                tracing::warn!(sandbox_id = %self.sandbox_id, error = %paddock_proto::error_chain(&e), "removing the NAT rules without the host lock");
                self.remove_locked().await;
            }
        }
    }

    async fn remove_locked(&self) {
        // One transaction for what install made; when it fails (a step of
        // install never ran) each rule found by its tag goes on its own.
        let id = self.sandbox_id.as_str();
        let (veth, chain) = (veth_of(id), chain_of(id));
        let comment = comment_of(&self.owner, id);
        let address = self.sandbox_address;
        let filter = format!(
            "-D {FWD_CHAIN} -i {veth} -m comment --comment \"{comment}\" -j {chain}\n\
             -D {IN_CHAIN} {}\n\
             -F {chain}\n-X {chain}\n",
            host_log_rule(&veth, &comment, self.nflog_group)
        );
        let nat = format!(
            "-D {NAT_CHAIN} -s {address}/32 -m comment --comment \"{comment}\" -j MASQUERADE\n"
        );
        if restore(&filter, &nat).await.is_err() {
            remove_sandbox(&self.owner, id).await;
        } else {
            remove_veth(id).await;
        }
        remove_shared_if_unused().await;
    }
}

impl Drop for Nat {
    fn drop(&mut self) {
        if !self.detached {
            tracing::warn!(sandbox_id = %self.sandbox_id, "NAT of a full sandbox dropped without detach: the next start's reconciliation removes it");
        }
    }
}
