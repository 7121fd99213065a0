//! The network cases of the conformance suite: `allowlist` (with a
//! secret) and `full` through the host's egress proxy, DNS and address
//! guard, on every backend. The destinations are test hosts in network
//! namespaces of their own on this machine (`paddock_tests::nethost`),
//! named by a test DNS server the proxy resolves with; nothing leaves it.
//! The microVM reports each case skipped with its reason: a case here
//! boots a sandbox of its own, nine more VM boots under TCG (tens of
//! seconds each), so the same checks run for it in
//! `scenarios::microvm_network`, one VM per policy.

use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::Pin;
use std::sync::OnceLock;

use paddock_core::sandbox::{Sandbox, SandboxPolicy, SandboxSpec};
use paddock_egress::{EgressConfig, Resolver};
use paddock_proto::{EgressDecision, NetworkPolicy, SecretSpec, SecretValue};
use paddock_tests::backends::{self, Kind};
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::tlshost::TestCa;

use super::cases::{Ctx, PROBE, chain, in_workspace, sh};

/// Why the microVM runs these checks elsewhere.
const MICROVM_ELSEWHERE: &str = "the microVM's network checks run in scenarios::microvm_network \
     (one TCG boot per policy, not one per case)";
/// The link-local metadata address of cloud hosts.
const METADATA: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// The secret's value: it must reach api.test only.
const SECRET: &str = "sk-conformance-7f3a9c";

/// The test hosts and DNS every case of this process shares (a process
/// holds at most 63 test hosts).
struct World {
    dns: TestDns,
    good: TestHost,
    other: TestHost,
    private: TestHost,
    api: TestHost,
    ca_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new().unwrap();
        let ca_file = dir.path().join("test-ca.pem");
        ca.write_pem(&ca_file).unwrap();
        let dns = TestDns::start().unwrap();
        let good = TestHost::start("good", DocRange::Net2, 8080, None).unwrap();
        let other = TestHost::start("other", DocRange::Net2, 8080, None).unwrap();
        let private = TestHost::start("private", DocRange::Private, 8080, None).unwrap();
        let api = TestHost::start_tls("api", DocRange::Net3, 443, ca.server("api.test").unwrap())
            .unwrap();
        dns.set("good.test", &[good.ip]);
        dns.set("other.test", &[other.ip]);
        dns.set("private.test", &[private.ip]);
        dns.set("api.test", &[api.ip]);
        World {
            dns,
            good,
            other,
            private,
            api,
            ca_file,
            _dir: dir,
        }
    })
}

/// The operator's settings: the test DNS, the documentation addresses of
/// the test hosts let through the guard (never `private`'s), the test CA.
fn egress_config(w: &World) -> EgressConfig {
    EgressConfig {
        resolver: Resolver::Nameserver(w.dns.addr),
        allowed_private: vec![w.good.ip.into(), w.other.ip.into(), w.api.ip.into()],
        extra_roots: vec![w.ca_file.clone()],
        ..EgressConfig::default()
    }
}

/// A sandbox with `network` (and `secrets`) and the probe staged in its
/// workspace; None after reporting the case skipped on the microVM
/// ([`MICROVM_ELSEWHERE`]).
async fn sandbox(
    ctx: &Ctx,
    case: &str,
    network: &str,
    secrets: Vec<SecretSpec>,
) -> Option<(Box<dyn Sandbox>, String, tempfile::TempDir)> {
    if ctx.kind == Kind::Microvm {
        eprintln!("SKIPPED {case} [{}]: {MICROVM_ELSEWHERE}", ctx.kind.name());
        return None;
    }
    let w = world();
    let backend = backends::connect_with_egress(ctx.kind, egress_config(w))
        .await
        .unwrap_or_else(|e| panic!("[{}] {e}", ctx.kind.name()));
    let ws = backends::workspace(ctx.kind);
    let probe = paddock_tests::bins::stage_in_workspace(ws.path(), PROBE);
    let spec = SandboxSpec {
        policy: SandboxPolicy {
            network: network.parse::<NetworkPolicy>().unwrap(),
            ..in_workspace(&ws).policy
        },
        secrets,
        ..in_workspace(&ws)
    };
    match backend.create(backends::spec_for(ctx.kind, spec)).await {
        Ok(sb) => Some((sb, probe, ws)),
        Err(e) => panic!("[{}] create with {network}: {}", ctx.kind.name(), chain(&e)),
    }
}

