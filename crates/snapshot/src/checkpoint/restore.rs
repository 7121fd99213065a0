//! Restoring a [`Manifest`] into the directory it was captured from, in
//! place: only what differs from the directory's current state is touched
//! (a file whose content is already there is not written again).
//!
//! The manifest is checked whole before anything is touched
//! ([`Manifest::validate`]). Every operation then goes through directory
//! descriptors opened `O_NOFOLLOW` from the root, so a symlink in the
//! workspace (made by an agent, say) can never redirect a write or a
//! removal outside it. A file that replaces another is written to a
//! temporary name beside its place, its content checked against its key
//! while it is copied, and renamed over the old one, so a failed restore
//! leaves each such path either old or new, never half written; a file at a
//! path the tree does not have is written in place (checked the same way,
//! removed if that fails: a crash can leave it short, which the next
//! restore sees as another content and writes again). The caller keeps other writers away for
//! the duration (the workspace's writer lease).
//!
//! Removals come first, then directories, symlinks and modes in one pass in
//! path order, then file contents: those are independent once their
//! directories exist, so up to one thread per core writes them, a
//! directory's files at a time, through a large buffer.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use nix::dir::Dir;
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FchmodatFlags, Mode, SFlag, fchmodat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};
use paddock_core::blob::{BlobError, BlobKey, BlobStore};
use paddock_proto::{FsPath, escape_path};
use sha2::{Digest, Sha256};

use super::capture::{CaptureOptions, capture};
use super::manifest::{Manifest, Node};
use crate::error::{SnapshotError, io_err};
use crate::tree_walk::open_dir_at;

/// File content is copied (and hashed) through a buffer this large.
const COPY_BUF: usize = 1024 * 1024;
/// Below this much content to write, one thread writes it all.
const PARALLEL_BYTES: u64 = 8 * 1024 * 1024;
/// Most threads writing files at once.
const MAX_WRITERS: usize = 4;
/// What a restore's temporary files are named from.
const TEMP_PREFIX: &str = ".paddock-restore-";

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
        root: root_fd,
        open: Vec::new(),
    };
    let mut stats = RestoreStats::default();

    // what is there and not (or not so) in the target goes first
    let mut removed_dirs: BTreeSet<&[u8]> = BTreeSet::new();
    for (path, entry) in &now.entries {
        if ancestors(path.as_bytes()).any(|a| removed_dirs.contains(a)) {
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
        let (parent, name) = split(path.as_bytes());
        let parent_fd = tree.dir(parent)?;
        let removal = if entry.node == Node::Dir {
            removed_dirs.insert(path.as_bytes());
            remove_tree_at(parent_fd, name)
        } else {
            unlinkat(parent_fd, name, UnlinkatFlags::NoRemoveDir).map_err(io_err)
        };
        match removal {
            Ok(()) => stats.removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(SnapshotError::Remove {
                    path: path.display(),
                    source,
                });
            }
        }
    }
    tree.open.clear();

    // directories, symlinks and modes in one pass, in path order (a parent
    // before its children); file contents after, in parallel
    let mut writes: Vec<FileWrite> = Vec::new();
    for (path, entry) in &target.entries {
        let before = now
            .entries
            .get(path)
            .filter(|_| !ancestors(path.as_bytes()).any(|a| removed_dirs.contains(a)));
        let (parent, name) = split(path.as_bytes());
        let write_err = |source| SnapshotError::WriteFile {
            path: path.display(),
            source,
        };
        let mode = Mode::from_bits_truncate(entry.mode);
        match &entry.node {
            Node::Dir => match before.map(|b| &b.node) {
                Some(Node::Dir) if !removed_dirs.contains(path.as_bytes()) => {
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
                writes.push(FileWrite {
                    path,
                    parent,
                    name,
                    hash,
                    mode,
                    fresh: !matches!(before.map(|b| &b.node), Some(Node::File { .. })),
                });
                stats.files_written += 1;
                stats.bytes_written += size;
            }
            Node::Symlink { target: link } => {
                if matches!(before.map(|b| &b.node), Some(Node::Symlink { target: t }) if t == link)
                {
                    stats.unchanged += 1;
                    continue;
                }
                symlinkat(OsStr::from_bytes(link.as_bytes()), tree.dir(parent)?, name)
                    .map_err(|e| write_err(io_err(e)))?;
                stats.symlinks_created += 1;
            }
        }
    }
    tree.open.clear();
    write_files(&tree.root, &writes, stats.bytes_written, blobs)?;
    Ok(stats)
}

