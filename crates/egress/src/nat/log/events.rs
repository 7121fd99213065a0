//! What the messages mean: a refused attempt from an NFLOG packet, a
//! connection from conntrack's NEW and DESTROY, and the bounded state
//! between them that turns them into decisions.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::wire::*;
use super::{MAX_OPEN, MAX_UDP_FLOWS, PREFIX_HOST};
use crate::EgressDecision;

/// A refused connection attempt, from the packet NFLOG copied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attempt {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    src_port: u16,
    port: u16,
}

/// The attempt a refused IPv4 packet opens, or None when it opens none (a
/// TCP segment other than a SYN, an ICMP message other than an echo
/// request).
fn attempt(packet: &[u8]) -> Option<Attempt> {
    let first = *packet.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || packet.len() < ihl {
        return None;
    }
    let ip = |at: usize| Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    let (src, dst, proto) = (ip(12), ip(16), packet[9]);
    let l4 = &packet[ihl..];
    let ports = || {
        Some((
            u16::from_be_bytes([*l4.first()?, *l4.get(1)?]),
            u16::from_be_bytes([*l4.get(2)?, *l4.get(3)?]),
        ))
    };
    let (src_port, port) = match proto {
        IPPROTO_TCP => {
            let flags = *l4.get(13)?;
            if flags & 0x02 == 0 || flags & 0x10 != 0 {
                return None;
            }
            ports()?
        }
        IPPROTO_UDP => ports()?,
        IPPROTO_ICMP => {
            if *l4.first()? != 8 {
                return None;
            }
            (0, 0)
        }
        _ => (0, 0),
    };
    Some(Attempt {
        src,
        dst,
        proto,
        src_port,
        port,
    })
}

/// Why the guard refused `dst` (the rule's prefix says which chain).
fn refusal_reason(dst: Ipv4Addr, prefix: &str) -> String {
    if prefix == PREFIX_HOST {
        return format!("{dst} is an address of the host itself (refused by the NAT's guard)");
    }
    match crate::guarded::guarded(std::net::IpAddr::V4(dst)) {
        Some(row) => format!(
            "{dst} is in {}: {} (refused by the NAT's guard)",
            row.net, row.reason
        ),
        None => format!(
            "{dst} is {} (refused by the NAT's guard)",
            crate::guard::HOST_NETWORK
        ),
    }
}

/// What a conntrack message says of one connection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Tracked {
    pub(super) id: u32,
    pub(super) src: Option<Ipv4Addr>,
    pub(super) dst: Option<Ipv4Addr>,
    pub(super) proto: u8,
    pub(super) port: u16,
    pub(super) bytes_out: u64,
    pub(super) bytes_in: u64,
}

fn counter_bytes(nested: &[u8]) -> u64 {
    attr(nested, CTA_COUNTERS_BYTES)
        .and_then(be_u64)
        .or_else(|| {
            attr(nested, CTA_COUNTERS32_BYTES)
                .and_then(be_u32)
                .map(u64::from)
        })
        .unwrap_or(0)
}

