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

pub(crate) mod log;

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::EgressError;
use crate::guard::GUARDED;
use crate::guarded::IpNet;
use crate::netns::{Netns, run};

/// The pool `full` sandboxes take their /30 from when the operator names
/// none (16384 sandboxes; private, so never routed beyond this host).
pub const DEFAULT_POOL: &str = "10.217.0.0/16";

/// Host-side interfaces of sandboxes start with this (`pdk+` in the rules).
pub const VETH_PREFIX: &str = "pdk";
/// The sandbox's end of the pair.
pub const SANDBOX_VETH: &str = "egress0";

const FWD_CHAIN: &str = "PADDOCK-FWD";
const IN_CHAIN: &str = "PADDOCK-IN";
const REJECT_CHAIN: &str = "PADDOCK-REJECT";
const NAT_CHAIN: &str = "PADDOCK-NAT";
const COMMENT: &str = "paddock-nat";
const LOCK_PATH: &str = "/run/paddock-nat.lock";
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

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
    fn slots(&self) -> u32 {
        1 << (30 - u32::from(self.prefix))
    }

    /// The host's and the sandbox's address of slot `i`.
    fn pair(&self, i: u32) -> (Ipv4Addr, Ipv4Addr) {
        let net = u32::from(self.base) + 4 * i;
        (Ipv4Addr::from(net + 1), Ipv4Addr::from(net + 2))
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
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

/// 12 hex digits of FNV-1a of the sandbox id: the veth's and the chain's
/// names (`pdk` + 12 = 15 characters, IFNAMSIZ's limit).
fn tag(sandbox_id: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sandbox_id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", hash & 0xffff_ffff_ffff)
}

/// A number of the sandbox id (where its search for a free NFLOG group starts).
pub(crate) fn seed(sandbox_id: &str) -> u32 {
    u32::from_str_radix(&tag(sandbox_id)[..8], 16).unwrap_or(0)
}

/// The host end's name of a `full` sandbox's veth.
pub fn host_veth_name(sandbox_id: &str) -> String {
    veth_of(sandbox_id)
}

fn veth_of(sandbox_id: &str) -> String {
    format!("{VETH_PREFIX}{}", tag(sandbox_id))
}

/// The filter chain of a `full` sandbox's packets.
pub fn host_chain_name(sandbox_id: &str) -> String {
    chain_of(sandbox_id)
}

fn chain_of(sandbox_id: &str) -> String {
    format!("PDK-{}", tag(sandbox_id))
}

fn comment_of(owner: &str, sandbox_id: &str) -> String {
    format!("{COMMENT} {owner} {sandbox_id}")
}

async fn iptables(args: &[&str]) -> Result<String, EgressError> {
    let mut all = vec!["-w", "5"];
    all.extend_from_slice(args);
    run("iptables", &all, None).await
}

/// The host-wide lock around every change to the NAT rules and addresses.
struct HostLock(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl HostLock {
    async fn take() -> Result<Self, EgressError> {
        let fail = |source| EgressError::NatLock {
            path: LOCK_PATH.into(),
            source,
        };
        let taken = tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + LOCK_TIMEOUT;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(LOCK_PATH)?;
            loop {
                match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                    Ok(lock) => return Ok(HostLock(lock)),
                    Err((back, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
                        if Instant::now() >= deadline {
                            return Err(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("not free within {LOCK_TIMEOUT:?}"),
                            ));
                        }
                        file = back;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err((_, errno)) => return Err(std::io::Error::from(errno)),
                }
            }
        })
        .await
        .map_err(|e| fail(std::io::Error::other(e.to_string())))?;
        taken.map_err(fail)
    }
}

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

        let n = netns.name();
        let gateway = format!("{}/30", self.gateway);
        let inside = format!("{}/30", self.sandbox_address);
        let via = self.gateway.to_string();
        run(
            "ip",
            &[
                "link",
                "add",
                &veth,
                "type",
                "veth",
                "peer",
                "name",
                SANDBOX_VETH,
                "netns",
                n,
            ],
            None,
        )
        .await?;
        // No IPv6 on either end: the guard is written for IPv4 only.
        disable_ipv6(&format!("/proc/sys/net/ipv6/conf/{veth}/disable_ipv6"));
        run("ip", &["addr", "add", &gateway, "dev", &veth], None).await?;
        run("ip", &["link", "set", &veth, "up"], None).await?;
        run(
            "ip",
            &[
                "netns",
                "exec",
                n,
                "sysctl",
                "-q",
                "-w",
                &format!("net.ipv6.conf.{SANDBOX_VETH}.disable_ipv6=1"),
            ],
            None,
        )
        .await?;
        // ICMP echo sockets (unprivileged ping) for every group, in this
        // namespace only: the sandbox has no raw sockets.
        run(
            "ip",
            &[
                "netns",
                "exec",
                n,
                "sysctl",
                "-q",
                "-w",
                "net.ipv4.ping_group_range=0 2147483647",
            ],
            None,
        )
        .await?;
        run(
            "ip",
            &["-n", n, "addr", "add", &inside, "dev", SANDBOX_VETH],
            None,
        )
        .await?;
        run("ip", &["-n", n, "link", "set", SANDBOX_VETH, "up"], None).await?;
        run(
            "ip",
            &[
                "-n",
                n,
                "route",
                "add",
                "default",
                "via",
                &via,
                "dev",
                SANDBOX_VETH,
            ],
            None,
        )
        .await?;
        enable_forwarding()
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

