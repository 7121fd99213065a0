//! A `paddock sandbox run` SIGKILLed while its command runs leaves no
//! temporary workspace: the jail's monitor, which outlives it, removes the
//! directory once the sandbox has ended.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{processes_with_cmdline, require_root};
use paddock_tests::run::wait_until;

const MARKER: &str = "sleep 4343";

/// Temporary workspaces of CLI sandboxes: each CLI process keeps its own
/// in its owner directory (`TMP/paddock-cli.ID/paddock-sb-*`).
fn paddock_temp_dirs() -> BTreeSet<PathBuf> {
    let named = |dir: PathBuf, prefix: &str| -> Vec<PathBuf> {
        fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| e.path())
            .collect()
    };
    named(std::env::temp_dir(), "paddock-cli.")
        .into_iter()
        .flat_map(|owner| named(owner, "paddock-sb-"))
        .collect()
}

#[test]
fn a_sigkilled_sandbox_run_leaves_no_temporary_workspace() {
    require_root();
    let before = paddock_temp_dirs();
    let mut child = SandboxRun::shell(&format!("touch /workspace/ready; exec {MARKER}"))
        .command(false)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut workspace = None;
    let started = wait_until(Duration::from_secs(30), || {
        workspace = paddock_temp_dirs()
            .difference(&before)
            .find(|dir| dir.join("ready").exists())
            .cloned();
        workspace.is_some()
    });
    assert!(started, "the command never ran in a temporary workspace");
    let workspace = workspace.unwrap();

    // SIGKILL: paddock gets no chance to clean anything up itself.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || !workspace.exists()),
        "{} outlived its SIGKILLed paddock",
        workspace.display()
    );
    assert!(
        wait_until(Duration::from_secs(5), || processes_with_cmdline(MARKER)
            .is_empty()),
        "the sandboxed `{MARKER}` outlived its killed paddock"
    );
}
