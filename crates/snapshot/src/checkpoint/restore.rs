//! Restoring a [`Manifest`] into the directory it was captured from, in
//! place: only what differs from the directory's current state is touched
//! (a file whose content is already there is not written again).
//!
//! The manifest is checked whole before anything is touched
//! ([`Manifest::validate`]). Every operation then goes through directory
//! descriptors opened `O_NOFOLLOW` from the root, so a symlink in the
//! workspace (made by an agent, say) can never redirect a write or a
//! removal outside it. A file is written to a temporary name beside its
//! place, its content checked against its key while it is copied, and
//! renamed over the old one, so a failed restore leaves each path either
//! old or new, never half written. The caller keeps other writers away for
//! the duration (the workspace's writer lease).

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FchmodatFlags, Mode, SFlag, fchmodat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};
use paddock_core::blob::{BlobKey, BlobStore};

use super::capture::{CaptureOptions, capture, open_dir_at};
use super::manifest::{Manifest, Node};
use crate::error::{SnapshotError, io_err};
use crate::hashing::HashingWriter;

/// What a restore changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreStats {
    /// Files written (their content differed or they were missing).
    pub files_written: u64,
    pub bytes_written: u64,
    /// Paths removed (a directory counts once, with what it held).
    pub removed: u64,
    pub dirs_created: u64,
    pub symlinks_created: u64,
    /// Paths whose permission bits alone were set.
    pub modes_set: u64,
    /// Paths already as the manifest has them.
    pub unchanged: u64,
}

