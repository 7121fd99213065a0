//! The pool's sequence over a recording fake host: made once, mounted again
//! after a restart, quotas before any volume, and no volume left without
//! its quota.

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::*;

#[derive(Debug, Default)]
struct Fake {
    files: Mutex<BTreeSet<PathBuf>>,
    mounts: Mutex<Vec<PathBuf>>,
    calls: Mutex<Vec<String>>,
    /// A command line starting with this fails.
    fail: Option<&'static str>,
    /// The limit `qgroup show` prints (`none` when None).
    limit: Option<&'static str>,
}

impl Fake {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Kernel for Fake {
    fn exists(&self, path: &Path) -> bool {
        self.files.lock().unwrap().contains(path)
    }
    fn mountinfo(&self) -> std::io::Result<String> {
        let mounts = self.mounts.lock().unwrap();
        Ok(mounts
            .iter()
            .map(|m| format!("1 2 0:1 / {} rw - btrfs /dev/loop0 rw\n", m.display()))
            .collect())
    }
    fn make_dirs(&self, path: &Path) -> std::io::Result<()> {
        self.files.lock().unwrap().insert(path.to_owned());
        Ok(())
    }
    fn make_sparse_file(&self, path: &Path, bytes: u64) -> std::io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("sparse {} {bytes}", path.display()));
        self.files.lock().unwrap().insert(path.to_owned());
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut files = self.files.lock().unwrap();
        files.remove(from);
        files.insert(to.to_owned());
        Ok(())
    }
    fn run(&self, program: &str, args: &[OsString]) -> Result<String, BoxError> {
        let line = std::iter::once(program.to_owned())
            .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ");
        self.calls.lock().unwrap().push(line.clone());
        if self.fail.is_some_and(|f| line.starts_with(f)) {
            return Err("refused".into());
        }
        let last = PathBuf::from(args.last().cloned().unwrap_or_default());
        match (program, args.first().and_then(|a| a.to_str())) {
            ("mount", _) => self.mounts.lock().unwrap().push(last),
            ("btrfs", Some("subvolume"))
                if line.contains(" create ") || line.contains(" snapshot ") =>
            {
                self.files.lock().unwrap().insert(last);
            }
            ("btrfs", Some("qgroup")) if line.contains(" show ") => {
                return Ok(format!(
                    "Qgroupid Referenced Exclusive Max referenced Path\n\
                     -------- ---------- --------- -------------- ----\n\
                     0/300 16384 4096 {} {}\n",
                    self.limit.unwrap_or("none"),
                    last.display()
                ));
            }
            ("btrfs", Some("subvolume")) => {
                self.files.lock().unwrap().remove(&last);
            }
            _ => {}
        }
        Ok(String::new())
    }
}

fn volumes(fake: Fake) -> (BtrfsVolumes, Arc<Fake>) {
    let fake = Arc::new(fake);
    let host = BtrfsVolumes::with_kernel(PathBuf::from("/d/volumes"), 1 << 30, fake.clone());
    (host, fake)
}

fn ids() -> (TenantId, VolumeName) {
    (
        TenantId::parse("acme").unwrap(),
        VolumeName::parse("cache").unwrap(),
    )
}

#[tokio::test]
async fn the_first_volume_makes_the_pool_then_its_subvolume_with_a_limit() {
    let (host, fake) = volumes(Fake::default());
    let (tenant, name) = ids();
    let dir = host.create(&tenant, &name, 8 << 20).await.unwrap();
    assert_eq!(dir, Path::new("/d/volumes/mnt/acme/cache"));
    assert_eq!(
        fake.calls(),
        [
            "sparse /d/volumes/pool.img.partial 1073741824",
            "mkfs.btrfs -q -f /d/volumes/pool.img.partial",
            "mount -t btrfs -o loop /d/volumes/pool.img /d/volumes/mnt",
            "btrfs quota enable /d/volumes/mnt",
            "btrfs subvolume create /d/volumes/mnt/acme/cache",
            "btrfs qgroup limit 8388608 /d/volumes/mnt/acme/cache",
        ]
    );
}

#[tokio::test]
async fn a_restarted_server_mounts_the_pool_again_and_never_formats_it() {
    let fake = Fake::default();
    fake.files
        .lock()
        .unwrap()
        .insert(PathBuf::from("/d/volumes/pool.img"));
    let (host, fake) = volumes(fake);
    let (tenant, name) = ids();
    host.create(&tenant, &name, 8 << 20).await.unwrap();
    host.create(&tenant, &name, 8 << 20).await.unwrap();
    assert_eq!(
        fake.calls(),
        [
            "mount -t btrfs -o loop /d/volumes/pool.img /d/volumes/mnt",
            "btrfs quota enable /d/volumes/mnt",
            "btrfs subvolume create /d/volumes/mnt/acme/cache",
            "btrfs qgroup limit 8388608 /d/volumes/mnt/acme/cache",
            // the second call: mounted, quotas on, the subvolume there
            "btrfs qgroup limit 8388608 /d/volumes/mnt/acme/cache",
        ]
    );
}

