//! Kernel per-user limits are not shared: each sandbox's user namespace is
//! created by, and maps root to, its own block of host ids, so what the
//! kernel counts per user (here inotify instances, max_user_instances) is
//! charged to that sandbox alone, never to host root or another sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use paddock_tests::bins::{binary, stage_in_workspace};
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

const PROBE: &str = "paddock-test-probe";

/// (instances created, errno of the first failure or 0).
fn parse_inotify(line: &str) -> (usize, i32) {
    let words: Vec<&str> = line.split_whitespace().collect();
    assert!(
        words.len() == 4 && words[0] == "inotify" && words[2] == "errno",
        "{line:?}"
    );
    (words[1].parse().unwrap(), words[3].parse().unwrap())
}

/// The host uid sandbox root maps to, from a line of /proc/self/uid_map.
fn host_root(uid_map: &str) -> u32 {
    let fields: Vec<u32> = uid_map
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(fields.len(), 3, "{uid_map:?}");
    assert_eq!(fields[0], 0, "{uid_map:?}");
    fields[1]
}

#[test]
fn one_sandbox_exhausting_inotify_blocks_neither_host_root_nor_another_sandbox() {
    require_root();
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let probe = stage_in_workspace(ws.path(), PROBE);
    // Sandbox A takes every instance its user may have and keeps them.
    let hog = format!(
        "cat /proc/self/uid_map; {probe} inotify {} --hold-secs 60",
        max + 50
    );
    let mut a = SandboxRun::shell(&hog)
        .workspace(ws.path())
        .command(false)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(a.stdout.take().unwrap()).lines();
    let a_root = host_root(&lines.next().unwrap().unwrap());
    let (held, errno) = parse_inotify(&lines.next().unwrap().unwrap());
    assert_eq!(held, max, "sandbox A starts from a count of its own");
    assert_eq!(errno, libc::EMFILE, "A hit the per-user limit");

    // Host root still creates one.
    let host = Command::new(binary(PROBE))
        .args(["inotify", "1"])
        .output()
        .unwrap();
    assert_eq!(
        parse_inotify(&String::from_utf8_lossy(&host.stdout)),
        (1, 0),
        "host root: {host:?}"
    );

    // So does another sandbox, running as other host ids.
    let b = SandboxRun::shell(&format!("cat /proc/self/uid_map; {probe} inotify 1"))
        .workspace(ws.path())
        .run();
    assert_eq!(b.code(), 0, "stderr: {}", b.stderr_str());
    let out = b.stdout_str();
    let mut b_lines = out.lines();
    let b_root = host_root(b_lines.next().unwrap());
    assert_eq!(parse_inotify(b_lines.next().unwrap()), (1, 0), "{out}");
    assert_ne!(a_root, b_root, "two live sandboxes share host uid {a_root}");
    assert!(a_root >= 100_000 && b_root >= 100_000, "{a_root} {b_root}");

    a.kill().unwrap();
    a.wait().unwrap();
}

#[test]
fn concurrent_sandboxes_get_distinct_host_ids() {
    require_root();
    // Each keeps running until killed, so all are alive at once once each
    // has printed its maps.
    let mut children: Vec<_> = (0..3)
        .map(|_| {
            SandboxRun::shell("cat /proc/self/uid_map /proc/self/gid_map; sleep 60")
                .command(false)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut roots = std::collections::BTreeSet::new();
    for child in &mut children {
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let uid_map = lines.next().unwrap().unwrap();
        let gid_map = lines.next().unwrap().unwrap();
        let uid = host_root(&uid_map);
        assert_eq!(uid, host_root(&gid_map), "uid and gid blocks match");
        assert!(
            uid_map.trim().ends_with(" 65536"),
            "a full block: {uid_map}"
        );
        roots.insert(uid);
    }
    for mut child in children {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert_eq!(roots.len(), 3, "live sandboxes share host ids: {roots:?}");
}
