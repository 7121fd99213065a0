//! `full` as NAT, at the packet level: the egress of a `full` sandbox made
//! directly (no guest), with traffic sent from inside its namespace by the
//! test (which, unlike the sandbox, may add an address or open a raw
//! socket there): ICMP goes out, a spoofed source does not, one sandbox
//! cannot reach another, every connection and every refusal of the guard
//! is a decision, and nothing is left once it stops or, after a crash,
//! once the restarted owner reconciles.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use paddock_core::sandbox::{SandboxPolicy, SandboxSpec};
use paddock_egress::{Egress, EgressConfig, EgressDecision};
use paddock_proto::NetworkPolicy;
use paddock_tests::backends::{self, Kind};
use paddock_tests::host::{network_state, require_root};
use paddock_tests::nethost::{DocRange, TestHost};
use tokio::sync::mpsc::Receiver;

const OWNER: &str = "paddock-nat-test";

fn id(name: &str) -> String {
    format!("sb-nattest-{}-{name}", std::process::id())
}

/// A `full` egress whose guard lets `hosts` through (test hosts on
/// documentation addresses, refused otherwise).
async fn full(sandbox_id: &str, hosts: &[&TestHost]) -> (Egress, Receiver<EgressDecision>) {
    let config = EgressConfig {
        allowed_private: hosts.iter().map(|h| h.ip.into()).collect(),
        ..EgressConfig::default()
    };
    Egress::start(sandbox_id, OWNER, NetworkPolicy::Full, Vec::new(), config)
        .await
        .unwrap()
}

/// Stops `egress` and returns every decision it reported.
async fn stop(egress: Egress, mut decisions: Receiver<EgressDecision>) -> Vec<EgressDecision> {
    egress.stop().await;
    let mut all = Vec::new();
    while let Ok(Some(d)) = tokio::time::timeout(Duration::from_secs(2), decisions.recv()).await {
        all.push(d);
    }
    all
}

/// One HTTP/1.0 GET; the bytes of the answer.
fn http_get(to: SocketAddr) -> usize {
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\nHost: good\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    answer.len()
}

/// Whether a TCP connect to `to` is refused (a reset, not a timeout).
fn refused(to: SocketAddr) -> bool {
    let started = Instant::now();
    let got = TcpStream::connect_timeout(&to, Duration::from_secs(5)).map_err(|e| e.kind());
    got.err() == Some(std::io::ErrorKind::ConnectionRefused)
        && started.elapsed() < Duration::from_secs(2)
}

/// Runs `f` on a thread of its own inside the namespace of `egress`.
fn inside<T: Send + 'static>(egress: &Egress, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = egress.netns_path().unwrap();
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&path).unwrap();
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        f()
    })
    .join()
    .unwrap()
}

/// One ICMP echo over a raw socket; true when the reply came within 2 s.
fn ping(dest: Ipv4Addr) -> bool {
    use nix::sys::socket::{
        AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn, recv, sendto,
        setsockopt, socket, sockopt,
    };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Raw,
        SockFlag::empty(),
        SockProtocol::Icmp,
    )
    .unwrap();
    setsockopt(
        &fd,
        sockopt::ReceiveTimeout,
        &nix::sys::time::TimeVal::new(0, 200_000),
    )
    .unwrap();
    let mut packet = [8u8, 0, 0, 0, 0x50, 0x44, 0, 1, b'p', b'd', b'k', b'!'];
    let sum = packet
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    packet[2..4].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    let to = SockaddrIn::from(SocketAddrV4::new(dest, 0));
    sendto(fd.as_raw_fd(), &packet, &to, MsgFlags::empty()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = [0u8; 1500];
    while Instant::now() < deadline {
        let Ok(n) = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()) else {
            continue;
        };
        let ihl = usize::from(buf[0] & 0x0f) * 4;
        let from = Ipv4Addr::new(buf[12], buf[13], buf[14], buf[15]);
        if n >= ihl + 8 && from == dest && buf[ihl] == 0 && buf[ihl + 4..ihl + 6] == [0x50, 0x44] {
            return true;
        }
    }
    false
}