/// `probe get URL` inside: exit code and output.
async fn get(sb: &dyn Sandbox, probe: &str, url: &str, extra: &str) -> Answer {
    run(sb, &format!("{probe} get {extra} {url}")).await
}

/// A shell command inside: exit code and stdout + stderr.
async fn run(sb: &dyn Sandbox, script: &str) -> Answer {
    let (code, out, err) = sh(&*sb.guest(), script).await;
    Answer {
        code,
        out: format!("{out}{err}"),
    }
}

/// What a command inside answered.
struct Answer {
    code: i32,
    out: String,
}

impl Answer {
    /// Asserts the command succeeded and its output holds `expected`.
    fn reached(&self, ctx: &Ctx, expected: &str, what: &str) {
        assert!(
            self.code == 0 && self.out.contains(expected),
            "[{}] {what}: {}",
            ctx.kind.name(),
            self.out
        );
    }

    /// Asserts the command failed or its output lacks `forbidden`.
    fn refused(&self, ctx: &Ctx, forbidden: &str, what: &str) {
        assert!(
            self.code != 0 || !self.out.contains(forbidden),
            "[{}] {what}: {}",
            ctx.kind.name(),
            self.out
        );
    }

    /// Asserts the command failed.
    fn failed(&self, ctx: &Ctx, what: &str) {
        assert_ne!(self.code, 0, "[{}] {what}: {}", ctx.kind.name(), self.out);
    }
}

fn decisions(sb: &dyn Sandbox) -> Vec<EgressDecision> {
    sb.egress_log().map(|log| log.list()).unwrap_or_default()
}

/// Destroys `sb` and checks nothing of it is left on the host.
async fn finish(ctx: &Ctx, sb: Box<dyn Sandbox>) {
    let id = sb.info().id.clone();
    sb.destroy().await.unwrap();
    let left = backends::leftovers(ctx.kind, &id).await;
    assert!(
        left.is_empty(),
        "[{}] left behind: {left:?}",
        ctx.kind.name()
    );
}

type Fut<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The listed host answers, through the proxy variables and redirected
/// (a program that ignores them); the decision is logged and the
/// enforcement report names the way out.
pub fn net_allowed_host(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let Some((sb, probe, _ws)) =
            sandbox(ctx, "net_allowed_host", "allow:good.test:8080", vec![]).await
        else {
            return;
        };
        let url = "http://good.test:8080/";
        get(&*sb, &probe, url, "").await.reached(
            ctx,
            "hello from good",
            "through the proxy variables",
        );
        run(
            &*sb,
            &format!("env -u HTTP_PROXY -u http_proxy {probe} get {url}"),
        )
        .await
        .reached(ctx, "hello from good", "redirected");
        let info = sb.guest().info().await.unwrap();
        assert!(
            info.enforcement.egress_path.is_some(),
            "{:?}",
            info.enforcement
        );
        let log = decisions(&*sb);
        assert!(
            log.iter()
                .any(|d| d.allowed && d.host == "good.test" && d.port == 8080),
            "{log:?}"
        );
        finish(ctx, sb).await;
    })
}

/// A host not listed is refused, by name and by its address.
pub fn net_other_host_refused(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let Some((sb, probe, _ws)) = sandbox(
            ctx,
            "net_other_host_refused",
            "allow:good.test:8080",
            vec![],
        )
        .await
        else {
            return;
        };
        let w = world();
        let before = w.other.connections();
        get(&*sb, &probe, "http://other.test:8080/", "")
            .await
            .refused(ctx, "hello from other", "by name");
        // Redirected to the proxy, which refuses it: the host never sees it.
        let by_address = format!(
            "env -u HTTP_PROXY -u http_proxy {probe} get http://{}/",
            w.other.addr()
        );
        run(&*sb, &by_address)
            .await
            .refused(ctx, "hello from other", "by address");
        assert_eq!(
            w.other.connections(),
            before,
            "the unlisted host was reached"
        );
        let log = decisions(&*sb);
        assert!(
            log.iter().any(|d| !d.allowed && d.host == "other.test"),
            "{log:?}"
        );
        finish(ctx, sb).await;
    })
}

