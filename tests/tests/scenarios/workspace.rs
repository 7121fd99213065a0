//! The workspace: a host directory at /workspace, written by the sandbox's
//! root as the directory's owner on the host, never as host root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

fn owner(path: &Path) -> (u32, u32) {
    let m = fs::symlink_metadata(path).unwrap();
    (m.uid(), m.gid())
}

#[test]
fn writes_land_in_the_host_directory() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("from-host"), "host data\n").unwrap();
    let script = "cat /workspace/from-host && echo hello > /workspace/new.txt \
                  && mkdir -p /workspace/d/e && printf x > /workspace/d/e/f && pwd";
    let run = SandboxRun::shell(script).workspace(ws.path()).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "host data\n/workspace\n");
    assert_eq!(
        fs::read_to_string(ws.path().join("new.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(fs::read_to_string(ws.path().join("d/e/f")).unwrap(), "x");
}

#[test]
fn files_created_inside_belong_to_the_workspace_owner() {
    require_root();
    const OWNER: u32 = 4321;
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("existing"), "x").unwrap();
    for p in [ws.path(), &ws.path().join("existing")] {
        nix::unistd::chown(p, Some(OWNER.into()), Some(OWNER.into())).unwrap();
    }
    let script = "id -u; id -g; stat -c %u:%g /workspace /workspace/existing; \
                  echo new > /workspace/new && mkdir /workspace/newdir && echo x >> /workspace/existing";
    let run = SandboxRun::shell(script).workspace(ws.path()).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    // Inside, the owner of the workspace is the sandbox's root.
    assert_eq!(run.stdout_str(), "0\n0\n0:0\n0:0\n");
    for name in ["new", "newdir", "existing"] {
        assert_eq!(
            owner(&ws.path().join(name)),
            (OWNER, OWNER),
            "{name} on the host"
        );
    }
}

#[test]
fn a_root_owned_workspace_gets_root_owned_files_but_the_sandbox_is_not_host_root() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let run = SandboxRun::shell("echo x > /workspace/f && cat /proc/self/uid_map")
        .workspace(ws.path())
        .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(owner(&ws.path().join("f")), (0, 0));
    let map: Vec<u64> = run
        .stdout_str()
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(map[0], 0, "uid_map: {map:?}");
    assert!(map[1] >= 100_000, "sandbox root is host uid {}", map[1]);
}

#[test]
fn without_workspace_a_fresh_temporary_one_is_made_and_removed() {
    require_root();
    let (json, run) =
        SandboxRun::shell("pwd; ls -A /workspace | wc -l; echo x > /workspace/f").run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    assert_eq!(json.stdout, "/workspace\n0\n");
    let leftovers: Vec<String> = fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&json.sandbox_id))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary workspace left: {leftovers:?}"
    );
}
