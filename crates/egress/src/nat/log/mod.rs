//! The decisions of a `full` sandbox, whose packets are routed, not
//! proxied: one netlink socket (NETLINK_NETFILTER) per sandbox, in the
//! host's namespace, closed with the sandbox.
//!
//! - Denied: the guard's rules of the sandbox (its chain `PDK-<tag>` and
//!   its rule in `PADDOCK-IN`) log each refused packet to an NFLOG group
//!   this socket bound (the first free one from a hash of the sandbox id,
//!   in [`GROUPS`]; the kernel gives a group to one socket only). One
//!   decision per attempt: a TCP SYN, an ICMP echo request, the first
//!   datagram of a UDP flow.
//! - Allowed: the same socket listens to conntrack's NEW and DESTROY events
//!   (host-wide; only those whose original source is the sandbox's address
//!   count). DESTROY carries the bytes both ways (the IP bytes, headers
//!   included; `net.netfilter.nf_conntrack_acct` is turned on with the
//!   first `full` sandbox), the duration is from NEW to DESTROY. When the
//!   sandbox stops, its entries still tracked (a TCP connection in
//!   TIME_WAIT stays for two minutes) are read with a dump, reported, and
//!   deleted.
//!
//! Bounded: the socket's buffer (an overflow is counted, not fatal), at
//! most [`MAX_OPEN`] connections remembered between NEW and DESTROY, and
//! the decision channel, which drops and counts when full
//! ([`crate::proxy::connect::Ctx::record`]).
//!
//! The messages are parsed here (nlmsghdr, nfgenmsg, nested attributes),
//! every length checked against what was received.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, bind, recv, send,
    setsockopt, socket, sockopt,
};
use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::proxy::connect::Shared;
use crate::{EgressDecision, EgressError};

/// NFLOG groups the sandboxes' rules log to (the upper half: tools such as
/// ulogd use small numbers).
pub const GROUPS: std::ops::Range<u16> = 0x8000..0xffff;
/// How many groups are tried before giving up.
const GROUP_TRIES: u16 = 256;
/// Connections remembered between NEW and DESTROY; more are counted.
pub const MAX_OPEN: usize = 4096;
/// UDP flows remembered so that only their first refused datagram counts.
const MAX_UDP_FLOWS: usize = 1024;
/// The socket's receive buffer (conntrack's events are host-wide).
const RCVBUF: usize = 4 << 20;
/// How much of a refused packet the kernel copies (IP header with
/// options, and the TCP flags).
const COPY_RANGE: u32 = 80;
const ACK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the last drain and the dump at stop may take.
pub(crate) const FINISH_TIMEOUT: Duration = Duration::from_secs(3);

const ACCT_SWITCH: &str = "/proc/sys/net/netfilter/nf_conntrack_acct";

// netlink and nfnetlink (linux/netlink.h, linux/netfilter/nfnetlink*.h;
// NFULA_CFG_*: UNSPEC, CMD, MODE, NLBUFSIZ, TIMEOUT, QTHRESH, FLAGS)
const NLMSG_HDR: usize = 16;
const NFGEN_HDR: usize = 4;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;
const SUBSYS_CTNETLINK: u16 = 1;
const SUBSYS_ULOG: u16 = 4;
// conntrack's multicast groups NEW and DESTROY, as bind(2) bits
const CT_GROUPS: u32 = (1 << 0) | (1 << 2);
const CT_MSG_NEW: u16 = 0;
const CT_MSG_GET: u16 = 1;
const CT_MSG_DELETE: u16 = 2;
const CTA_TUPLE_ORIG: u16 = 1;
const CTA_TUPLE_IP: u16 = 1;
const CTA_TUPLE_PROTO: u16 = 2;
const CTA_IP_V4_SRC: u16 = 1;
const CTA_IP_V4_DST: u16 = 2;
const CTA_PROTO_NUM: u16 = 1;
const CTA_PROTO_DST_PORT: u16 = 3;
const CTA_COUNTERS_ORIG: u16 = 9;
const CTA_COUNTERS_REPLY: u16 = 10;
const CTA_COUNTERS_BYTES: u16 = 2;
const CTA_COUNTERS32_BYTES: u16 = 4;
const CTA_ID: u16 = 12;
const ULOG_MSG_PACKET: u16 = 0;
const ULOG_MSG_CONFIG: u16 = 1;
const NFULA_PAYLOAD: u16 = 9;
const NFULA_PREFIX: u16 = 10;
const NFULA_CFG_CMD: u16 = 1;
const NFULA_CFG_MODE: u16 = 2;
const NFULA_CFG_QTHRESH: u16 = 5;
const NFULNL_CFG_CMD_BIND: u8 = 1;
const NFULNL_COPY_PACKET: u8 = 2;
const AF_INET: u8 = 2;
const IPPROTO_ICMP: u8 = 1;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// The NFLOG prefix of the rule in `PADDOCK-IN` (a host address).
pub const PREFIX_HOST: &str = "paddock-host";
/// The NFLOG prefix of the guard's rules in the sandbox's chain.
pub const PREFIX_GUARD: &str = "paddock-guard";

