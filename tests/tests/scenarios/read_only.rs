//! --read-only: nothing in the sandbox can change the workspace, shell included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

fn workspace_with_file() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("f"), "original\n").unwrap();
    fs::set_permissions(ws.path().join("f"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::create_dir(ws.path().join("dir")).unwrap();
    ws
}

#[test]
fn every_kind_of_write_fails_and_the_host_files_are_unchanged() {
    require_root();
    let ws = workspace_with_file();
    let attempts = [
        "echo changed > /workspace/f",
        "echo more >> /workspace/f",
        "touch /workspace/new",
        "mkdir /workspace/newdir",
        "rm /workspace/f",
        "mv /workspace/f /workspace/g",
        "ln -s /etc/passwd /workspace/link",
        "rmdir /workspace/dir",
        "chmod 777 /workspace/f",
        "truncate -s 0 /workspace/f",
    ];
    for script in attempts {
        let run = SandboxRun::shell(script)
            .workspace(ws.path())
            .read_only()
            .run();
        assert_ne!(run.code(), 0, "`{script}` succeeded in a read-only sandbox");
    }
    assert_eq!(
        fs::read_to_string(ws.path().join("f")).unwrap(),
        "original\n"
    );
    let mut names: Vec<String> = fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["dir", "f"]);
    let mode = fs::metadata(ws.path().join("f"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o644, "chmod changed the host file");
}

#[test]
fn reading_and_tmp_still_work() {
    require_root();
    let ws = workspace_with_file();
    let run = SandboxRun::shell("cat /workspace/f && echo scratch > /tmp/x && cat /tmp/x")
        .workspace(ws.path())
        .read_only()
        .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "original\nscratch\n");
}

#[test]
fn json_reports_the_read_only_workspace() {
    require_root();
    let ws = workspace_with_file();
    let (json, _) = SandboxRun::new(["true"])
        .workspace(ws.path())
        .read_only()
        .run_json();
    assert!(json.enforcement().read_only_workspace);
}
