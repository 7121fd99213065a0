//! The staging directory of a restore and the final move into place.
//!
//! A new target is staged in a sibling directory and renamed into place in
//! one step. An existing empty target (e.g. a sandbox's mounted workspace,
//! which cannot be replaced) is staged in a hidden directory inside it, and
//! the staged top-level entries are moved in with `RENAME_NOREPLACE`; if one
//! move fails, the moved ones are moved back. Either way a failed restore
//! leaves the target as it was, and dropping an uncommitted staging removes it.

use std::fs;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag, RenameFlags, openat, renameat2};
use nix::sys::stat::{FchmodatFlags, Mode, SFlag, fchmod, fchmodat, fstatat};
use nix::unistd::{Gid, Uid, fchown};

use crate::error::{SnapshotError, io_err};
use crate::options::Owner;

/// Mode of a target that the restore creates.
const NEW_TARGET_MODE: u32 = 0o755;

#[derive(Debug)]
enum Placement {
    /// The target did not exist: staging is a sibling, renamed onto it.
    NewTarget,
    /// The target is an empty directory: staging is inside it.
    IntoEmpty { target_fd: OwnedFd },
}

#[derive(Debug)]
pub(crate) struct Staging {
    path: PathBuf,
    target: PathBuf,
    root: OwnedFd,
    placement: Placement,
    committed: bool,
}

impl Staging {
    pub(crate) fn prepare(target: &Path) -> Result<Self, SnapshotError> {
        let target_err = |source| SnapshotError::Target {
            path: target.to_path_buf(),
            source,
        };
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let (path, placement) = match fs::symlink_metadata(target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let name = target.file_name().ok_or_else(|| {
                    target_err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the target path has no final name",
                    ))
                })?;
                let parent = match target.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
                let mut staged = b".".to_vec();
                staged.extend_from_slice(name.as_bytes());
                staged.extend_from_slice(b".restore-");
                staged.extend_from_slice(suffix.as_bytes());
                (
                    parent.join(std::ffi::OsStr::from_bytes(&staged)),
                    Placement::NewTarget,
                )
            }
            Err(e) => return Err(target_err(e)),
            Ok(meta) if meta.is_dir() => {
                let mut entries = fs::read_dir(target).map_err(target_err)?;
                if entries.next().is_some() {
                    return Err(SnapshotError::TargetNotEmpty {
                        path: target.to_path_buf(),
                    });
                }
                let target_fd = open_dir(nix::fcntl::AT_FDCWD, target)
                    .map_err(|errno| target_err(io_err(errno)))?;
                (
                    target.join(format!(".paddock-restore-{suffix}")),
                    Placement::IntoEmpty { target_fd },
                )
            }
            Ok(_) => {
                return Err(SnapshotError::TargetNotEmpty {
                    path: target.to_path_buf(),
                });
            }
        };

        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|source| SnapshotError::Staging {
                path: path.clone(),
                source,
            })?;
        let root = match open_dir(nix::fcntl::AT_FDCWD, &path) {
            Ok(root) => root,
            Err(errno) => {
                remove_tree(&path);
                return Err(SnapshotError::Staging {
                    path,
                    source: io_err(errno),
                });
            }
        };
        Ok(Self {
            path,
            target: target.to_path_buf(),
            root,
            placement,
            committed: false,
        })
    }

    pub(crate) fn root(&self) -> &OwnedFd {
        &self.root
    }

    /// Moves the staged tree into the target (consumes the staging either way).
    pub(crate) fn commit(mut self, owner: Option<Owner>) -> Result<(), SnapshotError> {
        let commit_err = |source| SnapshotError::Commit {
            path: self.target.clone(),
            source,
        };
        match &self.placement {
            Placement::NewTarget => {
                fchmod(&self.root, Mode::from_bits_truncate(NEW_TARGET_MODE))
                    .map_err(|errno| commit_err(io_err(errno)))?;
                if let Some(owner) = owner {
                    fchown(
                        &self.root,
                        Some(Uid::from_raw(owner.uid)),
                        Some(Gid::from_raw(owner.gid)),
                    )
                    .map_err(|errno| commit_err(io_err(errno)))?;
                }
                // Replaces at most an empty directory created meanwhile.
                fs::rename(&self.path, &self.target).map_err(commit_err)?;
            }
            Placement::IntoEmpty { target_fd } => {
                move_children(&self.root, target_fd).map_err(commit_err)?;
                fs::remove_dir(&self.path).map_err(commit_err)?;
            }
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            remove_tree(&self.path);
        }
    }
}

