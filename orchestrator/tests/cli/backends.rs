//! One `paddock serve` offering several backends: a request (a sandbox, or
//! a run and its subagents) picks native or docker (or gets the default),
//! names an image the operator enabled or is refused; a local run uses the
//! backend of `--backend`; a warm pool hands each pre-started container to one tenant only;
//! idle and too-old container sandboxes expire leaving no container, volume
//! or network. Needs root, dockerd and the image (scripts/container-setup.sh);
//! without them the container parts are skipped with the reason, unless
//! PADDOCK_REQUIRE_BACKENDS names the backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use common::{ServerProcess, unique};
use paddock_test_support::require::{self, Need};
use serde_json::{Value, json};

const LABEL_NODE: &str = "org.paddock.node";
const LABEL_SANDBOX: &str = "org.paddock.sandbox";
/// What the server logs when its warm pool holds one more started sandbox.
const POOL_READY: &str = "warm pool: a sandbox is ready";

/// Whether `backend` can run here; prints why not (or panics when required).
fn available(backend: &str, test: &str) -> bool {
    let runtime = if backend == "gvisor" { "runsc" } else { "runc" };
    let reason = match Command::new("docker")
        .args(["info", "--format", "{{json .Runtimes}}"])
        .output()
    {
        Err(e) => Some(format!("docker: {e}")),
        Ok(out) if !out.status.success() => Some("dockerd does not answer".to_owned()),
        Ok(out) if !String::from_utf8_lossy(&out.stdout).contains(runtime) => {
            Some(format!("no {runtime} runtime"))
        }
        Ok(_) => {
            let image = Command::new("docker")
                .args(["image", "inspect", paddock_sandbox::DEFAULT_IMAGE])
                .output();
            match image {
                Ok(out) if out.status.success() => None,
                _ => Some(format!("image {} missing", paddock_sandbox::DEFAULT_IMAGE)),
            }
        }
    };
    let Some(reason) = reason else { return true };
    require::skip_or_panic(
        Need::Backend(backend),
        &format!("{test} [{backend}]"),
        &reason,
    );
    false
}

