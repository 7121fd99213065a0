//! --network none (the default): loopback only, the host unreachable.
//! --network full: the host's network, by explicit opt-in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::TcpListener;

use paddock_proto::NetworkPolicy;
use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

const PROBE: &str = "paddock-test-probe";

fn interfaces(text: &str) -> BTreeSet<String> {
    text.lines().map(|l| l.trim().to_owned()).collect()
}

fn host_interfaces() -> BTreeSet<String> {
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap();
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// A non-blocking listener on the host loopback; `accepted()` says whether
/// anything connected.
struct HostListener(TcpListener);

impl HostListener {
    fn new() -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Self(l)
    }

    fn addr(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }

    fn accepted(&self) -> bool {
        self.0.accept().is_ok()
    }
}

#[test]
fn none_has_only_loopback_and_loopback_works() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let run = SandboxRun::shell(&format!("{probe} interfaces && {probe} loopback"))
        .workspace(ws.path())
        .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    let out = run.stdout_str();
    let (ifaces, rest) = out.split_once("loopback ok").unwrap();
    assert_eq!(interfaces(ifaces), BTreeSet::from(["lo".to_owned()]));
    assert!(rest.contains("127.0.0.1"));
}

#[test]
fn none_cannot_reach_a_listener_on_the_host_loopback() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let listener = HostListener::new();
    let run = SandboxRun::new([probe.as_str(), "connect", &listener.addr()])
        .workspace(ws.path())
        .network("none")
        .run();
    assert_eq!(run.code(), 1, "stdout: {}", run.stdout_str());
    assert!(!listener.accepted(), "the host listener got a connection");
}

#[test]
fn full_is_the_hosts_network() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let listener = HostListener::new();
    let script = format!("{probe} interfaces && {probe} connect {}", listener.addr());
    let (json, run) = SandboxRun::shell(&script)
        .workspace(ws.path())
        .network("full")
        .run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    assert!(listener.accepted(), "the host listener got no connection");
    let (ifaces, _) = json.stdout.split_once("connected").unwrap();
    assert_eq!(interfaces(ifaces), host_interfaces());
    assert_eq!(json.enforcement().network, NetworkPolicy::Full);
}
