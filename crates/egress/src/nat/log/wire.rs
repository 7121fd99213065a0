//! The netlink wire format nat::log reads and writes: nlmsghdr,
//! nfgenmsg and nested attributes, every length checked against what was
//! received. The constants are linux/netlink.h's and
//! linux/netfilter/nfnetlink*.h's.
//!
//! Hand-written, not netlink-packet-netfilter: its 0.4 types NFLOG's
//! config and packets and conntrack's tuples, but not the conntrack id
//! (`CTA_ID`) nor the byte counters (`CTA_COUNTERS_*`) a decision is made
//! of, which would still be parsed here from its untyped attributes; the
//! ~150 lines here stay smaller than that crate and its four
//! dependencies.

use std::net::Ipv4Addr;

// netlink and nfnetlink (linux/netlink.h, linux/netfilter/nfnetlink*.h;
// NFULA_CFG_*: UNSPEC, CMD, MODE, NLBUFSIZ, TIMEOUT, QTHRESH, FLAGS)
pub(super) const NLMSG_HDR: usize = 16;
pub(super) const NFGEN_HDR: usize = 4;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
pub(super) const NLM_F_REQUEST: u16 = 0x1;
pub(super) const NLM_F_ACK: u16 = 0x4;
pub(super) const NLM_F_DUMP: u16 = 0x300;
pub(super) const NLA_F_NESTED: u16 = 0x8000;
pub(super) const NLA_TYPE_MASK: u16 = 0x3fff;
pub(super) const SUBSYS_CTNETLINK: u16 = 1;
pub(super) const SUBSYS_ULOG: u16 = 4;
// conntrack's multicast groups NEW and DESTROY, as bind(2) bits
pub(super) const CT_GROUPS: u32 = (1 << 0) | (1 << 2);
pub(super) const CT_MSG_NEW: u16 = 0;
pub(super) const CT_MSG_GET: u16 = 1;
pub(super) const CT_MSG_DELETE: u16 = 2;
pub(super) const CTA_TUPLE_ORIG: u16 = 1;
pub(super) const CTA_TUPLE_IP: u16 = 1;
pub(super) const CTA_TUPLE_PROTO: u16 = 2;
pub(super) const CTA_IP_V4_SRC: u16 = 1;
pub(super) const CTA_IP_V4_DST: u16 = 2;
pub(super) const CTA_PROTO_NUM: u16 = 1;
pub(super) const CTA_PROTO_DST_PORT: u16 = 3;
pub(super) const CTA_COUNTERS_ORIG: u16 = 9;
pub(super) const CTA_COUNTERS_REPLY: u16 = 10;
pub(super) const CTA_COUNTERS_BYTES: u16 = 2;
pub(super) const CTA_COUNTERS32_BYTES: u16 = 4;
pub(super) const CTA_ID: u16 = 12;
pub(super) const ULOG_MSG_PACKET: u16 = 0;
pub(super) const ULOG_MSG_CONFIG: u16 = 1;
pub(super) const NFULA_PAYLOAD: u16 = 9;
pub(super) const NFULA_PREFIX: u16 = 10;
pub(super) const NFULA_CFG_CMD: u16 = 1;
pub(super) const NFULA_CFG_MODE: u16 = 2;
pub(super) const NFULA_CFG_QTHRESH: u16 = 5;
pub(super) const NFULNL_CFG_CMD_BIND: u8 = 1;
pub(super) const NFULNL_COPY_PACKET: u8 = 2;
pub(super) const AF_INET: u8 = 2;
pub(super) const IPPROTO_ICMP: u8 = 1;
pub(super) const IPPROTO_TCP: u8 = 6;
pub(super) const IPPROTO_UDP: u8 = 17;

/// One netlink attribute: its type (flags masked off) and payload.
pub(super) fn attrs(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if buf.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([buf[0], buf[1]]));
        let kind = u16::from_ne_bytes([buf[2], buf[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > buf.len() {
            return None;
        }
        let payload = &buf[4..len];
        buf = &buf[align(len).min(buf.len())..];
        Some((kind, payload))
    })
}

pub(super) fn attr(buf: &[u8], kind: u16) -> Option<&[u8]> {
    attrs(buf).find(|(k, _)| *k == kind).map(|(_, p)| p)
}

pub(super) fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// One netlink message of a datagram.
pub(super) struct Message<'a> {
    pub(super) kind: u16,
    pub(super) seq: u32,
    /// After nlmsghdr.
    pub(super) body: &'a [u8],
}

pub(super) fn messages(mut buf: &[u8]) -> impl Iterator<Item = Message<'_>> {
    std::iter::from_fn(move || {
        if buf.len() < NLMSG_HDR {
            return None;
        }
        let len = usize::try_from(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]])).ok()?;
        if len < NLMSG_HDR || len > buf.len() {
            return None;
        }
        let message = Message {
            kind: u16::from_ne_bytes([buf[4], buf[5]]),
            seq: u32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]),
            body: &buf[NLMSG_HDR..len],
        };
        buf = &buf[align(len).min(buf.len())..];
        Some(message)
    })
}

/// The attributes of an nfnetlink message (after nfgenmsg).
pub(super) fn nf_attrs(body: &[u8]) -> &[u8] {
    body.get(NFGEN_HDR..).unwrap_or_default()
}

/// Builds one nfnetlink request.
pub(super) fn request(
    kind: u16,
    flags: u16,
    seq: u32,
    res_id: u16,
    attributes: &[(u16, &[u8])],
) -> Vec<u8> {
    let mut out = vec![0u8; NLMSG_HDR];
    out.extend_from_slice(&[AF_INET, 0]);
    out.extend_from_slice(&res_id.to_be_bytes());
    for (kind, payload) in attributes {
        let len = 4 + payload.len();
        out.extend_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(payload);
        out.resize(align(out.len()), 0);
    }
    let total = u32::try_from(out.len()).unwrap_or(u32::MAX);
    out[0..4].copy_from_slice(&total.to_ne_bytes());
    out[4..6].copy_from_slice(&kind.to_ne_bytes());
    out[6..8].copy_from_slice(&flags.to_ne_bytes());
    out[8..12].copy_from_slice(&seq.to_ne_bytes());
    out
}

/// The error code of an NLMSG_ERROR message (0: an acknowledgement).
pub(super) fn error_code(body: &[u8]) -> Option<i32> {
    body.get(..4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

pub(super) fn be_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

pub(super) fn be_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

pub(super) fn v4(b: &[u8]) -> Option<Ipv4Addr> {
    let o: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some(Ipv4Addr::from(o))
}
