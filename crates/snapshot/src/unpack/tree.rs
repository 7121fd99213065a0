//! The tree being restored inside the staging directory.
//!
//! Every file system call is relative to a directory opened from the staging
//! root one component at a time with `O_NOFOLLOW | O_DIRECTORY`, and every
//! creation is exclusive (`O_EXCL`, `mkdirat`, `symlinkat`, `linkat` fail on
//! an existing name). So an entry can never write through a symlink, even one
//! created earlier from the same archive: the open of that component fails.
//! Symlinks of the archive are also remembered so that such an entry is
//! refused with a clear reason before any call is made. What was created is
//! kept as a tree of names ([`Names`]), so memory grows with the tree, not
//! with the entries' path lengths.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{Mode, UtimensatFlags, fchmod, futimens, mkdirat, utimensat};
use nix::sys::time::TimeSpec;
use nix::unistd::{Gid, Uid, fchown, fchownat, linkat, symlinkat};

use super::names::{Names, NodeId};
use crate::error::{Refusal, io_err, lossy};
use crate::options::Owner;

/// Mode of directories that only appear as parents of entries.
const IMPLICIT_DIR_MODE: u32 = 0o755;
/// Permission bits restored: setuid, setgid and sticky are dropped, since the
/// restorer may be root and a restored file must not gain its privileges.
const PERMISSION_BITS: u32 = 0o777;

/// Why a tree operation failed; the caller adds the entry's name.
#[derive(Debug)]
pub(crate) enum TreeError {
    Refused(Refusal),
    OverFiles(u64),
    /// Reading the entry's data from the archive failed.
    Source(io::Error),
    /// The entry's data ended before its declared size.
    ShortData,
    Io(io::Error),
}

impl From<Refusal> for TreeError {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

impl TreeError {
    fn errno(errno: Errno) -> Self {
        Self::Io(io_err(errno))
    }
}

#[derive(Debug, Clone, Copy)]
struct DirMeta {
    mode: u32,
    mtime: Option<u64>,
}

/// What the restore created at a name.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// The staging root: keeps its own metadata.
    Root,
    Dir(DirMeta),
    /// A regular file or a hardlink to one: the only valid hardlink targets.
    File,
    /// Nothing may go through it.
    Symlink,
}

/// What was created, for [`crate::UnpackStats`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Created {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
    pub(crate) symlinks: u64,
    pub(crate) hardlinks: u64,
}

#[derive(Debug)]
pub(crate) struct Tree<'r> {
    root: BorrowedFd<'r>,
    /// Open directories from the root down to the last entry's parent.
    stack: Vec<(NodeId, OwnedFd)>,
    owner: Option<Owner>,
    max_files: u64,
    pub(crate) created: Created,
    names: Names<Slot>,
}

impl<'r> Tree<'r> {
    pub(crate) fn new(root: BorrowedFd<'r>, owner: Option<Owner>, max_files: u64) -> Self {
        Self {
            root,
            stack: Vec::new(),
            owner,
            max_files,
            created: Created::default(),
            names: Names::new(Slot::Root),
        }
    }

