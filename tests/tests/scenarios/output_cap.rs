//! --output-cap keeps the first bytes of output and drops the rest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

#[test]
fn output_past_the_cap_is_dropped_and_reported() {
    require_root();
    let (json, run) = SandboxRun::new(["head", "-c", "200000", "/dev/zero"])
        .output_cap(1000)
        .run_json();
    assert_eq!(run.code(), 0, "the command itself succeeded");
    assert!(json.truncated, "{json:?}");
    assert_eq!(json.stdout.len(), 1000);
}

#[test]
fn output_under_the_cap_is_whole() {
    require_root();
    let (json, _) = SandboxRun::shell("echo short").output_cap(1000).run_json();
    assert!(!json.truncated);
    assert_eq!(json.stdout, "short\n");
}

#[test]
fn the_cap_also_applies_to_passed_through_output() {
    require_root();
    let run = SandboxRun::new(["head", "-c", "200000", "/dev/zero"])
        .output_cap(4096)
        .run();
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout.len(), 4096);
}
