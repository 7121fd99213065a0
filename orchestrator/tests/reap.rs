//! `kill -9` of a paddock command that started sandboxes in its own process
//! (`paddock sandbox run`, `paddock run`) leaves its host resources behind:
//! NAT rules, a veth and a network namespace (native, by network mode),
//! docker's temporary directory, the owner's cgroup parent and record. The
//! next paddock command of any kind removes them, and nothing of a live
//! owner's. Needs root and `paddock-guest` built; a backend this host cannot
//! run is skipped with its reason, or fails when PADDOCK_REQUIRE_BACKENDS
//! names it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use common::{PADDOCK, ServerProcess, backend_runs_here, processes_with, unique, wait_until};
use serde_json::Value;

/// Where paddock records owners (owners.rs).
const OWNERS: &str = "/run/paddock/owners";
const LABEL_NODE: &str = "org.paddock.node";
/// Every command reaps dead owners: one test's kill -9 must not be reaped
/// by another test's command before it has looked at the leftovers.
static SERIAL: Mutex<()> = Mutex::new(());

/// A running paddock process that owns sandboxes.
struct Owner {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    record_path: PathBuf,
    record: Value,
}

impl Owner {
    /// Spawns `command` (stdout piped) and waits for a stdout line
    /// containing `ready` and for its owner record.
    fn start(mut command: Command, ready: &str) -> Owner {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut seen = String::new();
        while !seen.contains(ready) {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                panic!("the owner ended before it was up: {seen}");
            }
            seen.push_str(&line);
        }
        let pid = child.id();
        let (record_path, record) = record_of(pid).expect("an owner record");
        Owner {
            child,
            _stdout: stdout,
            record_path,
            record,
        }
    }

    fn backend(&self) -> &str {
        self.record["backends"][0]["kind"].as_str().unwrap()
    }

    fn temp_root(&self) -> PathBuf {
        PathBuf::from(self.record["backends"][0]["temp_root"].as_str().unwrap())
    }

    fn cgroup_parent(&self) -> String {
        let parent = self.record["backends"][0]["cgroup_parent"]
            .as_str()
            .unwrap();
        if self.backend() == "microvm" {
            format!("{parent}-microvm")
        } else {
            parent.to_owned()
        }
    }

    fn node(&self) -> String {
        self.record["backends"][0]["node"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The owner tag of its native monitors, NAT comments and QEMU names.
    fn tag(&self) -> String {
        paddock_sandbox::owner_tag(&self.cgroup_parent())
    }

    /// Ids of its sandboxes, while it runs: from its temporary directory,
    /// its native monitors, its QEMUs and its containers.
    fn sandbox_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.temp_root())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_owned();
                let (id, _) = name.strip_prefix("paddock-")?.rsplit_once('-')?;
                Some(id.to_owned())
            })
            .collect();
        let tag = self.tag();
        for (_, line) in processes_with(&format!("--owner {tag}")) {
            let words: Vec<&str> = line.split(' ').collect();
            if let Some(i) = words.iter().position(|w| *w == "--sandbox") {
                ids.push(words[i + 1].to_owned());
            }
        }
        for (_, line) in processes_with(&format!("paddock:{tag}:")) {
            if let Some(rest) = line.split(&format!("paddock:{tag}:")).nth(1) {
                ids.push(rest.split(' ').next().unwrap().to_owned());
            }
        }
        ids.extend(docker_sandboxes(&self.node()));
        ids.sort();
        ids.dedup();
        ids
    }

    /// Everything of this owner on the host, for sandboxes `ids`.
    fn leftovers(&self, ids: &[String]) -> Vec<String> {
        let mut left = Vec::new();
        if self.record_path.exists() {
            left.push(format!("record {}", self.record_path.display()));
        }
        if let Ok(entries) = std::fs::read_dir(self.temp_root()) {
            left.push(format!("dir {}", self.temp_root().display()));
            left.extend(
                entries
                    .flatten()
                    .map(|e| format!("temp {}", e.path().display())),
            );
        }
        for hierarchy in std::fs::read_dir("/sys/fs/cgroup").unwrap().flatten() {
            let dir = hierarchy.path().join(self.cgroup_parent());
            if dir.exists() {
                left.push(format!("cgroup {}", dir.display()));
            }
        }
        let netns = command_output("ip", &["netns", "list"]);
        let rules = command_output("iptables-save", &[]);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for id in ids {
            if netns.contains(&format!("paddock-{id}")) {
                left.push(format!("netns paddock-{id}"));
            }
            left.extend(
                rules
                    .lines()
                    .filter(|l| l.contains(id.as_str()))
                    .map(|l| format!("iptables {l}")),
            );
            // Rules by comment, the chain and the host-side veth.
            left.extend(
                runtime
                    .block_on(paddock_egress::nat::leftovers(&self.tag(), id))
                    .into_iter()
                    .map(|l| format!("nat {l}")),
            );
        }
        left.extend(
            docker_sandboxes(&self.node())
                .into_iter()
                .map(|id| format!("container {id}")),
        );
        let tag = self.tag();
        left.extend(
            processes_with(&format!("--owner {tag}"))
                .into_iter()
                .chain(processes_with(&format!("paddock:{tag}:")))
                .map(|(pid, line)| format!("process {pid} {line}")),
        );
        left
    }

    fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and its exit code.
    fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        self.child.wait().unwrap().code()
    }
}

