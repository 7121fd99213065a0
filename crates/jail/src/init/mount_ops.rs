//! Applies the planned layout inside the sandbox's mount namespace.
//!
//! First [`pivot_into_fresh_root`]: a tmpfs is mounted over the host's /tmp
//! (in this namespace only) and becomes the root, with the old root parked at
//! [`OLD_ROOT`] so the plan's host sources stay reachable until the plan's
//! last steps detach it and make the root read-only.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::stat::Mode;

use crate::JailError;
use crate::host::layout::{Attrs, MountOp, Source, VolumeBind};
use crate::host::writable::{self, WritableMount};
use crate::sys;

/// Where the host's root is parked between pivot_root and the detach.
pub(crate) const OLD_ROOT: &str = "/.oldroot";
/// Host directory the new root tmpfs is first mounted on.
const NEW_ROOT_MOUNT_POINT: &str = "/tmp";

fn errno(e: nix::errno::Errno) -> io::Error {
    io::Error::from(e)
}

/// Makes every mount private, mounts a small tmpfs and pivots into it.
pub(crate) fn pivot_into_fresh_root() -> Result<(), JailError> {
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| JailError::mount("make-private", "/", errno(e)))?;
    mount(
        Some("paddock-root"),
        NEW_ROOT_MOUNT_POINT,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0755,size=1m,nr_inodes=256"),
    )
    .map_err(|e| JailError::mount("root-tmpfs", NEW_ROOT_MOUNT_POINT, errno(e)))?;
    let put_old = Path::new(NEW_ROOT_MOUNT_POINT).join(OLD_ROOT.trim_start_matches('/'));
    nix::unistd::mkdir(&put_old, Mode::from_bits_truncate(0o700))
        .map_err(|e| JailError::mount("mkdir", &put_old, errno(e)))?;
    nix::unistd::pivot_root(NEW_ROOT_MOUNT_POINT, &put_old)
        .map_err(|e| JailError::mount("pivot_root", NEW_ROOT_MOUNT_POINT, errno(e)))?;
    nix::unistd::chdir("/").map_err(|e| JailError::mount("chdir", "/", errno(e)))?;
    Ok(())
}

/// Applies every step of the plan. `workspace_tree` is the idmapped tree for
/// [`MountOp::MoveWorkspaceTree`]; it is closed once moved. `writable` holds
/// what [`MountOp::WritableBind`] needs, one entry per path; `volume_trees`
/// the monitor's tree of each volume ([`MountOp::VolumeBind`]).
pub(crate) fn apply(
    ops: &[MountOp],
    mut workspace_tree: Option<OwnedFd>,
    mut writable: Vec<WritableMount>,
    mut volume_trees: Vec<Option<OwnedFd>>,
) -> Result<(), JailError> {
    for op in ops {
        apply_one(op, &mut workspace_tree, &mut writable, &mut volume_trees)?;
    }
    Ok(())
}

fn host_path(path: &Path) -> PathBuf {
    Path::new(OLD_ROOT).join(path.strip_prefix("/").unwrap_or(path))
}

fn ms_flags(attrs: Attrs) -> MsFlags {
    let mut flags = MsFlags::empty();
    flags.set(MsFlags::MS_RDONLY, attrs.rdonly);
    flags.set(MsFlags::MS_NOSUID, attrs.nosuid);
    flags.set(MsFlags::MS_NODEV, attrs.nodev);
    flags.set(MsFlags::MS_NOEXEC, attrs.noexec);
    flags
}

fn mkdir_exists_ok(path: &Path, mode: u32) -> io::Result<()> {
    match nix::unistd::mkdir(path, Mode::from_bits_truncate(mode)) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => Ok(()),
        Err(e) => Err(errno(e)),
    }
}

/// [`MountOp::VolumeBind`], with the monitor's tree of it when there is one.
fn bind_volume(volume: &VolumeBind, tree: Option<OwnedFd>) -> Result<(), JailError> {
    let path = &volume.path;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
        .map_err(|e| JailError::mount("volume-mount-point", path, e))?;
    // A symlink on the way (one the workspace holds) would put the volume
    // somewhere else than its checked path.
    let real =
        std::fs::canonicalize(path).map_err(|e| JailError::mount("volume-mount-point", path, e))?;
    if real != *path {
        return Err(JailError::mount(
            "volume-mount-point",
            path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("reached through a symlink (it leads to {})", real.display()),
            ),
        ));
    }
    if let Some(tree) = tree {
        // nosuid, nodev and read-only were set on it by the monitor
        return sys::move_tree(tree.as_fd(), path)
            .map_err(|e| JailError::mount("volume-move", path, e));
    }
    let none: Option<&str> = None;
    mount(
        Some(&host_path(&volume.host)),
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
    .map_err(|e| JailError::mount("volume-bind", path, errno(e)))?;
    let attrs = Attrs {
        rdonly: volume.read_only,
        ..Attrs::DATA
    };
    sys::restrict_mount(path, attrs.mount_attr_bits(), true)
        .map_err(|e| JailError::mount("volume-restrict", path, e))
}

