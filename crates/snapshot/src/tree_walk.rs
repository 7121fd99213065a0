//! The descriptor-based walk of a directory tree that a snapshot's packer
//! and a checkpoint's capture share.
//!
//! Every open is relative to an already opened parent with `O_NOFOLLOW`, so
//! a symlink is never followed and nothing outside the root is read even if
//! the tree changes meanwhile. Names are visited sorted by their bytes within
//! each directory, a directory before its contents. The walk holds the tree
//! to [`MAX_DEPTH`] and to a number of entries (counted while a directory is
//! listed, so a directory of millions of names is refused at the first one
//! over the limit), leaves out excluded names, and reports a path whose type
//! changed between two looks at it as [`SnapshotError::Changed`]. What
//! becomes of each entry is the [`Visitor`]'s business.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

use crate::error::{Limit, SnapshotError, io_err, lossy};
use crate::exclude::Excludes;

/// Deepest directory nesting walked (each level holds one open directory).
pub(crate) const MAX_DEPTH: usize = 256;

/// A file that is neither regular, a directory nor a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialKind {
    Socket,
    Fifo,
    CharDevice,
    BlockDevice,
}

impl SpecialKind {
    fn of(kind: SFlag) -> Option<Self> {
        match kind {
            SFlag::S_IFSOCK => Some(Self::Socket),
            SFlag::S_IFIFO => Some(Self::Fifo),
            SFlag::S_IFCHR => Some(Self::CharDevice),
            SFlag::S_IFBLK => Some(Self::BlockDevice),
            _ => None,
        }
    }
}

/// What a walk does with the entries it finds. The walk has already
/// counted the entry against the limit; [`Walk::path`] is its path.
pub(crate) trait Visitor {
    /// Whether [`Visitor::file`] gets the stat of every regular file; when
    /// false, a file that the directory listing typed as regular is passed
    /// unstat'ed (a visitor that opens it checks it with
    /// [`Walk::open_file`] anyway).
    const STAT_FILES: bool;

    /// A regular file named `name` in `dir`.
    fn file(
        &mut self,
        walk: &Walk,
        dir: &Dir,
        name: &OsStr,
        stat: Option<&FileStat>,
    ) -> Result<(), SnapshotError>;

    /// A directory, already opened; its contents are walked next.
    fn dir(&mut self, walk: &Walk, stat: &FileStat) -> Result<(), SnapshotError>;

    fn symlink(
        &mut self,
        walk: &Walk,
        stat: &FileStat,
        target: &OsStr,
    ) -> Result<(), SnapshotError>;

    /// A socket, fifo or device.
    fn special(&mut self, walk: &Walk, kind: SpecialKind) -> Result<(), SnapshotError>;
}

/// A regular file opened for reading by [`Walk::open_file`].
pub(crate) enum Opened {
    File(File, FileStat),
    /// Removed since the directory was listed.
    Gone,
    /// A special file (only when no stat was given to compare with).
    Special(SpecialKind),
}

/// The state of one walk: the current path and what was counted.
pub(crate) struct Walk<'e> {
    excludes: &'e Excludes,
    max_files: u64,
    /// Path of the current entry from the root, `/`-separated.
    path: Vec<u8>,
    /// Entries counted against `max_files`.
    entries: u64,
    /// Names left out by the excludes (a directory counts once).
    excluded: u64,
    /// The walk visits only the entries from this path on (in walk order,
    /// see [`walk_order`]); it goes through the directories above it
    /// without visiting them. None once reached.
    from: Option<Vec<u8>>,
    /// The walk stops at the first entry at or after this path.
    until: Option<Vec<u8>>,
    /// An entry at or after `until` was reached.
    done: bool,
    /// Listing buffers of directories whose walk ended, for the next one
    /// (a directory's are held while its subdirectories are walked): a
    /// walk allocates them once per depth, not once per directory.
    spare: Vec<Listing>,
}

/// One directory's names in one buffer: (start, end, type) of each.
#[derive(Default)]
struct Listing {
    bytes: Vec<u8>,
    names: Vec<(usize, usize, Option<Type>)>,
}

