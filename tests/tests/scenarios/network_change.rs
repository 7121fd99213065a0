//! The allowlist of a running sandbox changed through `paddock serve`
//! (`paddock sandbox network ID --allow ...`), all traffic inside
//! namespaces the test makes: before the change host A is reached and B
//! refused; after it B is reached and A refused, and a connection to A
//! that was open is cut. The change is a `network.changed` event naming
//! its tenant, and the cut is an egress decision. A sandbox paused after a
//! change resumes with the changed allowlist, even after a server restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::{bins, serve};
use serde_json::{Value, json};

const TOKEN: &str = "network-change-token";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct World {
    a: TestHost,
    b: TestHost,
    dns: TestDns,
    dir: tempfile::TempDir,
    /// Its own per world: two servers of one node would reap each other's sandboxes.
    node: String,
    server: Option<(Child, String)>,
}

static WORLDS: AtomicUsize = AtomicUsize::new(0);

impl World {
    fn new() -> Self {
        let a = TestHost::start("a", DocRange::Net2, 8080, None).unwrap();
        let b = TestHost::start("b", DocRange::Net3, 8080, None).unwrap();
        let dns = TestDns::start().unwrap();
        dns.set("a.test", &[a.ip]);
        dns.set("b.test", &[b.ip]);
        let mut world = Self {
            a,
            b,
            dns,
            dir: tempfile::tempdir().unwrap(),
            node: format!(
                "netchange-{}-{}",
                std::process::id(),
                WORLDS.fetch_add(1, Ordering::Relaxed)
            ),
            server: None,
        };
        world.start_server();
        world
    }

