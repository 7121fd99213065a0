//! Resource limits: memory, pids, /tmp size and CPU quota.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{require_root, wait_for_cgroups_gone};
use std::time::Duration;

const PROBE: &str = "paddock-test-probe";
const MIB: u64 = 1 << 20;

#[test]
fn a_process_over_the_memory_limit_is_killed() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let (json, run) = SandboxRun::new([probe.as_str(), "alloc", &(256 * MIB).to_string()])
        .workspace(ws.path())
        .memory(64 * MIB)
        .run_json();
    assert_eq!(run.code(), 137, "{json:?}");
    assert_eq!(json.signal, Some(9), "{json:?}");
    assert!(!json.stdout.contains("allocated"));
    let left = wait_for_cgroups_gone(&json.sandbox_id, Duration::from_secs(5));
    assert!(left.is_empty(), "cgroups left: {left:?}");
}

#[test]
fn a_process_under_the_memory_limit_runs() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let run = SandboxRun::new([probe.as_str(), "alloc", &(16 * MIB).to_string()])
        .workspace(ws.path())
        .memory(64 * MIB)
        .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), format!("allocated {}\n", 16 * MIB));
}

#[test]
fn the_pids_limit_stops_spawning() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    let run = SandboxRun::new([probe.as_str(), "spawn-until-fail", "200"])
        .workspace(ws.path())
        .pids(16)
        .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    let out = run.stdout_str();
    let n: u64 = out
        .strip_prefix("spawned ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {out:?}"));
    assert!(out.contains("then failed"), "{out}");
    assert!(n < 16, "{n} children under a pids limit of 16");
}

#[test]
fn tmp_is_a_tmpfs_of_the_configured_size() {
    require_root();
    let size = 8 * MIB;
    let script = "stat -f -c '%T %b %S' /tmp; head -c 20000000 /dev/zero > /tmp/fill; \
                  echo rc=$?; wc -c < /tmp/fill";
    let run = SandboxRun::shell(script).tmp_size(size).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    let out = run.stdout_str();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let fs: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(fs[0], "tmpfs", "{out}");
    let total: u64 = fs[1].parse::<u64>().unwrap() * fs[2].parse::<u64>().unwrap();
    assert_eq!(total, size, "{out}");
    assert_ne!(lines[1], "rc=0", "writing past the size succeeded: {out}");
    let written: u64 = lines[2].trim().parse().unwrap();
    assert!(
        written <= size,
        "wrote {written} bytes to an {size} byte /tmp"
    );
    assert!(
        run.stderr_str().contains("No space left"),
        "{}",
        run.stderr_str()
    );
}

#[test]
fn the_cpu_quota_is_applied() {
    require_root();
    let (json, run) = SandboxRun::new(["true"]).cpus("0.5").run_json();
    assert_eq!(run.code(), 0);
    let cgroup = json.enforcement().cgroup.clone().expect("cgroup details");
    assert_eq!(cgroup.cpu_millis, Some(500));
}