fn command_output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sandbox ids of the containers labelled with `node`.
fn docker_sandboxes(node: &str) -> Vec<String> {
    let Ok(out) = Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label={LABEL_NODE}={node}"),
            "--format",
            "{{.Label \"org.paddock.sandbox\"}}",
        ])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The record of owner `pid`: `<pid>-<start>.json`.
fn record_of(pid: u32) -> Option<(PathBuf, Value)> {
    let prefix = format!("{pid}-");
    std::fs::read_dir(OWNERS).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_str()?.to_owned();
        if !(name.starts_with(&prefix) && name.ends_with(".json")) {
            return None;
        }
        let text = std::fs::read_to_string(e.path()).ok()?;
        Some((e.path(), serde_json::from_str(&text).ok()?))
    })
}

/// `paddock sandbox run` of a shell that says it is up, then sleeps.
fn sandbox_run(backend: &str, network: &str, cwd: &Path) -> Command {
    let mut command = Command::new(PADDOCK);
    command
        .current_dir(cwd)
        .args(["sandbox", "run", "--backend", backend, "--network", network])
        .env_remove("PADDOCK_SERVER");
    if backend == "gvisor" {
        // gVisor offers no landlock (docs/security.md).
        command.args(["--allow-downgrade", "landlock"]);
    }
    command.args(["--", "sh", "-c", "echo sandbox-up; exec sleep 987"]);
    command
}

/// Starts a live owner and a victim, kills the victim with SIGKILL, checks
/// that it left `expected` kinds of leftovers, runs `reaper`, and checks
/// that the victim's are gone and the live owner's untouched (and then
/// gone after its own clean exit).
fn crash_and_reap(
    (victim, ready): (Command, &str),
    live: Command,
    expected: &[&str],
    reaper: impl FnOnce() -> String,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut live = Owner::start(live, "sandbox-up");
    let mut victim = Owner::start(victim, ready);
    let live_ids = live.sandbox_ids();
    let victim_ids = victim.sandbox_ids();
    assert!(!victim_ids.is_empty(), "the victim's sandbox is found");
    let live_before = live.leftovers(&live_ids);

    victim.kill_9();
    // What the dead owner's own processes removed on their way out is gone
    // by now; the rest stays until someone reaps it.
    std::thread::sleep(Duration::from_secs(2));
    let left = victim.leftovers(&victim_ids);
    for kind in expected {
        assert!(
            left.iter().any(|l| l.starts_with(kind)),
            "kill -9 left no {kind}: {left:?}"
        );
    }

    let stderr = reaper();
    assert!(
        stderr.contains("removed what a dead paddock process left"),
        "the reaper says what it removed: {stderr}"
    );
    let left = victim.leftovers(&victim_ids);
    assert!(left.is_empty(), "the next command left: {left:?}\n{stderr}");

    // The live owner lost nothing, and still runs.
    assert_eq!(live.leftovers(&live_ids), live_before);
    assert!(
        live.child.try_wait().unwrap().is_none(),
        "the live owner runs"
    );
    let live_record = live.record_path.clone();
    assert!(live_record.exists());
    let code = live.terminate();
    assert!(code.is_some(), "the live owner exits on SIGTERM");
    assert!(
        wait_until(Duration::from_secs(10), || !live_record.exists()),
        "a clean exit removes its own record"
    );
}

