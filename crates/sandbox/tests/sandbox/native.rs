//! The native backend's process handling: start failures against stand-in
//! guests, and a real sandbox's life cycle. The latter need `paddock-guest`
//! built (`cargo build -p paddock-guest`) and root, as in CI;
//! PADDOCK_UNCONFINED=1 runs them against the unconfined guest instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use paddock_core::sandbox::{GuestOps, SandboxError, SandboxSpec, WriteOptions};
use paddock_proto::ExecSpec;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};

/// A stand-in guest binary: a shell script.
fn script(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-guest");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn config(guest_bin: PathBuf, temp_root: &Path) -> NativeConfig {
    let mut config = NativeConfig::new(guest_bin);
    config.temp_root = Some(temp_root.to_path_buf());
    config.cgroup_parent = "paddock-test".to_owned();
    config
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

fn alive(pid: u32) -> bool {
    // A reaped child has no /proc entry; a zombie would still have one.
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_guest_that_dies_at_start_is_reported_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let temp_root = tempfile::tempdir().unwrap();
    let guest = script(dir.path(), "echo 'jail: landlock unavailable' >&2; exit 70");
    let backend = NativeBackend::new(config(guest, temp_root.path()));

    let err = backend
        .create_native(SandboxSpec::default())
        .await
        .unwrap_err();
    match &err {
        SandboxError::Startup { status, detail, .. } => {
            assert!(status.contains("70"), "{status}");
            assert_eq!(detail, "jail: landlock unavailable");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("jail: landlock unavailable"),
        "{err}"
    );
    assert!(
        is_empty_dir(temp_root.path()),
        "temporary workspace left behind"
    );
}

#[tokio::test]
async fn a_guest_that_never_answers_is_killed_after_the_start_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let temp_root = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let guest = script(
        dir.path(),
        &format!("echo $$ > {}; exec sleep 1000", pid_file.display()),
    );
    let mut config = config(guest, temp_root.path());
    config.start_timeout = Duration::from_millis(300);
    config.stop_timeout = Duration::from_millis(100);
    let backend = NativeBackend::new(config);

    let started = Instant::now();
    let err = backend
        .create_native(SandboxSpec::default())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    match &err {
        SandboxError::Startup { status, .. } => assert!(status.starts_with("killed"), "{status}"),
        other => panic!("{other:?}"),
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "guest {pid} still running");
    assert!(is_empty_dir(temp_root.path()));
}

#[tokio::test]
async fn a_missing_workspace_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let guest = script(dir.path(), &format!("touch {}", marker.display()));
    let backend = NativeBackend::new(config(guest, dir.path()));
    let spec = SandboxSpec {
        workspace: Some(dir.path().join("missing")),
        ..SandboxSpec::default()
    };
    let err = backend.create_native(spec).await.unwrap_err();
    assert!(matches!(err, SandboxError::Workspace { .. }), "{err:?}");
    assert!(!marker.exists());
}

fn real_backend(temp_root: &Path) -> NativeBackend {
    let mut config = config(locate_guest_bin(None).unwrap(), temp_root);
    config.unconfined = std::env::var("PADDOCK_UNCONFINED").is_ok_and(|v| v == "1");
    NativeBackend::new(config)
}

#[tokio::test]
async fn create_run_write_and_destroy_leave_nothing_behind() {
    let temp_root = tempfile::tempdir().unwrap();
    let sandbox = real_backend(temp_root.path())
        .create_native(SandboxSpec::default())
        .await
        .unwrap();
    let workspace = sandbox.info().workspace.clone();
    assert!(sandbox.info().workspace_is_temporary);
    let monitor = sandbox.monitor_pid().unwrap();

    let guest = sandbox.client();
    let spec = ExecSpec {
        argv: vec!["sh".into(), "-c".into(), "echo hi; cat a.txt".into()],
        ..ExecSpec::default()
    };
    guest
        .file_write(
            &paddock_proto::FsPath::from("a.txt"),
            b"from host",
            WriteOptions::default(),
        )
        .await
        .unwrap();
    let out = guest.exec_output(spec, &[]).await.unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.exit.code),
        (&b"hi\nfrom host"[..], Some(0))
    );
    assert_eq!(
        std::fs::read(workspace.join("a.txt")).unwrap(),
        b"from host"
    );

    sandbox.destroy().await.unwrap();
    assert!(!alive(monitor), "monitor {monitor} survived destroy");
    assert!(!workspace.exists(), "temporary workspace survived destroy");
}

#[tokio::test]
async fn a_dropped_sandbox_is_killed_and_cleaned_up() {
    let temp_root = tempfile::tempdir().unwrap();
    let sandbox = real_backend(temp_root.path())
        .create_native(SandboxSpec::default())
        .await
        .unwrap();
    let monitor = sandbox.monitor_pid().unwrap();
    let guest = sandbox.client().clone();
    drop(sandbox);

    let deadline = Instant::now() + Duration::from_secs(5);
    while (alive(monitor) || !is_empty_dir(temp_root.path())) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(monitor), "monitor {monitor} survived drop");
    assert!(
        is_empty_dir(temp_root.path()),
        "temporary workspace survived drop"
    );
    assert!(guest.info().await.is_err());
}