/// Where the current entry falls against a walk's range.
enum Place {
    /// Before the range, not above it: another walk's.
    Before,
    /// A directory above the first entry of the range: walked through.
    Above,
    Inside,
    /// At or after the range's end: this walk and every later entry.
    After,
}

/// The order a walk visits paths in: component by component, each name by
/// its bytes, a directory before its contents (`a`, `a/x`, `a.txt`: not
/// the paths' byte order, in which `a.txt` comes before `a/x`).
pub(crate) fn walk_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.split(|c| *c == b'/').cmp(b.split(|c| *c == b'/'))
}

impl<'e> Walk<'e> {
    pub(crate) fn new(excludes: &'e Excludes, max_files: u64) -> Self {
        Self {
            excludes,
            max_files,
            path: Vec::new(),
            entries: 0,
            excluded: 0,
            from: None,
            until: None,
            done: false,
            spare: Vec::new(),
        }
    }

    /// Limits the walk to the entries from `from` (inclusive) until
    /// `until` (exclusive), in walk order ([`walk_order`]): walks over
    /// disjoint ranges visit each entry of the tree once between them.
    pub(crate) fn within(mut self, from: Option<&[u8]>, until: Option<&[u8]>) -> Self {
        self.from = from.map(<[u8]>::to_vec);
        self.until = until.map(<[u8]>::to_vec);
        self
    }

    /// Entries counted against the limit so far.
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Walks the tree at `root` (never following a symlink, the root's own
    /// last component included), handing every entry to `visitor`.
    pub(crate) fn run<V: Visitor>(
        &mut self,
        root: &Path,
        visitor: &mut V,
    ) -> Result<(), SnapshotError> {
        let open_root = |errno| SnapshotError::OpenRoot {
            path: root.to_path_buf(),
            source: io_err(errno),
        };
        let fd = open_dir_at(nix::fcntl::AT_FDCWD, root).map_err(open_root)?;
        let dir = Dir::from_fd(fd).map_err(open_root)?;
        self.walk(visitor, dir, 0)
    }

    /// The current entry's path from the root, `/`-separated.
    pub(crate) fn path(&self) -> &[u8] {
        &self.path
    }

    pub(crate) fn excluded(&self) -> u64 {
        self.excluded
    }

    fn walk<V: Visitor>(
        &mut self,
        visitor: &mut V,
        dir: Dir,
        depth: usize,
    ) -> Result<(), SnapshotError> {
        let mut listing = self.spare.pop().unwrap_or_default();
        listing.bytes.clear();
        listing.names.clear();
        let result = self.walk_listed(visitor, dir, depth, &mut listing);
        self.spare.push(listing);
        result
    }

    fn walk_listed<V: Visitor>(
        &mut self,
        visitor: &mut V,
        mut dir: Dir,
        depth: usize,
        listing: &mut Listing,
    ) -> Result<(), SnapshotError> {
        let Listing { bytes, names } = listing;
        for entry in dir.iter() {
            let entry = entry.map_err(|errno| self.err_read_dir(errno))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let parent_len = self.push(name);
            let excluded = self.excludes.matches(&self.path, name);
            self.path.truncate(parent_len);
            if excluded {
                self.excluded += 1;
                continue;
            }
            // Every name listed is an entry the walk will count; the
            // directory is named, since which of its names comes first is
            // only known once all were read.
            self.check_room(names.len() as u64)?;
            let start = bytes.len();
            bytes.extend_from_slice(name);
            names.push((start, bytes.len(), entry.file_type()));
        }
        names.sort_unstable_by(|a, b| bytes[a.0..a.1].cmp(&bytes[b.0..b.1]));

        for &(start, end, file_type) in names.iter() {
            let name = &bytes[start..end];
            let parent_len = self.push(name);
            let name = OsStr::from_bytes(name);
            let result = match self.place() {
                Place::Inside => self.entry(visitor, &dir, name, file_type, depth),
                Place::Before => Ok(()),
                Place::Above => self.walk_through(visitor, &dir, name, file_type, depth),
                Place::After => {
                    self.done = true;
                    Ok(())
                }
            };
            self.path.truncate(parent_len);
            result?;
            if self.done {
                break;
            }
        }
        Ok(())
    }

    /// Where the current path falls against the walk's range.
    fn place(&mut self) -> Place {
        if let Some(until) = &self.until
            && walk_order(&self.path, until).is_ge()
        {
            return Place::After;
        }
        if let Some(from) = &self.from {
            if walk_order(&self.path, from).is_ge() {
                // every later entry is past it too
                self.from = None;
            } else if from.starts_with(&self.path) && from.get(self.path.len()) == Some(&b'/') {
                return Place::Above;
            } else {
                return Place::Before;
            }
        }
        Place::Inside
    }

    /// Walks the directory `name`, above the range, without visiting it
    /// (the walk before the range does). Listed as something else, it has
    /// no range to walk; listed as a directory but no longer one, the tree
    /// changed under the walk.
    fn walk_through<V: Visitor>(
        &mut self,
        visitor: &mut V,
        dir: &Dir,
        name: &OsStr,
        file_type: Option<Type>,
        depth: usize,
    ) -> Result<(), SnapshotError> {
        let listed_dir = match file_type {
            Some(Type::Directory) => true,
            None => false,
            Some(_) => return Ok(()),
        };
        if depth + 1 >= MAX_DEPTH {
            // the walk before the range refuses it
            return Ok(());
        }
        let fd = match open_dir_at(dir, name) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(()),
            Err(Errno::ELOOP | Errno::ENOTDIR) if listed_dir => return Err(self.changed()),
            Err(Errno::ELOOP | Errno::ENOTDIR) => return Ok(()),
            Err(errno) => return Err(self.err_read_dir(errno)),
        };
        let child = Dir::from_fd(fd).map_err(|errno| self.err_read_dir(errno))?;
        self.walk(visitor, child, depth + 1)
    }

