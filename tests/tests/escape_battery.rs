//! Runs `paddock-escape-battery` inside a real sandbox and asserts that every
//! escape it tries is blocked and that the host is unharmed afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::SandboxRun;
use paddock_tests::escape::{HostTargets, MEMORY, PIDS, TMP, assert_report};
use paddock_tests::host::{HostSnapshot, require_root, wait_for_no_leaks};
use paddock_tests::report::Report;

#[test]
fn every_escape_is_blocked_and_the_host_is_unharmed() {
    require_root();
    let before = HostSnapshot::capture();
    let ws = tempfile::tempdir().unwrap();
    let battery = stage_in_workspace(ws.path(), "paddock-escape-battery");
    let targets = HostTargets::plant("native-cli");
    let argv = targets.argv(battery, PIDS);
    let (json, run) = SandboxRun::new(argv)
        .workspace(ws.path())
        .memory(MEMORY)
        .pids(PIDS)
        .tmp_size(TMP)
        .timeout_secs(300)
        .deadline(Duration::from_secs(400))
        .run_json();
    assert_eq!(
        run.code(),
        0,
        "the battery itself failed: {}\n{}",
        json.stderr,
        json.stdout
    );
    let report: Report = serde_json::from_str(&json.stdout)
        .unwrap_or_else(|e| panic!("no report from the battery ({e}):\n{}", json.stdout));

    assert_report(&report, &[], "native, paddock sandbox run");
    targets.assert_unharmed();
    let leaks = wait_for_no_leaks(&before, Duration::from_secs(10));
    assert!(leaks.is_empty(), "left behind on the host: {leaks:#?}");
}