fn disable_ipv6(path: &str) {
    if Path::new(path).exists()
        && let Err(e) = std::fs::write(path, "1")
    {
        tracing::debug!(path, error = %e, "disabling IPv6 on a sandbox veth");
    }
}

const FORWARD_SWITCH: &str = "/proc/sys/net/ipv4/ip_forward";

/// Turns on IPv4 forwarding (host-wide; docs/security.md says so) when it
/// is off. FORWARD's policy and other interfaces' rules are left alone.
fn enable_forwarding() -> Result<(), EgressError> {
    let fail = |source| EgressError::Forwarding { source };
    let now = std::fs::read_to_string(FORWARD_SWITCH).map_err(fail)?;
    if now.trim() != "1" {
        tracing::warn!("turning on net.ipv4.ip_forward for a sandbox with network full");
        std::fs::write(FORWARD_SWITCH, "1").map_err(fail)?;
    }
    Ok(())
}

/// Applies `filter` and `nat` rule lines in one `iptables-restore
/// --noflush` transaction (all or nothing).
async fn restore(filter: &str, nat: &str) -> Result<(), EgressError> {
    let input = format!("*filter\n{filter}COMMIT\n*nat\n{nat}COMMIT\n");
    run("iptables-restore", &["-w", "5", "--noflush"], Some(&input))
        .await
        .map(drop)
}

/// Adds to `filter` and `nat` the lines that make the shared chains and
/// the jumps to them, for those missing (made with the first sandbox,
/// removed with the last: [`remove_shared_if_unused`]).
async fn shared_chains_missing(filter: &mut String, nat: &mut String) -> Result<(), EgressError> {
    let pdk = format!("{VETH_PREFIX}+");
    let have_filter = iptables(&["-t", "filter", "-S"]).await?;
    let have_nat = iptables(&["-t", "nat", "-S"]).await?;
    let has = |listing: &str, line: &str| listing.lines().any(|l| l.trim() == line);
    if !has(&have_filter, &format!("-N {REJECT_CHAIN}")) {
        filter.push_str(&format!(
            ":{REJECT_CHAIN} - [0:0]\n\
             -A {REJECT_CHAIN} -p tcp -j REJECT --reject-with tcp-reset\n\
             -A {REJECT_CHAIN} -j REJECT --reject-with icmp-admin-prohibited\n"
        ));
    }
    if !has(&have_filter, &format!("-N {IN_CHAIN}")) {
        filter.push_str(&format!(
            ":{IN_CHAIN} - [0:0]\n-A {IN_CHAIN} -j {REJECT_CHAIN}\n"
        ));
    }
    if !has(&have_filter, &format!("-N {FWD_CHAIN}")) {
        // Per-sandbox jumps go in front of these.
        filter.push_str(&format!(
            ":{FWD_CHAIN} - [0:0]\n\
             -A {FWD_CHAIN} -o {pdk} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
             -A {FWD_CHAIN} -i {pdk} -j DROP\n\
             -A {FWD_CHAIN} -o {pdk} -j DROP\n"
        ));
    }
    for (chain, rule) in [
        ("FORWARD", format!("-o {pdk} -j {FWD_CHAIN}")),
        ("FORWARD", format!("-i {pdk} -j {FWD_CHAIN}")),
        ("INPUT", format!("-i {pdk} -j {IN_CHAIN}")),
    ] {
        if !has(&have_filter, &format!("-A {chain} {rule}")) {
            filter.push_str(&format!("-I {chain} 1 {rule}\n"));
        }
    }
    if !has(&have_nat, &format!("-N {NAT_CHAIN}")) {
        nat.push_str(&format!(":{NAT_CHAIN} - [0:0]\n"));
    }
    if !has(&have_nat, &format!("-A POSTROUTING -j {NAT_CHAIN}")) {
        nat.push_str(&format!("-I POSTROUTING 1 -j {NAT_CHAIN}\n"));
    }
    Ok(())
}