    /// Appends `name` to the path; answers the length to truncate back to.
    fn push(&mut self, name: &[u8]) -> usize {
        let parent_len = self.path.len();
        if !self.path.is_empty() {
            self.path.push(b'/');
        }
        self.path.extend_from_slice(name);
        parent_len
    }

    fn entry<V: Visitor>(
        &mut self,
        visitor: &mut V,
        dir: &Dir,
        name: &OsStr,
        file_type: Option<Type>,
        depth: usize,
    ) -> Result<(), SnapshotError> {
        if !V::STAT_FILES && file_type == Some(Type::File) {
            self.count()?;
            return visitor.file(self, dir, name, None);
        }
        let stat = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::ENOENT) => return Ok(()),
            Err(errno) => return Err(self.err_stat(errno)),
        };
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => {
                self.count()?;
                visitor.file(self, dir, name, Some(&stat))
            }
            SFlag::S_IFDIR => {
                if depth + 1 >= MAX_DEPTH {
                    return Err(SnapshotError::TooDeep {
                        path: lossy(&self.path),
                        max: MAX_DEPTH,
                    });
                }
                self.count()?;
                let fd = match open_dir_at(dir, name) {
                    Ok(fd) => fd,
                    Err(Errno::ENOENT) => return Ok(()),
                    // ELOOP: the directory was replaced by a symlink since the stat.
                    Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(self.changed()),
                    Err(errno) => return Err(self.err_read_dir(errno)),
                };
                let child = Dir::from_fd(fd).map_err(|errno| self.err_read_dir(errno))?;
                visitor.dir(self, &stat)?;
                self.walk(visitor, child, depth + 1)
            }
            SFlag::S_IFLNK => {
                let target = match nix::fcntl::readlinkat(dir, name) {
                    Ok(target) => target,
                    Err(Errno::ENOENT) => return Ok(()),
                    // EINVAL: no longer a symlink.
                    Err(Errno::EINVAL) => return Err(self.changed()),
                    Err(errno) => return Err(self.err_stat(errno)),
                };
                self.count()?;
                visitor.symlink(self, &stat, &target)
            }
            kind => {
                let Some(kind) = SpecialKind::of(kind) else {
                    return Err(self.changed());
                };
                self.count()?;
                visitor.special(self, kind)
            }
        }
    }

    /// Opens the regular file `name` of `dir` for reading, without
    /// following a symlink or blocking on a fifo swapped in. With `seen`
    /// (its stat from the walk), anything but that same regular file is a
    /// change; without, a special file found is answered as such.
    pub(crate) fn open_file(
        &self,
        dir: &Dir,
        name: &OsStr,
        seen: Option<&FileStat>,
    ) -> Result<Opened, SnapshotError> {
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY
            | OFlag::O_NONBLOCK;
        let fd = match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(Opened::Gone),
            // a symlink now
            Err(Errno::ELOOP) => return Err(self.changed()),
            Err(errno) => {
                return Err(SnapshotError::ReadFile {
                    path: lossy(&self.path),
                    source: io_err(errno),
                });
            }
        };
        let stat = fstat(&fd).map_err(|errno| self.err_stat(errno))?;
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => {}
            kind => {
                return match SpecialKind::of(kind) {
                    Some(kind) if seen.is_none() => Ok(Opened::Special(kind)),
                    _ => Err(self.changed()),
                };
            }
        }
        if seen.is_some_and(|seen| seen.st_ino != stat.st_ino || seen.st_dev != stat.st_dev) {
            return Err(self.changed());
        }
        Ok(Opened::File(File::from(fd), stat))
    }

    /// Refuses more file content than `max` in all: `total` is what the
    /// walk's files hold with the current one.
    pub(crate) fn check_bytes(&self, total: u64, max: u64) -> Result<(), SnapshotError> {
        if total > max {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Bytes(max),
                path: lossy(&self.path),
            });
        }
        Ok(())
    }

    fn count(&mut self) -> Result<(), SnapshotError> {
        self.check_room(0)?;
        self.entries += 1;
        Ok(())
    }

    /// Refuses the entry at the current path when `pending` entries listed
    /// before it and the ones counted so far fill `max_files`.
    fn check_room(&self, pending: u64) -> Result<(), SnapshotError> {
        if self.entries.saturating_add(pending) >= self.max_files {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Files(self.max_files),
                path: lossy(&self.path),
            });
        }
        Ok(())
    }

    /// The current path changed while it was read.
    pub(crate) fn changed(&self) -> SnapshotError {
        SnapshotError::Changed {
            path: lossy(&self.path),
        }
    }

    pub(crate) fn err_stat(&self, errno: Errno) -> SnapshotError {
        SnapshotError::Stat {
            path: lossy(&self.path),
            source: io_err(errno),
        }
    }

    fn err_read_dir(&self, errno: Errno) -> SnapshotError {
        SnapshotError::ReadDir {
            path: if self.path.is_empty() {
                ".".to_owned()
            } else {
                lossy(&self.path)
            },
            source: io_err(errno),
        }
    }
}

