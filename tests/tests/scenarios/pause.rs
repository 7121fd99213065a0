//! Pause and resume through a real `paddock serve`, on every backend this
//! host runs: a file written before the pause is there after the resume,
//! across a kill -9 and restart of the server in between (the paused
//! sandboxes are neither lost nor reaped); `full` is refused with the
//! tier's reason on the tiers that cannot keep memory, and a microVM or a
//! gVisor sandbox paused `full` comes back with its running process and
//! its memory. A sandbox's
//! own `on_idle` decides whether the expiry task pauses or stops it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command};

use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::serve;
use serde_json::{Value, json};

const TOKEN: &str = "pause-test-token-tenant-a";

fn serve(dir: &Path, node: &str) -> (Child, String) {
    serve_with(dir, node, "", &[])
}

/// `top`: top-level settings written before the backends; `options`: the
/// command line's.
fn serve_with(dir: &Path, node: &str, top: &str, options: &[String]) -> (Child, String) {
    let config = dir.join("serve.toml");
    let mut toml = format!("{top}[[backends]]\nkind = \"native\"\n");
    toml.push_str("[[backends]]\nkind = \"docker\"\nimage = \"paddock-sandbox:bookworm\"\n");
    if microvm_available() {
        toml.push_str("[[backends]]\nkind = \"microvm\"\n");
    }
    if gvisor_unavailable().is_none() {
        toml.push_str("[[backends]]\nkind = \"gvisor\"\nimage = \"paddock-sandbox:bookworm\"\n");
    }
    std::fs::write(&config, toml).unwrap();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .unwrap();
    let mut command = serve::command(node, &dir.join("server"), &format!("tenant-a:{TOKEN}"));
    command
        .arg("--config")
        .arg(&config)
        .args(options)
        .stderr(log);
    serve::spawn(command).unwrap()
}

fn microvm_available() -> bool {
    paddock_tests::backends::microvm_config().is_ok()
        && paddock_sandbox::MicroVmConfig::image_dir_from_env()
            .join("vmlinuz")
            .exists()
}

/// Why this host cannot run the gVisor backend, or None.
fn gvisor_unavailable() -> Option<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(paddock_tests::backends::connect(
            paddock_tests::backends::Kind::Gvisor,
        ))
        .err()
}

