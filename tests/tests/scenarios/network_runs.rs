//! Agent runs with a network policy, all traffic inside namespaces the
//! tests make: `paddock run --network` on this host and through a server
//! whose `[network]` config bounds what a tenant may ask; the policy in
//! force in `run.started`, subagents held to their parent's policy or a
//! narrower one, and every egress decision an `egress.decision` event of
//! the run's session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::{bins, serve};
use serde_json::{Value, json};

const TOKEN: &str = "network-runs-token";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A scripted model: each turn's tool calls, then `complete_task`.
fn script(dir: &Path, name: &str, turns: &[Value]) -> String {
    let mut turns: Vec<Value> = turns
        .iter()
        .map(|calls| json!({"text": "working", "tool_calls": calls}))
        .collect();
    turns.push(
        json!({"text": "done", "tool_calls": [{"name": "complete_task", "arguments": {
        "verdict": "met", "summary": "fetched", "evidence": ["curl printed the page"]}}]}),
    );
    let path = dir.join(name);
    std::fs::write(&path, json!({ "turns": turns }).to_string()).unwrap();
    format!("scripted:{}", path.display())
}

fn command(cmd: &str) -> Value {
    json!({"name": "run_command", "arguments": {"command": cmd}})
}

fn curl(url: &str) -> String {
    format!("curl -sS -m 10 {url}; echo")
}

/// The `--json` lines of a run: its events, then the result.
fn events_of(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "event")
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| &e["data"])
        .collect()
}

