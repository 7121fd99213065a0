//! `paddock sandbox info` tells what this host can enforce, and agrees with
//! the host's own view of itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::process::Command;
use std::time::Duration;

use paddock_tests::bins;
use paddock_tests::host::require_root;
use paddock_tests::run::run_with_deadline;
use serde_json::Value;

fn info(json: bool) -> (i32, String) {
    let mut cmd = Command::new(bins::paddock());
    cmd.args(["sandbox", "info"]);
    if json {
        cmd.arg("--json");
    }
    let out = run_with_deadline(&mut cmd, b"", Duration::from_secs(30));
    (out.code(), out.stdout_str())
}

#[test]
fn info_json_matches_the_host() {
    require_root();
    let (code, out) = info(true);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["landlock_abi"].as_u64().is_some_and(|abi| abi >= 1),
        "{v}"
    );
    let seccomp_supported = fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Seccomp:"));
    assert_eq!(v["seccomp_filter"], Value::Bool(seccomp_supported), "{v}");
    assert_eq!(v["running_as_root"], Value::Bool(true));
    let max_userns: u64 = fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        v["user_namespaces"]["max_user_namespaces"].as_u64(),
        Some(max_userns)
    );
    let v2_has_memory = fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
    let expected_version = if v2_has_memory { "v2" } else { "v1" };
    assert_eq!(v["cgroup"]["version"], Value::from(expected_version), "{v}");
    let controllers: Vec<&str> = v["cgroup"]["controllers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for c in ["memory", "pids", "cpu"] {
        assert!(controllers.contains(&c), "controller {c} missing: {v}");
    }
}

#[test]
fn info_prints_a_table_for_people() {
    require_root();
    let (code, out) = info(false);
    assert_eq!(code, 0);
    for key in ["landlock_abi", "seccomp_filter", "cgroup.version"] {
        assert!(out.contains(key), "{key} missing from:\n{out}");
    }
}