/// Directory descriptors along one path from the root, each opened
/// `O_NOFOLLOW` from its parent's: the directories of the path asked for
/// last, so that a walk in path order reopens little and holds no more
/// descriptors than the tree is deep.
struct Tree {
    root: OwnedFd,
    /// `(path, descriptor)` from the root's child down.
    open: Vec<(Vec<u8>, OwnedFd)>,
}

impl Tree {
    fn dir(&mut self, path: &[u8]) -> Result<&OwnedFd, SnapshotError> {
        if path.is_empty() {
            return Ok(&self.root);
        }
        while let Some((top, _)) = self.open.last() {
            let within = path == top
                || (path.len() > top.len() && path.starts_with(top) && path[top.len()] == b'/');
            if within {
                break;
            }
            self.open.pop();
        }
        let done = self.open.last().map_or(0, |(top, _)| top.len() + 1);
        if done <= path.len() {
            for component in path[done..].split(|b| *b == b'/') {
                let end = self.open.last().map_or(0, |(top, _)| top.len() + 1) + component.len();
                let sub = &path[..end];
                let fd = {
                    let parent = self.open.last().map_or(&self.root, |(_, fd)| fd);
                    open_dir_at(parent, OsStr::from_bytes(component)).map_err(|errno| {
                        SnapshotError::WriteFile {
                            path: escape_path(sub),
                            source: io_err(errno),
                        }
                    })?
                };
                self.open.push((sub.to_owned(), fd));
            }
        }
        Ok(self.open.last().map_or(&self.root, |(_, fd)| fd))
    }
}

/// A file whose content a restore writes.
struct FileWrite<'m> {
    path: &'m FsPath,
    parent: &'m [u8],
    name: &'m OsStr,
    hash: &'m BlobKey,
    mode: Mode,
    /// Nothing the tree holds is at the path (no file of other content).
    fresh: bool,
}

/// Writes every file of `writes` (in path order) with up to one thread per
/// core, each taking the files of one directory at a time; the first
/// failure stops them all and is returned.
fn write_files(
    root: &OwnedFd,
    writes: &[FileWrite],
    bytes: u64,
    blobs: &dyn BlobStore,
) -> Result<(), SnapshotError> {
    let mut groups: Vec<&[FileWrite]> = Vec::new();
    let mut rest = writes;
    while let Some(first) = rest.first() {
        let len = rest
            .iter()
            .position(|w| w.parent != first.parent)
            .unwrap_or(rest.len());
        let (group, tail) = rest.split_at(len);
        groups.push(group);
        rest = tail;
    }
    let temps = TempNames::new();
    let workers = if bytes < PARALLEL_BYTES {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_WRITERS)
            .min(groups.len())
    };
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<SnapshotError>> = Mutex::new(None);
    let failed = AtomicBool::new(false);
    let work = || {
        let mut buf = vec![0u8; COPY_BUF];
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(group) = groups.get(i) else { break };
            if failed.load(Ordering::Relaxed) {
                break;
            }
            if let Err(err) = write_group(root, group, blobs, &temps, &mut buf) {
                failed.store(true, Ordering::Relaxed);
                let mut first = failure.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert(err);
                break;
            }
        }
    };
    if workers <= 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 1..workers {
                scope.spawn(work);
            }
            work();
        });
    }
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Writes the files of one directory.
fn write_group(
    root: &OwnedFd,
    group: &[FileWrite],
    blobs: &dyn BlobStore,
    temps: &TempNames,
    buf: &mut [u8],
) -> Result<(), SnapshotError> {
    let Some(first) = group.first() else {
        return Ok(());
    };
    let opened;
    let parent = if first.parent.is_empty() {
        root
    } else {
        opened = open_path(root, first.parent).map_err(|errno| SnapshotError::WriteFile {
            path: escape_path(first.parent),
            source: io_err(errno),
        })?;
        &opened
    };
    for write in group {
        write_file(parent, write, blobs, temps, buf)?;
    }
    Ok(())
}

