//! --timeout kills the command (exit 124) and nothing of it survives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{processes_with_cmdline, require_root, wait_for_cgroups_gone};
use paddock_tests::run::wait_until;

#[test]
fn a_command_past_its_timeout_exits_124_and_is_gone() {
    require_root();
    let marker = "sleep 3737";
    let (json, run) = SandboxRun::shell(&format!("exec {marker}"))
        .timeout_secs(1)
        .run_json();
    assert_eq!(run.code(), 124, "stderr: {}", run.stderr_str());
    assert!(json.timed_out, "{json:?}");
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    assert!(
        json.duration_ms >= 900 && json.duration_ms < 10_000,
        "{json:?}"
    );
    assert!(
        wait_until(Duration::from_secs(5), || processes_with_cmdline(marker)
            .is_empty()),
        "`{marker}` is still running"
    );
    let left = wait_for_cgroups_gone(&json.sandbox_id, Duration::from_secs(5));
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

#[test]
fn processes_that_left_the_process_group_die_with_the_sandbox() {
    require_root();
    let escaped = "sleep 3739";
    let run = SandboxRun::shell(&format!("setsid {escaped} & exec sleep 3740"))
        .timeout_secs(1)
        .run();
    assert_eq!(run.code(), 124, "stderr: {}", run.stderr_str());
    assert!(
        wait_until(Duration::from_secs(5), || {
            processes_with_cmdline(escaped).is_empty()
                && processes_with_cmdline("sleep 3740").is_empty()
        }),
        "a process of the sandbox outlived it"
    );
}

#[test]
fn a_command_within_its_timeout_is_untouched() {
    require_root();
    let (json, run) = SandboxRun::shell("echo done").timeout_secs(30).run_json();
    assert_eq!(run.code(), 0);
    assert!(!json.timed_out);
    assert_eq!(json.stdout, "done\n");
}
