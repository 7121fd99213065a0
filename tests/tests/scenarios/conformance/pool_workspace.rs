//! A persistent workspace in the server's volume pool (a btrfs subvolume
//! with a qgroup limit) on every backend: the guest reports the quota
//! enforced by the qgroup, and a write past it fails inside the sandbox
//! with "Disk quota exceeded" (the host's kernel refuses it, however the
//! directory reaches the sandbox: a bind, gVisor's gofer, a 9p share).

use std::future::Future;
use std::pin::Pin;

use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxSpec;
use paddock_core::volume::VolumeHost;
use paddock_proto::LayerState;
use paddock_sandbox::volumes::BtrfsVolumes;
use paddock_test_support::require::{Need, skip_or_panic};
use paddock_tests::backends;

use super::cases::{Ctx, sh};

const QUOTA: u64 = 8 << 20;
const POOL_BYTES: u64 = 256 << 20;

/// Unmounts the pool when the case ends, pass or fail.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn btrfs_found() -> bool {
    std::process::Command::new("mkfs.btrfs")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn pool_workspace_quota(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let what = format!("pool_workspace_quota [{}]", ctx.kind.name());
        if !btrfs_found() {
            skip_or_panic(
                Need::Loop,
                &what,
                "mkfs.btrfs is not installed (btrfs-progs)",
            );
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let pool = BtrfsVolumes::new(root.path().to_path_buf(), POOL_BYTES);
        let _unmount = Unmount(pool.mount_point());
        let tenant = TenantId::parse("conformance").unwrap();
        let id = WorkspaceId::generate();
        let ws = pool
            .create_workspace(&tenant, &id, QUOTA)
            .await
            .unwrap_or_else(|e| panic!("{what}: {}", super::cases::chain(&e)));
        assert!(
            ws.quota.mechanism.starts_with("btrfs qgroup 0/"),
            "{:?}",
            ws.quota
        );
        assert_eq!((ws.quota.bytes, ws.quota.inodes), (QUOTA, 0));
        if ctx.kind.runs_as_owner() {
            backends::give_to_sandbox(&ws.path);
        }
        let mut spec = SandboxSpec {
            workspace: Some(ws.path.clone()),
            workspace_quota: Some(ws.quota.clone()),
            ..SandboxSpec::default()
        };
        spec.policy.limits.workspace_bytes = Some(QUOTA);
        let sb = ctx.create(spec).await;
        let guest = sb.guest();
        let e = guest.info().await.unwrap().enforcement;
        assert_eq!(e.workspace_quota, LayerState::Enforced, "{what}");
        assert_eq!(e.workspace_quota_limits, Some(ws.quota.clone()), "{what}");

        let (_, out, err) = sh(
            &*guest,
            "dd if=/dev/zero of=/workspace/big bs=1M count=32 2>&1; echo dd=$?; sync",
        )
        .await;
        assert!(out.contains("dd=1"), "{what}: dd did not fail: {out} {err}");
        assert!(
            out.contains("Disk quota exceeded"),
            "{what}: not the quota's error: {out} {err}"
        );
        let held = std::fs::metadata(ws.path.join("big")).unwrap().len();
        assert!(held <= QUOTA, "{what}: {held} bytes past the quota");
        // Writing below the quota again works: it is a quota, not a full disk.
        let (code, _, err) = sh(&*guest, "rm /workspace/big && echo fits > /workspace/small").await;
        assert_eq!(code, 0, "{what}: {err}");
        sb.destroy().await.unwrap();
        pool.remove_workspace(&tenant, &id).await.unwrap();
        assert!(!ws.path.exists());
    })
}