/// Sends one datagram from `source` (port 0: any) and waits 1 s for its echo.
fn udp_from(source: Ipv4Addr, to: SocketAddr) -> bool {
    let socket = UdpSocket::bind((source, 0)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    socket.send_to(b"nat", to).unwrap();
    let mut buf = [0u8; 16];
    socket.recv_from(&mut buf).is_ok()
}

/// Packets the first rule of the sandbox's chain (`! -s ADDRESS -j DROP`) dropped.
fn spoof_drops(sandbox_id: &str) -> u64 {
    let chain = paddock_egress::nat::host_chain_name(sandbox_id);
    let out = Command::new("iptables")
        .args(["-w", "5", "-L", &chain, "-v", "-x", "-n"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rule = text.lines().nth(2).unwrap_or_default();
    assert!(rule.contains("DROP") && rule.contains('!'), "{text}");
    rule.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn icmp_goes_out_a_spoofed_source_does_not_and_sandboxes_cannot_reach_each_other() {
    require_root();
    let good = TestHost::start("good", DocRange::Net2, 8080, None).unwrap();
    let echo = good.udp_echo(7008).unwrap();
    let (a_id, b_id) = (id("a"), id("b"));
    let (a, a_decisions) = full(&a_id, &[&good]).await;
    let (b, b_decisions) = full(&b_id, &[&good]).await;
    let a_address = a.nat_address().unwrap();
    let b_address = b.nat_address().unwrap();
    assert_ne!(a_address, b_address, "each sandbox its own /30");
    assert!(
        !network_state(Some(&a_id)).is_empty(),
        "the veth and rules are there"
    );

    let target = good.ip;
    assert!(inside(&a, move || ping(target)), "ICMP echo through NAT");
    let to = SocketAddr::from((good.ip, 7008));
    assert!(inside(&a, move || udp_from(Ipv4Addr::UNSPECIFIED, to)));
    assert_eq!(echo.load(Ordering::SeqCst), 1);

    // A source the sandbox does not own never leaves its veth.
    let spoofed = Ipv4Addr::new(203, 0, 113, 250);
    let netns = a.netns_path().unwrap();
    let name = netns.file_name().unwrap().to_str().unwrap().to_owned();
    ip(&[
        "-n",
        &name,
        "addr",
        "add",
        &format!("{spoofed}/32"),
        "dev",
        "egress0",
    ]);
    assert!(
        !inside(&a, move || udp_from(spoofed, to)),
        "a spoofed datagram got an answer"
    );
    assert_eq!(
        echo.load(Ordering::SeqCst),
        1,
        "the spoofed datagram reached the host"
    );
    assert!(
        spoof_drops(&a_id) >= 1,
        "dropped by the anti-spoofing rule, not by chance"
    );

    // B listens on its own address; A is refused at once (a reset), and B
    // never sees the connection.
    let listener = inside(&b, move || {
        let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 8099)).unwrap();
        l.set_nonblocking(true).unwrap();
        l
    });
    let started = Instant::now();
    let refused = inside(&a, move || {
        TcpStream::connect_timeout(&SocketAddr::from((b_address, 8099)), Duration::from_secs(5))
            .map_err(|e| e.kind())
    });
    assert_eq!(refused.err(), Some(std::io::ErrorKind::ConnectionRefused));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a refusal, not a timeout"
    );
    assert!(listener.accept().is_err(), "one sandbox reached another");

    let a_log = stop(a, a_decisions).await;
    let b_log = stop(b, b_decisions).await;
    // The refused connection to B is A's denied decision, naming the
    // guard's range; B saw nothing, so it decided nothing.
    let denied: Vec<&EgressDecision> = a_log.iter().filter(|d| !d.allowed).collect();
    assert_eq!(denied.len(), 1, "{a_log:#?}");
    assert_eq!(
        (
            denied[0].host.as_str(),
            denied[0].port,
            denied[0].via.as_str()
        ),
        (b_address.to_string().as_str(), 8099, "nat")
    );
    assert!(
        denied[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("10.0.0.0/8")),
        "{denied:?}"
    );
    // The ICMP echo and the datagram went out: allowed, with their bytes.
    let good_ip = good.ip.to_string();
    let allowed: Vec<(&str, u16)> = a_log
        .iter()
        .filter(|d| d.allowed && d.host == good_ip)
        .map(|d| (d.host.as_str(), d.port))
        .collect();
    assert!(
        allowed.contains(&(good_ip.as_str(), 0)) && allowed.contains(&(good_ip.as_str(), 7008)),
        "{a_log:#?}"
    );
    assert!(
        a_log
            .iter()
            .filter(|d| d.allowed)
            .all(|d| d.bytes_out > 0 && d.bytes_in > 0),
        "{a_log:#?}"
    );
    assert!(b_log.is_empty(), "{b_log:#?}");
    for sandbox in [&a_id, &b_id] {
        let left = network_state(Some(sandbox));
        assert!(left.is_empty(), "left after stop: {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_owners_full_sandbox_is_reaped_veth_rules_and_namespace() {
    require_root();
    let owner = backends::private_owner(Kind::Native).await;
    let spec = SandboxSpec::with_policy(SandboxPolicy {
        network: NetworkPolicy::Full,
        ..SandboxPolicy::default()
    });
    let sb = owner.create(spec).await.unwrap();
    let sandbox = sb.info().id.clone();
    let before = network_state(Some(sandbox.as_str()));
    assert!(
        before.iter().any(|l| l.starts_with("veth "))
            && before.iter().any(|l| l.starts_with("netns ")),
        "{before:?}"
    );
    // The owner "dies": its handle is never destroyed nor dropped.
    std::mem::forget(sb);
    let restarted = backends::private_owner(Kind::Native).await;
    let report = restarted.reap_orphans(&[]).await.unwrap();
    assert!(report.sandboxes_removed.contains(&sandbox), "{report:?}");
    let left = backends::leftovers(Kind::Native, &sandbox).await;
    assert!(left.is_empty(), "left behind after reaping: {left:?}");
}

#[test]
fn a_pool_overlapping_a_host_route_is_refused_clearly() {
    require_root();
    // The private test host's /30 is a route of this host inside 10.250/16.
    let private = TestHost::start("private", DocRange::Private, 8080, None).unwrap();
    let run = paddock_tests::cli::SandboxRun::new(["true"])
        .option("--egress-nat-pool=10.250.0.0/16")
        .network("full")
        .run();
    assert_ne!(run.code(), 0);
    let err = run.stderr_str();
    // Other tests' private hosts share 10.250/16 and may run meanwhile:
    // the refusal names the first overlapping route, this host's or theirs.
    assert!(
        err.contains(
            "the NAT pool 10.250.0.0/16 of network full overlaps the host's route `10.250."
        ),
        "{err}"
    );
    drop(private);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_and_every_refusal_of_full_is_a_decision() {
    require_root();
    let good = TestHost::start("decide", DocRange::Net2, 8080, None).unwrap();
    let sandbox_id = id("decide");
    // A host on a documentation range the guard is not told of: refused.
    let docs = TestHost::start("docs", DocRange::Net3, 8080, None).unwrap();
    let (egress, decisions) = full(&sandbox_id, &[&good]).await;
    let address = egress.nat_address().unwrap();
    let web = SocketAddr::from((good.ip, 8080));
    let host_own = SocketAddr::from((good.host_side, 8081));
    let metadata = SocketAddr::from((Ipv4Addr::new(169, 254, 169, 254), 80));
    let documentation = SocketAddr::from((docs.ip, 8080));
    let got = inside(&egress, move || {
        let bytes = http_get(web);
        (
            bytes,
            refused(host_own),
            refused(metadata),
            refused(documentation),
        )
    });
    assert!(got.0 > 0, "the test host answered");
    assert!(
        got.1 && got.2 && got.3,
        "host address, metadata and documentation refused: {got:?}"
    );
    assert_eq!(docs.connections(), 0, "full reached a documentation range");
    let log = stop(egress, decisions).await;

    let web_decision = log
        .iter()
        .find(|d| d.allowed && d.host == good.ip.to_string() && d.port == 8080)
        .unwrap_or_else(|| panic!("no allowed decision for the test host: {log:#?}"));
    assert_eq!(web_decision.via, "nat");
    assert_eq!(web_decision.reason, None);
    // IP bytes, headers included: more than the HTTP answer the test read.
    assert!(
        web_decision.bytes_in > u64::try_from(got.0).unwrap() && web_decision.bytes_out > 0,
        "{web_decision:?}"
    );
    let denied: Vec<(String, u16, String)> = log
        .iter()
        .filter(|d| !d.allowed)
        .map(|d| (d.host.clone(), d.port, d.reason.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        denied.len(),
        3,
        "one decision per refused attempt: {log:#?}"
    );
    assert_eq!(
        (denied[0].0.as_str(), denied[0].1),
        (good.host_side.to_string().as_str(), 8081)
    );
    assert!(
        denied[0].2.contains("an address of the host itself"),
        "{denied:?}"
    );
    assert_eq!((denied[1].0.as_str(), denied[1].1), ("169.254.169.254", 80));
    assert!(
        denied[1].2.contains("the cloud metadata address"),
        "{denied:?}"
    );
    assert_eq!(
        (denied[2].0.as_str(), denied[2].1, denied[2].2.as_str()),
        (
            docs.ip.to_string().as_str(),
            8080,
            format!(
                "{} is in 203.0.113.0/24: documentation, TEST-NET-3 (RFC 5737) (refused by the NAT's guard)",
                docs.ip
            )
            .as_str()
        )
    );

    let left = network_state(Some(&sandbox_id));
    assert!(left.is_empty(), "left after stop: {left:?}");
    // its connections (the HTTP one in TIME_WAIT) went from conntrack with it
    let table = std::fs::read_to_string("/proc/net/nf_conntrack").unwrap();
    let source = format!("src={address} ");
    assert!(!table.lines().any(|l| l.contains(&source)), "{table}");
}
