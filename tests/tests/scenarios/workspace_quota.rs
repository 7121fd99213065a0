//! The workspace quota: a temporary workspace is a size- and inode-limited
//! tmpfs, so writing past either fails inside the sandbox with ENOSPC and
//! nothing reaches the host's disk; on a persistent workspace the quota
//! cannot be enforced here, so the sandbox is refused unless the operator
//! allowed the downgrade, and the report then says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_proto::{LayerState, WorkspaceQuotaEnforcement};
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

const MIB: u64 = 1 << 20;
const BYTES: u64 = 8 * MIB;
const INODES: u64 = 200;

fn with_quota(run: SandboxRun) -> SandboxRun {
    run.option("--workspace-size")
        .option(&BYTES.to_string())
        .option("--workspace-inodes")
        .option(&INODES.to_string())
}

#[test]
fn writing_past_the_quota_fails_with_enospc_and_stays_off_the_host() {
    require_root();
    let script = "dd if=/dev/zero of=/workspace/big bs=1M count=32 2>/dev/null; echo dd=$?; \
                  stat -c size=%s /workspace/big; rm /workspace/big; \
                  i=0; while touch /workspace/f$i 2>/dev/null; do i=$((i+1)); done; echo files=$i; \
                  touch /workspace/one-more 2>&1; \
                  grep ' /workspace ' /proc/self/mountinfo";
    let (json, run) = with_quota(SandboxRun::shell(script)).run_json();
    let out = &json.stdout;
    assert!(out.contains("dd=1"), "dd stopped with an error: {json:?}");
    assert!(
        out.contains(&format!("size={BYTES}\n")),
        "exactly the quota was written: {out}"
    );
    // The root directory is one of the inodes.
    assert!(out.contains(&format!("files={}\n", INODES - 1)), "{out}");
    assert!(
        json.stderr.contains("No space left on device") || out.contains("No space left on device"),
        "{json:?}"
    );
    let mount = out.lines().last().unwrap_or_default();
    assert!(
        mount.contains(" - tmpfs ")
            && mount.contains(&format!("size={}k", BYTES / 1024))
            && mount.contains(&format!("nr_inodes={INODES}")),
        "/workspace is a limited tmpfs, not the host's disk: {mount}"
    );
    let e = json.enforcement();
    assert_eq!(e.workspace_quota, LayerState::Enforced);
    assert_eq!(
        e.workspace_quota_limits,
        Some(WorkspaceQuotaEnforcement {
            mechanism: "tmpfs".into(),
            bytes: BYTES,
            inodes: INODES,
        })
    );
    assert_eq!(run.code(), 0, "{json:?}");
}

#[test]
fn a_quota_on_a_persistent_workspace_needs_the_downgrade() {
    require_root();
    let ws = tempfile::tempdir().unwrap();
    let refused = with_quota(SandboxRun::shell("echo ran").workspace(ws.path())).run();
    assert_ne!(refused.code(), 0);
    assert!(
        refused
            .stderr_str()
            .contains("the workspace quota cannot be enforced"),
        "{}",
        refused.stderr_str()
    );
    assert!(!refused.stdout_str().contains("ran"));

    let (json, run) = with_quota(SandboxRun::shell("echo ran").workspace(ws.path()))
        .option("--allow-downgrade")
        .option("workspace-quota")
        .run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    assert_eq!(json.stdout, "ran\n");
    let e = json.enforcement();
    assert!(
        matches!(&e.workspace_quota, LayerState::Downgraded { reason } if reason.contains("persistent")),
        "{:?}",
        e.workspace_quota
    );
    assert_eq!(e.workspace_quota_limits, None);
}

#[test]
fn no_quota_asked_is_reported_as_not_requested() {
    require_root();
    let (json, run) = SandboxRun::shell("true").run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    assert_eq!(json.enforcement().workspace_quota, LayerState::NotRequested);
}
