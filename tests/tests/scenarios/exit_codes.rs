//! `paddock sandbox run` exits with the command's exit code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

#[test]
fn exit_code_is_the_commands() {
    require_root();
    for (script, code) in [
        ("exit 0", 0),
        ("exit 1", 1),
        ("exit 42", 42),
        ("exit 255", 255),
    ] {
        let run = SandboxRun::shell(script).run();
        assert_eq!(run.code(), code, "`{script}`: stderr {}", run.stderr_str());
    }
    assert_eq!(SandboxRun::new(["true"]).run().code(), 0);
    assert_eq!(SandboxRun::new(["false"]).run().code(), 1);
}

#[test]
fn json_reports_the_same_exit_code() {
    require_root();
    let (json, run) = SandboxRun::shell("exit 7").run_json();
    assert_eq!(run.code(), 7);
    assert_eq!(
        (json.exit_code, json.signal, json.timed_out),
        (Some(7), None, false)
    );
}

#[test]
fn a_missing_command_exits_127_and_says_so() {
    require_root();
    let run = SandboxRun::new(["paddock-no-such-command-4711"]).run();
    assert_eq!(run.code(), 127, "stderr: {}", run.stderr_str());
    assert!(
        run.stderr_str().contains("paddock-no-such-command-4711"),
        "stderr does not name the command: {}",
        run.stderr_str()
    );
}

#[test]
fn a_file_that_is_not_executable_exits_126() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let script = ws.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = SandboxRun::new(["/workspace/not-executable"])
        .workspace(ws.path())
        .run();
    assert_eq!(run.code(), 126, "stderr: {}", run.stderr_str());
    assert!(run.stdout.is_empty());
}
