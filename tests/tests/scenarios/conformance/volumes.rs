//! Named volumes on every backend: a btrfs pool of the suite's own (the
//! server's volume host, `BtrfsVolumes`), one volume mounted read-write and
//! one read-only in a sandbox: writes land on the host, a write past the
//! quota fails with the kernel's EDQUOT inside, the read-only one refuses
//! writes; a second sandbox reads what the first wrote. Two sandboxes per
//! backend (two VM boots on the microVM).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxPolicy, SandboxSpec};
use paddock_core::volume::{VolumeHost, VolumeName};
use paddock_proto::VolumeMount;
use paddock_sandbox::volumes::BtrfsVolumes;
use paddock_test_support::require::{Need, skip_or_fail};

use super::cases::{Ctx, sh};

/// Unmounts the suite's pool when the case ends, pass or fail.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        path: path.to_owned(),
        read_only,
    }
}

fn spec(mounts: Vec<VolumeMount>, dirs: &[(&str, &PathBuf)]) -> SandboxSpec {
    SandboxSpec {
        policy: SandboxPolicy {
            volumes: mounts,
            ..SandboxPolicy::default()
        },
        volume_dirs: dirs
            .iter()
            .map(|(name, dir)| ((*name).to_owned(), (*dir).clone()))
            .collect(),
        ..SandboxSpec::default()
    }
}

pub fn volume_mount(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let kind = ctx.kind.name();
        let has_btrfs = std::process::Command::new("mkfs.btrfs")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_btrfs {
            skip_or_fail(
                Need::Loop,
                &format!("volume_mount [{kind}]"),
                "mkfs.btrfs is not installed (btrfs-progs)",
            )
            .unwrap();
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let pool = BtrfsVolumes::new(root.path().join("volumes"), 256 << 20);
        let _unmount = Unmount(pool.mount_point());
        let tenant = TenantId::parse("conformance").unwrap();
        let data = pool
            .create(&tenant, &VolumeName::parse("data").unwrap(), 4 << 20)
            .await
            .unwrap_or_else(|e| panic!("[{kind}] creating a volume: {e}"));
        let seed = pool
            .create(&tenant, &VolumeName::parse("seed").unwrap(), 4 << 20)
            .await
            .unwrap();
        std::fs::write(seed.join("given"), "from the host\n").unwrap();
        // the volume owner's, as a writer would have left it: only the
        // read-only mount refuses the writes below, not permissions
        for path in [seed.clone(), seed.join("given")] {
            let owner = Some(paddock_proto::VOLUME_OWNER_ID);
            std::os::unix::fs::chown(&path, owner, owner).unwrap();
        }

        let sb = ctx
            .create(spec(
                vec![
                    mount("data", "/srv/data", false),
                    mount("seed", "/tmp/seed", true),
                ],
                &[("data", &data), ("seed", &seed)],
            ))
            .await;
        let guest = sb.guest();
        let (code, out, err) = sh(
            &*guest,
            "echo kept > /srv/data/note && cat /srv/data/note /tmp/seed/given",
        )
        .await;
        assert_eq!(
            (code, out.as_str()),
            (0, "kept\nfrom the host\n"),
            "[{kind}] {err}"
        );
        assert_eq!(
            std::fs::read_to_string(data.join("note")).unwrap(),
            "kept\n"
        );
        // the kernel's quota holds inside the sandbox
        let (code, out, err) = sh(
            &*guest,
            "dd if=/dev/zero of=/srv/data/big bs=1M count=8 conv=fsync 2>&1; echo rc=$?; \
             rm -f /srv/data/big",
        )
        .await;
        assert_eq!(code, 0, "[{kind}] {err}");
        assert!(
            out.contains("Disk quota exceeded") && !out.contains("rc=0"),
            "[{kind}] a write past the quota: {out}"
        );
        // the read-only volume refuses every write
        let (_, out, _) = sh(
            &*guest,
            "touch /tmp/seed/x 2>&1; echo rc=$?; rm /tmp/seed/given 2>&1; echo rc=$?",
        )
        .await;
        assert!(
            out.contains("Read-only file system") && !out.contains("rc=0"),
            "[{kind}] writes to a read-only volume: {out}"
        );
        assert!(seed.join("given").exists() && !seed.join("x").exists());
        drop(guest);
        sb.destroy().await.unwrap();

        // the volume outlives its sandbox: another one reads it
        let sb = ctx
            .create(spec(
                vec![mount("data", "/workspace/data", true)],
                &[("data", &data)],
            ))
            .await;
        let (code, out, err) = sh(&*sb.guest(), "cat /workspace/data/note").await;
        assert_eq!((code, out.as_str()), (0, "kept\n"), "[{kind}] {err}");
        sb.destroy().await.unwrap();
    })
}
