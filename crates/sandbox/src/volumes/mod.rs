//! Named volumes on one loop-mounted btrfs filesystem: a sparse image file
//! under the server's data directory (`<root>/pool.img`, mounted at
//! `<root>/mnt`), one subvolume per volume (`mnt/<tenant>/<name>`) with a
//! qgroup limit, so the kernel refuses the write past a volume's quota with
//! `EDQUOT` ("Disk quota exceeded"). Every call first makes the pool ready
//! (`plan::pool_steps`: made once, mounted again after a restart, quotas
//! on); a step that fails fails the call, so no volume exists without its
//! quota.

mod kernel;
mod plan;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_core::store::BoxError;
use paddock_core::volume::{PoolWorkspace, VolumeError, VolumeHost, VolumeName};
use paddock_proto::WorkspaceQuotaEnforcement;

use kernel::Kernel;
use plan::{PoolState, PoolStep};

/// Size of the pool's image unless the operator says otherwise (sparse:
/// it takes on disk what the volumes hold).
pub const DEFAULT_POOL_BYTES: u64 = 16 << 30;

/// Volumes as btrfs subvolumes with qgroup limits in one loop-mounted pool.
#[derive(Debug, Clone)]
pub struct BtrfsVolumes {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    pool_bytes: u64,
    kernel: Arc<dyn Kernel>,
    /// Set once the pool was made ready in this process (quotas included).
    ready: Mutex<bool>,
}

impl BtrfsVolumes {
    /// The pool under `root` (made on first use), its image `pool_bytes` large.
    pub fn new(root: PathBuf, pool_bytes: u64) -> Self {
        Self::with_kernel(root, pool_bytes, Arc::new(kernel::Host))
    }

    fn with_kernel(root: PathBuf, pool_bytes: u64, kernel: Arc<dyn Kernel>) -> Self {
        Self {
            inner: Arc::new(Inner {
                root,
                pool_bytes,
                kernel,
                ready: Mutex::new(false),
            }),
        }
    }

    /// Where the pool is mounted.
    pub fn mount_point(&self) -> PathBuf {
        self.inner.mount()
    }

    /// `name` labels the error of a task that did not run.
    async fn blocking<T: Send + 'static>(
        &self,
        name: &(impl ToString + Sync + ?Sized),
        f: impl FnOnce(&Inner) -> Result<T, VolumeError> + Send + 'static,
    ) -> Result<T, VolumeError> {
        self.run_blocking(name, None, f).await
    }

    /// Runs `f` on a blocking thread once the pool is ready; with `absent`,
    /// a pool never made is not made: `absent` is the answer.
    async fn run_blocking<T: Send + 'static>(
        &self,
        name: &(impl ToString + Sync + ?Sized),
        absent: Option<T>,
        f: impl FnOnce(&Inner) -> Result<T, VolumeError> + Send + 'static,
    ) -> Result<T, VolumeError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(absent) = absent
                && !inner.kernel.exists(&inner.image())
            {
                return Ok(absent);
            }
            inner.ensure_pool()?;
            f(&inner)
        })
        .await
        .map_err(|e| VolumeError::Volume {
            name: name.to_string(),
            step: "running the volume task",
            source: e.into(),
        })?
    }

    /// [`Self::blocking`] for a lookup: where the pool was never made,
    /// `absent` without making it (every workspace is looked up here; a
    /// server whose tenants use no quota must not get a pool image, nor fail
    /// where btrfs-progs is missing).
    async fn blocking_if_made<T: Send + 'static>(
        &self,
        name: &(impl ToString + Sync + ?Sized),
        absent: T,
        f: impl FnOnce(&Inner) -> Result<T, VolumeError> + Send + 'static,
    ) -> Result<T, VolumeError> {
        self.run_blocking(name, Some(absent), f).await
    }
}

impl Inner {
    fn mount(&self) -> PathBuf {
        self.root.join("mnt")
    }

    fn image(&self) -> PathBuf {
        self.root.join("pool.img")
    }