/// Makes the tree at `root` what `target` records. `current` (the latest
/// manifest of `root`, if any) saves re-hashing files whose stat it has.
/// Excluded names are neither compared nor touched.
pub fn restore(
    root: &Path,
    target: &Manifest,
    current: Option<&Manifest>,
    options: &CaptureOptions,
    blobs: &dyn BlobStore,
) -> Result<RestoreStats, SnapshotError> {
    target.validate()?;
    let (now, _) = capture(
        root,
        current,
        &CaptureOptions {
            limits: crate::options::Limits {
                max_files: u64::MAX,
                max_bytes: u64::MAX,
            },
            ..options.clone()
        },
        None,
    )?;
    let root_fd =
        open_dir_at(nix::fcntl::AT_FDCWD, root).map_err(|errno| SnapshotError::OpenRoot {
            path: root.to_path_buf(),
            source: io_err(errno),
        })?;
    let mut tree = Tree {
        dirs: HashMap::new(),
        root: root_fd,
    };
    let mut stats = RestoreStats::default();

    // what is there and not (or not so) in the target goes first
    let mut removed_dirs: BTreeSet<&str> = BTreeSet::new();
    for (path, entry) in &now.entries {
        if ancestors(path).any(|a| removed_dirs.contains(a)) {
            continue;
        }
        let keep = match (&entry.node, target.entries.get(path).map(|e| &e.node)) {
            (Node::Dir, Some(Node::Dir)) | (Node::File { .. }, Some(Node::File { .. })) => true,
            (Node::Symlink { target: now }, Some(Node::Symlink { target: then })) => now == then,
            _ => false,
        };
        if keep {
            continue;
        }
        let (parent, name) = split(path);
        let parent_fd = tree.dir(parent)?;
        let removal = if entry.node == Node::Dir {
            removed_dirs.insert(path);
            remove_tree_at(parent_fd, name)
        } else {
            unlinkat(parent_fd, name, UnlinkatFlags::NoRemoveDir).map_err(io_err)
        };
        match removal {
            Ok(()) => stats.removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(SnapshotError::Remove {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    tree.dirs.clear();

    for (path, entry) in &target.entries {
        let before = now
            .entries
            .get(path)
            .filter(|_| !ancestors(path).any(|a| removed_dirs.contains(a)));
        let (parent, name) = split(path);
        let write_err = |source| SnapshotError::WriteFile {
            path: path.clone(),
            source,
        };
        let mode = Mode::from_bits_truncate(entry.mode);
        match &entry.node {
            Node::Dir => match before.map(|b| &b.node) {
                Some(Node::Dir) if !removed_dirs.contains(path.as_str()) => {
                    if before.is_some_and(|b| b.mode != entry.mode) {
                        set_mode(tree.dir(parent)?, name, mode).map_err(write_err)?;
                        stats.modes_set += 1;
                    } else {
                        stats.unchanged += 1;
                    }
                }
                _ => {
                    let parent_fd = tree.dir(parent)?;
                    mkdirat(parent_fd, name, Mode::from_bits_truncate(0o700))
                        .map_err(|e| write_err(io_err(e)))?;
                    set_mode(parent_fd, name, mode).map_err(write_err)?;
                    stats.dirs_created += 1;
                }
            },
            Node::File { hash, size } => {
                let same = matches!(before.map(|b| &b.node), Some(Node::File { hash: h, .. }) if h == hash);
                if same {
                    if before.is_some_and(|b| b.mode != entry.mode) {
                        set_mode(tree.dir(parent)?, name, mode).map_err(write_err)?;
                        stats.modes_set += 1;
                    } else {
                        stats.unchanged += 1;
                    }
                    continue;
                }
                write_file(tree.dir(parent)?, name, path, hash, mode, blobs)?;
                stats.files_written += 1;
                stats.bytes_written += size;
            }
            Node::Symlink { target: link } => {
                if matches!(before.map(|b| &b.node), Some(Node::Symlink { target: t }) if t == link)
                {
                    stats.unchanged += 1;
                    continue;
                }
                symlinkat(OsStr::new(link), tree.dir(parent)?, name)
                    .map_err(|e| write_err(io_err(e)))?;
                stats.symlinks_created += 1;
            }
        }
    }
    Ok(stats)
}

/// Directory descriptors by path from the root, each opened `O_NOFOLLOW`
/// from its parent's.
struct Tree {
    root: OwnedFd,
    dirs: HashMap<String, OwnedFd>,
}

impl Tree {
    fn dir(&mut self, path: &str) -> Result<&OwnedFd, SnapshotError> {
        if path.is_empty() {
            return Ok(&self.root);
        }
        if !self.dirs.contains_key(path) {
            let (parent, name) = split(path);
            let fd = {
                let parent_fd = self.dir(parent)?;
                open_dir_at(parent_fd, name).map_err(|errno| SnapshotError::WriteFile {
                    path: path.to_owned(),
                    source: io_err(errno),
                })?
            };
            self.dirs.insert(path.to_owned(), fd);
        }
        self.dirs.get(path).ok_or_else(|| SnapshotError::WriteFile {
            path: path.to_owned(),
            source: io::Error::other("directory descriptor missing"),
        })
    }
}

/// `a/b/c` -> ("a/b", "c"); `c` -> ("", "c").
fn split(path: &str) -> (&str, &OsStr) {
    match path.rsplit_once('/') {
        Some((parent, name)) => (parent, OsStr::new(name)),
        None => ("", OsStr::new(path)),
    }
}

/// `a/b/c` -> "a/b", "a".
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.char_indices()
        .rev()
        .filter(|(_, c)| *c == '/')
        .map(move |(i, _)| &path[..i])
}

fn set_mode<Fd: AsFd>(parent: Fd, name: &OsStr, mode: Mode) -> io::Result<()> {
    // the path was just listed or made as a directory or regular file by
    // this restore, under the workspace's writer lease
    fchmodat(parent, name, mode, FchmodatFlags::FollowSymlink).map_err(io_err)
}

/// Writes blob `hash` to `name` in `parent` through a temporary file,
/// checking the content against its key on the way.
fn write_file(
    parent: &OwnedFd,
    name: &OsStr,
    path: &str,
    hash: &BlobKey,
    mode: Mode,
    blobs: &dyn BlobStore,
) -> Result<(), SnapshotError> {
    let write_err = |source| SnapshotError::WriteFile {
        path: path.to_owned(),
        source,
    };
    let mut tmp = b".paddock-restore-".to_vec();
    tmp.extend_from_slice(uuid::Uuid::new_v4().simple().to_string().as_bytes());
    let tmp = OsStr::from_bytes(&tmp);
    let fd = openat(
        parent,
        tmp,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| write_err(io_err(e)))?;
    let written = (|| {
        let mut reader = blobs.open(hash).map_err(|source| SnapshotError::Blob {
            what: format!("open {hash} for {path:?}"),
            source,
        })?;
        let mut out = HashingWriter::new(std::fs::File::from(fd));
        io::copy(&mut reader.reader, &mut out).map_err(write_err)?;
        out.flush().map_err(write_err)?;
        let (file, key, _) = out.finish();
        if key != *hash {
            return Err(SnapshotError::BlobMismatch {
                key: hash.to_string(),
                path: path.to_owned(),
            });
        }
        nix::sys::stat::fchmod(&file, mode).map_err(|e| write_err(io_err(e)))?;
        renameat(parent, tmp, parent, name).map_err(|e| write_err(io_err(e)))
    })();
    if written.is_err()
        && let Err(errno) = unlinkat(parent, tmp, UnlinkatFlags::NoRemoveDir)
        && errno != Errno::ENOENT
    {
        tracing::warn!(path, %errno, "removing a restore's temporary file");
    }
    written
}

/// Removes `name` in `parent` and everything under it, never following a
/// symlink.
fn remove_tree_at(parent: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let fd = match open_dir_at(parent, name) {
        Ok(fd) => fd,
        // not a directory (any more): a plain unlink
        Err(Errno::ENOTDIR | Errno::ELOOP) => {
            return unlinkat(parent, name, UnlinkatFlags::NoRemoveDir).map_err(io_err);
        }
        Err(errno) => return Err(io_err(errno)),
    };
    let mut dir = Dir::from_fd(fd.try_clone()?).map_err(io_err)?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let entry = entry.map_err(io_err)?;
        let child = entry.file_name().to_bytes();
        if child != b"." && child != b".." {
            names.push(child.to_vec());
        }
    }
    for child in names {
        let child = OsStr::from_bytes(&child);
        let stat = fstatat(&fd, child, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io_err)?;
        if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR {
            remove_tree_at(&fd, child)?;
        } else {
            unlinkat(&fd, child, UnlinkatFlags::NoRemoveDir).map_err(io_err)?;
        }
    }
    unlinkat(parent, name, UnlinkatFlags::RemoveDir).map_err(io_err)
}