#[tokio::test]
async fn a_pool_that_cannot_be_set_up_fails_the_call() {
    let (host, fake) = volumes(Fake {
        fail: Some("btrfs quota enable"),
        ..Fake::default()
    });
    let (tenant, name) = ids();
    let err = host.create(&tenant, &name, 8 << 20).await.unwrap_err();
    assert!(
        matches!(
            err,
            VolumeError::Pool {
                step: "turning quotas on",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!fake.calls().iter().any(|c| c.contains("subvolume")));
}

#[tokio::test]
async fn a_volume_whose_limit_fails_is_removed() {
    let (host, fake) = volumes(Fake {
        fail: Some("btrfs qgroup limit"),
        ..Fake::default()
    });
    let (tenant, name) = ids();
    let err = host.create(&tenant, &name, 8 << 20).await.unwrap_err();
    assert!(matches!(err, VolumeError::Volume { .. }), "{err:?}");
    assert_eq!(
        fake.calls().last().map(String::as_str),
        Some("btrfs subvolume delete /d/volumes/mnt/acme/cache")
    );
    assert!(!fake.exists(Path::new("/d/volumes/mnt/acme/cache")));
}

#[tokio::test]
async fn removing_a_missing_volume_is_fine_and_its_path_is_missing() {
    let (host, _) = volumes(Fake::default());
    let (tenant, name) = ids();
    host.remove(&tenant, &name).await.unwrap();
    assert!(matches!(
        host.path(&tenant, &name).await,
        Err(VolumeError::Missing { .. })
    ));
}

#[tokio::test]
async fn a_workspace_is_a_limited_subvolume_apart_from_the_volumes() {
    let (host, fake) = volumes(Fake {
        limit: Some("8388608"),
        ..Fake::default()
    });
    let tenant = TenantId::parse("acme").unwrap();
    let id = WorkspaceId::generate();
    assert_eq!(host.workspace(&tenant, &id).await.unwrap(), None);
    let ws = host.create_workspace(&tenant, &id, 8 << 20).await.unwrap();
    let dir = PathBuf::from("/d/volumes/mnt/acme/.workspaces").join(id.as_str());
    assert_eq!(ws.path, dir);
    assert_eq!(
        ws.quota,
        WorkspaceQuotaEnforcement {
            mechanism: "btrfs qgroup 0/300".into(),
            bytes: 8 << 20,
            inodes: 0,
        }
    );
    assert!(
        fake.calls()
            .contains(&format!("btrfs qgroup limit 8388608 {}", dir.display()))
    );
    assert_eq!(host.workspace(&tenant, &id).await.unwrap(), Some(ws));
    host.remove_workspace(&tenant, &id).await.unwrap();
    assert_eq!(host.workspace(&tenant, &id).await.unwrap(), None);
}

#[tokio::test]
async fn a_workspace_whose_qgroup_has_no_limit_is_an_error_not_a_quota() {
    let (host, fake) = volumes(Fake::default());
    let tenant = TenantId::parse("acme").unwrap();
    let id = WorkspaceId::generate();
    let dir = PathBuf::from("/d/volumes/mnt/acme/.workspaces").join(id.as_str());
    fake.files
        .lock()
        .unwrap()
        .extend([PathBuf::from("/d/volumes/pool.img"), dir]);
    let err = host.workspace(&tenant, &id).await.unwrap_err();
    assert!(matches!(err, VolumeError::Volume { .. }), "{err:?}");
}

#[tokio::test]
async fn a_snapshot_is_read_only_and_a_volume_made_from_it_gets_its_own_limit() {
    let (host, fake) = volumes(Fake::default());
    let (tenant, name) = ids();
    let snap = VolumeName::parse("monday").unwrap();
    let copy = VolumeName::parse("copy").unwrap();
    assert!(matches!(
        host.snapshot(&tenant, &name, &snap).await,
        Err(VolumeError::Missing { .. })
    ));
    host.create(&tenant, &name, 8 << 20).await.unwrap();
    host.snapshot(&tenant, &name, &snap).await.unwrap();
    host.create_from_snapshot(&tenant, &name, &snap, &copy, 4 << 20)
        .await
        .unwrap();
    let calls = fake.calls();
    let tail: Vec<&str> = calls
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "btrfs subvolume snapshot -r /d/volumes/mnt/acme/cache /d/volumes/mnt/acme/.snapshots/cache/monday",
            "btrfs subvolume snapshot /d/volumes/mnt/acme/.snapshots/cache/monday /d/volumes/mnt/acme/copy",
            "btrfs qgroup limit 4194304 /d/volumes/mnt/acme/copy",
        ]
    );
    assert_eq!(
        host.snapshot_bytes(&tenant, &name, &snap).await.unwrap(),
        4096
    );
    host.remove_snapshot(&tenant, &name, &snap).await.unwrap();
    assert!(!fake.exists(Path::new("/d/volumes/mnt/acme/.snapshots/cache/monday")));
}

#[tokio::test]
async fn looking_up_a_workspace_never_makes_the_pool() {
    let (host, fake) = volumes(Fake::default());
    let tenant = TenantId::parse("acme").unwrap();
    let id = WorkspaceId::generate();
    assert_eq!(host.workspace(&tenant, &id).await.unwrap(), None);
    host.remove_workspace(&tenant, &id).await.unwrap();
    assert_eq!(fake.calls(), Vec::<String>::new(), "no image, no mount");
}