fn api(url: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-m", "600", "-X", method, "-w", "\n%{http_code}"])
        .arg("-H")
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(format!("{url}{path}"));
    if let Some(body) = body {
        cmd.args(["-H", "Content-Type: application/json", "-d"])
            .arg(body.to_string());
    }
    let out = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
    let (body, status) = out.rsplit_once('\n').unwrap();
    (
        status.trim().parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn exec(url: &str, id: &str, script: &str) -> Value {
    let (status, out) = api(
        url,
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        Some(json!({"argv": ["sh", "-c", script]})),
    );
    assert_eq!(status, 200, "{out}");
    out
}

/// Starts a background process counting into /tmp/count, with a variable
/// only its memory holds (written to /tmp/said once /tmp/go appears);
/// returns its pid once it has counted.
fn start_counter(url: &str, id: &str) -> u64 {
    let (status, started) = api(
        url,
        "POST",
        &format!("/v1/sandboxes/{id}/processes"),
        Some(
            json!({"shell": "v=remembered-$$; i=0; while [ ! -e /tmp/go ]; do \
                              i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done; echo $v > /tmp/said"}),
        ),
    );
    assert_eq!(status, 201, "{started}");
    exec(url, id, "while [ ! -s /tmp/count ]; do sleep 0.1; done");
    started["pid"].as_u64().unwrap()
}

/// The background counter of the sandbox (/tmp/count) goes up (within 30
/// s: a loaded host runs a TCG guest's `sleep` slowly).
fn assert_counting(url: &str, id: &str) {
    let counted = exec(
        url,
        id,
        // a read between the writer's truncate and its write is empty
        "i=0; a=; while [ -z \"$a\" ] && [ $i -lt 300 ]; do a=$(cat /tmp/count); i=$((i+1)); done; \
         b=$a; i=0; \
         while { [ -z \"$b\" ] || [ \"$b\" -le \"$a\" ]; } && [ $i -lt 300 ]; do \
         sleep 0.1; b=$(cat /tmp/count); i=$((i+1)); done; echo $a $b",
    );
    let counts: Vec<u64> = counted["stdout"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        counts.len() == 2 && counts[1] > counts[0],
        "not counting: {counted}"
    );
}

/// `POST /v1/sandboxes/{id}/pause` in `full` mode: its status and body.
fn pause_full(url: &str, id: &str) -> (u16, Value) {
    api(
        url,
        "POST",
        &format!("/v1/sandboxes/{id}/pause"),
        Some(json!({"mode": "full"})),
    )
}

/// `paddock sandbox resume ID` against the server at `url`; it must succeed.
fn cli_resume(url: &str, id: &str) {
    let out = Command::new(paddock_tests::bins::paddock())
        .args(["sandbox", "resume", id, "--server", url])
        .env("PADDOCK_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resuming {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn kill(child: &mut Child, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status();
    for _ in 0..300 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_paused_sandbox_keeps_its_files_across_a_server_restart_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let node = format!("pause-{}", std::process::id());
    let mut backends = vec!["native", "docker"];
    if microvm_available() {
        backends.push("microvm");
    } else {
        eprintln!("SKIPPED microvm: no microVM image or guest on this host");
    }
    let (mut server, url) = serve(dir.path(), &node);
    let mut ids = Vec::new();
    for backend in &backends {
        let (status, created) = api(
            &url,
            "POST",
            "/v1/sandboxes",
            Some(json!({"backend": backend})),
        );
        assert_eq!(status, 201, "{backend}: {created}");
        let id = created["id"].as_str().unwrap().to_owned();
        exec(&url, &id, &format!("echo {backend} > /workspace/kept.txt"));
        // the microVM keeps memory: `a_microvm_paused_full_...` below
        if *backend != "microvm" {
            let (status, refused) = pause_full(&url, &id);
            assert_eq!(status, 409, "{backend}: {refused}");
            assert_eq!(
                refused["error"]["code"], "pause_mode_unsupported",
                "{refused}"
            );
        }
        // The CLI pauses it and says the processes were not kept.
        let out = Command::new(paddock_tests::bins::paddock())
            .args([
                "sandbox",
                "pause",
                &id,
                "--mode",
                "filesystem",
                "--server",
                &url,
            ])
            .env("PADDOCK_TOKEN", TOKEN)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{backend}: {said} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("processes not kept"), "{said}");
        ids.push((backend, id));
    }
    let (_, paused) = api(&url, "GET", "/v1/sandboxes?state=paused", None);
    assert_eq!(
        paused["sandboxes"].as_array().unwrap().len(),
        backends.len(),
        "{paused}"
    );

    kill(&mut server, "KILL");
    let (mut server, url) = serve(dir.path(), &node);
    for (backend, id) in &ids {
        let (_, got) = api(&url, "GET", &format!("/v1/sandboxes/{id}"), None);
        assert_eq!(got["state"], "paused", "{backend}: {got}");
        cli_resume(&url, id);
        let out = exec(&url, id, "cat /workspace/kept.txt");
        assert_eq!(out["stdout"], format!("{backend}\n"), "{backend}: {out}");
        api(&url, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    }
    kill(&mut server, "TERM");
}

/// Host pids of the QEMU processes of the server of `node` (their cgroup
/// is under the node's).
fn qemus_of(node: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).starts_with("/usr/bin/qemu-system")
            && cgroup.contains(node)
        {
            pids.push(pid);
        }
    }
    pids
}

fn saved_files(dir: &Path) -> Vec<(String, u64)> {
    std::fs::read_dir(dir.join("server/paused"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let len = e.metadata().map_or(0, |m| m.len());
                    (e.file_name().to_string_lossy().into_owned(), len)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_microvm_paused_full_keeps_its_processes_and_memory_across_a_server_restart() {
    if !microvm_available() {
        eprintln!("SKIPPED microvm full pause: no microVM image or guest on this host");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = format!("pausefull-{}", std::process::id());
    // With network: its resume makes the namespace, tap and proxy again.
    let host = TestHost::start("pf", DocRange::Net2, 8080, None).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("a.test", &[host.ip]);
    let options = [dns.option(), host.allow_option()];
    let (mut server, url) = serve_with(dir.path(), &node, "", &options);
    let fetch = "curl -sS -m 20 http://a.test:8080/";
    // A temporary workspace (the server gives it a quota: a tmpfs in the VM).
    let (status, created) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "microvm", "network": {"allowlist": ["a.test:8080"]}})),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    exec(&url, &id, "echo kept > /workspace/kept.txt");
    let before = exec(&url, &id, fetch);
    assert!(
        before["stdout"].as_str().unwrap().contains("hello from pf"),
        "{before}"
    );
    let pid = start_counter(&url, &id);
    assert_eq!(qemus_of(&node).len(), 1, "one VM runs");

    let (status, paused) = pause_full(&url, &id);
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["state"], "paused", "{paused}");
    assert_eq!(paused["pause"]["mode"], "full", "{paused}");
    assert_eq!(paused["pause"]["processes_kept"], true, "{paused}");
    // Nothing of the VM runs or holds memory: its QEMU is gone; the VM is
    // a file on the server's disk.
    assert_eq!(qemus_of(&node), Vec::<u32>::new(), "QEMU still runs");
    let saved = saved_files(dir.path());
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0].0.starts_with(&id) && saved[0].1 > 1 << 20,
        "{saved:?}"
    );

    kill(&mut server, "KILL");
    let (mut server, url) = serve_with(dir.path(), &node, "", &options);
    let (_, got) = api(&url, "GET", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(got["state"], "paused", "{got}");
    assert_eq!(
        saved_files(dir.path()).len(),
        1,
        "the restart kept the saved VM"
    );
    cli_resume(&url, &id);
    assert_eq!(qemus_of(&node).len(), 1, "the resumed VM runs");
    assert!(
        saved_files(dir.path()).is_empty(),
        "the saved VM is removed once resumed"
    );

    // The file, the network, the process (the same pid, still counting)
    // and its memory.
    let kept = exec(&url, &id, "cat /workspace/kept.txt");
    assert_eq!(kept["stdout"], "kept\n", "{kept}");
    let after = exec(&url, &id, fetch);
    assert!(
        after["stdout"].as_str().unwrap().contains("hello from pf"),
        "{after}"
    );
    // The allowlist holds as before: the host's address is not on it.
    let literal = format!("curl -fsS -m 20 http://{}:8080/", host.ip);
    let (status, refused) = api(
        &url,
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        Some(json!({"argv": ["sh", "-c", literal]})),
    );
    assert_eq!(status, 200, "{refused}");
    assert_ne!(refused["exit_code"], 0, "{refused}");
    assert!(
        !refused["stdout"]
            .as_str()
            .unwrap()
            .contains("hello from pf"),
        "{refused}"
    );
    assert_counting(&url, &id);
    let (_, listed) = api(&url, "GET", &format!("/v1/sandboxes/{id}/processes"), None);
    assert!(
        listed["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == pid && p["running"] == true),
        "{listed}"
    );
    let said = exec(
        &url,
        &id,
        "touch /tmp/go; while [ ! -s /tmp/said ]; do sleep 0.1; done; cat /tmp/said",
    );
    assert_eq!(said["stdout"], format!("remembered-{pid}\n"), "{said}");

    api(&url, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(qemus_of(&node), Vec::<u32>::new());
    kill(&mut server, "TERM");
}

#[test]
fn a_gvisor_sandbox_paused_full_keeps_its_processes_and_memory_across_a_server_restart() {
    if let Some(reason) = gvisor_unavailable() {
        paddock_test_support::require::skip_or_panic(
            paddock_test_support::require::Need::Backend("gvisor"),
            "gvisor full pause",
            &format!("backend unavailable: {reason}"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = format!("pausegv-{}", std::process::id());
    // gVisor has no landlock: the server allows that downgrade
    let top = "allow_downgrade = [\"landlock\"]\n";
    let (mut server, url) = serve_with(dir.path(), &node, top, &[]);
    let (status, created) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "gvisor"})),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let container = format!("paddock-{id}");
    exec(&url, &id, "echo kept > /workspace/kept.txt");
    let pid = start_counter(&url, &id);
    let before = count(&url, &id);
    assert_eq!(container_status(&container), "running");
    // A second one, on a workspace of the server's, deleted while paused
    // after the restart.
    let (status, workspace) = api(
        &url,
        "POST",
        "/v1/workspaces",
        Some(json!({"name": "shared"})),
    );
    assert_eq!(status, 201, "{workspace}");
    let workspace = workspace["id"].as_str().unwrap().to_owned();
    let (status, created) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "gvisor", "workspace": workspace})),
    );
    assert_eq!(status, 201, "{created}");
    let other = created["id"].as_str().unwrap().to_owned();
    let other_container = format!("paddock-{other}");
    let (status, paused) = pause_full(&url, &other);
    assert_eq!(status, 200, "{paused}");

    let (status, paused) = pause_full(&url, &id);
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["pause"]["mode"], "full", "{paused}");
    assert_eq!(paused["pause"]["processes_kept"], true, "{paused}");
    // Nothing of it runs or holds memory: the container exited, its
    // checkpoint kept with it; the server's file names it.
    assert_eq!(container_status(&container), "exited");
    assert_eq!(saved_files(dir.path()).len(), 2);

    kill(&mut server, "KILL");
    // Paused for a while: a counter that ran on (or started over) would show it.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let (mut server, url) = serve_with(dir.path(), &node, top, &[]);
    let (_, got) = api(&url, "GET", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(got["state"], "paused", "{got}");
    for kept in [&container, &other_container] {
        assert_eq!(
            container_status(kept),
            "exited",
            "the restart's reaping kept the paused container"
        );
    }
    cli_resume(&url, &id);
    assert_eq!(container_status(&container), "running");
    assert_eq!(saved_files(dir.path()).len(), 1);

    // The counter went on from where it was (not from 0, not 50 ahead),
    // and counts still; the file, the process and its memory are there.
    let after = count(&url, &id);
    assert!(
        before <= after && after < before + 40,
        "before the pause {before}, after the resume {after}"
    );
    assert_counting(&url, &id);
    let kept = exec(&url, &id, "cat /workspace/kept.txt");
    assert_eq!(kept["stdout"], "kept\n", "{kept}");
    let said = exec(
        &url,
        &id,
        "touch /tmp/go; while [ ! -s /tmp/said ]; do sleep 0.1; done; cat /tmp/said",
    );
    assert_eq!(said["stdout"], format!("remembered-{pid}\n"), "{said}");

    // runsc leaves a restored container's state behind at a second
    // checkpoint: refused with that reason.
    let (status, refused) = pause_full(&url, &id);
    assert_eq!(status, 409, "{refused}");
    assert_eq!(
        refused["error"]["code"], "pause_mode_unsupported",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("restored"),
        "{refused}"
    );
    api(&url, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(container_status(&container), "gone");

    // Paused, it writes its workspace no more: another sandbox may. Its
    // resume is then refused before the restore, which would spend the
    // checkpoint: the container and its file stay for a later resume.
    let (status, writer) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "gvisor", "workspace": workspace})),
    );
    assert_eq!(status, 201, "{writer}");
    let (status, refused) = api(&url, "POST", &format!("/v1/sandboxes/{other}/resume"), None);
    assert_eq!(status, 409, "{refused}");
    assert_eq!(container_status(&other_container), "exited");
    assert_eq!(saved_files(dir.path()).len(), 1);
    let (_, got) = api(&url, "GET", &format!("/v1/sandboxes/{other}"), None);
    assert_eq!(got["state"], "paused", "{got}");
    let writer = writer["id"].as_str().unwrap();
    api(&url, "DELETE", &format!("/v1/sandboxes/{writer}"), None);

    // Deleted while paused: its container and checkpoint go.
    let (status, deleted) = api(&url, "DELETE", &format!("/v1/sandboxes/{other}"), None);
    assert!(status < 300, "{status} {deleted}");
    assert_eq!(container_status(&other_container), "gone");
    assert!(saved_files(dir.path()).is_empty());
    kill(&mut server, "TERM");
}