/// An IP literal is refused unless the allowlist names it.
pub fn net_ip_literal(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let w = world();
        let listed = format!("allow:good.test:8080,{}", w.other.addr());
        let Some((sb, probe, _ws)) = sandbox(ctx, "net_ip_literal", &listed, vec![]).await else {
            return;
        };
        get(&*sb, &probe, &format!("http://{}/", w.good.addr()), "")
            .await
            .refused(ctx, "hello from good", "an unlisted address");
        get(&*sb, &probe, &format!("http://{}/", w.other.addr()), "")
            .await
            .reached(ctx, "hello from other", "a listed address");
        finish(ctx, sb).await;
    })
}

/// A private address (a listed name resolving to one, and the address
/// itself) and the host's own loopback are refused by the guard.
pub fn net_private_and_loopback_refused(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let w = world();
        let host_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let host_port = host_listener.local_addr().unwrap().port();
        let listed = format!("allow:private.test:8080,{}", w.private.addr());
        let Some((sb, probe, _ws)) =
            sandbox(ctx, "net_private_and_loopback_refused", &listed, vec![]).await
        else {
            return;
        };
        let before = w.private.connections();
        for url in [
            "http://private.test:8080/".to_owned(),
            format!("http://{}/", w.private.addr()),
        ] {
            get(&*sb, &probe, &url, "")
                .await
                .refused(ctx, "hello from private", &url);
        }
        assert_eq!(
            w.private.connections(),
            before,
            "the private host was reached"
        );
        // The sandbox's 127.0.0.1 is its own: the host's listener is never
        // reached, through the proxy or not.
        host_listener.set_nonblocking(true).unwrap();
        run(&*sb, &format!("{probe} connect 127.0.0.1:{host_port}"))
            .await
            .failed(ctx, "reached the host's loopback");
        get(&*sb, &probe, &format!("http://127.0.0.1:{host_port}/"), "")
            .await
            .refused(ctx, "HTTP/1.1 200", "the host's loopback through the proxy");
        assert!(
            host_listener.accept().is_err(),
            "the host's listener was reached"
        );
        finish(ctx, sb).await;
    })
}

/// The metadata address is refused even when listed.
pub fn net_metadata_refused(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let listed = format!("allow:{METADATA}:80,good.test:8080");
        let Some((sb, probe, _ws)) = sandbox(ctx, "net_metadata_refused", &listed, vec![]).await
        else {
            return;
        };
        get(
            &*sb,
            &probe,
            &format!("http://{METADATA}/latest/meta-data/"),
            "",
        )
        .await
        .refused(ctx, "HTTP/1.1 200", "the metadata address");
        let log = decisions(&*sb);
        assert!(
            log.iter()
                .any(|d| !d.allowed && d.host == METADATA.to_string()),
            "{log:?}"
        );
        finish(ctx, sb).await;
    })
}

/// DNS answers listed names only.
pub fn net_dns_unlisted_unanswered(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let Some((sb, probe, _ws)) = sandbox(
            ctx,
            "net_dns_unlisted_unanswered",
            "allow:good.test:8080",
            vec![],
        )
        .await
        else {
            return;
        };
        let w = world();
        // (the proxy's DNS may answer a stand-in address it maps back to
        // the name: the proxy resolves the name itself when connecting)
        run(&*sb, &format!("{probe} resolve good.test"))
            .await
            .reached(ctx, "resolved good.test", "a listed name");
        let unlisted = run(&*sb, &format!("{probe} resolve other.test")).await;
        unlisted.failed(ctx, "an unlisted name resolved");
        assert!(
            !unlisted.out.contains(&w.other.ip.to_string()),
            "[{}] an unlisted name's address: {}",
            ctx.kind.name(),
            unlisted.out
        );
        finish(ctx, sb).await;
    })
}