    fn pool_error(&self, step: &'static str) -> impl FnOnce(BoxError) -> VolumeError + '_ {
        move |source| VolumeError::Pool {
            path: self.root.clone(),
            step,
            source,
        }
    }

    fn ensure_pool(&self) -> Result<(), VolumeError> {
        let mut ready = self
            .ready
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mount = self.mount();
        let mountinfo = self
            .kernel
            .mountinfo()
            .map_err(|e| self.pool_error("reading the mount table")(e.into()))?;
        let state = PoolState {
            image_exists: self.kernel.exists(&self.image()),
            mounted: plan::mountinfo_has(&mountinfo, &mount),
        };
        for step in plan::pool_steps(state) {
            if step == PoolStep::EnableQuota && *ready && state.mounted {
                continue;
            }
            self.apply(step)?;
        }
        *ready = true;
        Ok(())
    }

    fn apply(&self, step: PoolStep) -> Result<(), VolumeError> {
        let image = self.image();
        let mount = self.mount();
        match step {
            PoolStep::MakeImage => {
                let partial = self.root.join("pool.img.partial");
                self.kernel
                    .make_dirs(&self.root)
                    .map_err(|e| self.pool_error("making its directory")(e.into()))?;
                self.kernel
                    .make_sparse_file(&partial, self.pool_bytes)
                    .map_err(|e| self.pool_error("making its image file")(e.into()))?;
                self.kernel
                    .run("mkfs.btrfs", &args(["-q", "-f"], [&partial]))
                    .map_err(self.pool_error("formatting it (mkfs.btrfs, from btrfs-progs)"))?;
                self.kernel
                    .rename(&partial, &image)
                    .map_err(|e| self.pool_error("renaming its image into place")(e.into()))
            }
            PoolStep::Mount => {
                self.kernel
                    .make_dirs(&mount)
                    .map_err(|e| self.pool_error("making its mount point")(e.into()))?;
                self.kernel
                    .run(
                        "mount",
                        &args(["-t", "btrfs", "-o", "loop"], [&image, &mount]),
                    )
                    .map(drop)
                    .map_err(self.pool_error("loop-mounting it"))
            }
            PoolStep::EnableQuota => self
                .kernel
                .run("btrfs", &args(["quota", "enable"], [&mount]))
                .map(drop)
                .map_err(self.pool_error("turning quotas on")),
        }
    }

    fn dir(&self, tenant: &TenantId, name: &VolumeName) -> PathBuf {
        plan::volume_dir(&self.mount(), tenant, name)
    }

    /// Makes the subvolume `dir` (if missing) with its qgroup limit set to
    /// `quota_bytes`; `name` labels its errors.
    fn create(&self, dir: &Path, name: &str, quota_bytes: u64) -> Result<(), VolumeError> {
        let failed = |step| {
            let name = name.to_owned();
            move |source: BoxError| VolumeError::Volume { name, step, source }
        };
        if let Some(parent) = dir.parent() {
            self.kernel
                .make_dirs(parent)
                .map_err(|e| failed("making the tenant's directory")(e.into()))?;
        }
        if !self.kernel.exists(dir) {
            self.kernel
                .run("btrfs", &args(["subvolume", "create"], [dir]))
                .map_err(failed("creating its subvolume"))?;
        }
        let limit = quota_bytes.to_string();
        if let Err(source) = self
            .kernel
            .run("btrfs", &args(["qgroup", "limit", limit.as_str()], [dir]))
        {
            // fail closed: no volume without its quota
            if let Err(e) = self.delete(dir) {
                tracing::warn!(volume = %name, error = %e, "removing a volume whose quota failed");
            }
            return Err(failed("setting its quota (qgroup limit)")(source));
        }
        Ok(())
    }

    /// The qgroup row of the subvolume `dir`; `name` labels its errors.
    fn qgroup(&self, dir: &Path, name: &str) -> Result<plan::QgroupRow, VolumeError> {
        let failed = |source| VolumeError::Volume {
            name: name.to_owned(),
            step: "reading its quota group (qgroup show)",
            source,
        };
        let out = self
            .kernel
            .run("btrfs", &args(["qgroup", "show", "-rf", "--raw"], [dir]))
            .map_err(failed)?;
        plan::parse_qgroup(&out).ok_or_else(|| failed(format!("no qgroup row in {out:?}").into()))
    }

    /// The workspace `id` as the pool holds it, if it is there.
    fn workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Option<PoolWorkspace>, VolumeError> {
        let dir = plan::workspace_dir(&self.mount(), tenant, id);
        if !self.kernel.exists(&dir) {
            return Ok(None);
        }
        let row = self.qgroup(&dir, id.as_str())?;
        // A workspace in the pool always has its limit; one without is
        // not held, and saying so beats reporting a quota that is not there.
        let Some(bytes) = row.max_referenced else {
            return Err(VolumeError::Volume {
                name: id.to_string(),
                step: "reading its quota (the quota group has no limit)",
                source: format!("qgroup {} of {} has no limit", row.id, dir.display()).into(),
            });
        };
        Ok(Some(PoolWorkspace {
            path: dir,
            quota: WorkspaceQuotaEnforcement {
                mechanism: format!("btrfs qgroup {}", row.id),
                bytes,
                inodes: 0,
            },
        }))
    }

    /// Snapshots the subvolume `from` to `to` (`read_only`: a frozen
    /// snapshot; otherwise a writable copy); one already at `to` is kept.
    fn snapshot(&self, from: &Path, to: &Path, read_only: bool) -> Result<(), BoxError> {
        if let Some(parent) = to.parent() {
            self.kernel.make_dirs(parent)?;
        }
        if self.kernel.exists(to) {
            return Ok(());
        }
        let flags: &[&str] = if read_only {
            &["subvolume", "snapshot", "-r"]
        } else {
            &["subvolume", "snapshot"]
        };
        self.kernel
            .run("btrfs", &args(flags.iter().copied(), [from, to]))
            .map(drop)
    }

    fn delete(&self, dir: &Path) -> Result<(), BoxError> {
        if self.kernel.exists(dir) {
            self.kernel
                .run("btrfs", &args(["subvolume", "delete"], [dir]))?;
        }
        Ok(())
    }
}

fn args<'a, P: AsRef<Path> + ?Sized + 'a>(
    flags: impl IntoIterator<Item = &'a str>,
    paths: impl IntoIterator<Item = &'a P>,
) -> Vec<OsString> {
    flags
        .into_iter()
        .map(OsString::from)
        .chain(paths.into_iter().map(|p| p.as_ref().as_os_str().to_owned()))
        .collect()
}

#[async_trait]
impl VolumeHost for BtrfsVolumes {
    async fn create(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
        quota_bytes: u64,
    ) -> Result<PathBuf, VolumeError> {
        let (tenant, owned) = (tenant.clone(), name.clone());
        self.blocking(name, move |inner| {
            let dir = inner.dir(&tenant, &owned);
            inner.create(&dir, owned.as_str(), quota_bytes)?;
            Ok(dir)
        })
        .await
    }

