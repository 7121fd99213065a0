//! Capturing a workspace into a [`Manifest`]: a walk that never follows a
//! symlink, hashes only the files whose stat differs from the previous
//! manifest's (or is racy), and stores a file's content only when the blob
//! store does not have it yet.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use nix::dir::Dir;
use nix::sys::stat::FileStat;
use paddock_core::blob::{BlobInfo, BlobKey, BlobStore};
use paddock_proto::FsPath;
use sha2::{Digest, Sha256};

use super::manifest::{Entry, Manifest, Node, StatKey};
use super::previous::Previous;
use crate::error::{Limit, SnapshotError};
use crate::exclude::Excludes;
use crate::options::Limits;
use crate::tree_walk::{Opened, SpecialKind, Visitor, Walk};

/// A file whose mtime or ctime falls this close to (or after) the start of
/// the capture that hashed it is hashed again by the next capture: a write
/// in the same clock tick as the capture leaves the stat unchanged.
const RACY_NS: i64 = 100_000_000;
const READ_BUF: usize = 1024 * 1024;
const READ_MIN: usize = 16 * 1024;

/// What a capture leaves out and how much it takes.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// The same patterns as a snapshot's ([`crate::PackOptions::excludes`]).
    pub excludes: Vec<String>,
    pub limits: Limits,
    /// Disk the blobs this capture stores may take (None: no bound). Each
    /// new blob is charged [`crate::disk::estimate`] of its size before it
    /// is written; one that does not fit fails the capture with
    /// [`Limit::Disk`], and what it stored before stays, unreferenced,
    /// for the blob collection.
    pub disk_budget: Option<std::sync::Arc<DiskBudget>>,
}

/// Disk a capture may still take; shared by the threads of one capture.
#[derive(Debug)]
pub struct DiskBudget {
    total: u64,
    left: std::sync::atomic::AtomicU64,
}

impl DiskBudget {
    pub fn new(bytes: u64) -> Self {
        Self {
            total: bytes,
            left: std::sync::atomic::AtomicU64::new(bytes),
        }
    }

    /// Takes `bytes` from what is left, or nothing if they do not fit.
    pub fn take(&self, bytes: u64) -> bool {
        use std::sync::atomic::Ordering;
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }

    /// What was left to take.
    pub fn left(&self) -> u64 {
        self.left.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The whole budget.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// What a capture found and did.
#[derive(Debug, Clone, Default)]
pub struct CaptureStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// File content, all files together.
    pub bytes: u64,
    /// Files read to hash them (the others' stat was unchanged).
    pub hashed_files: u64,
    pub hashed_bytes: u64,
    /// Sockets, fifos, devices and empty symlink targets: not recorded
    /// (a name not in UTF-8 is recorded as its bytes).
    pub skipped: u64,
    /// Blobs this capture stored (content no earlier capture had stored).
    pub new_blobs: Vec<BlobInfo>,
}

impl CaptureStats {
    pub fn new_bytes(&self) -> u64 {
        self.new_blobs.iter().map(|b| b.size).sum()
    }

    /// Adds what another part of the same capture found; a blob both
    /// stored (the same new content on both sides) is listed once.
    fn absorb(&mut self, other: CaptureStats) {
        self.files += other.files;
        self.dirs += other.dirs;
        self.symlinks += other.symlinks;
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.hashed_files += other.hashed_files;
        self.hashed_bytes = self.hashed_bytes.saturating_add(other.hashed_bytes);
        self.skipped += other.skipped;
        for blob in other.new_blobs {
            if !self.new_blobs.iter().any(|b| b.key == blob.key) {
                self.new_blobs.push(blob);
            }
        }
    }
}

/// Records the tree at `root`. With `blobs`, every file's content is in the
/// store when this returns (stored now if it was not); without, the
/// capture only looks (what a restore compares against). Files whose stat
/// equals their entry in `previous` keep that entry's hash unread.
pub fn capture(
    root: &Path,
    previous: Option<&Manifest>,
    options: &CaptureOptions,
    blobs: Option<&dyn BlobStore>,
) -> Result<(Manifest, CaptureStats), SnapshotError> {
    let started = now_ns();
    let excludes = Excludes::new(&options.excludes)?;
    let whole = Part {
        root,
        previous,
        options,
        excludes: &excludes,
        blobs,
        from: None,
        until: None,
    };
    let (entries, stats) = match split_point(previous) {
        Some(split) => in_two(
            Part {
                until: Some(split),
                ..whole
            },
            Part {
                from: Some(split),
                ..whole
            },
        )?,
        None => whole.run()?,
    };
    let mut manifest = Manifest::new(started);
    // the walk's order is path order but for names sorting before `/`
    // (`a`, `a/x`, `a.txt`): collecting sorts runs already in order (a
    // stable sort), then builds the map in one pass
    manifest.entries = entries.into_iter().collect();
    Ok((manifest, stats))
}

/// Below this many entries in the previous manifest, a capture walks on
/// one thread (a second one would cost more than it saves).
const SPLIT_MIN_ENTRIES: usize = 2048;

/// Where a capture splits the tree between two threads: the previous
/// manifest's middle path, so each thread stats about half of the entries
/// (the kernel's half of a capture's time is one stat per entry).
fn split_point(previous: Option<&Manifest>) -> Option<&[u8]> {
    let previous = previous.filter(|p| p.entries.len() >= SPLIT_MIN_ENTRIES)?;
    previous
        .entries
        .keys()
        .nth(previous.entries.len() / 2)
        .map(FsPath::as_bytes)
}

/// One walk of a capture: the whole tree, or the entries of a range of
/// it in walk order ([`Walk::within`]).
#[derive(Clone, Copy)]
struct Part<'a> {
    root: &'a Path,
    previous: Option<&'a Manifest>,
    options: &'a CaptureOptions,
    excludes: &'a Excludes,
    blobs: Option<&'a dyn BlobStore>,
    from: Option<&'a [u8]>,
    until: Option<&'a [u8]>,
}