/// The directory `path` (relative, canonical) under `root`, each component
/// opened `O_NOFOLLOW` from the one before.
fn open_path(root: &OwnedFd, path: &[u8]) -> nix::Result<OwnedFd> {
    let mut components = path.split(|b| *b == b'/');
    let first = components.next().unwrap_or(path);
    let mut fd = open_dir_at(root, OsStr::from_bytes(first))?;
    for component in components {
        fd = open_dir_at(&fd, OsStr::from_bytes(component))?;
    }
    Ok(fd)
}

/// Names for a restore's temporary files: one random prefix per restore
/// and a counter.
struct TempNames {
    prefix: String,
    next: AtomicU64,
}

impl TempNames {
    fn new() -> Self {
        Self {
            prefix: format!("{TEMP_PREFIX}{}-", uuid::Uuid::new_v4().simple()),
            next: AtomicU64::new(0),
        }
    }

    fn name(&self) -> Vec<u8> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}{n}", self.prefix).into_bytes()
    }
}

/// `a/b/c` -> ("a/b", "c"); `c` -> ("", "c").
fn split(path: &[u8]) -> (&[u8], &OsStr) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(slash) => (&path[..slash], OsStr::from_bytes(&path[slash + 1..])),
        None => (&[], OsStr::from_bytes(path)),
    }
}

/// `a/b/c` -> "a/b", "a".
fn ancestors(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'/')
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
    write: &FileWrite,
    blobs: &dyn BlobStore,
    temps: &TempNames,
    buf: &mut [u8],
) -> Result<(), SnapshotError> {
    let FileWrite {
        path,
        name,
        hash,
        mode,
        ..
    } = *write;
    let write_err = |source| SnapshotError::WriteFile {
        path: path.display(),
        source,
    };
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let create = |name: &OsStr| openat(parent, name, flags, Mode::from_bits_truncate(0o600));
    // a path the tree does not have is written in place (and removed if
    // that fails); one that replaces a file goes through a temporary name
    let in_place = if write.fresh {
        match create(name) {
            Ok(fd) => Some(fd),
            // something the capture did not record (a special file): replaced
            Err(Errno::EEXIST) => None,
            Err(errno) => return Err(write_err(io_err(errno))),
        }
    } else {
        None
    };
    let (tmp, fd) = match in_place {
        Some(fd) => (None, fd),
        None => loop {
            let tmp = temps.name();
            match create(OsStr::from_bytes(&tmp)) {
                Ok(fd) => break (Some(tmp), fd),
                // a name left by an earlier restore with the same prefix: the next one
                Err(Errno::EEXIST) => continue,
                Err(errno) => return Err(write_err(io_err(errno))),
            }
        },
    };
    let written_to = tmp.as_deref().map_or(name, OsStr::from_bytes);
    let written = (|| {
        let mut reader = blobs.open(hash).map_err(|source| SnapshotError::Blob {
            what: format!("open {hash} for {path:?}"),
            source,
        })?;
        let mut file = std::fs::File::from(fd);
        let mut hasher = Sha256::new();
        loop {
            let n = match reader.reader.read(buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(SnapshotError::Blob {
                        what: format!("read {hash} for {path:?}"),
                        source: BlobError::Open {
                            key: hash.clone(),
                            source,
                        },
                    });
                }
            };
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n]).map_err(write_err)?;
        }
        if BlobKey::from_digest(hasher.finalize().into()) != *hash {
            return Err(SnapshotError::BlobMismatch {
                key: hash.to_string(),
                path: path.display(),
            });
        }
        nix::sys::stat::fchmod(&file, mode).map_err(|e| write_err(io_err(e)))?;
        if tmp.is_some() {
            renameat(parent, written_to, parent, name).map_err(|e| write_err(io_err(e)))?;
        }
        Ok(())
    })();
    if written.is_err()
        && let Err(errno) = unlinkat(parent, written_to, UnlinkatFlags::NoRemoveDir)
        && errno != Errno::ENOENT
    {
        tracing::warn!(path = %path, %errno, "removing a restore's temporary file");
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