/// `docker ps -a` ids of containers with `label`.
fn containers(label: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--no-trunc",
            "--filter",
            &format!("label={label}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The sandbox ids of the containers of `node`.
fn sandboxes_of_node(node: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label={LABEL_NODE}={node}"),
            "--format",
            &format!("{{{{.Label \"{LABEL_SANDBOX}\"}}}}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn docker_list(what: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([what, "ls", "-q"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value)> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn create(&self, body: Value) -> Result<Value> {
        let (status, view) = self
            .call(reqwest::Method::POST, "/v1/sandboxes", Some(body.clone()))
            .await?;
        if status != 201 {
            bail!("creating {body}: {status} {view}");
        }
        Ok(view)
    }

    async fn sh(&self, id: &str, script: &str) -> Result<String> {
        let (status, out) = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/sandboxes/{id}/exec"),
                Some(json!({"shell": script})),
            )
            .await?;
        if status != 200 || out["exit_code"] != 0 {
            bail!("{script} in {id}: {status} {out}");
        }
        Ok(out["stdout"].as_str().unwrap_or_default().to_owned())
    }

    async fn state(&self, id: &str) -> Result<String> {
        let (_, view) = self
            .call(reqwest::Method::GET, &format!("/v1/sandboxes/{id}"), None)
            .await?;
        Ok(view["state"].as_str().unwrap_or_default().to_owned())
    }
}

fn start(
    config: &str,
    extra: &[&str],
    prefix: &str,
) -> Result<(ServerProcess, Client, String, tempfile::TempDir)> {
    start_server(config, extra, prefix, ServerProcess::start_with)
}

type Starter = fn(&std::path::Path, &str, &str, &[&str]) -> Result<ServerProcess>;

fn start_server(
    config: &str,
    extra: &[&str],
    prefix: &str,
    starter: Starter,
) -> Result<(ServerProcess, Client, String, tempfile::TempDir)> {
    let data = tempfile::tempdir()?;
    let node = unique(prefix);
    let token = format!("tok-{}", unique("t"));
    let file = data.path().join("paddock.toml");
    std::fs::write(&file, config)?;
    let mut args = vec!["--config", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = starter(data.path(), &node, &format!("acme:{token}"), &args)?;
    let client = Client {
        http: reqwest::Client::new(),
        url: server.url.clone(),
        token,
    };
    Ok((server, client, node, data))
}

async fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    check()
}

async fn refused(client: &Client, body: Value, field: &str, says: &str) -> Result<()> {
    let (status, got) = client
        .call(reqwest::Method::POST, "/v1/sandboxes", Some(body.clone()))
        .await?;
    assert_eq!(status, 400, "{body}: {got}");
    assert_eq!(got["error"]["code"], "invalid_request", "{got}");
    let message = got["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(field) && message.contains(says),
        "{body}: {message}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_makes_native_and_docker_sandboxes() -> Result<()> {
    if !available("docker", "one_server_makes_native_and_docker_sandboxes") {
        return Ok(());
    }
    let (server, client, node, _data) = start(
        "[[backends]]\nkind = \"native\"\n[[backends]]\nkind = \"docker\"\n",
        &["--warm-pool", "docker=1"],
        "multi",
    )?;

    let native = client.create(json!({})).await?;
    assert_eq!(
        native["backend"], "native",
        "the first is the default: {native}"
    );
    assert_eq!(native["image"], Value::Null);
    let docker = client.create(json!({"backend": "docker"})).await?;
    assert_eq!(docker["backend"], "docker", "{docker}");
    assert_eq!(docker["image"], paddock_sandbox::DEFAULT_IMAGE);
    let (native_id, docker_id) = (
        native["id"].as_str().unwrap(),
        docker["id"].as_str().unwrap(),
    );
    assert_eq!(client.sh(native_id, "echo native").await?, "native\n");
    assert_eq!(client.sh(docker_id, "echo docker").await?, "docker\n");
    assert_eq!(
        containers(&format!("{LABEL_SANDBOX}={docker_id}")).len(),
        1,
        "the docker sandbox is a container"
    );
    assert!(containers(&format!("{LABEL_SANDBOX}={native_id}")).is_empty());
    let (status, health) = client
        .call(reqwest::Method::GET, "/v1/health", None)
        .await?;
    assert_eq!(status, 200, "{health}");
    let names: Vec<&str> = health["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "native",
            &format!("docker:{}", paddock_sandbox::DEFAULT_IMAGE)
        ]
    );

    refused(
        &client,
        json!({"backend": "gvisor"}),
        "backend",
        "gvisor is not enabled on this server",
    )
    .await?;
    refused(
        &client,
        json!({"backend": "kvm"}),
        "backend",
        "unknown backend",
    )
    .await?;
    refused(
        &client,
        json!({"backend": "docker", "image": "alpine:latest"}),
        "image",
        "\"alpine:latest\" is not enabled for docker",
    )
    .await?;
    refused(
        &client,
        json!({"image": "alpine:latest"}),
        "image",
        "the native backend takes no image",
    )
    .await?;

    for id in [native_id, docker_id] {
        let (status, _) = client
            .call(
                reqwest::Method::DELETE,
                &format!("/v1/sandboxes/{id}"),
                None,
            )
            .await?;
        assert_eq!(status, 200);
    }
    assert!(
        wait_for(Duration::from_secs(20), || containers(&format!(
            "{LABEL_SANDBOX}={docker_id}"
        ))
        .is_empty())
        .await,
        "the deleted container is gone"
    );
    drop(server);
    assert!(
        wait_for(Duration::from_secs(20), || sandboxes_of_node(&node)
            .is_empty())
        .await,
        "the pool's container goes with the server: {:?}",
        sandboxes_of_node(&node)
    );
    Ok(())
}

/// The pool's container is the one a default request gets; once a tenant
/// used it, it is never handed out again, and the next one is fresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_container_serves_one_tenant_only() -> Result<()> {
    if !available("docker", "a_pooled_container_serves_one_tenant_only") {
        return Ok(());
    }
    let (server, client, node, data) = start_server(
        "backend = \"docker\"\n[[backends]]\nkind = \"docker\"\nwarm_pool = 1\n[[backends]]\nkind = \"native\"\n",
        &[],
        "pool",
        ServerProcess::start_logged,
    )?;
    let mut served = Vec::new();
    for round in 0..3 {
        // Health no longer shows a pool's fill (it is node-wide): the
        // operator's log says when the pool holds a started sandbox.
        let log = ServerProcess::log_of(data.path());
        assert!(
            wait_for(Duration::from_secs(30), || {
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .matches(POOL_READY)
                    .count()
                    > round
            })
            .await,
            "round {round}: the pool never filled: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert_eq!(
            sandboxes_of_node(&node).len(),
            1,
            "round {round}: the pool holds one started container: {:?}",
            sandboxes_of_node(&node)
        );
        let pooled = sandboxes_of_node(&node).remove(0);
        assert!(
            !served.contains(&pooled),
            "round {round}: {pooled} came back to the pool"
        );
        let view = client.create(json!({})).await?;
        let id = view["id"].as_str().unwrap().to_owned();
        assert_eq!(view["backend"], "docker");
        assert_eq!(
            id, pooled,
            "round {round}: the default request gets the pooled container"
        );
        let seen = client
            .sh(
                &id,
                "ls -A /workspace /tmp; echo tenant > /workspace/mark; echo x > /tmp/mark",
            )
            .await?;
        assert_eq!(
            seen, "/tmp:\n\n/workspace:\n",
            "round {round}: a fresh sandbox, nothing of another tenant"
        );
        // Another profile never takes the pooled one.
        let other = client.create(json!({"read_only": true})).await?;
        assert_ne!(other["id"], view["id"]);
        for gone in [&id, other["id"].as_str().unwrap()] {
            let (status, _) = client
                .call(
                    reqwest::Method::DELETE,
                    &format!("/v1/sandboxes/{gone}"),
                    None,
                )
                .await?;
            assert_eq!(status, 200);
        }
        served.push(id);
    }
    assert!(
        wait_for(Duration::from_secs(20), || {
            served
                .iter()
                .all(|id| containers(&format!("{LABEL_SANDBOX}={id}")).is_empty())
        })
        .await,
        "every used container is removed"
    );
    drop(server);
    assert!(
        wait_for(Duration::from_secs(20), || sandboxes_of_node(&node)
            .is_empty())
        .await
    );
    Ok(())
}

