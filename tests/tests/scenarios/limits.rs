//! Resource limits: memory, pids, /tmp size and CPU quota.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::backends::{self, Kind};
use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{require_root, wait_for_cgroups_gone};
use std::time::Duration;

const PROBE: &str = "paddock-test-probe";
const MIB: u64 = 1 << 20;

/// What stderr says of an out-of-memory kill under a 64 MiB limit.
const OOM_NOTE: &str = "paddock: the command was killed for running out of memory: the sandbox \
                        reached its memory limit of 64 MiB (raise it with --memory)";

/// A memory hog under `backend`'s 64 MiB limit: killed, and said to be an
/// out-of-memory kill in `--json` and on stderr.
fn a_memory_hog_is_reported_oom(backend: Kind) {
    let ws = backends::workspace(backend);
    let probe = stage_in_workspace(ws.path(), PROBE);
    let (json, run) = SandboxRun::new([probe.as_str(), "alloc", &(256 * MIB).to_string()])
        .option(&format!("--backend={}", backend.name()))
        .workspace(ws.path())
        .memory(64 * MIB)
        .run_json();
    assert_eq!(run.code(), 137, "{json:?}");
    assert_eq!(json.signal, Some(9), "{json:?}");
    assert!(json.oom_killed, "not reported as an OOM kill: {json:?}");
    assert!(!json.stdout.contains("allocated"));
    assert!(
        run.stderr_str().contains(OOM_NOTE),
        "stderr: {}",
        run.stderr_str()
    );
    // Without --json: the same sentence, the same code.
    let plain = SandboxRun::new([probe.as_str(), "alloc", &(256 * MIB).to_string()])
        .option(&format!("--backend={}", backend.name()))
        .workspace(ws.path())
        .memory(64 * MIB)
        .run();
    assert_eq!(plain.code(), 137);
    assert!(
        plain.stderr_str().contains(OOM_NOTE),
        "{}",
        plain.stderr_str()
    );
    if backend == Kind::Native {
        let left = wait_for_cgroups_gone(&json.sandbox_id, Duration::from_secs(5));
        assert!(left.is_empty(), "cgroups left: {left:?}");
    }
}

#[test]
fn a_process_over_the_memory_limit_is_killed_and_reported_oom() {
    require_root();
    a_memory_hog_is_reported_oom(Kind::Native);
}

#[tokio::test]
async fn a_memory_hog_in_a_container_is_reported_oom() {
    require_root();
    if backends::for_test(Kind::Docker, "a_memory_hog_in_a_container_is_reported_oom")
        .await
        .is_none()
    {
        return;
    }
    tokio::task::spawn_blocking(|| a_memory_hog_is_reported_oom(Kind::Docker))
        .await
        .unwrap();
}

/// A SIGKILL that is not the OOM killer's is not called one, also in a
/// sandbox with a memory limit.
#[test]
fn a_plain_sigkill_is_not_an_oom_kill() {
    require_root();
    let (json, run) = SandboxRun::shell("kill -9 $$").memory(64 * MIB).run_json();
    assert_eq!(run.code(), 137, "{json:?}");
    assert_eq!(json.signal, Some(9), "{json:?}");
    assert!(!json.oom_killed, "{json:?}");
    assert!(
        !run.stderr_str().contains("out of memory"),
        "{}",
        run.stderr_str()
    );
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