type Found = (Vec<(FsPath, Entry)>, CaptureStats);

impl Part<'_> {
    fn run(self) -> Result<Found, SnapshotError> {
        self.run_counted().map(|(found, _)| found)
    }

    /// About how many entries the part will find: the previous manifest's
    /// (half of them for each part of a split capture), plus a little for
    /// what was added since.
    fn expected_entries(&self) -> usize {
        let previous = self.previous.map_or(0, |p| p.entries.len());
        let share = if self.from.is_some() || self.until.is_some() {
            previous / 2
        } else {
            previous
        };
        share + share / 16
    }

    /// What the part found, and the entries its walk counted.
    fn run_counted(self) -> Result<(Found, u64), SnapshotError> {
        let mut walk =
            Walk::new(self.excludes, self.options.limits.max_files).within(self.from, self.until);
        let mut capturer = Capturer {
            max_bytes: self.options.limits.max_bytes,
            disk_budget: self.options.disk_budget.as_deref(),
            previous: self.previous.map(Previous::new),
            blobs: self.blobs,
            entries: Vec::with_capacity(self.expected_entries()),
            stats: CaptureStats::default(),
            buf: Vec::new(),
        };
        walk.run(self.root, &mut capturer)?;
        Ok(((capturer.entries, capturer.stats), walk.entries()))
    }
}

/// Runs `first` here and `second` on a thread of its own (or after
/// `first` when no thread can be had), then holds what both found
/// together to the limits each held alone.
fn in_two(first: Part<'_>, second: Part<'_>) -> Result<Found, SnapshotError> {
    let max_files = first.options.limits.max_files;
    let max_bytes = first.options.limits.max_bytes;
    let (first, second) = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("checkpoint-walk".to_owned())
            .spawn_scoped(scope, || second.run_counted());
        match spawned {
            Ok(handle) => {
                let first = first.run_counted();
                let second = handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (first, second)
            }
            Err(err) => {
                tracing::debug!(error = %err, "no second thread for a capture: one walks after the other");
                (first.run_counted(), second.run_counted())
            }
        }
    });
    let ((mut entries, mut stats), first_counted) = first?;
    let ((more, more_stats), second_counted) = second?;
    let over = |limit| SnapshotError::OverLimit {
        limit,
        path: String::new(),
    };
    if first_counted.saturating_add(second_counted) > max_files {
        return Err(over(Limit::Files(max_files)));
    }
    entries.extend(more);
    stats.absorb(more_stats);
    if stats.bytes > max_bytes {
        return Err(over(Limit::Bytes(max_bytes)));
    }
    Ok((entries, stats))
}

fn now_ns() -> i64 {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
}

struct Capturer<'a> {
    max_bytes: u64,
    disk_budget: Option<&'a DiskBudget>,
    previous: Option<Previous<'a>>,
    blobs: Option<&'a dyn BlobStore>,
    /// What was found, in walk order.
    entries: Vec<(FsPath, Entry)>,
    stats: CaptureStats,
    /// For reading files to hash, allocated at the first.
    buf: Vec<u8>,
}

