//! Network on the microVM: the VM's one virtio-net device on a tap in the
//! sandbox's host-owned namespace, behind the same host-side egress as a
//! native sandbox (proxy, DNS, guard; NAT for `full`). Boots as few VMs as
//! it can, one per policy, each running every check of its policy in one
//! script (TCG boots take seconds): `allowlist` with a secret, `full`,
//! and `none`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use paddock_proto::NetworkPolicy;
use paddock_tests::backends::{self, Kind};
use paddock_tests::cli::{RunJson, SandboxRun};
use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::tlshost::TestCa;

const PLACEHOLDER: &str = "paddock-secret-placeholder-API_KEY";

fn curl(args: &str) -> String {
    format!("curl -sS -m 10 -w ' status=%{{http_code}}\\n' {args} 2>&1; echo \"rc=$?\"")
}

/// One `sandbox run` on the microvm backend; the JSON result and how long it took.
fn run(policy: &str, script: &str, options: &[String], env: &[(&str, &str)]) -> RunJson {
    let ws = tempfile::tempdir().unwrap();
    backends::give_to_sandbox(ws.path());
    let mut run = SandboxRun::shell(script)
        .workspace(ws.path())
        .option("--backend=microvm")
        .network(policy)
        .timeout_secs(60);
    for option in options {
        run = run.option(option);
    }
    for (name, value) in env {
        run = run.env(name, value);
    }
    let started = Instant::now();
    let (json, finished) = run.run_json();
    eprintln!("microvm network {policy}: run took {:?}", started.elapsed());
    assert!(json.error.is_none(), "{json:?}\n{}", finished.stderr_str());
    assert_eq!(
        json.enforcement().network,
        policy.parse::<NetworkPolicy>().unwrap(),
        "the policy in force"
    );
    json
}

/// The block of lines after `marker` up to the next `==` marker.
fn section<'a>(out: &'a str, marker: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != format!("== {marker}"))
        .skip(1)
        .take_while(|l| !l.starts_with("== "))
        .collect()
}