    pub(crate) fn file(
        &mut self,
        path: &[&[u8]],
        mode: u32,
        mtime: u64,
        size: u64,
        data: &mut dyn Read,
        buf: &mut [u8],
    ) -> Result<(), TreeError> {
        let (parent, name, parent_node) = self.prepare(path)?;
        let fd = openat(
            parent,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(exists_is_duplicate)?;
        let owner = self.owner;
        let mut file = File::from(fd);
        copy_data(data, size, buf, |chunk| {
            file.write_all(chunk).map_err(TreeError::Io)
        })?;
        fchmod(&file, Mode::from_bits_truncate(mode & PERMISSION_BITS))
            .map_err(TreeError::errno)?;
        if let Some(owner) = owner {
            fchown(
                &file,
                Some(Uid::from_raw(owner.uid)),
                Some(Gid::from_raw(owner.gid)),
            )
            .map_err(TreeError::errno)?;
        }
        futimens(&file, &TimeSpec::UTIME_OMIT, &timespec(mtime)).map_err(TreeError::errno)?;
        self.names.insert(parent_node, name.as_bytes(), Slot::File);
        self.created.files += 1;
        Ok(())
    }

    pub(crate) fn dir(&mut self, path: &[&[u8]], mode: u32, mtime: u64) -> Result<(), TreeError> {
        let meta = DirMeta {
            mode: mode & PERMISSION_BITS,
            mtime: Some(mtime),
        };
        if let Some(id) = self.names.find(path)
            && let Slot::Dir(existing) = self.names.get_mut(id)
        {
            // Created as a parent of an earlier entry, or listed twice.
            *existing = meta;
            return Ok(());
        }
        let owner = self.owner;
        let (parent, name, parent_node) = self.prepare(path)?;
        make_dir(parent, name, owner)?;
        self.created.dirs += 1;
        self.names
            .insert(parent_node, name.as_bytes(), Slot::Dir(meta));
        Ok(())
    }

    pub(crate) fn symlink(
        &mut self,
        path: &[&[u8]],
        target: &[u8],
        mtime: u64,
    ) -> Result<(), TreeError> {
        let owner = self.owner;
        let (parent, name, parent_node) = self.prepare(path)?;
        symlinkat(std::ffi::OsStr::from_bytes(target), parent, name)
            .map_err(exists_is_duplicate)?;
        if let Some(owner) = owner {
            fchownat(
                parent,
                name,
                Some(Uid::from_raw(owner.uid)),
                Some(Gid::from_raw(owner.gid)),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .map_err(TreeError::errno)?;
        }
        utimensat(
            parent,
            name,
            &TimeSpec::UTIME_OMIT,
            &timespec(mtime),
            UtimensatFlags::NoFollowSymlink,
        )
        .map_err(TreeError::errno)?;
        self.names
            .insert(parent_node, name.as_bytes(), Slot::Symlink);
        self.created.symlinks += 1;
        Ok(())
    }

    /// A hardlink to a regular file restored earlier from this archive.
    pub(crate) fn hardlink(&mut self, path: &[&[u8]], target: &[&[u8]]) -> Result<(), TreeError> {
        let found = self.names.find(target).map(|id| *self.names.get(id));
        if !matches!(found, Some(Slot::File)) {
            return Err(Refusal::HardlinkTarget {
                target: lossy(&target.join(&b'/')),
            }
            .into());
        }
        let Some((target_name, target_dirs)) = target.split_last() else {
            return Err(Refusal::EmptyPath.into());
        };
        let source_dir = self.open_chain(target_dirs)?;
        let root = self.root;
        let (parent, name, parent_node) = self.prepare(path)?;
        linkat(
            source_dir.as_ref().map_or(root, AsFd::as_fd),
            std::ffi::OsStr::from_bytes(target_name),
            parent,
            name,
            AtFlags::empty(),
        )
        .map_err(exists_is_duplicate)?;
        self.names.insert(parent_node, name.as_bytes(), Slot::File);
        self.created.hardlinks += 1;
        Ok(())
    }

    /// Applies the directories' modes and mtimes, children before parents, so
    /// that writing into a directory no longer changes its restored mtime.
    pub(crate) fn finish(mut self) -> Result<Created, TreeError> {
        self.stack.clear();
        self.apply_dir_meta(self.root, Names::<Slot>::ROOT)?;
        Ok(self.created)
    }

    /// Applies the metadata of the directories below `node` (open as `fd`),
    /// deepest first; the depth is bounded by the path rules.
    fn apply_dir_meta(&self, fd: BorrowedFd<'_>, node: NodeId) -> Result<(), TreeError> {
        for (name, child) in self.names.children(node) {
            let Slot::Dir(meta) = *self.names.get(child) else {
                continue;
            };
            let dir = open_dir(fd, std::ffi::OsStr::from_bytes(name)).map_err(TreeError::errno)?;
            self.apply_dir_meta(dir.as_fd(), child)?;
            fchmod(&dir, Mode::from_bits_truncate(meta.mode)).map_err(TreeError::errno)?;
            if let Some(mtime) = meta.mtime {
                futimens(&dir, &TimeSpec::UTIME_OMIT, &timespec(mtime))
                    .map_err(TreeError::errno)?;
            }
        }
        Ok(())
    }

    /// Checks the entry's path and opens its parent directory (creating
    /// missing ones); returns the parent and the entry's own name.
    /// Also returns the parent's node.
    fn prepare<'p>(
        &mut self,
        path: &[&'p [u8]],
    ) -> Result<(BorrowedFd<'_>, &'p std::ffi::OsStr, NodeId), TreeError> {
        let Some((name, parents)) = path.split_last() else {
            return Err(Refusal::EmptyPath.into());
        };
        self.refuse_through_symlink(parents)?;
        if self.created_total() >= self.max_files {
            return Err(TreeError::OverFiles(self.max_files));
        }
        self.walk_to(parents)?;
        let parent_node = self.stack.last().map_or(Names::<Slot>::ROOT, |(id, _)| *id);
        Ok((self.top(), std::ffi::OsStr::from_bytes(name), parent_node))
    }

    /// Refuses a path whose existing parents include a symlink.
    fn refuse_through_symlink(&self, parents: &[&[u8]]) -> Result<(), TreeError> {
        let mut node = Names::<Slot>::ROOT;
        for (depth, component) in parents.iter().enumerate() {
            let Some(id) = self.names.child(node, component) else {
                return Ok(());
            };
            if matches!(self.names.get(id), Slot::Symlink) {
                return Err(Refusal::ThroughSymlink {
                    link: lossy(&parents[..=depth].join(&b'/')),
                }
                .into());
            }
            node = id;
        }
        Ok(())
    }

    fn created_total(&self) -> u64 {
        let c = self.created;
        c.files + c.dirs + c.symlinks + c.hardlinks
    }

    fn top(&self) -> BorrowedFd<'_> {
        self.stack.last().map_or(self.root, |(_, fd)| fd.as_fd())
    }

    /// Makes `stack` hold exactly the directories of `components`, creating
    /// missing ones and reusing the common prefix with the previous entry
    /// (archives list a directory's entries together, so most entries open
    /// nothing).
    fn walk_to(&mut self, components: &[&[u8]]) -> Result<(), TreeError> {
        let mut node = Names::<Slot>::ROOT;
        let mut common = 0;
        for (component, (open, _)) in components.iter().zip(&self.stack) {
            match self.names.child(node, component) {
                Some(id) if id == *open => node = id,
                _ => break,
            }
            common += 1;
        }
        self.stack.truncate(common);
        for (depth, component) in components.iter().enumerate().skip(common) {
            let name = std::ffi::OsStr::from_bytes(component);
            let known = self.names.child(node, component);
            let fd = match open_dir(self.top(), name) {
                Ok(fd) => fd,
                Err(Errno::ENOENT) => {
                    if self.created_total() >= self.max_files {
                        return Err(TreeError::OverFiles(self.max_files));
                    }
                    make_dir(self.top(), name, self.owner)?;
                    self.created.dirs += 1;
                    open_dir(self.top(), name).map_err(TreeError::errno)?
                }
                Err(Errno::ELOOP) => {
                    return Err(Refusal::ThroughSymlink {
                        link: lossy(&components[..=depth].join(&b'/')),
                    }
                    .into());
                }
                Err(Errno::ENOTDIR) => return Err(Refusal::ThroughNonDirectory.into()),
                Err(errno) => return Err(TreeError::errno(errno)),
            };
            // Everything in the staging directory was made by this restore,
            // so a directory that opened is known, and one just made is not.
            node = known.unwrap_or_else(|| {
                self.names.insert(
                    node,
                    component,
                    Slot::Dir(DirMeta {
                        mode: IMPLICIT_DIR_MODE,
                        mtime: None,
                    }),
                )
            });
            self.stack.push((node, fd));
        }
        Ok(())
    }

    /// Opens the directories of `components` without touching `stack`
    /// (`None` is the root).
    fn open_chain(&self, components: &[&[u8]]) -> Result<Option<OwnedFd>, TreeError> {
        let mut current: Option<OwnedFd> = None;
        for component in components {
            let parent = current.as_ref().map_or(self.root, AsFd::as_fd);
            let fd = open_dir(parent, std::ffi::OsStr::from_bytes(component)).map_err(|errno| {
                match errno {
                    Errno::ELOOP | Errno::ENOTDIR | Errno::ENOENT => {
                        TreeError::Refused(Refusal::ThroughNonDirectory)
                    }
                    errno => TreeError::errno(errno),
                }
            })?;
            current = Some(fd);
        }
        Ok(current)
    }
}

/// Reads exactly the `size` bytes an entry declared from `data` through
/// `buf`, handing each piece to `sink`.
pub(crate) fn copy_data(
    data: &mut dyn Read,
    size: u64,
    buf: &mut [u8],
    mut sink: impl FnMut(&[u8]) -> Result<(), TreeError>,
) -> Result<(), TreeError> {
    let mut copied = 0u64;
    loop {
        let n = match data.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(TreeError::Source(e)),
        };
        copied += n as u64;
        // Guards the actual bytes, whatever the header said.
        if copied > size {
            return Err(TreeError::Source(io::Error::other(
                "entry data is longer than its declared size",
            )));
        }
        sink(&buf[..n])?;
    }
    if copied < size {
        return Err(TreeError::ShortData);
    }
    Ok(())
}

/// Creates a directory, owner-only until the final pass sets the archive's mode.
fn make_dir(
    parent: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    owner: Option<Owner>,
) -> Result<(), TreeError> {
    mkdirat(parent, name, Mode::from_bits_truncate(0o700)).map_err(exists_is_duplicate)?;
    if let Some(owner) = owner {
        fchownat(
            parent,
            name,
            Some(Uid::from_raw(owner.uid)),
            Some(Gid::from_raw(owner.gid)),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(TreeError::errno)?;
    }
    Ok(())
}

fn open_dir(parent: BorrowedFd<'_>, name: &std::ffi::OsStr) -> nix::Result<OwnedFd> {
    openat(
        parent,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

fn exists_is_duplicate(errno: Errno) -> TreeError {
    match errno {
        Errno::EEXIST => TreeError::Refused(Refusal::Duplicate),
        errno => TreeError::errno(errno),
    }
}

fn timespec(secs: u64) -> TimeSpec {
    TimeSpec::new(i64::try_from(secs).unwrap_or(i64::MAX), 0)
}