impl Capturer<'_> {
    /// The walk's current path, as its bytes (UTF-8 or not).
    fn path(walk: &Walk) -> FsPath {
        FsPath::from(walk.path())
    }

    /// The node of a regular file: the previous hash when its stat is
    /// unchanged, otherwise the hash of its content (stored if new); and
    /// the stat of what was hashed. None: the file is gone.
    fn file_node(
        &mut self,
        walk: &Walk,
        dir: &Dir,
        name: &OsStr,
        path: &FsPath,
        stat: &FileStat,
    ) -> Result<Option<(Node, StatKey)>, SnapshotError> {
        let key = stat_key(stat);
        if let Some(previous) = self.previous.as_mut()
            && let Some(Entry {
                node: node @ Node::File { .. },
                stat: Some(seen),
                ..
            }) = previous.find(path.as_bytes())
            && *seen == key
            && key.mtime_ns.max(key.ctime_ns) < previous.captured_at_ns - RACY_NS
        {
            return Ok(Some((node.clone(), key)));
        }
        let mut file = match walk.open_file(dir, name, Some(stat))? {
            Opened::File(file, _) => file,
            Opened::Gone => return Ok(None),
            Opened::Special(_) => return Err(walk.changed()),
        };
        let read_err = |source| SnapshotError::ReadFile {
            path: path.display(),
            source,
        };
        // as much as the file holds (one read to its end and one to see
        // the end), up to READ_BUF: a small file changed costs no megabyte
        let want = usize::try_from(stat.st_size)
            .unwrap_or(READ_BUF)
            .saturating_add(1)
            .clamp(READ_MIN, READ_BUF);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            let n = match file.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_err(e)),
            };
            hasher.update(&self.buf[..n]);
            size += n as u64;
        }
        let hash = BlobKey::from_digest(hasher.finalize().into());
        self.stats.hashed_files += 1;
        self.stats.hashed_bytes += size;
        if let Some(blobs) = self.blobs {
            self.store(walk, blobs, &mut file, (&hash, size), path)?;
        }
        // the stat of the bytes hashed: one read after the stat may have
        // seen a later write, which the next capture then sees as a change
        Ok(Some((Node::File { hash, size }, StatKey { size, ..key })))
    }

    /// Stores the content of `file` as `hash` unless the store has it.
    fn store(
        &mut self,
        walk: &Walk,
        blobs: &dyn BlobStore,
        file: &mut File,
        (hash, size): (&BlobKey, u64),
        path: &FsPath,
    ) -> Result<(), SnapshotError> {
        let blob_err = |what: &str| {
            let what = format!("{what} {hash} for {path:?}");
            move |source| SnapshotError::Blob { what, source }
        };
        if blobs.size(hash).map_err(blob_err("stat"))?.is_some() {
            return Ok(());
        }
        if let Some(budget) = self.disk_budget
            && !budget.take(crate::disk::estimate(size))
        {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Disk(budget.total()),
                path: path.display(),
            });
        }
        let mut writer = blobs.writer().map_err(blob_err("write"))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| io::copy(file, &mut writer))
            .and_then(|_| writer.flush())
            .map_err(|source| SnapshotError::ReadFile {
                path: path.display(),
                source,
            })?;
        let info = writer.commit().map_err(blob_err("commit"))?;
        if info.key != *hash {
            // written while it was read: the stored blob is still a valid
            // blob (of other content), but this file must be captured again
            return Err(walk.changed());
        }
        self.stats.new_blobs.push(info);
        Ok(())
    }

    fn insert(&mut self, path: FsPath, node: Node, mode: u32, stat: Option<StatKey>) {
        self.entries.push((path, Entry { node, mode, stat }));
    }

    /// Keeps the cursor on the previous manifest in step with the walk
    /// at an entry that is not a regular file (a file's lookup does it).
    fn pass(&mut self, path: &FsPath) {
        if let Some(previous) = self.previous.as_mut() {
            previous.find(path.as_bytes());
        }
    }
}

impl Visitor for Capturer<'_> {
    const STAT_FILES: bool = true;

    fn file(
        &mut self,
        walk: &Walk,
        dir: &Dir,
        name: &OsStr,
        stat: Option<&FileStat>,
    ) -> Result<(), SnapshotError> {
        let Some(stat) = stat else {
            // STAT_FILES: the walk stats every file
            return Err(walk.changed());
        };
        let path = Self::path(walk);
        let Some((node, key)) = self.file_node(walk, dir, name, &path, stat)? else {
            return Ok(());
        };
        if let Node::File { size, .. } = &node {
            self.stats.bytes = self.stats.bytes.saturating_add(*size);
            walk.check_bytes(self.stats.bytes, self.max_bytes)?;
        }
        self.stats.files += 1;
        self.insert(path, node, stat.st_mode & 0o7777, Some(key));
        Ok(())
    }

    fn dir(&mut self, walk: &Walk, stat: &FileStat) -> Result<(), SnapshotError> {
        let path = Self::path(walk);
        self.stats.dirs += 1;
        self.pass(&path);
        self.insert(path, Node::Dir, stat.st_mode & 0o7777, None);
        Ok(())
    }

    fn symlink(
        &mut self,
        walk: &Walk,
        stat: &FileStat,
        target: &OsStr,
    ) -> Result<(), SnapshotError> {
        let path = Self::path(walk);
        if target.is_empty() {
            self.stats.skipped += 1;
            return Ok(());
        }
        self.stats.symlinks += 1;
        self.pass(&path);
        let node = Node::Symlink {
            target: FsPath::from(target.as_bytes()),
        };
        self.insert(path, node, stat.st_mode & 0o7777, None);
        Ok(())
    }

    fn special(&mut self, _walk: &Walk, _kind: SpecialKind) -> Result<(), SnapshotError> {
        self.stats.skipped += 1;
        Ok(())
    }
}

fn stat_key(stat: &FileStat) -> StatKey {
    StatKey {
        size: u64::try_from(stat.st_size).unwrap_or(0),
        mtime_ns: stat.st_mtime.saturating_mul(1_000_000_000) + stat.st_mtime_nsec,
        ctime_ns: stat.st_ctime.saturating_mul(1_000_000_000) + stat.st_ctime_nsec,
        ino: stat.st_ino,
        dev: stat.st_dev,
    }
}
