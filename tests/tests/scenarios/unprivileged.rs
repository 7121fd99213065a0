//! The native sandbox started by an unprivileged host user (uid 65534): the
//! user namespace maps sandbox root to that uid alone, every layer but cgroups
//! is enforced, and cgroups (which such a user cannot create) are refused
//! unless the operator allows that downgrade.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
use std::path::Path;
use std::process::{Command, Output};

use paddock_proto::LayerState;
use paddock_tests::bins::{paddock, paddock_guest};
use paddock_tests::cli::RunJson;
use paddock_tests::host::require_root;

const NOBODY: u32 = 65534;

/// Copies both binaries where uid 65534 can execute them (the build tree may
/// sit under a private home directory) and makes a workspace it owns.
fn stage(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    for bin in [paddock(), paddock_guest()] {
        fs::copy(&bin, dir.join(bin.file_name().unwrap())).unwrap();
    }
    let ws = dir.join("ws");
    fs::create_dir(&ws).unwrap();
    chown(&ws, Some(NOBODY), Some(NOBODY)).unwrap();
    (dir.join("paddock"), ws)
}

fn run_as_nobody(paddock: &Path, ws: &Path, extra: &[&str], script: &str) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
        ])
        .arg(paddock)
        .args(["sandbox", "run", "--json", "--workspace"])
        .arg(ws)
        .args(extra)
        .args(["--", "sh", "-c", script])
        .current_dir(ws)
        .output()
        .unwrap()
}

#[test]
fn an_unprivileged_user_gets_every_layer_but_cgroups_when_it_allows_that() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let (paddock, ws) = stage(dir.path());

    let out = run_as_nobody(
        &paddock,
        &ws,
        &["--allow-downgrade", "cgroups"],
        "id -u; cat /proc/self/uid_map; echo hi > /workspace/f; touch /usr/x",
    );
    let result: RunJson = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    // `touch /usr/x` fails, so the script exits 1 after the workspace write.
    assert_eq!(result.exit_code, Some(1), "{result:?}");
    let lines: Vec<&str> = result.stdout.lines().collect();
    assert_eq!(lines[0], "0");
    let map: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        map,
        ["0", "65534", "1"],
        "sandbox root must map to the caller"
    );

    let e = result.enforcement();
    assert_eq!(e.uid_map, Some((0, NOBODY, 1)));
    assert!(
        matches!(e.cgroup_state, LayerState::Downgraded { .. }),
        "{e:?}"
    );
    for (name, layer) in [
        ("capabilities", &e.capabilities_dropped),
        ("no_new_privs", &e.no_new_privs),
        ("landlock", &e.landlock),
        ("seccomp", &e.seccomp),
        ("pivot_root", &e.pivot_root),
    ] {
        assert!(layer.is_enforced(), "{name} not enforced: {layer:?}");
    }
    let meta = fs::metadata(ws.join("f")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY));
    assert_eq!(fs::read_to_string(ws.join("f")).unwrap(), "hi\n");
}

#[test]
fn an_unprivileged_user_is_refused_when_cgroups_are_required() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let (paddock, ws) = stage(dir.path());

    let out = run_as_nobody(&paddock, &ws, &[], "echo ran > /workspace/f");
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed to start") && stderr.contains("creating cgroup"),
        "unclear error: {stderr}"
    );
    assert!(
        !ws.join("f").exists(),
        "the command ran without its cgroups"
    );
}