fn apply_one(
    op: &MountOp,
    workspace_tree: &mut Option<OwnedFd>,
    writable: &mut [WritableMount],
    volume_trees: &mut [Option<OwnedFd>],
) -> Result<(), JailError> {
    let none: Option<&str> = None;
    match op {
        MountOp::Dir { path, mode } => {
            mkdir_exists_ok(path, *mode).map_err(|e| JailError::mount("mkdir", path, e))
        }
        MountOp::Symlink { path, target } => {
            symlink(target, path).map_err(|e| JailError::mount("symlink", path, e))
        }
        MountOp::WriteFile { path, contents } => {
            std::fs::write(path, contents).map_err(|e| JailError::mount("write", path, e))
        }
        MountOp::Tmpfs {
            path,
            options,
            attrs,
        } => mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            ms_flags(*attrs),
            Some(options.as_str()),
        )
        .map_err(|e| JailError::mount("tmpfs", path, errno(e))),
        MountOp::Bind { source, path, file } => {
            let source = match source {
                Source::Host(p) => host_path(p),
                Source::Sandbox(p) => p.clone(),
            };
            if *file {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .mode(0o644)
                    .open(path)
                    .map(drop)
            } else {
                mkdir_exists_ok(path, 0o755)
            }
            .map_err(|e| JailError::mount("mount-point", path, e))?;
            mount(
                Some(&source),
                path,
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )
            .map_err(|e| JailError::mount("bind", path, errno(e)))
        }
        MountOp::Restrict {
            path,
            attrs,
            recursive,
        } => sys::restrict_mount(path, attrs.mount_attr_bits(), *recursive)
            .map_err(|e| JailError::mount("restrict", path, e)),
        MountOp::Proc { path } => mount(
            Some("proc"),
            path,
            Some("proc"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            none,
        )
        .map_err(|e| JailError::mount("proc", path, errno(e))),
        MountOp::Devpts { path } => mount(
            Some("devpts"),
            path,
            Some("devpts"),
            MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
            Some("newinstance,ptmxmode=0666,mode=0620"),
        )
        .map_err(|e| JailError::mount("devpts", path, errno(e))),
        MountOp::MoveWorkspaceTree { path } => {
            let tree = workspace_tree.take().ok_or_else(|| {
                JailError::mount(
                    "move-workspace",
                    path,
                    io::Error::new(io::ErrorKind::NotFound, "no idmapped workspace tree"),
                )
            })?;
            sys::move_tree(tree.as_fd(), path)
                .map_err(|e| JailError::mount("move-workspace", path, e))
        }
        MountOp::WritableBind {
            rel,
            host_workspace,
        } => {
            let mount = writable.iter_mut().find(|m| m.rel == *rel).ok_or_else(|| {
                JailError::mount(
                    "writable-bind",
                    writable::sandbox_path(rel),
                    io::Error::new(io::ErrorKind::NotFound, "not resolved by the monitor"),
                )
            })?;
            let host_workspace = host_workspace.as_deref().map(host_path);
            writable::bind(mount, Path::new("/workspace"), host_workspace.as_deref())
        }
        MountOp::VolumeBind(volume) => {
            let tree = volume_trees.get_mut(volume.index).and_then(Option::take);
            bind_volume(volume, tree)
        }
        MountOp::Mask { path, dir } => {
            let result = if *dir {
                mount(
                    Some("paddock-mask"),
                    path,
                    Some("tmpfs"),
                    MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV
                        | MsFlags::MS_NOEXEC,
                    Some("size=4k,mode=0555"),
                )
            } else {
                mount(
                    Some(&host_path(Path::new("/dev/null"))),
                    path,
                    none,
                    MsFlags::MS_BIND,
                    none,
                )
            };
            match result {
                Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
                Err(e) => Err(JailError::mount("mask", path, errno(e))),
            }
        }
        MountOp::DetachOldRoot => {
            umount2(OLD_ROOT, MntFlags::MNT_DETACH)
                .map_err(|e| JailError::mount("detach-old-root", OLD_ROOT, errno(e)))?;
            std::fs::remove_dir(OLD_ROOT).map_err(|e| JailError::mount("rmdir", OLD_ROOT, e))
        }
    }
}