/// Runs `command` to its end with its log at info; its stderr.
fn stderr_of(mut command: Command) -> String {
    let out = command.env("RUST_LOG", "info").output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `paddock sandbox ls --server ...` (a client command that fails to
/// connect) as the next command.
fn client_command() -> String {
    let mut command = Command::new(PADDOCK);
    command.args(["sandbox", "ls", "--server", "http://127.0.0.1:9"]);
    stderr_of(command)
}

/// `paddock sandbox run -- true` as the next command.
fn sandbox_command(cwd: &Path) -> String {
    let mut command = Command::new(PADDOCK);
    command
        .current_dir(cwd)
        .args(["sandbox", "run", "--", "true"]);
    stderr_of(command)
}

/// `paddock serve` as the next command: it reaps before it listens.
fn serve_command(data: &Path) -> String {
    let node = unique("reap");
    let server =
        ServerProcess::start_logged(data, &node, &format!("reap:{node}-token"), &[]).unwrap();
    server.terminate().unwrap();
    std::fs::read_to_string(ServerProcess::log_of(data)).unwrap()
}

#[test]
fn native_network_none() {
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("native", "none", cwd.path()), "sandbox-up"),
        sandbox_run("native", "none", cwd.path()),
        &["record", "dir", "cgroup"],
        client_command,
    );
}

#[test]
fn native_network_allow() {
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (
            sandbox_run("native", "allow:example.com", cwd.path()),
            "sandbox-up",
        ),
        sandbox_run("native", "allow:example.com", cwd.path()),
        &["record", "netns", "temp"],
        || sandbox_command(cwd.path()),
    );
}

#[test]
fn native_network_full() {
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("native", "full", cwd.path()), "sandbox-up"),
        sandbox_run("native", "full", cwd.path()),
        &["record", "netns", "iptables", "nat veth"],
        client_command,
    );
}

/// The same, `paddock serve` reaping at its start.
#[test]
fn native_network_full_reaped_by_serve() {
    let cwd = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("native", "full", cwd.path()), "sandbox-up"),
        sandbox_run("native", "full", cwd.path()),
        &["record", "netns", "iptables", "nat veth"],
        || serve_command(data.path()),
    );
}

#[test]
fn docker_network_none() {
    if !backend_runs_here("docker", "docker_network_none") {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("docker", "none", cwd.path()), "sandbox-up"),
        sandbox_run("docker", "none", cwd.path()),
        &["record", "temp"],
        client_command,
    );
}

#[test]
fn gvisor_network_none() {
    if !backend_runs_here("gvisor", "gvisor_network_none") {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("gvisor", "none", cwd.path()), "sandbox-up"),
        sandbox_run("gvisor", "none", cwd.path()),
        &["record", "temp"],
        client_command,
    );
}

#[test]
fn microvm_network_none() {
    if !backend_runs_here("microvm", "microvm_network_none") {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    crash_and_reap(
        (sandbox_run("microvm", "none", cwd.path()), "sandbox-up"),
        // A live owner of another tier: one microVM boot is slow enough.
        sandbox_run("native", "none", cwd.path()),
        &["record", "temp"],
        || sandbox_command(cwd.path()),
    );
}

/// `paddock run` with the scripted model and network full, killed while
/// its command runs; `paddock session ls` (which starts no sandbox) reaps it.
#[test]
fn a_local_run_killed_with_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("README.md"), "hello\n").unwrap();
    let data = dir.path().join("data");
    let script = dir.path().join("slow.json");
    std::fs::write(
        &script,
        r#"{"turns": [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 300", "timeout_secs": 600}}]},
            {"tool_calls": [{"name": "complete_task", "arguments": {"verdict": "met", "summary": "x", "evidence": ["y"]}}]}]}"#,
    )
    .unwrap();
    let mut victim = Command::new(PADDOCK);
    victim
        .args(["run", "wait", "--yes", "--network", "full", "--workspace"])
        .arg(&workspace)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .arg("--data-dir")
        .arg(&data)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL");
    let mut reaper = Command::new(PADDOCK);
    reaper.args(["session", "ls", "--data-dir"]).arg(&data);
    crash_and_reap(
        (victim, "[tool] run_command $ sleep 300"),
        sandbox_run("native", "full", dir.path()),
        &["record", "netns", "iptables", "nat veth", "dir"],
        || stderr_of(reaper),
    );
}