/// One netlink attribute: its type (flags masked off) and payload.
fn attrs(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
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

fn attr(buf: &[u8], kind: u16) -> Option<&[u8]> {
    attrs(buf).find(|(k, _)| *k == kind).map(|(_, p)| p)
}

fn align(len: usize) -> usize {
    (len + 3) & !3
}

/// One netlink message of a datagram.
struct Message<'a> {
    kind: u16,
    seq: u32,
    /// After nlmsghdr.
    body: &'a [u8],
}

fn messages(mut buf: &[u8]) -> impl Iterator<Item = Message<'_>> {
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
fn nf_attrs(body: &[u8]) -> &[u8] {
    body.get(NFGEN_HDR..).unwrap_or_default()
}

/// Builds one nfnetlink request.
fn request(kind: u16, flags: u16, seq: u32, res_id: u16, attributes: &[(u16, &[u8])]) -> Vec<u8> {
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
fn error_code(body: &[u8]) -> Option<i32> {
    body.get(..4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

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
struct Tracked {
    id: u32,
    src: Option<Ipv4Addr>,
    dst: Option<Ipv4Addr>,
    proto: u8,
    port: u16,
    bytes_out: u64,
    bytes_in: u64,
}

fn be_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

fn be_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

fn v4(b: &[u8]) -> Option<Ipv4Addr> {
    let o: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some(Ipv4Addr::from(o))
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

fn tracked(attributes: &[u8]) -> Tracked {
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
struct State {
    sandbox: Ipv4Addr,
    /// conntrack id -> (destination, port, since when).
    open: HashMap<u32, (Ipv4Addr, u16, Instant)>,
    udp_refused: HashSet<(u16, Ipv4Addr, u16)>,
    /// NEW events past [`MAX_OPEN`], and datagrams the socket lost.
    untracked: u64,
    lost: u64,
}

impl State {
    fn new(sandbox: Ipv4Addr) -> Self {
        Self {
            sandbox,
            open: HashMap::new(),
            udp_refused: HashSet::new(),
            untracked: 0,
            lost: 0,
        }
    }

    /// The decisions of one received datagram.
    fn datagram(&mut self, buf: &[u8], now: Instant) -> Vec<EgressDecision> {
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

    fn closed(&mut self, t: &Tracked, now: Instant) -> Option<EgressDecision> {
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

fn netlink_socket(groups: u32) -> Result<OwnedFd, EgressError> {
    let fail = |step| {
        move |e: nix::errno::Errno| EgressError::NatLog {
            step,
            source: std::io::Error::from(e),
        }
    };
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkNetFilter,
    )
    .map_err(fail("opening a netfilter netlink socket"))?;
    // root: past net.core.rmem_max; conntrack's events are host-wide.
    if setsockopt(&fd, sockopt::RcvBufForce, &RCVBUF).is_err() {
        let _ = setsockopt(&fd, sockopt::RcvBuf, &RCVBUF);
    }
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, groups))
        .map_err(fail("binding the netfilter netlink socket"))?;
    Ok(fd)
}

/// Turns on conntrack's byte counters (host-wide) when they are off: the
/// allowed decisions' bytes come from them.
fn enable_accounting() {
    match std::fs::read_to_string(ACCT_SWITCH) {
        Ok(now) if now.trim() == "1" => {}
        Ok(_) => {
            tracing::warn!(
                "turning on net.netfilter.nf_conntrack_acct for the byte counts of network full"
            );
            if let Err(e) = std::fs::write(ACCT_SWITCH, "1") {
                tracing::warn!(error = %e, "network full's decisions will have no byte counts");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "network full's decisions will have no byte counts");
        }
    }
}

/// The socket of one `full` sandbox, bound to its NFLOG group.
#[derive(Debug)]
pub(crate) struct NatLog {
    socket: AsyncFd<OwnedFd>,
    group: u16,
}

impl NatLog {
    /// Opens the socket (subscribed to conntrack's NEW and DESTROY) and
    /// binds the first free NFLOG group from `seed`.
    pub(crate) async fn open(seed: u32) -> Result<Self, EgressError> {
        enable_accounting();
        let fd = netlink_socket(CT_GROUPS)?;
        // The fd is an OwnedFd moved in: nothing else can close it while it
        // is registered (the I/O-safety hole `new` was deprecated for, which
        // `register` only moves into an unsafe contract).
        #[allow(deprecated)]
        let socket = AsyncFd::new(fd).map_err(|source| EgressError::NatLog {
            step: "registering the netfilter netlink socket",
            source,
        })?;
        let span = u32::from(GROUPS.end - GROUPS.start);
        let mut last = std::io::Error::other("no group tried");
        for i in 0..GROUP_TRIES {
            let offset = u16::try_from((seed.wrapping_add(u32::from(i))) % span).unwrap_or(0);
            let group = GROUPS.start + offset;
            let seq = u32::from(i) + 1;
            let bind_cmd = [NFULNL_CFG_CMD_BIND];
            match exchange(
                &socket,
                ULOG_MSG_CONFIG,
                seq,
                group,
                &[(NFULA_CFG_CMD, &bind_cmd)],
            )
            .await
            {
                Ok(()) => {}
                Err(e) => {
                    last = e;
                    continue;
                }
            }
            let mut mode = COPY_RANGE.to_be_bytes().to_vec();
            mode.extend_from_slice(&[NFULNL_COPY_PACKET, 0]);
            // One packet per message, sent at once (not batched for a second).
            let qthresh = 1u32.to_be_bytes();
            exchange(
                &socket,
                ULOG_MSG_CONFIG,
                seq + 0x1_0000,
                group,
                &[(NFULA_CFG_MODE, &mode), (NFULA_CFG_QTHRESH, &qthresh)],
            )
            .await
            .map_err(|source| EgressError::NatLog {
                step: "configuring the NFLOG group",
                source,
            })?;
            return Ok(Self { socket, group });
        }
        Err(EgressError::NatLog {
            step: "binding a free NFLOG group",
            source: last,
        })
    }

    /// The NFLOG group the sandbox's rules log to.
    pub(crate) fn group(&self) -> u16 {
        self.group
    }

    /// Reads decisions until [`Watcher::finish`].
    pub(crate) fn watch(self, ctx: Shared, sandbox: Ipv4Addr) -> Watcher {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(run(self.socket, ctx, State::new(sandbox), stopped));
        Watcher {
            stop: Some(stop),
            task: Some(task),
        }
    }
}

/// Sends one request and waits for its acknowledgement (other messages,
/// conntrack events, are skipped).
async fn exchange(
    socket: &AsyncFd<OwnedFd>,
    kind: u16,
    seq: u32,
    group: u16,
    attributes: &[(u16, &[u8])],
) -> std::io::Result<()> {
    let msg = request(
        (SUBSYS_ULOG << 8) | kind,
        NLM_F_REQUEST | NLM_F_ACK,
        seq,
        group,
        attributes,
    );
    send(socket.get_ref().as_raw_fd(), &msg, MsgFlags::empty()).map_err(std::io::Error::from)?;
    let mut buf = vec![0u8; 64 * 1024];
    let wait = async {
        loop {
            let mut ready = socket.readable().await?;
            let got = match ready.try_io(|fd| {
                recv(fd.get_ref().as_raw_fd(), &mut buf, MsgFlags::empty())
                    .map_err(std::io::Error::from)
            }) {
                Ok(got) => got?,
                Err(_would_block) => continue,
            };
            for m in messages(&buf[..got]) {
                if m.kind == NLMSG_ERROR && m.seq == seq {
                    return match error_code(m.body) {
                        Some(0) => Ok(()),
                        Some(code) => Err(std::io::Error::from_raw_os_error(-code)),
                        None => Err(std::io::Error::other("a short netlink error message")),
                    };
                }
            }
        }
    };
    tokio::time::timeout(ACK_TIMEOUT, wait)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("no acknowledgement")))
}

/// Ends one sandbox's watcher: drains what the kernel sent, reports the
/// connections still tracked and deletes them.
#[derive(Debug)]
pub(crate) struct Watcher {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Watcher {
    pub(crate) async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return;
        };
        let abort = task.abort_handle();
        if tokio::time::timeout(FINISH_TIMEOUT, task).await.is_err() {
            abort.abort();
            tracing::warn!("the last decisions of a full sandbox were not read in time");
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn run(
    socket: AsyncFd<OwnedFd>,
    ctx: Shared,
    mut state: State,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            ready = socket.readable() => {
                let Ok(mut ready) = ready else { return };
                let read = ready.try_io(|fd| {
                    recv(fd.get_ref().as_raw_fd(), &mut buf, MsgFlags::empty())
                        .map_err(std::io::Error::from)
                });
                if let Ok(read) = read {
                    receive(&ctx, &mut state, read, &buf);
                }
            }
            _ = &mut stopped => break,
        }
    }
    // The sandbox is gone: what is queued is all there is.
    loop {
        let read = recv(
            socket.get_ref().as_raw_fd(),
            &mut buf,
            MsgFlags::MSG_DONTWAIT,
        )
        .map_err(std::io::Error::from);
        if matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
            break;
        }
        receive(&ctx, &mut state, read, &buf);
    }
    drop(socket);
    let sandbox = state.sandbox;
    let dumped = tokio::task::spawn_blocking(move || flush_tracked(sandbox)).await;
    let now = Instant::now();
    match dumped {
        Ok(Ok(entries)) => {
            for t in entries {
                if let Some(decision) = state.closed(&t, now) {
                    ctx.record(decision);
                }
            }
        }
        Ok(Err(e)) => {
            tracing::warn!(sandbox_id = %ctx.sandbox_id, error = %paddock_proto::error_chain(&e), "reading the full sandbox's last connections");
        }
        Err(e) => {
            tracing::warn!(sandbox_id = %ctx.sandbox_id, error = %e, "reading the full sandbox's last connections");
        }
    }
    if state.untracked > 0 || state.lost > 0 {
        tracing::warn!(sandbox_id = %ctx.sandbox_id, untracked = state.untracked, lost = state.lost, "connections of a full sandbox without a decision");
    }
}

fn receive(ctx: &Shared, state: &mut State, read: std::io::Result<usize>, buf: &[u8]) {
    match read {
        Ok(n) => {
            for decision in state.datagram(&buf[..n.min(buf.len())], Instant::now()) {
                ctx.record(decision);
            }
        }
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOBUFS) => {
            // The kernel dropped messages: the buffer was full.
            state.lost += 1;
            if state.lost.is_power_of_two() {
                tracing::warn!(sandbox_id = %ctx.sandbox_id, lost = state.lost, "netfilter messages of a full sandbox lost: the reader is behind");
            }
        }
        Err(_) => {}
    }
}

/// The conntrack entries whose original source is `sandbox`, each deleted
/// after it was read (so a later sandbox on the same address inherits
/// none). Blocking: run off the runtime's workers.
fn flush_tracked(sandbox: Ipv4Addr) -> Result<Vec<Tracked>, EgressError> {
    let fail = |step| {
        move |e: nix::errno::Errno| EgressError::NatLog {
            step,
            source: std::io::Error::from(e),
        }
    };
    let fd = netlink_socket(0)?;
    let deadline = Instant::now() + FINISH_TIMEOUT;
    let dump = request(
        (SUBSYS_CTNETLINK << 8) | CT_MSG_GET,
        NLM_F_REQUEST | NLM_F_DUMP,
        1,
        0,
        &[],
    );
    send(fd.as_raw_fd(), &dump, MsgFlags::empty())
        .map_err(fail("asking for conntrack's entries"))?;
    let mut found = Vec::new();
    // (raw CTA_TUPLE_ORIG, id) of each entry to delete
    let mut doomed: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    'dump: loop {
        let n = match recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN) => {
                if Instant::now() >= deadline {
                    return Err(EgressError::NatLog {
                        step: "reading conntrack's entries",
                        source: std::io::Error::other("no end within the timeout"),
                    });
                }
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(e) => return Err(fail("reading conntrack's entries")(e)),
        };
        for m in messages(&buf[..n]) {
            if m.kind == NLMSG_DONE || m.kind == NLMSG_ERROR {
                break 'dump;
            }
            if m.kind != (SUBSYS_CTNETLINK << 8) | CT_MSG_NEW {
                continue;
            }
            let body = nf_attrs(m.body);
            let t = tracked(body);
            if t.src == Some(sandbox) {
                if let Some(tuple) = attr(body, CTA_TUPLE_ORIG) {
                    doomed.push((tuple.to_vec(), t.id));
                }
                found.push(t);
            }
        }
    }
    for (i, (tuple, id)) in doomed.iter().enumerate() {
        let id = id.to_be_bytes();
        let del = request(
            (SUBSYS_CTNETLINK << 8) | CT_MSG_DELETE,
            NLM_F_REQUEST,
            u32::try_from(i).unwrap_or(0) + 2,
            0,
            &[(CTA_TUPLE_ORIG | NLA_F_NESTED, tuple), (CTA_ID, &id)],
        );
        if let Err(e) = send(fd.as_raw_fd(), &del, MsgFlags::empty()) {
            tracing::debug!(error = %e, "deleting a conntrack entry of a full sandbox");
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

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