/// Moves every entry of `from` into `to`, never replacing anything; on a
/// failure, moves back what was moved.
fn move_children(from: &OwnedFd, to: &OwnedFd) -> io::Result<()> {
    let names = list_names(from)?;
    for (done, name) in names.iter().enumerate() {
        let name = std::ffi::OsStr::from_bytes(name);
        if let Err(error) = move_entry(from, to, name) {
            for back in &names[..done] {
                let back = std::ffi::OsStr::from_bytes(back);
                // Best effort: the staging (and anything left in it) is removed next.
                let _ = move_entry(to, from, back);
            }
            return Err(error);
        }
    }
    Ok(())
}

/// Moves one entry to another directory. Moving a directory to another
/// parent rewrites its `..` entry, which needs write permission on it even
/// for its owner (and a sandbox's root has no capability to override that):
/// a directory restored without owner write (0555, 0500) is made writable
/// for the move and given its mode back after.
fn move_entry(from: &OwnedFd, to: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<()> {
    let stat = fstatat(from, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io_err)?;
    let is_dir = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR;
    let mode = Mode::from_bits_truncate(stat.st_mode & 0o7777);
    let unwritable = is_dir && !mode.contains(Mode::S_IWUSR);
    if unwritable {
        fchmodat(
            from,
            name,
            mode | Mode::S_IWUSR,
            FchmodatFlags::FollowSymlink,
        )
        .map_err(io_err)?;
    }
    let moved = match renameat2(from, name, to, name, RenameFlags::RENAME_NOREPLACE) {
        // gVisor (Debian 12's runsc) has no RENAME_NOREPLACE: check, then
        // rename. Only the sandbox's own processes could race the check, and
        // all they could lose is their own entry of that name.
        Err(nix::errno::Errno::EINVAL) => match fstatat(to, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(_) => Err(io_err(nix::errno::Errno::EEXIST)),
            Err(nix::errno::Errno::ENOENT) => {
                nix::fcntl::renameat(from, name, to, name).map_err(io_err)
            }
            Err(e) => Err(io_err(e)),
        },
        other => other.map_err(io_err),
    };
    if unwritable {
        let now_in = if moved.is_ok() { to } else { from };
        fchmodat(now_in, name, mode, FchmodatFlags::FollowSymlink).map_err(io_err)?;
    }
    moved
}

fn list_names(dir: &OwnedFd) -> io::Result<Vec<Vec<u8>>> {
    let fd = dir.try_clone()?;
    let mut dir = nix::dir::Dir::from_fd(fd).map_err(io_err)?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    names.sort();
    Ok(names)
}

fn open_dir<Fd: AsFd>(parent: Fd, path: &Path) -> nix::Result<OwnedFd> {
    openat(
        parent,
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Removes a staging tree. A restore run without root may have made
/// directories unwritable (mode 0555): those are made writable first.
pub(crate) fn remove_tree(path: &Path) {
    if fs::remove_dir_all(path).is_ok() {
        return;
    }
    let _ = fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    if let Ok(root) = open_dir(nix::fcntl::AT_FDCWD, path) {
        make_writable(&root, 0);
    }
    if let Err(error) = fs::remove_dir_all(path)
        && error.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), %error, "could not remove a restore's staging directory");
    }
}

fn make_writable(dir: &OwnedFd, depth: usize) {
    if depth > crate::tree_walk::MAX_DEPTH {
        return;
    }
    let Ok(names) = list_names(dir) else {
        return;
    };
    for name in names {
        let name = Path::new(std::ffi::OsStr::from_bytes(&name));
        let is_dir = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|stat| {
            SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR
        });
        if !is_dir {
            continue;
        }
        // Before opening: a 0000 directory cannot even be opened.
        let _ = fchmodat(
            dir,
            name,
            Mode::from_bits_truncate(0o700),
            FchmodatFlags::FollowSymlink,
        );
        if let Ok(child) = open_dir(dir, name) {
            make_writable(&child, depth + 1);
        }
    }
}
