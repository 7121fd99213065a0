//! No process, mount, cgroup, network namespace, veth or NAT rule outlives a
//! sandbox: 100 create/destroy cycles (and some with network full), plus
//! sandboxes whose `paddock` is SIGKILLed at various points.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{HostSnapshot, processes_with_cmdline, require_root, wait_for_no_leaks};
use paddock_tests::run::wait_until;

const CYCLES: usize = 100;
const MARKER: &str = "sleep 4242";

fn paddock_temp_dirs() -> BTreeSet<String> {
    fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("paddock-"))
        .collect()
}

fn spawn_quiet(run: &SandboxRun) -> Child {
    run.command(false)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn sigkill_and_reap(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn nothing_outlives_a_hundred_sandboxes_and_killed_ones() {
    require_root();
    let before = HostSnapshot::capture();
    let temp_before = paddock_temp_dirs();

    for i in 0..CYCLES {
        let run = SandboxRun::new(["true"]).run();
        assert_eq!(run.code(), 0, "cycle {i}: {}", run.stderr_str());
    }
    // network full: a namespace, a host-side veth, NAT rules per sandbox;
    // none of them outlives it (the snapshot compares them too).
    for i in 0..5 {
        let run = SandboxRun::new(["true"]).network("full").run();
        assert_eq!(run.code(), 0, "full cycle {i}: {}", run.stderr_str());
    }
    let temp_after: BTreeSet<String> = paddock_temp_dirs();
    let new_temp: Vec<&String> = temp_after.difference(&temp_before).collect();
    assert!(
        new_temp.is_empty(),
        "temporary workspaces left: {new_temp:?}"
    );

    // Killed while the sandbox is still being set up (deliberate kill points,
    // not waits) ...
    let ws = tempfile::tempdir().unwrap();
    for delay_ms in [0, 1, 3, 6, 10, 20] {
        let child = spawn_quiet(&SandboxRun::shell(&format!("exec {MARKER}")).workspace(ws.path()));
        thread::sleep(Duration::from_millis(delay_ms));
        sigkill_and_reap(child);
    }
    // ... and while its command runs.
    for i in 0..3 {
        let ready = ws.path().join(format!("ready-{i}"));
        let child = spawn_quiet(
            &SandboxRun::shell(&format!("touch /workspace/ready-{i}; exec {MARKER}"))
                .workspace(ws.path()),
        );
        let started = wait_until(Duration::from_secs(20), || ready.exists());
        sigkill_and_reap(child);
        assert!(started, "sandbox {i} never ran its command");
    }

    let leaks = wait_for_no_leaks(&before, Duration::from_secs(15));
    assert!(leaks.is_empty(), "left behind on the host: {leaks:#?}");
    assert!(
        wait_until(Duration::from_secs(5), || processes_with_cmdline(MARKER)
            .is_empty()),
        "a sandboxed `{MARKER}` outlived its killed paddock"
    );
}
