//! A command ended by a signal gives 128+signal; a signal to `paddock` itself
//! reaches the command and still tears the sandbox down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{processes_with_cmdline, require_root};
use paddock_tests::run::{run_with_deadline, wait_until};

#[test]
fn a_command_killed_by_a_signal_exits_128_plus_the_signal() {
    require_root();
    for (sig, code) in [("KILL", 137), ("TERM", 143), ("SEGV", 139), ("INT", 130)] {
        let script = format!("kill -{sig} $$");
        let run = SandboxRun::shell(&script).run();
        assert_eq!(run.code(), code, "`{script}`: stderr {}", run.stderr_str());
    }
}

#[test]
fn signals_ignored_by_whoever_started_paddock_are_default_in_the_sandbox() {
    require_root();
    // As a non-interactive shell starts a background job (INT, QUIT) or
    // nohup does (HUP): "ignore" survives execve, all the way into the guest.
    let sandbox = SandboxRun::shell("grep SigIgn /proc/self/status; kill -INT $$").command(false);
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", "trap '' INT QUIT HUP; exec \"$@\"", "sh"])
        .arg(sandbox.get_program())
        .args(sandbox.get_args());
    let run = run_with_deadline(&mut cmd, b"", Duration::from_secs(60));
    let ignored = run
        .stdout_str()
        .trim()
        .strip_prefix("SigIgn:\t")
        .and_then(|mask| u64::from_str_radix(mask, 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {} {}", run.stdout_str(), run.stderr_str()));
    // Signals 1-31 (bits 0-30); glibc's spawn leaves its own two real-time
    // signals (32, 33) ignored in the child, which its libc takes back.
    assert_eq!(ignored & 0x7fff_ffff, 0, "SigIgn {ignored:#x}");
    assert_eq!(run.code(), 130, "stderr {}", run.stderr_str());
}

#[test]
fn json_names_the_signal_and_no_exit_code() {
    require_root();
    let (json, run) = SandboxRun::shell("kill -9 $$").run_json();
    assert_eq!(run.code(), 137);
    assert_eq!(
        (json.exit_code, json.signal, json.timed_out),
        (None, Some(9), false)
    );
}

#[test]
fn sigterm_to_paddock_ends_the_command_and_the_sandbox() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let marker = "sleep 3131";
    let mut child = SandboxRun::shell(&format!("touch /workspace/ready; exec {marker}"))
        .workspace(ws.path())
        .command(false)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ready = ws.path().join("ready");
    assert!(
        wait_until(Duration::from_secs(20), || ready.exists()),
        "the command never started"
    );
    assert!(!processes_with_cmdline(marker).is_empty());
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let mut status = None;
    wait_until(Duration::from_secs(20), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let Some(status) = status else {
        let _ = child.kill();
        panic!("paddock did not exit after SIGTERM");
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        wait_until(Duration::from_secs(5), || processes_with_cmdline(marker)
            .is_empty()),
        "`{marker}` outlived its sandbox"
    );
}
