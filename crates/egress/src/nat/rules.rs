//! The host's iptables rules of `full`: the shared chains (made with the
//! first sandbox, removed with the last), each sandbox's chain with the
//! address guard as filter rules, its tagged jump, log rule and
//! masquerade, applied in one `iptables-restore` transaction, and the
//! tagged rules found again by their comment.

use std::net::{IpAddr, Ipv4Addr};

use super::VETH_PREFIX;
use super::names::COMMENT;
use super::names::{chain_of, comment_of, veth_of};
use crate::EgressError;
use crate::guard::GUARDED;
use crate::guarded::IpNet;
use crate::netns::run;

pub(super) const FWD_CHAIN: &str = "PADDOCK-FWD";
pub(super) const IN_CHAIN: &str = "PADDOCK-IN";
pub(super) const REJECT_CHAIN: &str = "PADDOCK-REJECT";
pub(super) const NAT_CHAIN: &str = "PADDOCK-NAT";

pub(super) async fn iptables(args: &[&str]) -> Result<String, EgressError> {
    let mut all = vec!["-w", "5"];
    all.extend_from_slice(args);
    run("iptables", &all, None).await
}

/// Applies `filter` and `nat` rule lines in one `iptables-restore
/// --noflush` transaction (all or nothing).
pub(super) async fn restore(filter: &str, nat: &str) -> Result<(), EgressError> {
    let input = format!("*filter\n{filter}COMMIT\n*nat\n{nat}COMMIT\n");
    run("iptables-restore", &["-w", "5", "--noflush"], Some(&input))
        .await
        .map(drop)
}

/// Adds to `filter` and `nat` the lines that make the shared chains and
/// the jumps to them, for those missing (made with the first sandbox,
/// removed with the last: [`remove_shared_if_unused`]).
pub(super) async fn shared_chains_missing(
    filter: &mut String,
    nat: &mut String,
) -> Result<(), EgressError> {
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
pub(super) fn host_log_rule(veth: &str, comment: &str, group: u16) -> String {
    format!(
        "-i {veth} -m comment --comment \"{comment}\" -j NFLOG --nflog-group {group} --nflog-prefix {}",
        crate::nat::log::PREFIX_HOST
    )
}

/// What a sandbox's chain lets through before the guard, and refuses.
#[derive(Debug, Clone, Copy)]
pub(super) struct PacketGuard<'a> {
    /// The operator's `--egress-allow-private` addresses.
    pub(super) allowed_private: &'a [IpAddr],
    /// [`refused_v4`].
    pub(super) refused: &'a [IpNet],
}

/// The lines of one sandbox: its chain (anti-spoofing, the operator's
/// private destinations, the guard, each refusal logged to `nflog_group`
/// first, the rest accepted), its tagged jump, its tagged log rule in
/// `PADDOCK-IN` and its tagged masquerade.
pub(super) fn sandbox_rules(
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
pub(super) fn refused_v4(host: &crate::guard::HostView) -> Vec<IpNet> {
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
pub(super) async fn remove_shared_if_unused() {
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
pub(super) async fn tagged_rules(prefix: &str) -> Vec<(&'static str, Vec<String>)> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

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