/// The rule of `PADDOCK-IN` that logs what the sandbox sends to a host
/// address (refused after it by the chain's reject) to its NFLOG group.
fn host_log_rule(veth: &str, comment: &str, group: u16) -> String {
    format!(
        "-i {veth} -m comment --comment \"{comment}\" -j NFLOG --nflog-group {group} --nflog-prefix {}",
        crate::nat::log::PREFIX_HOST
    )
}

/// What a sandbox's chain lets through before the guard, and refuses.
#[derive(Debug, Clone, Copy)]
struct PacketGuard<'a> {
    /// The operator's `--egress-allow-private` addresses.
    allowed_private: &'a [IpAddr],
    /// [`refused_v4`].
    refused: &'a [IpNet],
}

/// The lines of one sandbox: its chain (anti-spoofing, the operator's
/// private destinations, the guard, each refusal logged to `nflog_group`
/// first, the rest accepted), its tagged jump, its tagged log rule in
/// `PADDOCK-IN` and its tagged masquerade.
fn sandbox_rules(
    filter: &mut String,
    nat: &mut String,
    owner: &str,
    sandbox_id: &str,
    address: Ipv4Addr,
    guard: PacketGuard<'_>,
    nflog_group: u16,
) {
    let PacketGuard {
        allowed_private,
        refused,
    } = guard;
    let (veth, chain) = (veth_of(sandbox_id), chain_of(sandbox_id));
    let comment = comment_of(owner, sandbox_id);
    filter.push_str(&format!(
        ":{chain} - [0:0]\n\
         -I {FWD_CHAIN} 1 -i {veth} -m comment --comment \"{comment}\" -j {chain}\n\
         -I {IN_CHAIN} 1 {}\n\
         -A {chain} ! -s {address}/32 -j DROP\n",
        host_log_rule(&veth, &comment, nflog_group)
    ));
    for ip in allowed_private {
        if let IpAddr::V4(v4) = ip {
            filter.push_str(&format!("-A {chain} -d {v4}/32 -j ACCEPT\n"));
        }
    }
    let prefix = crate::nat::log::PREFIX_GUARD;
    for range in refused {
        filter.push_str(&format!(
            "-A {chain} -d {range} -j NFLOG --nflog-group {nflog_group} --nflog-prefix {prefix}\n\
             -A {chain} -d {range} -j {REJECT_CHAIN}\n"
        ));
    }
    filter.push_str(&format!("-A {chain} -j ACCEPT\n"));
    nat.push_str(&format!(
        "-A {NAT_CHAIN} -s {address}/32 -m comment --comment \"{comment}\" -j MASQUERADE\n"
    ));
}

/// The IPv4 destinations a `full` sandbox's chain refuses: every IPv4 row
/// of the guard's table, then each network the host is directly connected
/// to (read when the sandbox starts) that no row holds already.
fn refused_v4(host: &crate::guard::HostView) -> Vec<IpNet> {
    let mut refused: Vec<IpNet> = GUARDED
        .iter()
        .map(|g| g.net)
        .filter(|n| matches!(n, IpNet::V4(..)))
        .collect();
    for net in &host.networks {
        if let IpNet::V4(..) = net
            && crate::guarded::guarded(net.bounds().0).is_none_or(|g| g.net.prefix() > net.prefix())
        {
            refused.push(*net);
        }
    }
    refused
}

