//! Network policy scenarios, all traffic inside namespaces the tests make.
//!
//! --network none (the default): loopback only, the host unreachable.
//! --network allow:...: only listed destinations, through the host-side
//! egress proxy, which resolves names itself and refuses loopback, private,
//! metadata and the host's own addresses after resolution.
//! --network full: NAT through the host (TCP, UDP), the address guard as host
//! packet filter rules: never the host's loopback, services or addresses,
//! private ranges or the metadata address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};

use paddock_proto::NetworkPolicy;
use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::{RunJson, SandboxRun};
use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};

const PROBE: &str = "paddock-test-probe";

fn interfaces(text: &str) -> BTreeSet<String> {
    text.lines().map(|l| l.trim().to_owned()).collect()
}

/// A non-blocking listener on the host loopback; `accepted()` says whether
/// anything connected.
struct HostListener(TcpListener);

impl HostListener {
    fn on(ip: &str) -> Self {
        let l = TcpListener::bind((ip, 0)).unwrap();
        l.set_nonblocking(true).unwrap();
        Self(l)
    }

    fn new() -> Self {
        Self::on("127.0.0.1")
    }

    fn addr(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn accepted(&self) -> bool {
        self.0.accept().is_ok()
    }
}

/// Two test hosts (good.test allowed, other.test not) and the DNS the
/// proxy asks.
struct World {
    good: TestHost,
    other: TestHost,
    dns: TestDns,
}

impl World {
    fn new() -> Self {
        let good = TestHost::start("good", DocRange::Net2, 8080, None).unwrap();
        let other = TestHost::start("other", DocRange::Net3, 8080, None).unwrap();
        let dns = TestDns::start().unwrap();
        dns.set("good.test", &[good.ip]);
        dns.set("other.test", &[other.ip]);
        Self { good, other, dns }
    }

    fn run(&self, policy: &str, script: &str) -> (String, i32, String) {
        let (json, code) = self.run_json(policy, script);
        (json.stdout, code, json.stderr)
    }

    fn run_json(&self, policy: &str, script: &str) -> (RunJson, i32) {
        let (json, run) = SandboxRun::shell(script)
            .option(&self.dns.option())
            .option(&self.good.allow_option())
            .option(&self.other.allow_option())
            .network(policy)
            .timeout_secs(30)
            .run_json();
        assert!(json.error.is_none(), "{json:?}");
        assert_eq!(
            json.enforcement().network,
            policy.parse::<NetworkPolicy>().unwrap(),
            "the policy in force"
        );
        (json, run.code())
    }
}

/// `curl` printing the HTTP status and the body; `-x ''` when `direct`.
fn curl(url: &str, direct: bool) -> String {
    let bypass = if direct { "--noproxy '*' " } else { "" };
    format!("curl -sS -m 10 {bypass}-w ' status=%{{http_code}}\\n' {url}; echo \"rc=$?\"")
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
fn allowlist_reaches_the_listed_host_by_name_and_refuses_others_with_a_403() {
    require_root();
    let world = World::new();
    let script = [
        curl("http://good.test:8080/", false),
        curl("http://other.test:8080/", false),
        curl(&format!("http://{}/", world.other.addr()), false),
        "env | grep -c '^HTTP_PROXY=http://127.0.0.1:3128$'".to_owned(),
    ]
    .join("; ");
    let (json, code) = world.run_json("allow:good.test:8080", &script);
    let (out, err) = (&json.stdout, &json.stderr);
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "hello from good", "{out}");
    assert_eq!(lines[1], " status=200");
    assert!(
        lines[3].starts_with(
            "paddock egress: other.test:8080 is not allowed by the sandbox's network policy"
        ),
        "{out}"
    );
    assert_eq!(lines[4], " status=403");
    assert!(
        out.contains(&format!(
            "paddock egress: {} is not allowed",
            world.other.addr()
        )),
        "an IP literal not listed is refused: {out}"
    );
    assert_eq!(
        lines.last(),
        Some(&"1"),
        "the proxy variables are set: {out}"
    );
    assert_eq!(world.good.connections(), 1);
    assert_eq!(
        world.other.connections(),
        0,
        "the refused host saw a connection"
    );
    // Every decision is reported: the allowed one with its bytes, the
    // denied ones with the reason.
    let decisions: Vec<(bool, &str, u16)> = json
        .egress
        .iter()
        .map(|d| (d.allowed, d.host.as_str(), d.port))
        .collect();
    let other = world.other.ip.to_string();
    assert_eq!(
        decisions,
        [
            (true, "good.test", 8080),
            (false, "other.test", 8080),
            (false, other.as_str(), 8080)
        ],
        "{:?}",
        json.egress
    );
    assert!(json.egress[0].bytes_in > 0 && json.egress[0].bytes_out > 0);
    assert_eq!(json.egress[0].via, "http");
    assert!(
        json.egress[1]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("not allowed by the sandbox's network policy"))
    );
}