/// `(allowed, host, port, count)` of each `egress.decision`.
fn decisions(events: &[Value]) -> Vec<(bool, String, u64, u64)> {
    of_kind(events, "egress.decision")
        .iter()
        .map(|d| {
            (
                d["allowed"].as_bool().unwrap(),
                d["host"].as_str().unwrap().to_owned(),
                d["port"].as_u64().unwrap(),
                d["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

struct World {
    good: TestHost,
    other: TestHost,
    dns: TestDns,
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let good = TestHost::start("good", DocRange::Net2, 8080, None).unwrap();
        let other = TestHost::start("other", DocRange::Net3, 8080, None).unwrap();
        let dns = TestDns::start().unwrap();
        dns.set("good.test", &[good.ip]);
        dns.set("other.test", &[other.ip]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Self {
            good,
            other,
            dns,
            dir,
        }
    }

    fn paddock(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bins::paddock());
        cmd.args(args)
            .arg(self.dns.option())
            .arg(self.good.allow_option())
            .arg(self.other.allow_option())
            .env_remove("PADDOCK_SERVER")
            .env_remove("PADDOCK_TOKEN")
            .env_remove("PADDOCK_MODEL")
            .env("PADDOCK_DATA_DIR", self.dir.path().join("local"))
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, server: Option<&Server>, model: &str, extra: &[&str]) -> Output {
        let ws = self.dir.path().join("ws");
        let ws = ws.to_str().unwrap();
        let mut args = vec!["run", "Fetch the page", "--workspace", ws, "--model", model];
        args.extend_from_slice(extra);
        args.push("--json");
        let mut cmd = self.paddock(&args);
        if let Some(server) = server {
            cmd.env("PADDOCK_SERVER", &server.url)
                .env("PADDOCK_TOKEN", TOKEN);
        }
        cmd.output().unwrap()
    }
}

/// `paddock serve` with a `[network]` section.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(world: &World, network: &str) -> Self {
        let config = world.dir.path().join("serve.toml");
        std::fs::write(&config, network).unwrap();
        let node = format!("netruns-{}", std::process::id());
        let mut command = serve::command(
            &node,
            &world.dir.path().join("server"),
            &format!("tenant-a:{TOKEN}"),
        );
        command
            .arg(world.dns.option())
            .arg(world.good.allow_option())
            .arg(world.other.allow_option())
            .arg("--config")
            .arg(&config)
            .env_remove("PADDOCK_MODEL")
            .stderr(Stdio::inherit());
        let (child, url) = serve::spawn(command).unwrap();
        Self { child, url }
    }

    /// `curl` against the API: the status and the body.
    fn api(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-m", "30", "-X", method, "-w", "\n%{http_code}"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .arg(format!("{}{path}", self.url));
        if let Some(body) = body {
            cmd.args(["-H", "Content-Type: application/json", "-d"])
                .arg(body.to_string());
        }
        let out = text(&cmd.output().unwrap().stdout);
        let (body, status) = out.rsplit_once('\n').unwrap();
        (status.trim().parse().unwrap(), body.to_owned())
    }

    /// A finished run's events, from its SSE stream.
    fn run_events(&self, run: &str) -> Vec<Value> {
        let (status, body) = self.api("GET", &format!("/v1/runs/{run}/events"), None);
        assert_eq!(status, 200, "{body}");
        let mut events = Vec::new();
        let mut kind = String::new();
        for line in body.lines() {
            if let Some(k) = line.strip_prefix("event: ") {
                kind = k.to_owned();
            } else if let Some(data) = line.strip_prefix("data: ") {
                let data: Value = serde_json::from_str(data).unwrap();
                events.push(json!({"type": "event", "kind": kind, "data": data["payload"]}));
            }
        }
        events
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_local_run_gets_its_network_in_run_started_and_its_decisions_as_events() {
    require_root();
    let world = World::new();
    let other = world.other.addr();
    let model = script(
        world.dir.path(),
        "local.json",
        &[json!([command(&format!(
            "{}; {}",
            curl("http://good.test:8080/"),
            curl(&format!("http://{other}/"))
        ))])],
    );
    let out = world.run(None, &model, &["--network", "allow:good.test:8080"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events_of(&out);
    let started = of_kind(&events, "run.started");
    assert_eq!(
        started[0]["network"],
        json!({"allowlist": ["good.test:8080"]})
    );
    let result = of_kind(&events, "tool.result");
    let shown = result[0]["content"].as_str().unwrap_or_default();
    assert!(shown.contains("hello from good"), "{shown}");
    assert_eq!(
        decisions(&events),
        [
            (true, "good.test".to_owned(), 8080, 1),
            (false, world.other.ip.to_string(), 8080, 1)
        ],
        "{events:#?}"
    );
    let denied = of_kind(&events, "egress.decision")[1];
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("not allowed by the sandbox's network policy"),
        "{denied}"
    );
    // the decisions come before the sandbox is reported stopped
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let last_egress = kinds.iter().rposition(|k| *k == "egress.decision").unwrap();
    let stopped = kinds.iter().position(|k| *k == "sandbox.stopped").unwrap();
    assert!(last_egress < stopped, "{kinds:?}");
    assert_eq!(world.other.connections(), 0);

    // A chatty program: 200 connections are a handful of coalesced events.
    let chatty = script(
        world.dir.path(),
        "chatty.json",
        &[json!([command(
            "for i in $(seq 200); do curl -s -o /dev/null http://good.test:8080/; done; echo looped"
        )])],
    );
    let out = world.run(None, &chatty, &["--network", "allow:good.test:8080"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events_of(&out);
    let chatty = decisions(&events);
    assert!(
        chatty
            .iter()
            .all(|(allowed, host, ..)| *allowed && host == "good.test"),
        "{chatty:?}"
    );
    assert_eq!(chatty.iter().map(|d| d.3).sum::<u64>(), 200, "{chatty:?}");
    assert!(chatty.len() < 40, "not coalesced: {} events", chatty.len());

    // without --network a local run has none, and says so
    let quiet = script(world.dir.path(), "quiet.json", &[]);
    let out = world.run(None, &quiet, &[]);
    let events = events_of(&out);
    assert_eq!(
        of_kind(&events, "run.finished").len(),
        1,
        "{}",
        text(&out.stderr)
    );
    assert_eq!(of_kind(&events, "run.started")[0]["network"], "none");
    assert!(decisions(&events).is_empty());
}

#[test]
fn a_server_bounds_the_network_of_runs_and_subagents_get_the_parents_or_narrower() {
    require_root();
    let world = World::new();
    let server = Server::start(
        &world,
        "[network]\ndefault = \"none\"\nmax = \"allow:good.test:8080,other.test:8080\"\n",
    );
    let parent_net = "allow:good.test:8080,other.test:8080";
    let child = script(
        world.dir.path(),
        "child.json",
        &[json!([command(&format!(
            "{}; {}",
            curl("http://good.test:8080/"),
            curl("http://other.test:8080/")
        ))])],
    );
    let spawn = |task: &str, network: &str| {
        json!({"name": "spawn_subagent", "arguments": {"task_id": task, "profile": "build",
            "prompt": "fetch good.test", "network": network}})
    };
    let parent = script(
        world.dir.path(),
        "parent.json",
        &[
            json!([command(&curl("http://other.test:8080/"))]),
            json!([
                spawn("wide", "full"),
                spawn("narrow", "allow:good.test:8080")
            ]),
            json!([{"name": "wait_subagents", "arguments": {"timeout": 120}}]),
        ],
    );
    let build = format!("build={child}");

    // Beyond the max: refused before anything runs, naming both.
    let out = world.run(Some(&server), &parent, &["--network", "full"]);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("network full: beyond what this server allows tenants (allow:good.test:8080,other.test:8080)"),
        "{err}"
    );

    let out = world.run(
        Some(&server),
        &parent,
        &["--network", parent_net, "--subagent-model", &build],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events_of(&out);
    assert_eq!(
        of_kind(&events, "run.started")[0]["network"],
        json!({"allowlist": ["good.test:8080", "other.test:8080"]})
    );
    let parent_decisions = decisions(&events);
    assert_eq!(
        parent_decisions,
        [(true, "other.test".to_owned(), 8080, 1)],
        "{events:#?}"
    );
    let refused = of_kind(&events, "tool.result")
        .into_iter()
        .filter_map(|r| r["content"].as_str())
        .any(|c| c.contains("network full: a subagent gets this run's network"));
    assert!(refused, "the wider subagent was not refused: {events:#?}");

    // The one child: the narrower policy, in force.
    let run_id = events[0]["run"].as_str().unwrap();
    let session = events[0]["session"].as_str().unwrap();
    let (status, body) = server.api("GET", &format!("/v1/runs/{run_id}/children"), None);
    assert_eq!(status, 200, "{body}");
    let children: Value = serde_json::from_str(&body).unwrap();
    let children = children["runs"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{children:?}");
    let child_events = server.run_events(children[0]["id"].as_str().unwrap());
    assert_eq!(
        of_kind(&child_events, "run.started")[0]["network"],
        json!({"allowlist": ["good.test:8080"]})
    );
    assert_eq!(
        decisions(&child_events),
        [
            (true, "good.test".to_owned(), 8080, 1),
            (false, "other.test".to_owned(), 8080, 1)
        ],
        "{child_events:#?}"
    );
    assert_eq!(world.good.connections(), 1);
    assert_eq!(
        world.other.connections(),
        1,
        "only the parent reached other.test"
    );

    // Over the API: an unusable policy is a 400, one above the max a 403,
    // and none asked is the server's default.
    let model = json!({"scripted": serde_json::from_str::<Value>(
        &std::fs::read_to_string(world.dir.path().join("child.json")).unwrap()).unwrap()});
    let start = |network: Option<Value>| {
        let mut body = json!({"goal": "fetch", "model": model});
        if let Some(network) = network {
            body["network"] = network;
        }
        server.api("POST", &format!("/v1/sessions/{session}/runs"), Some(&body))
    };
    let (status, body) = start(Some(json!({"allowlist": []})));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("network"), "{body}");
    let (status, body) = start(Some(json!({"allowlist": ["good.test:8080", "third.test"]})));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("network_not_allowed"), "{body}");
    let (status, body) = start(None);
    assert_eq!(status, 202, "{body}");
    let run: Value = serde_json::from_str(&body).unwrap();
    let default_events = server.run_events(run["id"].as_str().unwrap());
    assert_eq!(
        of_kind(&default_events, "run.started")[0]["network"],
        "none"
    );
    assert!(decisions(&default_events).is_empty(), "{default_events:#?}");
}