/// Removes the shared chains and the jumps to them once no sandbox's rules
/// are left (the host's rules are then as before the first `full` sandbox).
async fn remove_shared_if_unused() {
    for (table, chain) in [
        ("filter", FWD_CHAIN),
        ("filter", IN_CHAIN),
        ("nat", NAT_CHAIN),
    ] {
        match iptables(&["-t", table, "-S", chain]).await {
            Ok(listing) if !listing.contains(COMMENT) => {}
            _ => return,
        }
    }
    let pdk = format!("{VETH_PREFIX}+");
    let filter = format!(
        "-D FORWARD -i {pdk} -j {FWD_CHAIN}\n-D FORWARD -o {pdk} -j {FWD_CHAIN}\n\
         -D INPUT -i {pdk} -j {IN_CHAIN}\n\
         -F {FWD_CHAIN}\n-X {FWD_CHAIN}\n-F {IN_CHAIN}\n-X {IN_CHAIN}\n\
         -F {REJECT_CHAIN}\n-X {REJECT_CHAIN}\n"
    );
    let nat = format!("-D POSTROUTING -j {NAT_CHAIN}\n-F {NAT_CHAIN}\n-X {NAT_CHAIN}\n");
    if let Err(e) = restore(&filter, &nat).await {
        tracing::warn!(error = %paddock_proto::error_chain(&e), "removing the shared NAT chains");
    }
}

/// Splits one `iptables -S` line into words (double quotes group).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `(table, rule words)` of the rules tagged with `comment` prefix `prefix`.
async fn tagged_rules(prefix: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut found = Vec::new();
    for (table, chain) in [
        ("filter", FWD_CHAIN),
        ("filter", IN_CHAIN),
        ("nat", NAT_CHAIN),
    ] {
        let Ok(listing) = iptables(&["-t", table, "-S", chain]).await else {
            continue;
        };
        for line in listing.lines() {
            let w = words(line);
            let tagged = w
                .windows(2)
                .any(|p| p[0] == "--comment" && p[1].starts_with(prefix));
            if tagged && w.first().is_some_and(|a| a == "-A") {
                found.push((table, w));
            }
        }
    }
    found
}

/// Removes everything of one sandbox (best effort, each step logged).
async fn remove_sandbox(owner: &str, sandbox_id: &str) {
    let comment = comment_of(owner, sandbox_id);
    for (table, mut rule) in tagged_rules(&comment).await {
        if let Some(first) = rule.first_mut() {
            "-D".clone_into(first);
        }
        let mut args: Vec<&str> = vec!["-t", table];
        args.extend(rule.iter().map(String::as_str));
        if let Err(e) = iptables(&args).await {
            tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing a NAT rule");
        }
    }
    let chain = chain_of(sandbox_id);
    if iptables(&["-n", "-L", &chain]).await.is_ok() {
        for step in [["-F", chain.as_str()], ["-X", chain.as_str()]] {
            if let Err(e) = iptables(&step).await {
                tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing the sandbox's filter chain");
            }
        }
    }
    remove_veth(sandbox_id).await;
}

async fn remove_veth(sandbox_id: &str) {
    let veth = veth_of(sandbox_id);
    if Path::new("/sys/class/net").join(&veth).exists()
        && let Err(e) = run("ip", &["link", "del", &veth], None).await
    {
        tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing the sandbox's veth");
    }
}

/// Removes the NAT of `owner`'s sandboxes not in `keep` (left behind by a
/// server that was killed), and their network namespaces. Returns their ids.
pub async fn reap(owner: &str, keep: &[&str]) -> Result<Vec<String>, EgressError> {
    let lock = HostLock::take().await?;
    let prefix = format!("{COMMENT} {owner} ");
    let mut ids: Vec<String> = tagged_rules(&prefix)
        .await
        .into_iter()
        .filter_map(|(_, w)| {
            let i = w.iter().position(|x| x == "--comment")?;
            w.get(i + 1)?.strip_prefix(&prefix).map(str::to_owned)
        })
        .filter(|id| !keep.contains(&id.as_str()))
        .collect();
    ids.sort();
    ids.dedup();
    for id in &ids {
        remove_sandbox(owner, id).await;
        let name = Netns::name_of(id);
        if Path::new("/run/netns").join(&name).exists() {
            let _ = run("ip", &["netns", "del", &name], None).await;
        }
    }
    if !ids.is_empty() {
        remove_shared_if_unused().await;
    }
    drop(lock);
    Ok(ids)
}