/// The counter of the background loop in the sandbox.
fn count(url: &str, id: &str) -> u64 {
    let out = exec(url, id, "cat /tmp/count");
    out["stdout"].as_str().unwrap().trim().parse().unwrap()
}

/// The engine's state of `container` ("running", "exited", ...), or "gone".
fn container_status(container: &str) -> String {
    let out = paddock_tests::backends::docker_cli()
        .args(["inspect", "-f", "{{.State.Status}}", container])
        .output()
        .unwrap();
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    } else {
        "gone".to_owned()
    }
}

/// Polls the sandbox until its state is `want` (at most 60 s).
fn wait_state(url: &str, id: &str, want: &str) -> Value {
    let mut got = Value::Null;
    for _ in 0..600 {
        got = api(url, "GET", &format!("/v1/sandboxes/{id}"), None).1;
        if got["state"] == want {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("sandbox {id} never became {want}: {got}");
}

#[test]
fn a_sandbox_chooses_to_be_paused_or_stopped_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let node = format!("on-idle-{}", std::process::id());
    // The server stops idle sandboxes unless they chose otherwise.
    let (mut server, url) = serve_with(
        dir.path(),
        &node,
        "idle_timeout_secs = 2\non_idle = \"stop\"\n",
        &[],
    );
    // The CLI's flag asks for a pause.
    let out = Command::new(paddock_tests::bins::paddock())
        .args([
            "sandbox",
            "create",
            "--on-idle",
            "pause",
            "--backend",
            "native",
            "--json",
            "--server",
            &url,
        ])
        .env("PADDOCK_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pausing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pausing["on_idle"], "pause", "{pausing}");
    let pausing = pausing["id"].as_str().unwrap().to_owned();
    let (status, stopping) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "native", "on_idle": "stop"})),
    );
    assert_eq!(status, 201, "{stopping}");
    assert_eq!(stopping["on_idle"], "stop", "{stopping}");
    let stopping = stopping["id"].as_str().unwrap().to_owned();
    // What cannot be paused cannot ask to be.
    let (status, refused) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "native", "console": true, "on_idle": "pause"})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("on_idle"),
        "{refused}"
    );
    let (status, refused) = api(
        &url,
        "POST",
        "/v1/sandboxes",
        Some(json!({"backend": "native", "on_idle": "sleep"})),
    );
    // an unreadable body is a 422, as every other's
    assert_eq!(status, 422, "{refused}");
    assert!(refused.to_string().contains("on_idle"), "{refused}");

    exec(
        &url,
        &pausing,
        "echo before > /workspace/kept.txt; echo scratch > /tmp/gone.txt",
    );
    let paused = wait_state(&url, &pausing, "paused");
    assert_eq!(paused["pause"]["reason"], "idle", "{paused}");
    assert_eq!(paused["pause"]["mode"], "filesystem", "{paused}");
    wait_state(&url, &stopping, "stopped");
    // The paused one still is (it was paused, not stopped, by the same task).
    let (_, still) = api(&url, "GET", &format!("/v1/sandboxes/{pausing}"), None);
    assert_eq!(still["state"], "paused", "{still}");

    // Its next exec resumes it, on its files (filesystem mode: /tmp is fresh).
    let out = exec(
        &url,
        &pausing,
        "cat /workspace/kept.txt; test -e /tmp/gone.txt && echo tmp-kept || echo tmp-fresh",
    );
    assert_eq!(out["stdout"], "before\ntmp-fresh\n", "{out}");
    let (_, resumed) = api(&url, "GET", &format!("/v1/sandboxes/{pausing}"), None);
    assert_eq!(resumed["state"], "running", "{resumed}");
    assert_eq!(resumed["on_idle"], "pause", "{resumed}");
    // The stopped one does not come back.
    let (status, gone) = api(
        &url,
        "POST",
        &format!("/v1/sandboxes/{stopping}/exec"),
        Some(json!({"argv": ["true"]})),
    );
    assert_eq!(status, 409, "{gone}");
    api(&url, "DELETE", &format!("/v1/sandboxes/{pausing}"), None);
    kill(&mut server, "TERM");
}