/// `kill -9` of `paddock serve` with a sandbox of network full: no server of
/// that node starts again, and the next command of any kind removes its NAT,
/// veth and namespace.
#[test]
fn a_killed_server_is_reaped_by_any_next_command() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let data = tempfile::tempdir().unwrap();
    let node = unique("reaped");
    let token = format!("{node}-token");
    let server = ServerProcess::start(data.path(), &node, &format!("reap:{token}")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let created: Value = runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(format!("{}/v1/sandboxes", server.url))
            .bearer_auth(&token)
            .json(&serde_json::json!({"network": "full"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201);
        response.json().await.unwrap()
    });
    let id = created["id"].as_str().unwrap().to_owned();
    let record = PathBuf::from(OWNERS).join(format!("server-{node}.json"));
    assert!(record.exists(), "the server records itself");
    let tag = paddock_sandbox::owner_tag(&format!("paddock/{node}"));
    let nat = |runtime: &tokio::runtime::Runtime| {
        runtime.block_on(paddock_egress::nat::leftovers(&tag, &id))
    };
    let netns = || command_output("ip", &["netns", "list"]).contains(&format!("paddock-{id}"));

    server.kill_9().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(netns(), "kill -9 left the namespace");
    let left = nat(&runtime);
    assert!(
        left.iter().any(|l| l.starts_with("veth")) && left.len() > 1,
        "kill -9 left the NAT: {left:?}"
    );

    let stderr = client_command();
    assert!(
        stderr.contains("removed what a dead paddock process left"),
        "{stderr}"
    );
    assert!(!netns(), "the namespace is gone");
    assert_eq!(nat(&runtime), Vec::<String>::new());
    assert!(!record.exists(), "the record is gone");
    // The node's data directory stays whole: it is the next start's.
    assert!(data.path().join("tmp").is_dir());
}

/// A dead owner whose leftovers cannot be removed (its backend cannot be
/// connected: the image is gone) is logged and kept for the next command,
/// which is not failed; an unreadable record is removed with a warning.
#[test]
fn what_cannot_be_reaped_is_logged_and_kept_for_the_next_command() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = unique("dead");
    std::fs::create_dir_all(OWNERS).unwrap();
    let stuck = PathBuf::from(OWNERS).join(format!("{name}.json"));
    let temp_root = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&temp_root).unwrap();
    let record = serde_json::json!({
        "pid": 1, "start": 0, "command": "sandbox run",
        "backends": [{
            "kind": "docker", "node": format!("paddock-cli.{name}"),
            "cgroup_parent": format!("paddock-cli/{name}"),
            "temp_root": temp_root, "guest_bin": null,
            "image": "paddock-no-such-image:reap"
        }]
    });
    std::fs::write(&stuck, serde_json::to_vec(&record).unwrap()).unwrap();
    let garbled = PathBuf::from(OWNERS).join(format!("{name}-garbled.json"));
    std::fs::write(&garbled, b"{\"pid\": 1, \"sta").unwrap();

    let stderr = client_command();
    assert!(
        stderr.contains("could not remove what a dead paddock process left")
            && stderr.contains("paddock-no-such-image:reap"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot reach the server"),
        "the command ran: {stderr}"
    );
    assert!(stuck.exists(), "kept for the next command");
    assert!(temp_root.exists(), "nothing removed without its backend");
    assert!(!garbled.exists(), "{stderr}");
    assert!(
        stderr.contains("removing an unreadable owner record"),
        "{stderr}"
    );

    std::fs::remove_file(&stuck).unwrap();
    std::fs::remove_dir(&temp_root).unwrap();
}