/// Opens the directory `path` relative to `parent` without following a
/// symlink at its last component.
pub(crate) fn open_dir_at<Fd: AsFd, P: ?Sized + nix::NixPath>(
    parent: Fd,
    path: &P,
) -> nix::Result<OwnedFd> {
    openat(
        parent,
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    /// Records what the walk visits, as `kind path`.
    /// What a racing writer does to a file just before the walk opens it.
    type Race = Box<dyn FnMut(&Path, &str)>;
    /// A way to replace a file, named.
    type Replacement = (&'static str, fn(&Path, &Path));

    #[derive(Default)]
    struct Record {
        seen: Vec<String>,
        /// Called on each file before it is opened: what a racing writer does.
        before_open: Option<Race>,
        root: std::path::PathBuf,
    }

    impl Visitor for Record {
        const STAT_FILES: bool = true;

        fn file(
            &mut self,
            walk: &Walk,
            dir: &Dir,
            name: &OsStr,
            stat: Option<&FileStat>,
        ) -> Result<(), SnapshotError> {
            let path = lossy(walk.path());
            if let Some(race) = self.before_open.as_mut() {
                race(&self.root, &path);
            }
            match walk.open_file(dir, name, stat)? {
                Opened::File(..) => self.seen.push(format!("file {path}")),
                Opened::Gone => self.seen.push(format!("gone {path}")),
                Opened::Special(_) => self.seen.push(format!("special {path}")),
            }
            Ok(())
        }

        fn dir(&mut self, walk: &Walk, _stat: &FileStat) -> Result<(), SnapshotError> {
            self.seen.push(format!("dir {}", lossy(walk.path())));
            Ok(())
        }

        fn symlink(
            &mut self,
            walk: &Walk,
            _stat: &FileStat,
            target: &OsStr,
        ) -> Result<(), SnapshotError> {
            let target = target.to_string_lossy();
            self.seen
                .push(format!("symlink {} -> {target}", lossy(walk.path())));
            Ok(())
        }

        fn special(&mut self, walk: &Walk, _kind: SpecialKind) -> Result<(), SnapshotError> {
            self.seen.push(format!("special {}", lossy(walk.path())));
            Ok(())
        }
    }

    fn walk_with(
        root: &Path,
        excludes: &[&str],
        max_files: u64,
    ) -> Result<Vec<String>, SnapshotError> {
        let patterns: Vec<String> = excludes.iter().map(|p| (*p).to_owned()).collect();
        let excludes = Excludes::new(&patterns).unwrap();
        let mut record = Record {
            root: root.to_path_buf(),
            ..Record::default()
        };
        Walk::new(&excludes, max_files).run(root, &mut record)?;
        Ok(record.seen)
    }

    fn walk_range(root: &Path, from: Option<&str>, until: Option<&str>) -> Vec<String> {
        let excludes = Excludes::new(&[]).unwrap();
        let mut record = Record::default();
        Walk::new(&excludes, u64::MAX)
            .within(from.map(str::as_bytes), until.map(str::as_bytes))
            .run(root, &mut record)
            .unwrap();
        record.seen
    }

    #[test]
    fn walks_over_two_ranges_visit_every_entry_once_between_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            "a/x", "a/y/z", "a.txt", "a-b/c", "b", "c/d/e/f", "c/d/g", "c.d",
        ] {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        symlink("a", root.join("c/link")).unwrap();
        let whole = walk_range(root, None, None);
        let paths: Vec<String> = whole
            .iter()
            .map(|seen| seen.split(' ').nth(1).unwrap().to_owned())
            .collect();
        // split at every entry, at paths that are not there, and past the end
        let mut splits = paths.clone();
        splits.extend(["a/w", "a/y/zz", "a.", "c/d/e/f/g", "zzz", "0"].map(str::to_owned));
        for split in &splits {
            let mut both = walk_range(root, None, Some(split));
            let second = walk_range(root, Some(split), None);
            assert!(
                both.iter().chain(&second).all(|seen| whole.contains(seen)),
                "{split}"
            );
            both.extend(second);
            assert_eq!(both, whole, "split at {split}");
        }
        // three ranges: the middle one alone
        let middle = walk_range(root, Some("a/y"), Some("c/d/g"));
        let start = paths.iter().position(|p| p == "a/y").unwrap();
        let end = paths.iter().position(|p| p == "c/d/g").unwrap();
        assert_eq!(middle, whole[start..end]);
    }

    #[test]
    fn names_are_visited_sorted_a_directory_before_its_contents_and_excludes_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("b/inner")).unwrap();
        fs::write(root.join("b/inner/z.txt"), "z").unwrap();
        fs::write(root.join("a-c"), "a").unwrap();
        fs::create_dir_all(root.join("node_modules/x")).unwrap();
        fs::write(root.join("c"), "c").unwrap();
        let seen = walk_with(root, &["node_modules"], u64::MAX).unwrap();
        assert_eq!(
            seen,
            [
                "file a-c",
                "dir b",
                "dir b/inner",
                "file b/inner/z.txt",
                "file c"
            ]
        );
        let excludes = Excludes::new(&["node_modules".to_owned()]).unwrap();
        let mut walk = Walk::new(&excludes, u64::MAX);
        walk.run(root, &mut Record::default()).unwrap();
        assert_eq!(walk.excluded(), 1, "an excluded directory counts once");
    }

    #[test]
    fn the_entry_limit_is_held_while_a_directory_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
        }
        assert_eq!(walk_with(dir.path(), &[], 10).unwrap().len(), 10);
        let err = walk_with(dir.path(), &[], 9).unwrap_err();
        // refused while listing, before any entry was visited: the directory is named
        assert!(
            matches!(&err, SnapshotError::OverLimit { limit: Limit::Files(9), path } if path.is_empty()),
            "{err:?}"
        );
        // entries of nested directories count together
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/g"), "x").unwrap();
        let err = walk_with(dir.path(), &[], 11).unwrap_err();
        assert!(
            matches!(&err, SnapshotError::OverLimit { limit: Limit::Files(11), path } if path == "sub"),
            "{err:?}"
        );
        assert_eq!(walk_with(dir.path(), &[], 12).unwrap().len(), 12);
    }

    #[test]
    fn nesting_past_the_depth_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for _ in 0..MAX_DEPTH {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let err = walk_with(dir.path(), &[], u64::MAX).unwrap_err();
        assert!(
            matches!(err, SnapshotError::TooDeep { max: MAX_DEPTH, .. }),
            "{err:?}"
        );
        // one level less is fine
        fs::remove_dir(&deep).unwrap();
        let seen = walk_with(dir.path(), &[], u64::MAX).unwrap();
        assert_eq!(seen.len(), MAX_DEPTH - 1);
    }

    #[test]
    fn a_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, root.join("link")).unwrap();
        symlink(outside.join("secret"), root.join("file-link")).unwrap();
        let seen = walk_with(&root, &[], u64::MAX).unwrap();
        assert_eq!(
            seen,
            [
                format!("symlink file-link -> {}", outside.join("secret").display()),
                format!("symlink link -> {}", outside.display()),
            ]
        );
        // nor is a root that is a symlink
        let err = walk_with(&root.join("link"), &[], u64::MAX).unwrap_err();
        assert!(matches!(err, SnapshotError::OpenRoot { .. }), "{err:?}");
    }

    #[test]
    fn a_file_replaced_during_the_walk_is_reported_as_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir_all(&root).unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, "outside").unwrap();
        let replacements: [Replacement; 3] = [
            // another file renamed over it (another inode)
            ("renamed", |file, _| {
                let other = file.with_extension("new");
                fs::write(&other, "other").unwrap();
                fs::rename(&other, file).unwrap();
            }),
            // a symlink out of the tree
            ("symlink", |file, outside| {
                fs::remove_file(file).unwrap();
                symlink(outside, file).unwrap();
            }),
            // a directory
            ("directory", |file, _| {
                fs::remove_file(file).unwrap();
                fs::create_dir(file).unwrap();
            }),
        ];
        for (what, replace) in replacements {
            fs::write(root.join("victim"), "victim").unwrap();
            let patterns: Vec<String> = Vec::new();
            let excludes = Excludes::new(&patterns).unwrap();
            let outside = outside.clone();
            let mut record = Record {
                root: root.clone(),
                before_open: Some(Box::new(move |root, path| {
                    replace(&root.join(path), &outside);
                })),
                ..Record::default()
            };
            let err = Walk::new(&excludes, u64::MAX)
                .run(&root, &mut record)
                .unwrap_err();
            assert!(
                matches!(&err, SnapshotError::Changed { path } if path == "victim"),
                "{what}: {err:?}"
            );
            let victim = root.join("victim");
            if victim.is_dir() && !victim.is_symlink() {
                fs::remove_dir(&victim).unwrap();
            } else {
                fs::remove_file(&victim).unwrap();
            }
        }
        // removed: gone, not an error
        fs::write(root.join("victim"), "victim").unwrap();
        let excludes = Excludes::new(&[]).unwrap();
        let mut record = Record {
            root: root.clone(),
            before_open: Some(Box::new(|root, path| {
                fs::remove_file(root.join(path)).unwrap();
            })),
            ..Record::default()
        };
        Walk::new(&excludes, u64::MAX)
            .run(&root, &mut record)
            .unwrap();
        assert_eq!(record.seen, ["gone victim"]);
    }
}