    async fn path(&self, tenant: &TenantId, name: &VolumeName) -> Result<PathBuf, VolumeError> {
        let (tenant, owned) = (tenant.clone(), name.clone());
        self.blocking(name, move |inner| {
            let dir = inner.dir(&tenant, &owned);
            if inner.kernel.exists(&dir) {
                Ok(dir)
            } else {
                Err(VolumeError::Missing {
                    name: owned.to_string(),
                })
            }
        })
        .await
    }

    async fn used_bytes(&self, tenant: &TenantId, name: &VolumeName) -> Result<u64, VolumeError> {
        let (tenant, owned) = (tenant.clone(), name.clone());
        self.blocking(name, move |inner| {
            let dir = inner.dir(&tenant, &owned);
            if !inner.kernel.exists(&dir) {
                return Err(VolumeError::Missing {
                    name: owned.to_string(),
                });
            }
            Ok(inner.qgroup(&dir, owned.as_str())?.referenced)
        })
        .await
    }

    async fn remove(&self, tenant: &TenantId, name: &VolumeName) -> Result<(), VolumeError> {
        let (tenant, owned) = (tenant.clone(), name.clone());
        self.blocking(name, move |inner| {
            inner
                .delete(&inner.dir(&tenant, &owned))
                .map_err(|source| VolumeError::Volume {
                    name: owned.to_string(),
                    step: "deleting its subvolume",
                    source,
                })
        })
        .await
    }