/// Host-side veths and tagged rules of `sandbox_id` still present (for
/// leak checks).
pub async fn leftovers(owner: &str, sandbox_id: &str) -> Vec<String> {
    let mut left: Vec<String> = tagged_rules(&comment_of(owner, sandbox_id))
        .await
        .into_iter()
        .map(|(table, w)| format!("{table}: {}", w.join(" ")))
        .collect();
    let veth = veth_of(sandbox_id);
    if Path::new("/sys/class/net").join(&veth).exists() {
        left.push(format!("veth {veth}"));
    }
    if iptables(&["-n", "-L", &chain_of(sandbox_id)]).await.is_ok() {
        left.push(format!("chain {}", chain_of(sandbox_id)));
    }
    left
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

    #[test]
    fn the_packet_guard_refuses_what_the_proxys_guard_refuses() {
        let host = crate::guard::HostView {
            addresses: vec![IpAddr::V4(Ipv4Addr::new(8, 8, 4, 2))],
            networks: vec![
                IpNet::of(IpAddr::V4(Ipv4Addr::new(8, 8, 4, 2)), 24),
                IpNet::of(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 8),
                IpNet::of("2606:1::1".parse().unwrap(), 64),
            ],
        };
        let refused = refused_v4(&host);
        // the host's network is added once, loopback (a row already) not again
        assert_eq!(
            refused
                .iter()
                .filter(|n| n.prefix() == 8 && n.contains(IpAddr::V4(Ipv4Addr::LOCALHOST)))
                .count(),
            1
        );
        assert!(refused.contains(&IpNet::of(IpAddr::V4(Ipv4Addr::new(8, 8, 4, 0)), 24)));
        let packet_refuses = |ip: Ipv4Addr| refused.iter().any(|n| n.contains(IpAddr::V4(ip)));
        for net in &refused {
            let (first, last) = net.bounds();
            for ip in [first, last] {
                assert!(
                    crate::guard::refusal(ip, &host, &[]).is_some(),
                    "{ip} of {net} passes the proxy's guard"
                );
            }
        }
        for a in 0..=255u8 {
            for b in [0u8, 2, 18, 19, 31, 51, 52, 88, 168, 175, 254] {
                let ip = Ipv4Addr::new(a, b, 0, 1);
                assert_eq!(
                    packet_refuses(ip),
                    crate::guard::refusal(IpAddr::V4(ip), &host, &[]).is_some(),
                    "{ip}"
                );
            }
        }
        let mut written = String::new();
        sandbox_rules(
            &mut written,
            &mut String::new(),
            "o",
            "sb-1",
            Ipv4Addr::new(10, 217, 0, 2),
            PacketGuard {
                allowed_private: &[],
                refused: &refused,
            },
            40000,
        );
        for net in [
            "192.0.0.0/24",
            "192.0.2.0/24",
            "8.8.4.0/24",
            "169.254.169.254/32",
        ] {
            assert!(
                written.contains(&format!("-d {net} -j PADDOCK-REJECT")),
                "{net}: {written}"
            );
        }
        assert!(!written.contains("2606"), "{written}");
    }

    #[test]
    fn names_fit_ifnamsiz_and_differ_per_sandbox() {
        let a = veth_of("sb-0192a3b4c5d6e7f8a9b0c1d2e3f4a5b6");
        let b = veth_of("sb-0192a3b4c5d6e7f8a9b0c1d2e3f4a5b7");
        assert_eq!(a.len(), 15);
        assert_ne!(a, b);
        assert!(chain_of("sb-x").len() <= 28);
    }

    #[test]
    fn quoted_comments_stay_one_word() {
        assert_eq!(
            words("-A PADDOCK-FWD -i pdkx -m comment --comment \"paddock-nat o sb-1\" -j PDK-x"),
            [
                "-A",
                "PADDOCK-FWD",
                "-i",
                "pdkx",
                "-m",
                "comment",
                "--comment",
                "paddock-nat o sb-1",
                "-j",
                "PDK-x"
            ]
        );
    }
}