pub(super) fn tracked(attributes: &[u8]) -> Tracked {
    let mut t = Tracked::default();
    for (kind, payload) in attrs(attributes) {
        match kind {
            CTA_TUPLE_ORIG => {
                if let Some(ip) = attr(payload, CTA_TUPLE_IP) {
                    t.src = attr(ip, CTA_IP_V4_SRC).and_then(v4);
                    t.dst = attr(ip, CTA_IP_V4_DST).and_then(v4);
                }
                if let Some(proto) = attr(payload, CTA_TUPLE_PROTO) {
                    t.proto = attr(proto, CTA_PROTO_NUM)
                        .and_then(|b| b.first().copied())
                        .unwrap_or(0);
                    t.port = attr(proto, CTA_PROTO_DST_PORT)
                        .and_then(|b| Some(u16::from_be_bytes([*b.first()?, *b.get(1)?])))
                        .unwrap_or(0);
                }
            }
            CTA_COUNTERS_ORIG => t.bytes_out = counter_bytes(payload),
            CTA_COUNTERS_REPLY => t.bytes_in = counter_bytes(payload),
            CTA_ID => t.id = be_u32(payload).unwrap_or(0),
            _ => {}
        }
    }
    t
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What one sandbox's watcher keeps between messages (bounded).
#[derive(Debug)]
pub(super) struct State {
    pub(super) sandbox: Ipv4Addr,
    /// conntrack id -> (destination, port, since when).
    open: HashMap<u32, (Ipv4Addr, u16, Instant)>,
    udp_refused: HashSet<(u16, Ipv4Addr, u16)>,
    /// NEW events past [`MAX_OPEN`], and datagrams the socket lost.
    pub(super) untracked: u64,
    pub(super) lost: u64,
}

impl State {
    pub(super) fn new(sandbox: Ipv4Addr) -> Self {
        Self {
            sandbox,
            open: HashMap::new(),
            udp_refused: HashSet::new(),
            untracked: 0,
            lost: 0,
        }
    }

    /// The decisions of one received datagram.
    pub(super) fn datagram(&mut self, buf: &[u8], now: Instant) -> Vec<EgressDecision> {
        let mut out = Vec::new();
        for message in messages(buf) {
            let (subsys, kind) = (message.kind >> 8, message.kind & 0xff);
            let body = nf_attrs(message.body);
            match (subsys, kind) {
                (SUBSYS_ULOG, ULOG_MSG_PACKET) => out.extend(self.refused(body)),
                (SUBSYS_CTNETLINK, CT_MSG_NEW) => self.opened(body, now),
                (SUBSYS_CTNETLINK, CT_MSG_DELETE) => {
                    let t = tracked(body);
                    out.extend(self.closed(&t, now));
                }
                _ => {}
            }
        }
        out
    }

    fn refused(&mut self, body: &[u8]) -> Option<EgressDecision> {
        let packet = attempt(attr(body, NFULA_PAYLOAD)?)?;
        if packet.src != self.sandbox {
            return None;
        }
        if packet.proto == IPPROTO_UDP {
            if self.udp_refused.len() >= MAX_UDP_FLOWS {
                self.udp_refused.clear();
            }
            if !self
                .udp_refused
                .insert((packet.src_port, packet.dst, packet.port))
            {
                return None;
            }
        }
        let prefix = attr(body, NFULA_PREFIX)
            .map(|p| String::from_utf8_lossy(p.split(|b| *b == 0).next().unwrap_or_default()))
            .unwrap_or_default();
        Some(EgressDecision {
            allowed: false,
            host: packet.dst.to_string(),
            port: packet.port,
            via: "nat".to_owned(),
            reason: Some(refusal_reason(packet.dst, &prefix)),
            bytes_out: 0,
            bytes_in: 0,
            duration_ms: 0,
        })
    }

    fn opened(&mut self, body: &[u8], now: Instant) {
        let t = tracked(body);
        let (Some(src), Some(dst)) = (t.src, t.dst) else {
            return;
        };
        if src != self.sandbox {
            return;
        }
        if self.open.len() >= MAX_OPEN {
            self.untracked += 1;
            return;
        }
        self.open.insert(t.id, (dst, t.port, now));
    }

    pub(super) fn closed(&mut self, t: &Tracked, now: Instant) -> Option<EgressDecision> {
        if t.src != Some(self.sandbox) {
            return None;
        }
        let (dst, port, since) = self.open.remove(&t.id)?;
        Some(EgressDecision {
            allowed: true,
            host: dst.to_string(),
            port,
            via: "nat".to_owned(),
            reason: None,
            bytes_out: t.bytes_out,
            bytes_in: t.bytes_in,
            duration_ms: ms(now.saturating_duration_since(since)),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::nat::log::PREFIX_GUARD;

    fn nest(kind: u16, inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&u16::try_from(4 + inner.len()).unwrap().to_ne_bytes());
        out.extend_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
        out.extend_from_slice(inner);
        out.resize(align(out.len()), 0);
        out
    }

    fn leaf(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&u16::try_from(4 + payload.len()).unwrap().to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(payload);
        out.resize(align(out.len()), 0);
        out
    }

    /// A conntrack message as the kernel sends it (nlmsghdr, nfgenmsg, attributes).
    fn ct_message(
        kind: u16,
        src: [u8; 4],
        dst: [u8; 4],
        id: u32,
        bytes: Option<(u64, u64)>,
    ) -> Vec<u8> {
        let ip = [leaf(CTA_IP_V4_SRC, &src), leaf(CTA_IP_V4_DST, &dst)].concat();
        let proto = [
            leaf(CTA_PROTO_NUM, &[IPPROTO_TCP]),
            leaf(2, &40000u16.to_be_bytes()),
            leaf(CTA_PROTO_DST_PORT, &8080u16.to_be_bytes()),
        ]
        .concat();
        let tuple = [nest(CTA_TUPLE_IP, &ip), nest(CTA_TUPLE_PROTO, &proto)].concat();
        let mut body = nest(CTA_TUPLE_ORIG, &tuple);
        if let Some((out, inn)) = bytes {
            body.extend(nest(
                CTA_COUNTERS_ORIG,
                &[
                    leaf(1, &3u64.to_be_bytes()),
                    leaf(CTA_COUNTERS_BYTES, &out.to_be_bytes()),
                ]
                .concat(),
            ));
            body.extend(nest(
                CTA_COUNTERS_REPLY,
                &[
                    leaf(1, &2u64.to_be_bytes()),
                    leaf(CTA_COUNTERS_BYTES, &inn.to_be_bytes()),
                ]
                .concat(),
            ));
        }
        body.extend(leaf(CTA_ID, &id.to_be_bytes()));
        let mut msg = request((SUBSYS_CTNETLINK << 8) | kind, 0, 0, 0, &[]);
        msg.extend(body);
        let len = u32::try_from(msg.len()).unwrap();
        msg[0..4].copy_from_slice(&len.to_ne_bytes());
        msg
    }

    fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(l4);
        p
    }

    fn tcp(flags: u8, port: u16) -> Vec<u8> {
        let mut t = vec![0x9c, 0x40];
        t.extend_from_slice(&port.to_be_bytes());
        t.extend_from_slice(&[0; 9]);
        t.push(flags);
        t.extend_from_slice(&[0; 6]);
        t
    }

    fn nflog_message(packet: &[u8], prefix: &str) -> Vec<u8> {
        let mut p = prefix.as_bytes().to_vec();
        p.push(0);
        request(
            (SUBSYS_ULOG << 8) | ULOG_MSG_PACKET,
            0,
            0,
            0x8001,
            &[(NFULA_PREFIX, &p), (NFULA_PAYLOAD, packet)],
        )
    }

    const SANDBOX: [u8; 4] = [10, 217, 0, 6];

    #[test]
    fn a_refused_syn_is_one_denied_decision_naming_the_guard_range() {
        let mut state = State::new(Ipv4Addr::from(SANDBOX));
        let syn = ipv4(IPPROTO_TCP, SANDBOX, [169, 254, 169, 254], &tcp(0x02, 80));
        let got = state.datagram(&nflog_message(&syn, PREFIX_GUARD), Instant::now());
        assert_eq!(
            got,
            [EgressDecision {
                allowed: false,
                host: "169.254.169.254".into(),
                port: 80,
                via: "nat".into(),
                reason: Some("169.254.169.254 is in 169.254.169.254/32: the cloud metadata address (refused by the NAT's guard)".into()),
                bytes_out: 0,
                bytes_in: 0,
                duration_ms: 0,
            }]
        );
        // a bare ACK opens nothing; another sandbox's packet is not ours
        let ack = ipv4(IPPROTO_TCP, SANDBOX, [127, 0, 0, 1], &tcp(0x10, 80));
        assert!(
            state
                .datagram(&nflog_message(&ack, PREFIX_GUARD), Instant::now())
                .is_empty()
        );
        let other = ipv4(
            IPPROTO_TCP,
            [10, 217, 0, 10],
            [127, 0, 0, 1],
            &tcp(0x02, 80),
        );
        assert!(
            state
                .datagram(&nflog_message(&other, PREFIX_GUARD), Instant::now())
                .is_empty()
        );
        let host = ipv4(IPPROTO_TCP, SANDBOX, [198, 51, 100, 1], &tcp(0x02, 22));
        let got = state.datagram(&nflog_message(&host, PREFIX_HOST), Instant::now());
        assert_eq!(
            got[0].reason.as_deref(),
            Some("198.51.100.1 is an address of the host itself (refused by the NAT's guard)")
        );
    }

    #[test]
    fn only_the_first_refused_datagram_of_a_udp_flow_counts() {
        let mut state = State::new(Ipv4Addr::from(SANDBOX));
        let udp = ipv4(
            IPPROTO_UDP,
            SANDBOX,
            [10, 250, 0, 2],
            &[0x9c, 0x40, 0x1b, 0x5f, 0, 8, 0, 0],
        );
        let msg = nflog_message(&udp, PREFIX_GUARD);
        assert_eq!(state.datagram(&msg, Instant::now()).len(), 1);
        assert!(state.datagram(&msg, Instant::now()).is_empty());
        assert_eq!(
            state
                .datagram(&nflog_message(&udp, PREFIX_GUARD), Instant::now())
                .len(),
            0
        );
    }

    #[test]
    fn a_connection_is_one_allowed_decision_with_its_bytes_from_new_to_destroy() {
        let mut state = State::new(Ipv4Addr::from(SANDBOX));
        let t0 = Instant::now();
        let new = ct_message(CT_MSG_NEW, SANDBOX, [198, 51, 100, 10], 7, None);
        assert!(state.datagram(&new, t0).is_empty());
        // someone else's connection, and a DESTROY never seen NEW (an
        // earlier sandbox on this address): no decision
        let foreign = ct_message(CT_MSG_NEW, [172, 17, 0, 2], [198, 51, 100, 10], 8, None);
        assert!(state.datagram(&foreign, t0).is_empty());
        let stale = ct_message(CT_MSG_DELETE, SANDBOX, [198, 51, 100, 10], 9, Some((1, 1)));
        assert!(state.datagram(&stale, t0).is_empty());
        let destroy = ct_message(
            CT_MSG_DELETE,
            SANDBOX,
            [198, 51, 100, 10],
            7,
            Some((300, 5000)),
        );
        let got = state.datagram(&destroy, t0 + Duration::from_millis(250));
        assert_eq!(
            got,
            [EgressDecision {
                allowed: true,
                host: "198.51.100.10".into(),
                port: 8080,
                via: "nat".into(),
                reason: None,
                bytes_out: 300,
                bytes_in: 5000,
                duration_ms: 250,
            }]
        );
        assert!(state.open.is_empty());
    }

    #[test]
    fn open_connections_are_bounded() {
        let mut state = State::new(Ipv4Addr::from(SANDBOX));
        for id in 0..u32::try_from(MAX_OPEN).unwrap() + 10 {
            state.datagram(
                &ct_message(CT_MSG_NEW, SANDBOX, [198, 51, 100, 10], id, None),
                Instant::now(),
            );
        }
        assert_eq!(state.open.len(), MAX_OPEN);
        assert_eq!(state.untracked, 10);
    }

    #[test]
    fn truncated_messages_are_ignored_not_read_past() {
        let mut state = State::new(Ipv4Addr::from(SANDBOX));
        let msg = ct_message(CT_MSG_NEW, SANDBOX, [198, 51, 100, 10], 7, None);
        for cut in 0..msg.len() {
            let _ = state.datagram(&msg[..cut], Instant::now());
        }
        let syn = ipv4(IPPROTO_TCP, SANDBOX, [127, 0, 0, 1], &tcp(0x02, 80));
        let log = nflog_message(&syn, PREFIX_GUARD);
        for cut in 0..log.len() {
            let _ = state.datagram(&log[..cut], Instant::now());
        }
        for cut in 0..syn.len() {
            let _ = attempt(&syn[..cut]);
        }
    }
}