async fn available() -> bool {
    backends::for_test(Kind::Microvm, "microvm_network")
        .await
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowlist_full_and_none_on_the_microvm() {
    require_root();
    if !available().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let good = TestHost::start("good", DocRange::Net2, 8080, None).unwrap();
    let other = TestHost::start("other", DocRange::Net3, 8080, None).unwrap();
    let private = TestHost::start("private", DocRange::Private, 8080, None).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net2, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("good.test", &[good.ip]);
    dns.set("other.test", &[other.ip]);
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-vm-{:x}", u64::from(std::process::id()) * 7919 + 13);
    let options = vec![
        dns.option(),
        good.allow_option(),
        other.allow_option(),
        api.allow_option(),
        format!("--egress-ca={}", ca_file.display()),
    ];

    // allowlist with a secret: one VM
    let script = [
        "echo '== ifaces'; ls /sys/class/net".to_owned(),
        "echo '== proxy'; echo \"$HTTPS_PROXY\"".to_owned(),
        format!("echo '== good'; {}", curl("http://good.test:8080/")),
        format!(
            "echo '== good direct'; {}",
            curl("--noproxy '*' http://good.test:8080/")
        ),
        format!("echo '== other'; {}", curl("http://other.test:8080/")),
        format!(
            "echo '== other direct'; {}",
            curl(&format!("--noproxy '*' http://{}/", other.addr()))
        ),
        format!(
            "echo '== literal'; {}",
            curl(&format!("http://{}/", good.addr()))
        ),
        format!(
            "echo '== private'; {}",
            curl(&format!("--noproxy '*' http://{}/", private.addr()))
        ),
        format!(
            "echo '== metadata'; {}",
            curl("--noproxy '*' http://169.254.169.254/")
        ),
        "echo '== dns'; getent hosts other.test; echo \"rc=$?\"".to_owned(),
        "echo '== env'; echo \"$API_KEY\"".to_owned(),
        format!(
            "echo '== secret'; {}",
            curl("-H \"Authorization: Bearer $API_KEY\" https://api.test/v1/models")
        ),
        format!(
            "echo '== secret elsewhere'; {}",
            curl("-H \"X-Key: $API_KEY\" http://good.test:8080/leak")
        ),
    ]
    .join("; ");
    let mut allow_options = options.clone();
    allow_options.push("--secret=API_KEY@api.test=Authorization: Bearer {{secret}}".to_owned());
    let json = run(
        "allow:good.test:8080,api.test",
        &script,
        &allow_options,
        &[("API_KEY", &value)],
    );
    let out = json.stdout.as_str();
    let ctx = format!("{out}\n{}", json.stderr);
    assert_eq!(section(out, "ifaces"), vec!["eth0", "lo"], "{ctx}");
    assert_eq!(
        section(out, "proxy"),
        vec!["http://100.127.255.253:3128"],
        "{ctx}"
    );
    assert_eq!(section(out, "good")[0], "hello from good", "{ctx}");
    // a program ignoring the proxy variables is proxied all the same
    assert_eq!(section(out, "good direct")[0], "hello from good", "{ctx}");
    for refused in ["other", "other direct", "literal", "private", "metadata"] {
        let lines = section(out, refused);
        assert!(
            !lines.iter().any(|l| l.starts_with("hello from")) && lines.last() != Some(&"rc=0")
                || lines.iter().any(|l| l.contains("status=403")),
            "{refused} was reached: {ctx}"
        );
    }
    assert_eq!(other.connections(), 0, "the unlisted host saw a connection");
    assert_eq!(
        private.connections(),
        0,
        "the private host saw a connection"
    );
    assert_eq!(
        section(out, "dns"),
        vec!["rc=2"],
        "other.test resolved: {ctx}"
    );
    assert_eq!(section(out, "env"), vec![PLACEHOLDER], "{ctx}");
    assert_eq!(section(out, "secret")[0], "hello from api", "{ctx}");
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {value}\r\n")),
        "{heads:?}"
    );
    // the value went to its host only: good got the placeholder at most
    assert!(
        good.heads().iter().all(|h| !h.contains(&value)),
        "{:?}",
        good.heads()
    );
    assert!(!out.contains(&value) && !json.stderr.contains(&value));
    assert_eq!(
        serde_json::to_value(&json.enforcement().secrets).unwrap(),
        serde_json::json!([{"name": "API_KEY", "hosts": ["api.test"]}])
    );
    assert!(
        json.enforcement()
            .egress_path
            .as_deref()
            .is_some_and(|p| p.starts_with("egress proxy")),
        "{:?}",
        json.enforcement().egress_path
    );
    let decided = |host: &str, allowed: bool| {
        json.egress
            .iter()
            .any(|d| d.host == host && d.allowed == allowed)
    };
    assert!(
        decided("good.test", true) && decided("api.test", true) && decided("other.test", false),
        "{:?}",
        json.egress
    );

    // full: one VM
    let script = [
        "echo '== ifaces'; ls /sys/class/net".to_owned(),
        "echo '== proxy vars'; env | grep -ci '^https_proxy='; true".to_owned(),
        format!("echo '== good'; {}", curl("http://good.test:8080/")),
        format!(
            "echo '== other'; {}",
            curl(&format!("http://{}/", other.addr()))
        ),
        format!(
            "echo '== private'; {}",
            curl(&format!("http://{}/", private.addr()))
        ),
        format!(
            "echo '== metadata'; {}",
            curl("-m 5 http://169.254.169.254/")
        ),
        format!(
            "echo '== host'; {}",
            curl(&format!("http://{}:8081/", good.host_side))
        ),
    ]
    .join("; ");
    let json = run("full", &script, &options, &[]);
    let out = json.stdout.as_str();
    let ctx = format!("{out}\n{}", json.stderr);
    assert_eq!(section(out, "ifaces"), vec!["eth0", "lo"], "{ctx}");
    assert_eq!(section(out, "proxy vars"), vec!["0"], "{ctx}");
    assert_eq!(section(out, "good")[0], "hello from good", "{ctx}");
    assert_eq!(section(out, "other")[0], "hello from other", "{ctx}");
    for refused in ["private", "metadata", "host"] {
        let lines = section(out, refused);
        assert!(
            !lines.iter().any(|l| l.starts_with("hello from")) && lines.last() != Some(&"rc=0"),
            "{refused} was reached: {ctx}"
        );
    }
    assert_eq!(private.connections(), 0, "full reached a private address");
    assert!(
        json.enforcement()
            .egress_path
            .as_deref()
            .is_some_and(|p| p.starts_with("NAT through the host")),
        "{:?}",
        json.enforcement().egress_path
    );
    assert!(
        json.egress
            .iter()
            .any(|d| !d.allowed && d.host == "169.254.169.254"),
        "{:?}",
        json.egress
    );

    // none: no device at all
    let json = run("none", "ls /sys/class/net", &[], &[]);
    assert_eq!(
        json.stdout.lines().collect::<Vec<_>>(),
        vec!["lo"],
        "{json:?}"
    );
    assert_eq!(json.enforcement().egress_path, None);
}
