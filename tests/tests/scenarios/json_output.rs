//! The shape of `paddock sandbox run --json`: one object, nothing else on
//! stdout, every documented field, and the layers really enforced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use paddock_proto::{LayerState, NetworkPolicy};
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;
use serde_json::Value;

const REQUIRED: &[&str] = &[
    "exit_code",
    "signal",
    "timed_out",
    "duration_ms",
    "sandbox_id",
    "enforcement",
    "stdout",
    "stderr",
    "oom_killed",
];
const OPTIONAL: &[&str] = &["truncated", "error", "egress"];

#[test]
fn json_is_one_object_with_the_documented_fields() {
    require_root();
    let (_, run) = SandboxRun::shell("echo hi; echo oops >&2; sleep 0.2").run_json();
    assert_eq!(run.code(), 0);
    let value: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not exactly one JSON object ({e}): {}",
            String::from_utf8_lossy(&run.stdout)
        )
    });
    let obj = value.as_object().expect("a JSON object");
    let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    for k in REQUIRED {
        assert!(keys.contains(k), "missing {k}: {value}");
    }
    for k in &keys {
        assert!(
            REQUIRED.contains(k) || OPTIONAL.contains(k),
            "undocumented field {k}: {value}"
        );
    }
    assert_eq!(obj["exit_code"], Value::from(0));
    assert_eq!(obj["signal"], Value::Null);
    assert_eq!(obj["timed_out"], Value::Bool(false));
    assert_eq!(obj["stdout"], Value::from("hi\n"));
    assert_eq!(obj["stderr"], Value::from("oops\n"));
    let ms = obj["duration_ms"]
        .as_u64()
        .expect("duration_ms is a number");
    assert!((200..10_000).contains(&ms), "duration_ms {ms}");
    let id = obj["sandbox_id"].as_str().expect("sandbox_id is a string");
    assert!(
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "sandbox_id {id:?}"
    );
}

#[test]
fn json_reports_every_hardening_layer_enforced() {
    require_root();
    let (json, _) = SandboxRun::new(["true"])
        .memory(256 << 20)
        .pids(64)
        .run_json();
    let e = json.enforcement();
    let namespaces: BTreeSet<&str> = e.namespaces.iter().map(String::as_str).collect();
    for ns in ["user", "mount", "pid", "net", "ipc", "uts", "cgroup"] {
        assert!(namespaces.contains(ns), "namespace {ns} missing: {e:?}");
    }
    let (inside, outside, count) = e.uid_map.expect("a uid map");
    assert_eq!(inside, 0);
    assert!(
        outside >= 100_000,
        "sandbox root maps to host uid {outside}"
    );
    assert!(count >= 1);
    let (_, gid_outside, _) = e.gid_map.expect("a gid map");
    assert_ne!(gid_outside, 0, "sandbox root group is host root's");
    for (name, state) in [
        ("pivot_root", &e.pivot_root),
        ("cgroups", &e.cgroup_state),
        ("rlimits", &e.rlimits),
        ("capabilities", &e.capabilities_dropped),
        ("no_new_privs", &e.no_new_privs),
        ("landlock", &e.landlock),
        ("seccomp", &e.seccomp),
    ] {
        assert_eq!(state, &LayerState::Enforced, "{name} not enforced: {e:?}");
    }
    assert!(e.landlock_abi.is_some_and(|abi| abi >= 1));
    assert_eq!(e.network, NetworkPolicy::None);
    assert!(!e.read_only_workspace);
    let cgroup = e.cgroup.as_ref().expect("cgroup details");
    assert_eq!(cgroup.memory_bytes, Some(256 << 20));
    assert_eq!(cgroup.pids, Some(64));
    assert!(!cgroup.paths.is_empty());
}

#[test]
fn json_lists_every_syscall_the_issue_requires_denied() {
    require_root();
    let (json, _) = SandboxRun::new(["true"]).run_json();
    let denied: BTreeSet<&str> = json
        .enforcement()
        .seccomp_denied
        .iter()
        .map(String::as_str)
        .collect();
    let required = [
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "unshare",
        "setns",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "bpf",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "userfaultfd",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "open_by_handle_at",
        "name_to_handle_at",
        "iopl",
        "ioperm",
        "clock_settime",
        "settimeofday",
        "adjtimex",
    ];
    let missing: Vec<&str> = required
        .into_iter()
        .filter(|s| !denied.contains(s))
        .collect();
    assert!(
        missing.is_empty(),
        "seccomp does not deny {missing:?} (denies {denied:?})"
    );
}

#[test]
fn allowing_a_downgrade_does_not_cause_one_where_the_host_can_enforce() {
    require_root();
    let (json, run) = SandboxRun::new(["true"])
        .option("--allow-downgrade")
        .option("landlock,seccomp,cgroups")
        .run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    let e = json.enforcement();
    for (name, state) in [
        ("landlock", &e.landlock),
        ("seccomp", &e.seccomp),
        ("cgroups", &e.cgroup_state),
    ] {
        assert_eq!(state, &LayerState::Enforced, "{name}: {e:?}");
    }
}

#[test]
fn a_sandbox_that_cannot_start_still_prints_one_object_with_the_reason() {
    require_root();
    let run = SandboxRun::shell("echo never")
        .workspace(std::path::Path::new("/nonexistent/paddock-json-test"))
        .command(true)
        .output()
        .expect("run paddock");
    // A workspace that is no directory is a usage error (2), as in `exec`.
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let value: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not exactly one JSON object ({e}): {}",
            String::from_utf8_lossy(&run.stdout)
        )
    });
    assert_eq!(value["sandbox_id"], Value::Null, "{value}");
    assert_eq!(value["exit_code"], Value::Null, "{value}");
    let error = value["error"].as_str().expect("an error string");
    assert!(error.contains("/nonexistent/paddock-json-test"), "{error}");
    assert!(!String::from_utf8_lossy(&run.stdout).contains("never"));
}

#[test]
fn a_sandbox_the_backend_refuses_still_prints_one_object_with_the_reason() {
    require_root();
    let run = SandboxRun::shell("echo never")
        .option("--writable")
        .option("../outside")
        .command(true)
        .output()
        .expect("run paddock");
    assert_eq!(run.status.code(), Some(125), "{run:?}");
    let value: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not exactly one JSON object ({e}): {}",
            String::from_utf8_lossy(&run.stdout)
        )
    });
    assert_eq!(value["exit_code"], Value::Null, "{value}");
    let error = value["error"].as_str().expect("an error string");
    assert!(error.contains("../outside"), "{error}");
    assert!(!String::from_utf8_lossy(&run.stdout).contains("never"));
}