/// Idle and too-old container sandboxes are destroyed by the expiry task:
/// no container, volume or network of theirs is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_sandboxes_expire_leaving_nothing() -> Result<()> {
    let kinds: Vec<&str> = ["docker", "gvisor"]
        .into_iter()
        .filter(|k| available(k, "container_sandboxes_expire_leaving_nothing"))
        .collect();
    if kinds.is_empty() {
        return Ok(());
    }
    let volumes = docker_list("volume");
    let networks = docker_list("network");
    let mut config = String::from(
        "idle_timeout_secs = 2\nmax_lifetime_secs = 6\nallow_downgrade = [\"landlock\"]\n",
    );
    for kind in &kinds {
        config.push_str(&format!("[[backends]]\nkind = \"{kind}\"\n"));
    }
    let (server, client, node, _data) = start(&config, &[], "expiry")?;
    for kind in &kinds {
        let idle = client.create(json!({"backend": kind})).await?;
        let busy = client.create(json!({"backend": kind})).await?;
        let (idle, busy) = (idle["id"].as_str().unwrap(), busy["id"].as_str().unwrap());
        let born = Instant::now();
        // Kept busy: only the lifetime ends it.
        while born.elapsed() < Duration::from_secs(4) {
            client.sh(busy, "true").await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(
            client.state(idle).await?,
            "stopped",
            "{kind}: idle for 4 s of 2"
        );
        assert!(
            containers(&format!("{LABEL_SANDBOX}={idle}")).is_empty(),
            "{kind}: the idle container is gone"
        );
        assert_eq!(
            client.state(busy).await?,
            "running",
            "{kind}: in use, 4 s of 6"
        );
        let mut ended = false;
        while born.elapsed() < Duration::from_secs(12) {
            if client.state(busy).await? == "stopped" {
                ended = true;
                break;
            }
            let _ = client.sh(busy, "true").await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert!(ended, "{kind}: the max lifetime ends a busy sandbox");
        assert!(
            wait_for(Duration::from_secs(10), || containers(&format!(
                "{LABEL_SANDBOX}={busy}"
            ))
            .is_empty())
            .await,
            "{kind}: the old container is gone"
        );
    }
    assert!(
        sandboxes_of_node(&node).is_empty(),
        "{:?}",
        sandboxes_of_node(&node)
    );
    assert_eq!(docker_list("volume"), volumes, "no volume left");
    assert_eq!(docker_list("network"), networks, "no network left");
    drop(server);
    Ok(())
}

/// The scripted models of examples/subagents: a parent that spawns an
/// explore, a review and a build child, applies the build child's changes
/// and runs the test; `--model` and `--subagent-model` flags for them, and
/// a workspace with the example's test.
struct SubagentExample {
    workspace: tempfile::TempDir,
    flags: Vec<String>,
}

impl SubagentExample {
    fn new() -> Result<Self> {
        let example =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/subagents");
        let workspace = tempfile::tempdir()?;
        std::fs::copy(
            example.join("workspace/test.sh"),
            workspace.path().join("test.sh"),
        )?;
        let scripted = |name: &str| format!("scripted:{}", example.join(name).display());
        let mut flags = vec!["--model".to_owned(), scripted("parent.json")];
        for key in ["explore", "review", "build"] {
            flags.push("--subagent-model".to_owned());
            flags.push(format!("{key}={}", scripted(&format!("{key}.json"))));
        }
        Ok(Self { workspace, flags })
    }

    /// `paddock run GOAL --workspace DIR --json` with the scripts and `extra`.
    fn run(&self, extra: &[&str]) -> Result<std::process::Output> {
        Ok(Command::new(common::PADDOCK)
            .args(["run", "Make sh test.sh pass, with subagents", "--json"])
            .arg("--workspace")
            .arg(self.workspace.path())
            .args(&self.flags)
            .args(extra)
            .env_remove("PADDOCK_SERVER")
            .env_remove("PADDOCK_MODEL")
            .env_remove("PADDOCK_BACKEND")
            .stdin(std::process::Stdio::null())
            .output()?)
    }
}

/// `--json` output lines: the events, then the result.
fn json_lines(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The payload of the first event of `kind` among `events` (`data` in the
/// CLI's lines, `payload` in the API's).
fn payload<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    let event = events
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} among {events:?}"));
    if event["data"].is_null() {
        &event["payload"]
    } else {
        &event["data"]
    }
}

/// A run's stored events from `GET /v1/runs/{id}/events` (the stream ends
/// after its `run.finished`).
async fn run_events(client: &Client, run: &str) -> Result<Vec<Value>> {
    let response = client
        .http
        .get(format!("{}/v1/runs/{run}/events", client.url))
        .bearer_auth(&client.token)
        .send()
        .await?;
    let body = tokio::time::timeout(Duration::from_secs(30), response.text()).await??;
    // `event: KIND` then `data: {...}`: the kind goes into the event.
    let mut events = Vec::new();
    let mut kind = None;
    for line in body.lines() {
        if let Some(k) = line.strip_prefix("event: ") {
            kind = Some(k.to_owned());
        } else if let Some(data) = line.strip_prefix("data: ") {
            let mut event: Value = serde_json::from_str(data)?;
            event["kind"] = Value::from(kind.take());
            events.push(event);
        }
    }
    Ok(events)
}

/// A run on the server names its backend: refused when the server did not
/// enable it (the reason lists what it did), else its sandbox and every
/// subagent's come from that backend, and `run.started` says which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_server_uses_the_backend_it_names() -> Result<()> {
    if !available("docker", "a_run_on_a_server_uses_the_backend_it_names") {
        return Ok(());
    }
    let (server, client, node, _data) = start(
        "[[backends]]\nkind = \"native\"\n[[backends]]\nkind = \"docker\"\n",
        &[],
        "runs",
    )?;
    let example = SubagentExample::new()?;
    let remote = |extra: &[&str]| {
        let mut args = vec!["--server", &server.url, "--token", &client.token];
        args.extend_from_slice(extra);
        example.run(&args)
    };

    // Refused before anything runs, with what the server offers.
    let enabled = format!(
        "(enabled: native, docker:{})",
        paddock_sandbox::DEFAULT_IMAGE
    );
    let out = remote(&["--backend", "gvisor"])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "backend: gvisor is not enabled on this server {enabled}"
        )),
        "{stderr}"
    );
    let out = remote(&["--driver", "codex"])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("driver: the codex driver is not enabled on this server"),
        "{stderr}"
    );
    let out = remote(&["--backend", "docker", "--image", "alpine:latest"])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("image: image \"alpine:latest\" is not enabled for docker"),
        "{stderr}"
    );
    let (status, session) = client
        .call(
            reqwest::Method::POST,
            "/v1/workspaces",
            Some(json!({"name": "w"})),
        )
        .await?;
    assert_eq!(status, 201, "{session}");
    let (_, session) = client
        .call(
            reqwest::Method::POST,
            "/v1/sessions",
            Some(json!({"workspace": session["id"]})),
        )
        .await?;
    let (status, refusal) = client
        .call(
            reqwest::Method::POST,
            &format!("/v1/sessions/{}/runs", session["id"].as_str().unwrap()),
            Some(json!({"goal": "g", "model": {"scripted": {"turns": []}}, "backend": "microvm"})),
        )
        .await?;
    assert_eq!(status, 400, "{refusal}");
    assert_eq!(refusal["error"]["code"], "invalid_request");
    assert_eq!(
        refusal["error"]["message"],
        format!("backend: microvm is not enabled on this server {enabled}")
    );

    // On docker: the run, and each of its three subagents.
    let out = remote(&["--backend", "docker"])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    let started = payload(&lines, "run.started");
    assert_eq!(started["backend"], "docker", "{started}");
    assert_eq!(
        started["image"],
        paddock_sandbox::DEFAULT_IMAGE,
        "{started}"
    );
    assert_eq!(payload(&lines, "sandbox.ready")["backend"], "docker");
    let run = lines
        .iter()
        .find(|l| l["kind"] == "run.started")
        .and_then(|l| l["run"].as_str())
        .unwrap()
        .to_owned();
    let (_, children) = client
        .call(
            reqwest::Method::GET,
            &format!("/v1/runs/{run}/children"),
            None,
        )
        .await?;
    let children = children["runs"].as_array().unwrap();
    assert_eq!(children.len(), 3, "{children:?}");
    for child in children {
        let events = run_events(&client, child["id"].as_str().unwrap()).await?;
        let started = payload(&events, "run.started");
        assert_eq!(started["backend"], "docker", "{started}");
        assert_eq!(started["image"], paddock_sandbox::DEFAULT_IMAGE);
        assert_eq!(payload(&events, "sandbox.ready")["backend"], "docker");
    }

    // Naming none: the server's default.
    let out = remote(&[])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(payload(&lines, "run.started")["backend"], "native");
    assert_eq!(payload(&lines, "run.started")["image"], Value::Null);
    assert_eq!(payload(&lines, "sandbox.ready")["backend"], "native");
    drop(server);
    assert!(
        wait_for(Duration::from_secs(20), || sandboxes_of_node(&node)
            .is_empty())
        .await,
        "{:?}",
        sandboxes_of_node(&node)
    );
    Ok(())
}