#[test]
fn https_and_any_tcp_go_through_connect_to_listed_host_ports_only() {
    require_root();
    let world = World::new();
    // -p: curl tunnels through CONNECT even for http://, as it does for https.
    let script = [
        "curl -sS -m 10 -p http://good.test:8080/; echo \"rc=$?\"".to_owned(),
        "curl -sS -m 10 -p http://other.test:8080/; echo \"rc=$?\"".to_owned(),
    ]
    .join("; ");
    let (out, _, err) = world.run("allow:good.test:8080", &script);
    assert!(out.starts_with("hello from good\nrc=0\n"), "{out}\n{err}");
    assert!(
        out.contains("CONNECT tunnel failed, response 403") || out.contains("rc=56"),
        "{out}\n{err}"
    );
    assert_eq!(world.other.connections(), 0);
}

#[test]
fn the_guard_refuses_loopback_metadata_private_and_host_addresses_even_when_listed() {
    require_root();
    let world = World::new();
    let loopback = HostListener::new();
    let host_own = HostListener::on(&world.good.host_side.to_string());
    world
        .dns
        .set("private.test", &[Ipv4Addr::new(10, 200, 0, 9)]);
    world.dns.set("loopback.test", &[Ipv4Addr::LOCALHOST]);
    // A host on a documentation range the test does not name: refused.
    let docs = TestHost::start("docs", DocRange::Net3, 8080, None).unwrap();
    world.dns.set("docs.test", &[docs.ip]);
    let policy = format!(
        "allow:127.0.0.1:{lp},169.254.169.254:80,{host}:{hp},private.test:8080,loopback.test:{lp},docs.test:8080",
        lp = loopback.port(),
        host = world.good.host_side,
        hp = host_own.port(),
    );
    let script = [
        curl(&format!("http://127.0.0.1:{}/", loopback.port()), false),
        curl("http://169.254.169.254/latest/meta-data/", false),
        curl(
            &format!("http://{}:{}/", world.good.host_side, host_own.port()),
            false,
        ),
        curl("http://private.test:8080/", false),
        curl(&format!("http://loopback.test:{}/", loopback.port()), false),
        curl("http://docs.test:8080/", false),
    ]
    .join("; ");
    // curl skips the proxy for 127.0.0.1 (NO_PROXY): ask it not to here.
    let script = format!("export NO_PROXY= no_proxy=; {script}");
    let (out, _, err) = world.run(&policy, &script);
    // the host's own address, on a documentation range too
    let host_own_why = format!(
        "{} is documentation, TEST-NET-2 (RFC 5737)",
        world.good.host_side
    );
    for why in [
        "127.0.0.1 is loopback (RFC 1122)",
        "169.254.169.254 is the cloud metadata address",
        host_own_why.as_str(),
        "private.test resolves to a refused address: private (RFC 1918)",
        "loopback.test resolves to a refused address: loopback (RFC 1122)",
        "docs.test resolves to a refused address: documentation, TEST-NET-3 (RFC 5737)",
    ] {
        assert!(out.contains(why), "missing {why:?} in:\n{out}\n{err}");
    }
    assert_eq!(out.matches("status=403").count(), 6, "{out}");
    // A refusal never tells the sandbox a name's real address.
    assert!(!out.contains("10.200.0.9"), "{out}");
    assert!(!out.contains(&docs.ip.to_string()), "{out}");
    assert_eq!(docs.connections(), 0, "the documentation range was reached");
    assert!(!loopback.accepted(), "the host loopback got a connection");
    assert!(
        !host_own.accepted(),
        "the host's own address got a connection"
    );
}

