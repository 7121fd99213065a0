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
//! The socket and its watcher are here; the wire format (nlmsghdr,
//! nfgenmsg, nested attributes, every length checked against what was
//! received) is `wire.rs`, what the messages mean and the state between
//! them `events.rs`.

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

mod events;
mod wire;

use crate::EgressError;
use crate::proxy::connect::Shared;
use events::{State, Tracked, tracked};
use wire::*;

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

/// The NFLOG prefix of the rule in `PADDOCK-IN` (a host address).
pub const PREFIX_HOST: &str = "paddock-host";
/// The NFLOG prefix of the guard's rules in the sandbox's chain.
pub const PREFIX_GUARD: &str = "paddock-guard";

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