    fn paddock(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bins::paddock());
        cmd.args(args)
            .env_remove("PADDOCK_DATA_DIR")
            .env_remove("PADDOCK_DATABASE_URL")
            .env_remove("PADDOCK_CONFIG")
            .env_remove("PADDOCK_MODEL")
            .stdin(Stdio::null());
        if let Some((_, url)) = &self.server {
            cmd.env("PADDOCK_SERVER", url).env("PADDOCK_TOKEN", TOKEN);
        }
        cmd
    }

    fn start_server(&mut self) {
        let mut command = serve::command(
            &self.node,
            &self.dir.path().join("server"),
            &format!("tenant-a:{TOKEN}"),
        );
        command
            .arg(self.dns.option())
            .arg(self.a.allow_option())
            .arg(self.b.allow_option())
            .env_remove("PADDOCK_MODEL")
            .stderr(Stdio::inherit());
        self.server = Some(serve::spawn(command).unwrap());
    }

    fn url(&self) -> &str {
        &self.server.as_ref().unwrap().1
    }

    fn ok(&self, args: &[&str]) -> String {
        let out: Output = self.paddock(args).output().unwrap();
        assert!(
            out.status.success(),
            "paddock {args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Host `reached` answers the sandbox; host `refused` is not allowed.
    fn reaches_only(&self, id: &str, reached: &str, refused: &str) {
        let answer = self.fetch(id, &format!("http://{reached}.test:8080/"));
        assert!(
            answer.contains(&format!("hello from {reached}")),
            "{answer}"
        );
        let answer = self.fetch(id, &format!("http://{refused}.test:8080/"));
        assert!(answer.contains("not allowed"), "{answer}");
    }

    /// `curl` inside the sandbox (through its proxy variables): its output.
    fn fetch(&self, id: &str, url: &str) -> String {
        let out = self
            .paddock(&["sandbox", "exec", id, "--", "curl", "-sS", "-m", "10", url])
            .output()
            .unwrap();
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    }

    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-m", "30", "-X", method, "-w", "\n%{http_code}"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .arg(format!("{}{path}", self.url()));
        if let Some(body) = body {
            cmd.args(["-H", "Content-Type: application/json", "-d"])
                .arg(body.to_string());
        }
        let out = text(&cmd.output().unwrap().stdout);
        let (body, status) = out.rsplit_once('\n').unwrap();
        (
            status.trim().parse().unwrap(),
            serde_json::from_str(body).unwrap_or(Value::Null),
        )
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some((mut child, _)) = self.server.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_running_sandboxs_allowlist_changes_and_open_connections_to_removed_hosts_are_cut() {
    require_root();
    let world = World::new();
    let id = world
        .ok(&["sandbox", "create", "--network", "allow:a.test:8080"])
        .trim()
        .to_owned();

    // before: A reached, B refused
    world.reaches_only(&id, "a", "b");

    // a connection to A held open (a program ignoring the proxy: the
    // transparent relay), which says when it is closed
    let held = json!({"argv": ["bash", "-c",
        "exec 3<>/dev/tcp/a.test/8080; cat <&3 >/dev/null; echo closed > /tmp/held"]});
    let (status, body) = world.api(
        "POST",
        &format!("/v1/sandboxes/{id}/processes"),
        Some(&held),
    );
    assert_eq!(status, 201, "{body}");
    // the fetch above counted one; the held one makes two
    let deadline = Instant::now() + Duration::from_secs(10);
    while world.a.connections() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        world.a.connections() >= 2,
        "the held connection never reached A"
    );
    // A closes an idle connection after 10 s by itself: the cut must come
    // well before (and the decision below says it was the cut).
    let opened = Instant::now();
    let still_open = world.fetch(&id, "http://a.test:8080/");
    assert!(still_open.contains("hello from a"), "{still_open}");
    let (_, out) = world.api(
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        Some(&json!({"argv": ["cat", "/tmp/held"]})),
    );
    assert_ne!(out["stdout"], "closed\n", "closed before the change: {out}");

    // the change, through the CLI
    let changed = world.ok(&[
        "sandbox",
        "network",
        &id,
        "--allow",
        "b.test:8080",
        "--json",
    ]);
    let changed: Value = serde_json::from_str(&changed).unwrap();
    assert_eq!(changed["kind"], "network.changed");
    assert_eq!(changed["old"], json!({"allowlist": ["a.test:8080"]}));
    assert_eq!(changed["new"], json!({"allowlist": ["b.test:8080"]}));
    assert_eq!(changed["by"], "tenant-a");
    assert_eq!(changed["cut"], json!(["a.test:8080"]), "{changed}");

    // after: B reached, A refused, the held connection closed
    world.reaches_only(&id, "b", "a");
    let deadline = opened + Duration::from_secs(8);
    loop {
        let (_, out) = world.api(
            "POST",
            &format!("/v1/sandboxes/{id}/exec"),
            Some(&json!({"argv": ["cat", "/tmp/held"]})),
        );
        if out["stdout"] == "closed\n" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the held connection was not cut: {out}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // the event and the decision
    let shown = world.ok(&["sandbox", "network", &id]);
    assert!(shown.contains("network  allow:b.test:8080"), "{shown}");
    assert!(
        shown.contains("allow:a.test:8080 -> allow:b.test:8080  by tenant-a (cut a.test:8080)"),
        "{shown}"
    );
    let (status, egress) = world.api("GET", &format!("/v1/sandboxes/{id}/egress"), None);
    assert_eq!(status, 200, "{egress}");
    let cut: Vec<&Value> = egress["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["reason"].as_str().is_some_and(|r| r.starts_with("cut: ")))
        .collect();
    assert_eq!(cut.len(), 1, "{egress}");
    assert_eq!(
        (cut[0]["host"].clone(), cut[0]["via"].clone()),
        (json!("a.test"), json!("transparent"))
    );
    world.ok(&["sandbox", "rm", &id]);
}

#[test]
fn a_changed_allowlist_is_the_one_a_sandbox_resumes_with_after_a_server_restart() {
    require_root();
    let mut world = World::new();
    let id = world
        .ok(&["sandbox", "create", "--network", "allow:a.test:8080"])
        .trim()
        .to_owned();
    world.ok(&["sandbox", "network", &id, "--allow", "b.test:8080"]);
    world.ok(&["sandbox", "pause", &id]);

    // kill -9: nothing of the server's memory survives, only its store
    let (mut child, _) = world.server.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    world.start_server();
    world.ok(&["sandbox", "resume", &id]);

    let shown = world.ok(&["sandbox", "network", &id]);
    assert!(shown.contains("network  allow:b.test:8080"), "{shown}");
    world.reaches_only(&id, "b", "a");
    world.ok(&["sandbox", "rm", &id]);
}