/// `paddock run --backend docker` on this host: the run's sandbox and its
/// subagents' are containers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_run_uses_the_backend_of_its_flag() -> Result<()> {
    if !available("docker", "a_local_run_uses_the_backend_of_its_flag") {
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let example = SubagentExample::new()?;
    let data_dir = data.path().to_str().unwrap();
    let out = example.run(&["--backend", "docker", "--data-dir", data_dir])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(payload(&lines, "run.started")["backend"], "docker");
    assert_eq!(payload(&lines, "sandbox.ready")["backend"], "docker");
    let run = lines
        .iter()
        .find(|l| l["kind"] == "run.started")
        .and_then(|l| l["run"].as_str())
        .unwrap()
        .to_owned();
    let local = |args: &[&str]| -> Result<String> {
        let out = Command::new(common::PADDOCK)
            .args(args)
            .args(["--data-dir", data_dir])
            .output()?;
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let children: Value = serde_json::from_str(&local(&["runs", "children", &run, "--json"])?)?;
    let children = children["runs"].as_array().unwrap();
    assert_eq!(children.len(), 3, "{children:?}");
    for child in children {
        let events: Vec<Value> =
            local(&["runs", "events", child["id"].as_str().unwrap(), "--json"])?
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
        assert_eq!(payload(&events, "run.started")["backend"], "docker");
        assert_eq!(payload(&events, "sandbox.ready")["backend"], "docker");
    }
    assert!(
        example.workspace.path().join("bin/hello.sh").is_file(),
        "the build child's change was applied"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_workspace_has_the_servers_cap_on_every_backend() -> Result<()> {
    const TEST: &str = "a_temporary_workspace_has_the_servers_cap_on_every_backend";
    let kinds: Vec<&str> = ["native", "docker", "gvisor", "microvm"]
        .into_iter()
        .filter(|kind| common::backend_runs_here(kind, TEST))
        .collect();
    let mut config =
        String::from("temporary_workspace_bytes = 8388608\nallow_downgrade = [\"landlock\"]\n");
    for kind in &kinds {
        config.push_str(&format!("[[backends]]\nkind = \"{kind}\"\n"));
    }
    let (_server, client, _node, _data) = start(&config, &[], "tmpcap")?;
    // Writes past the cap fail with ENOSPC inside; what fits is kept.
    let fill = "dd if=/dev/zero of=/workspace/fits bs=1M count=4 2>/dev/null && echo fits; \
                dd if=/dev/zero of=/workspace/big bs=1M count=16 2>&1 | grep -o 'No space left' | head -1; \
                df -B1 --output=size /workspace | tail -1 | tr -d ' '";
    for kind in &kinds {
        let view = client.create(json!({"backend": kind})).await?;
        let id = view["id"].as_str().unwrap();
        assert_eq!(view["limits"]["workspace_bytes"], 8 << 20, "{kind}: {view}");
        let out = client.sh(id, fill).await?;
        assert_eq!(out, format!("fits\nNo space left\n{}\n", 8 << 20), "{kind}");
        // A request's own quota wins over the default.
        let own = client
            .create(json!({"backend": kind, "limits": {"workspace_bytes": 16 << 20}}))
            .await?;
        let size = client
            .sh(
                own["id"].as_str().unwrap(),
                "df -B1 --output=size /workspace | tail -1 | tr -d ' '",
            )
            .await?;
        assert_eq!(size, format!("{}\n", 16 << 20), "{kind}");
    }
    Ok(())
}