#[test]
fn a_name_that_rebinds_to_a_private_address_is_refused_at_connect() {
    require_root();
    let world = World::new();
    world.dns.set(
        "rebind.test",
        &[world.good.ip, Ipv4Addr::new(192, 168, 77, 7)],
    );
    let script = [
        curl("http://rebind.test:8080/", false),
        curl("http://rebind.test:8080/", false),
    ]
    .join("; ");
    let (out, _, err) = world.run("allow:rebind.test:8080", &script);
    assert!(
        out.starts_with("hello from good\n status=200\n"),
        "{out}\n{err}"
    );
    assert!(
        out.contains("rebind.test resolves to a refused address: private (RFC 1918)"),
        "{out}\n{err}"
    );
    assert!(!out.contains("192.168.77.7"), "{out}");
    assert_eq!(world.good.connections(), 1);
}

#[test]
fn a_program_ignoring_the_proxy_variables_is_proxied_or_refused() {
    require_root();
    let world = World::new();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let loopback = HostListener::new();
    let script = [
        "getent hosts good.test; echo \"rc=$?\"".to_owned(),
        "getent hosts other.test; echo \"rc=$?\"".to_owned(),
        curl("http://good.test:8080/", true),
        curl(&format!("http://{}/", world.other.addr()), true),
        format!("{probe} connect {}", loopback.addr()),
    ]
    .join("; ");
    let (json, _) = SandboxRun::shell(&script)
        .workspace(ws.path())
        .option(&world.dns.option())
        .option(&world.good.allow_option())
        .option(&world.other.allow_option())
        .network("allow:good.test:8080")
        .timeout_secs(30)
        .run_json();
    let out = json.stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("198.18."), "a stand-in address: {out}");
    assert_eq!(lines[1], "rc=0");
    assert_eq!(lines[2], "rc=2", "other.test does not resolve: {out}");
    assert_eq!(lines[3], "hello from good", "{out}\n{}", json.stderr);
    assert!(!out.contains("hello from other"), "{out}");
    assert_eq!(
        world.other.connections(),
        0,
        "the unlisted host saw a connection"
    );
    assert!(!loopback.accepted(), "the host loopback got a connection");
    assert_eq!(world.good.connections(), 1);
}