/// A secret reaches its host in its header, the sandbox sees only its
/// placeholder, and another host never gets the value.
pub fn net_secret_only_to_its_host(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let secret =
            SecretSpec::new("API_KEY", SecretValue::new(SECRET), &["api.test"], None).unwrap();
        let Some((sb, probe, _ws)) = sandbox(
            ctx,
            "net_secret_only_to_its_host",
            "allow:api.test,other.test:8080",
            vec![secret],
        )
        .await
        else {
            return;
        };
        let w = world();
        let header = "--header \"Authorization: Bearer $API_KEY\"";
        get(&*sb, &probe, "https://api.test/v1", header)
            .await
            .reached(ctx, "hello from api", "the secret's host");
        assert!(
            w.api
                .heads()
                .iter()
                .any(|h| h.contains(&format!("Bearer {SECRET}"))),
            "the value did not reach its host: {:?}",
            w.api.heads()
        );
        run(&*sb, "echo $API_KEY")
            .await
            .refused(ctx, SECRET, "the sandbox sees the value");
        let _ = get(&*sb, &probe, "http://other.test:8080/", header).await;
        assert!(
            !w.other.heads().iter().any(|h| h.contains(SECRET)),
            "the value reached another host"
        );
        let info = sb.guest().info().await.unwrap();
        assert_eq!(info.enforcement.secrets.len(), 1, "{:?}", info.enforcement);
        finish(ctx, sb).await;
    })
}

/// `full` reaches a host, while the guard still refuses private and
/// metadata addresses.
pub fn net_full_guarded(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        let Some((sb, probe, _ws)) = sandbox(ctx, "net_full_guarded", "full", vec![]).await else {
            return;
        };
        let w = world();
        get(&*sb, &probe, "http://good.test:8080/", "")
            .await
            .reached(ctx, "hello from good", "a public host");
        let before = w.private.connections();
        run(&*sb, &format!("{probe} connect {}", w.private.addr()))
            .await
            .failed(ctx, "reached a private address");
        run(&*sb, &format!("{probe} connect {METADATA}:80"))
            .await
            .failed(ctx, "reached the metadata address");
        assert_eq!(w.private.connections(), before);
        finish(ctx, sb).await;
    })
}

/// A dead owner's sandboxes with network (allowlist and full) leave no
/// namespace name, NAT rule or veth once the restarted owner reaps.
pub fn net_orphans_reaped(ctx: &Ctx) -> Fut<'_> {
    Box::pin(async move {
        if ctx.kind == Kind::Microvm {
            eprintln!(
                "SKIPPED net_orphans_reaped [{}]: {MICROVM_ELSEWHERE}",
                ctx.kind.name()
            );
            return;
        }
        let owner = backends::private_owner(ctx.kind).await;
        let mut ids = Vec::new();
        for network in ["allow:good.test:8080", "full"] {
            let spec = SandboxSpec::with_policy(SandboxPolicy {
                network: network.parse().unwrap(),
                ..SandboxPolicy::default()
            });
            match owner.create(backends::spec_for(ctx.kind, spec)).await {
                Ok(sb) => {
                    ids.push(sb.info().id.clone());
                    // The owner "dies": the handle is never destroyed nor dropped.
                    std::mem::forget(sb);
                }
                Err(e) => panic!("[{}] create with {network}: {}", ctx.kind.name(), chain(&e)),
            }
        }
        let restarted = backends::private_owner(ctx.kind).await;
        let report = restarted.reap_orphans(&[]).await.unwrap();
        for id in &ids {
            assert!(report.sandboxes_removed.contains(id), "{id}: {report:?}");
            let left = backends::leftovers(ctx.kind, id).await;
            assert!(
                left.is_empty(),
                "[{}] left behind: {left:?}",
                ctx.kind.name()
            );
        }
    })
}