    async fn snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<(), VolumeError> {
        let (tenant, volume, snapshot) = (tenant.clone(), volume.clone(), snapshot.clone());
        self.blocking(&volume.clone(), move |inner| {
            let from = inner.dir(&tenant, &volume);
            if !inner.kernel.exists(&from) {
                return Err(VolumeError::Missing {
                    name: volume.to_string(),
                });
            }
            let to = plan::snapshot_dir(&inner.mount(), &tenant, &volume, &snapshot);
            inner
                .snapshot(&from, &to, true)
                .map_err(|source| VolumeError::Volume {
                    name: volume.to_string(),
                    step: "taking a read-only snapshot (subvolume snapshot -r)",
                    source,
                })
        })
        .await
    }

    async fn snapshot_bytes(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<u64, VolumeError> {
        let (tenant, volume, snapshot) = (tenant.clone(), volume.clone(), snapshot.clone());
        self.blocking(&snapshot.clone(), move |inner| {
            let dir = plan::snapshot_dir(&inner.mount(), &tenant, &volume, &snapshot);
            if !inner.kernel.exists(&dir) {
                return Err(VolumeError::Missing {
                    name: format!("{volume}@{snapshot}"),
                });
            }
            Ok(inner.qgroup(&dir, snapshot.as_str())?.exclusive)
        })
        .await
    }

    async fn remove_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<(), VolumeError> {
        let (tenant, volume, snapshot) = (tenant.clone(), volume.clone(), snapshot.clone());
        self.blocking(&snapshot.clone(), move |inner| {
            let dir = plan::snapshot_dir(&inner.mount(), &tenant, &volume, &snapshot);
            inner.delete(&dir).map_err(|source| VolumeError::Volume {
                name: format!("{volume}@{snapshot}"),
                step: "deleting the snapshot's subvolume",
                source,
            })
        })
        .await
    }

    async fn create_from_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
        name: &VolumeName,
        quota_bytes: u64,
    ) -> Result<PathBuf, VolumeError> {
        let (tenant, volume, snapshot, owned) = (
            tenant.clone(),
            volume.clone(),
            snapshot.clone(),
            name.clone(),
        );
        self.blocking(name, move |inner| {
            let from = plan::snapshot_dir(&inner.mount(), &tenant, &volume, &snapshot);
            if !inner.kernel.exists(&from) {
                return Err(VolumeError::Missing {
                    name: format!("{volume}@{snapshot}"),
                });
            }
            let dir = inner.dir(&tenant, &owned);
            inner
                .snapshot(&from, &dir, false)
                .map_err(|source| VolumeError::Volume {
                    name: owned.to_string(),
                    step: "copying the snapshot (subvolume snapshot)",
                    source,
                })?;
            // the copy's own limit (the snapshot's qgroup limit is copied too)
            inner.create(&dir, owned.as_str(), quota_bytes)?;
            Ok(dir)
        })
        .await
    }

    async fn create_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
        quota_bytes: u64,
    ) -> Result<PoolWorkspace, VolumeError> {
        let (tenant, owned) = (tenant.clone(), id.clone());
        self.blocking(id, move |inner| {
            let dir = plan::workspace_dir(&inner.mount(), &tenant, &owned);
            inner.create(&dir, owned.as_str(), quota_bytes)?;
            inner
                .workspace(&tenant, &owned)?
                .ok_or_else(|| VolumeError::Missing {
                    name: owned.to_string(),
                })
        })
        .await
    }

    async fn workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Option<PoolWorkspace>, VolumeError> {
        let (tenant, owned) = (tenant.clone(), id.clone());
        self.blocking_if_made(id, None, move |inner| inner.workspace(&tenant, &owned))
            .await
    }

    async fn remove_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), VolumeError> {
        let (tenant, owned) = (tenant.clone(), id.clone());
        self.blocking_if_made(id, (), move |inner| {
            inner
                .delete(&plan::workspace_dir(&inner.mount(), &tenant, &owned))
                .map_err(|source| VolumeError::Volume {
                    name: owned.to_string(),
                    step: "deleting its subvolume",
                    source,
                })
        })
        .await
    }
}

#[cfg(test)]
mod tests;