#[test]
fn full_is_nat_carrying_tcp_and_udp_with_the_guard_on_its_packets() {
    require_root();
    let world = World::new();
    let private = TestHost::start("private", DocRange::Private, 8080, None).unwrap();
    let echo = world.good.udp_echo(7007).unwrap();
    let private_echo = private.udp_echo(7007).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let loopback = HostListener::new();
    let host_own = HostListener::on(&world.good.host_side.to_string());
    let script = [
        format!("{probe} interfaces"),
        // A name through the sandbox's resolver (the real address), then
        // straight out: no proxy variables with full.
        curl("http://other.test:8080/", false),
        "env | grep -ci '^http_proxy=' ; true".to_owned(),
        curl(&format!("http://{}/", world.good.addr()), true),
        format!("{probe} udp {}:7007", world.good.ip),
        format!("{probe} ping {}", world.good.ip),
        format!("{probe} connect {}", loopback.addr()),
        format!("{probe} connect {}", host_own.addr()),
        format!("{probe} connect {}", private.addr()),
        format!("{probe} udp {}:7007", private.ip),
        format!("{probe} connect 169.254.169.254:80"),
        // a name of an internal address: never answered with it
        "getent hosts internal.test; echo \"dns rc=$?\"".to_owned(),
    ]
    .join("; ");
    world
        .dns
        .set("internal.test", &[Ipv4Addr::new(10, 200, 0, 9)]);
    let (json, _) = SandboxRun::shell(&script)
        .workspace(ws.path())
        .option(&world.dns.option())
        .option(&world.good.allow_option())
        .option(&world.other.allow_option())
        .network("full")
        .timeout_secs(60)
        .run_json();
    let out = &json.stdout;
    let err = &json.stderr;
    assert_eq!(json.enforcement().network, NetworkPolicy::Full);
    assert!(json.enforcement().namespaces.contains(&"net".to_owned()));
    assert!(
        json.enforcement()
            .egress_path
            .as_deref()
            .is_some_and(|p| p.starts_with("NAT through the host")),
        "{:?}",
        json.enforcement().egress_path
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        interfaces(&lines[..2].join("\n")),
        BTreeSet::from(["lo".to_owned(), "egress0".to_owned()]),
        "{out}\n{err}"
    );
    assert!(
        out.contains("hello from other\n status=200"),
        "{out}\n{err}"
    );
    assert_eq!(lines[5], "0", "no proxy variables with full: {out}");
    assert!(out.contains("hello from good\n status=200"), "{out}");
    assert!(
        out.contains(&format!("udp echo {}:7007", world.good.ip)),
        "UDP goes out: {out}\n{err}"
    );
    assert_eq!(echo.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        out.contains(&format!("ping {}\n", world.good.ip)),
        "ICMP echo goes out: {out}"
    );
    // 127.0.0.1 inside is the sandbox's own loopback; the others are
    // refused by the host's rules with a reset, not left to time out.
    for refused in [loopback.addr(), host_own.addr(), private.addr()] {
        assert!(
            out.contains(&format!("failed {refused}: Connection refused")),
            "{refused} not refused: {out}"
        );
    }
    assert!(
        out.contains("failed 169.254.169.254:80: Connection refused"),
        "{out}"
    );
    assert!(
        out.contains(&format!("udp failed {}:7007", private.ip)),
        "{out}"
    );
    assert!(!loopback.accepted(), "full reached the host loopback");
    assert!(!host_own.accepted(), "full reached a host address");
    assert_eq!(private.connections(), 0, "full reached the private host");
    assert_eq!(private_echo.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Routed, not proxied, and still every connection and refusal is a
    // decision: the HTTP one with its bytes, one denied per refused attempt.
    let good_ip = world.good.ip.to_string();
    let web = json
        .egress
        .iter()
        .find(|d| d.via == "nat" && d.allowed && d.host == good_ip && d.port == 8080)
        .unwrap_or_else(|| panic!("no decision for the good host: {:#?}", json.egress));
    assert!(web.bytes_in > 0 && web.bytes_out > 0, "{web:?}");
    let mut denied: Vec<(String, u16)> = json
        .egress
        .iter()
        .filter(|d| !d.allowed)
        .map(|d| (d.host.clone(), d.port))
        .collect();
    denied.sort();
    // the resolver may ask twice for the refused name
    denied.dedup();
    let mut expected = vec![
        (world.good.host_side.to_string(), host_own.port()),
        (private.ip.to_string(), 8080),
        (private.ip.to_string(), 7007),
        ("169.254.169.254".to_owned(), 80),
        ("internal.test".to_owned(), 53),
    ];
    expected.sort();
    assert_eq!(denied, expected, "{:#?}", json.egress);
    assert!(
        json.egress
            .iter()
            .filter(|d| !d.allowed && d.host != "internal.test")
            .all(|d| d.via == "nat" && d.reason.is_some()),
        "{:#?}",
        json.egress
    );
    // The sandbox's DNS never told it the internal address.
    assert!(out.contains("dns rc=2"), "{out}");
    assert!(!out.contains("10.200.0.9"), "{out}");
    assert!(
        json.egress.iter().any(|d| d.host == "internal.test"
            && d.via == "dns"
            && d.reason.as_deref()
                == Some("the name resolves only to refused addresses: private (RFC 1918), other sandboxes' NAT pool in it")),
        "{:#?}",
        json.egress
    );
    // Nothing of the sandbox is left on the host once it is gone (other
    // tests' sandboxes may be running beside it: only its own id counts).
    let left: Vec<String> = paddock_tests::host::network_state(None)
        .into_iter()
        .filter(|l| l.contains(&json.sandbox_id))
        .collect();
    assert!(left.is_empty(), "left on the host: {left:?}");
}

#[test]
fn a_connection_carries_only_the_name_it_was_admitted_for() {
    require_root();
    let world = World::new();
    let dir = tempfile::tempdir().unwrap();
    let ca = paddock_tests::tlshost::TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    // One TLS front end serving two names, as a CDN does.
    let tls =
        TestHost::start_tls("tls", DocRange::Net2, 8443, ca.server("tls.test").unwrap()).unwrap();
    world.dns.set("tls.test", &[tls.ip]);
    let fronted = "-H 'Host: other.test'";
    let script = [
        // plain HTTP: the explicit proxy, a CONNECT tunnel, the transparent path
        curl(&format!("{fronted} http://good.test:8080/"), false),
        curl(&format!("{fronted} -p http://good.test:8080/"), false),
        curl(&format!("{fronted} http://good.test:8080/"), true),
        // TLS naming another host: through CONNECT, then transparently
        "echo | openssl s_client -proxy 127.0.0.1:3128 -connect tls.test:8443 \
         -servername other.test >/dev/null 2>&1; echo \"rc=$?\""
            .to_owned(),
        "echo | openssl s_client -connect tls.test:8443 -servername other.test \
         >/dev/null 2>&1; echo \"rc=$?\""
            .to_owned(),
        // the admitted name still goes through, both ways
        "echo | openssl s_client -proxy 127.0.0.1:3128 -connect tls.test:8443 \
         -servername tls.test >/dev/null 2>&1; echo \"rc=$?\""
            .to_owned(),
        curl("http://good.test:8080/", false),
    ]
    .join("; ");
    let (json, run) = SandboxRun::shell(&script)
        .option(&world.dns.option())
        .option(&world.good.allow_option())
        .option(&tls.allow_option())
        .network("allow:good.test:8080,tls.test:8443")
        .timeout_secs(60)
        .run_json();
    let out = &json.stdout;
    assert_eq!(run.code(), 0, "{out}\n{}", json.stderr);
    assert_eq!(
        out.matches("the Host header names other.test, not good.test")
            .count(),
        3,
        "{out}\n{}",
        json.stderr
    );
    assert_eq!(out.matches("hello from good").count(), 1, "{out}");
    assert!(
        out.ends_with("hello from good\n status=200\nrc=0\n"),
        "{out}"
    );
    // The fronted requests never reached the host: only the last one did.
    assert_eq!(world.good.heads().len(), 1, "{:?}", world.good.heads());
    assert!(
        world.good.heads()[0].contains("Host: good.test"),
        "{:?}",
        world.good.heads()
    );
    // The handshakes naming another host were cut before a byte of them
    // left (the proxy had connected, a TCP connection names nothing); the
    // one naming tls.test went through.
    assert!(out.contains("rc=1\nrc=1\nrc=0\nhello from good"), "{out}");
    let sni =
        "the TLS server name other.test is not tls.test, which the connection was admitted for";
    let denied: Vec<(&str, &str)> = json
        .egress
        .iter()
        .filter(|d| !d.allowed)
        .map(|d| (d.via.as_str(), d.reason.as_deref().unwrap_or("")))
        .collect();
    let via = |v: &str, why: &str| {
        denied
            .iter()
            .filter(|(d, r)| *d == v && r.contains(why))
            .count()
    };
    assert_eq!(
        via("http", "the Host header names other.test"),
        1,
        "{denied:?}"
    );
    assert_eq!(
        via("connect", "the Host header names other.test"),
        1,
        "{denied:?}"
    );
    assert_eq!(
        via("transparent", "the Host header names other.test"),
        1,
        "{denied:?}"
    );
    assert_eq!(via("connect", sni), 1, "{denied:?}");
    assert_eq!(via("transparent", sni), 1, "{denied:?}");
    assert_eq!(denied.len(), 5, "{denied:?}");
}
