//! Packing: a directory tree streamed as tar through zstd into a writer.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use paddock_core::blob::BlobKey;
use tar::{EntryType, Header};

use crate::error::{Limit, SnapshotError, io_err, lossy};
use crate::exclude::Excludes;
use crate::hashing::HashingWriter;
use crate::options::PackOptions;

/// Deepest directory nesting packed (each level holds one open directory).
pub(crate) const MAX_DEPTH: usize = 256;
/// File reads go through a buffer this large, to keep syscalls few.
const READ_BUF: usize = 256 * 1024;
/// Tar output is gathered into chunks this large before zstd sees it.
const WRITE_BUF: usize = 1024 * 1024;
/// Special files listed one by one in [`PackStats::skipped`]; beyond, only counted.
const SKIPPED_LISTED: usize = 100;

/// What [`pack`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackStats {
    /// Regular files.
    pub files: u64,
    /// Directories below the root (the root itself is not an entry).
    pub dirs: u64,
    pub symlinks: u64,
    /// File content before compression.
    pub bytes_raw: u64,
    /// Bytes written to `out`.
    pub bytes_compressed: u64,
    /// Entries left out by the exclude patterns (a directory counts once).
    pub excluded: u64,
    /// Sockets, fifos and devices seen and not stored.
    pub skipped_total: u64,
    /// The first of them, for the caller to report.
    pub skipped: Vec<SkippedEntry>,
    /// sha256 of the compressed stream: the archive's blob key.
    pub key: BlobKey,
}

impl PackStats {
    /// Entries of the archive, which a restore of it creates and its
    /// [`crate::Limits::max_files`] counts: files, directories and symlinks
    /// (a pack stores no hardlinks, lists every directory, and leaves out
    /// the special files it skipped, though its own limit counted them).
    pub fn entries(&self) -> u64 {
        self.files + self.dirs + self.symlinks
    }
}

/// A special file that [`pack`] did not store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedEntry {
    pub path: String,
    pub kind: SpecialKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialKind {
    Socket,
    Fifo,
    CharDevice,
    BlockDevice,
}

/// Streams the tree under `root` into `out` as a zstd-compressed tar archive.
///
/// Entries are sorted by name within each directory, directories before their
/// contents; owners are stored as 0 and hardlinked files as separate files.
/// The same tree and options give the same bytes (with one or more workers,
/// zstd's output does not depend on their number). Regular files (mode,
/// mtime), directories and symlinks (target as is, even absolute or dangling)
/// are stored; sockets, fifos and devices are skipped and listed. Symlinks
/// are never followed and every open is relative to an already opened parent
/// with `O_NOFOLLOW`, so nothing outside `root` is read even if the tree
/// changes meanwhile; a file that shrinks while read fails the snapshot.
/// Going over a limit fails naming the limit and the path.
///
/// `out` receives the archive as it is produced (nothing is staged); to
/// cancel, make it fail. The returned [`PackStats::key`] is the sha256 of
/// exactly the bytes written to `out`.
pub fn pack<W: Write>(root: &Path, opts: &PackOptions, out: W) -> Result<PackStats, SnapshotError> {
    let excludes = Excludes::new(&opts.excludes)?;
    let root_fd =
        open_dir_at(nix::fcntl::AT_FDCWD, root).map_err(|errno| SnapshotError::OpenRoot {
            path: root.to_path_buf(),
            source: io_err(errno),
        })?;
    let root_dir = Dir::from_fd(root_fd).map_err(|errno| SnapshotError::OpenRoot {
        path: root.to_path_buf(),
        source: io_err(errno),
    })?;

    let encoder = new_encoder(HashingWriter::new(out), opts)?;
    let mut packer = Packer {
        builder: tar::Builder::new(BufWriter::with_capacity(WRITE_BUF, encoder)),
        excludes,
        opts,
        path: Vec::new(),
        buf: vec![0; READ_BUF],
        entries: 0,
        stats: Counts::default(),
    };
    packer.walk(root_dir, 0)?;

    let Packer { builder, stats, .. } = packer;
    let encoder = builder
        .into_inner()
        .and_then(|buffered| buffered.into_inner().map_err(|e| e.into_error()))
        .map_err(|source| SnapshotError::Write { source })?;
    let hashing = encoder
        .finish()
        .map_err(|source| SnapshotError::Write { source })?;
    let (mut out, key, bytes_compressed) = hashing.finish();
    out.flush()
        .map_err(|source| SnapshotError::Write { source })?;

    tracing::debug!(
        files = stats.files,
        dirs = stats.dirs,
        symlinks = stats.symlinks,
        bytes_raw = stats.bytes_raw,
        bytes_compressed,
        %key,
        "packed snapshot"
    );
    Ok(PackStats {
        files: stats.files,
        dirs: stats.dirs,
        symlinks: stats.symlinks,
        bytes_raw: stats.bytes_raw,
        bytes_compressed,
        excluded: stats.excluded,
        skipped_total: stats.skipped_total,
        skipped: stats.skipped,
        key,
    })
}

type Encoder<W> = zstd::stream::write::Encoder<'static, HashingWriter<W>>;

fn new_encoder<W: Write>(
    out: HashingWriter<W>,
    opts: &PackOptions,
) -> Result<Encoder<W>, SnapshotError> {
    let encoder_err = |source| SnapshotError::Encoder { source };
    let mut encoder = zstd::stream::write::Encoder::new(out, opts.level).map_err(encoder_err)?;
    encoder.include_checksum(true).map_err(encoder_err)?;
    let workers = opts.workers.unwrap_or_else(default_workers);
    if workers > 0 {
        encoder.multithread(workers).map_err(encoder_err)?;
    }
    Ok(encoder)
}

/// One compression worker per core: the calling thread reads and builds the
/// tar stream while the workers compress (see the benchmark's figures).
fn default_workers() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1)
}

#[derive(Debug, Default)]
struct Counts {
    files: u64,
    dirs: u64,
    symlinks: u64,
    bytes_raw: u64,
    excluded: u64,
    skipped_total: u64,
    skipped: Vec<SkippedEntry>,
}

struct Packer<'o, W: Write> {
    builder: tar::Builder<BufWriter<Encoder<W>>>,
    excludes: Excludes,
    opts: &'o PackOptions,
    /// Path of the current entry from the root, `/`-separated.
    path: Vec<u8>,
    buf: Vec<u8>,
    /// Everything counted against `max_files`.
    entries: u64,
    stats: Counts,
}

impl<W: Write> Packer<'_, W> {
    fn walk(&mut self, mut dir: Dir, depth: usize) -> Result<(), SnapshotError> {
        // Counted and limited while the listing is read: a directory of
        // millions of names is refused at the first one over the limit,
        // not after all of them were read.
        let mut names: Vec<(Vec<u8>, Option<Type>)> = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|errno| self.err_read_dir(errno))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let parent_len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(name);
            let excluded = self.excludes.matches(&self.path, name);
            self.path.truncate(parent_len);
            if excluded {
                self.stats.excluded += 1;
                continue;
            }
            // Every name listed is an entry the walk will count; the
            // directory is named, since which of its names comes first in
            // the archive's order is only known once all were read.
            self.check_room(names.len() as u64)?;
            names.push((name.to_vec(), entry.file_type()));
        }
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));

        for (name, file_type) in names {
            let parent_len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(&name);
            let result = self.entry(&dir, &name, file_type, depth);
            self.path.truncate(parent_len);
            result?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        dir: &Dir,
        name: &[u8],
        file_type: Option<Type>,
        depth: usize,
    ) -> Result<(), SnapshotError> {
        let name = OsStr::from_bytes(name);
        // The type from readdir saves a stat for regular files: the opened
        // file is checked with fstat anyway.
        if file_type == Some(Type::File) {
            return self.file(dir, name);
        }
        let stat = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::ENOENT) => return Ok(()),
            Err(errno) => return Err(self.err_stat(errno)),
        };
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => self.file(dir, name),
            SFlag::S_IFDIR => self.dir(dir, name, &stat, depth),
            SFlag::S_IFLNK => self.symlink(dir, name, &stat),
            kind => self.skip(kind),
        }
    }

    fn dir(
        &mut self,
        parent: &Dir,
        name: &OsStr,
        stat: &FileStat,
        depth: usize,
    ) -> Result<(), SnapshotError> {
        if depth + 1 >= MAX_DEPTH {
            return Err(SnapshotError::TooDeep {
                path: lossy(&self.path),
                max: MAX_DEPTH,
            });
        }
        self.count_entry()?;
        let fd = match open_dir_at(parent, name) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(()),
            // ELOOP: the directory was replaced by a symlink since the stat.
            Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(self.changed()),
            Err(errno) => return Err(self.err_read_dir(errno)),
        };
        let dir = Dir::from_fd(fd).map_err(|errno| self.err_read_dir(errno))?;
        let mut header = new_header(EntryType::Directory, stat);
        header.set_size(0);
        let path = self.archive_path();
        self.builder
            .append_data(&mut header, path, io::empty())
            .map_err(|source| SnapshotError::Write { source })?;
        self.stats.dirs += 1;
        self.walk(dir, depth + 1)
    }

    fn file(&mut self, dir: &Dir, name: &OsStr) -> Result<(), SnapshotError> {
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY
            // A fifo swapped in since readdir must not block the open.
            | OFlag::O_NONBLOCK;
        let fd = match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(()),
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
            SFlag::S_IFDIR => return Err(self.changed()),
            kind => return self.skip(kind),
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        self.count_entry()?;
        let max_bytes = self.opts.limits.max_bytes;
        if self.stats.bytes_raw.saturating_add(size) > max_bytes {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Bytes(max_bytes),
                path: lossy(&self.path),
            });
        }

        let mut header = new_header(EntryType::Regular, &stat);
        header.set_size(size);
        let path = self.archive_path();
        let mut reader = FileReader {
            file: File::from(fd),
            buf: &mut self.buf,
            start: 0,
            end: 0,
            remaining: size,
            failure: None,
        };
        let appended = self.builder.append_data(&mut header, path, &mut reader);
        if let Some(failure) = reader.failure.take() {
            return Err(match failure {
                ReadFailure::Shrunk => self.changed(),
                ReadFailure::Io(source) => SnapshotError::ReadFile {
                    path: lossy(&self.path),
                    source,
                },
            });
        }
        appended.map_err(|source| SnapshotError::Write { source })?;
        self.stats.files += 1;
        self.stats.bytes_raw += size;
        Ok(())
    }

    fn symlink(&mut self, dir: &Dir, name: &OsStr, stat: &FileStat) -> Result<(), SnapshotError> {
        let target = match nix::fcntl::readlinkat(dir, name) {
            Ok(target) => target,
            Err(Errno::ENOENT) => return Ok(()),
            Err(Errno::EINVAL) => return Err(self.changed()),
            Err(errno) => return Err(self.err_stat(errno)),
        };
        self.count_entry()?;
        let mut header = new_header(EntryType::Symlink, stat);
        header.set_size(0);
        let path = self.archive_path();
        self.builder
            .append_link(&mut header, path, Path::new(&target))
            .map_err(|source| SnapshotError::Write { source })?;
        self.stats.symlinks += 1;
        Ok(())
    }

    fn skip(&mut self, kind: SFlag) -> Result<(), SnapshotError> {
        let kind = match kind {
            SFlag::S_IFSOCK => SpecialKind::Socket,
            SFlag::S_IFIFO => SpecialKind::Fifo,
            SFlag::S_IFCHR => SpecialKind::CharDevice,
            SFlag::S_IFBLK => SpecialKind::BlockDevice,
            // A type that no longer matches what was just seen.
            _ => return Err(self.changed()),
        };
        self.count_entry()?;
        self.stats.skipped_total += 1;
        if self.stats.skipped.len() < SKIPPED_LISTED {
            self.stats.skipped.push(SkippedEntry {
                path: lossy(&self.path),
                kind,
            });
        }
        Ok(())
    }

    fn count_entry(&mut self) -> Result<(), SnapshotError> {
        self.check_room(0)?;
        self.entries += 1;
        Ok(())
    }

    /// Refuses the entry at the current path when `pending` entries listed
    /// before it and the ones counted so far fill `max_files`.
    fn check_room(&self, pending: u64) -> Result<(), SnapshotError> {
        let max_files = self.opts.limits.max_files;
        if self.entries.saturating_add(pending) >= max_files {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Files(max_files),
                path: lossy(&self.path),
            });
        }
        Ok(())
    }

    /// The current path as the archive's entry name.
    fn archive_path(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(OsStr::from_bytes(&self.path))
    }

    fn changed(&self) -> SnapshotError {
        SnapshotError::Changed {
            path: lossy(&self.path),
        }
    }

    fn err_stat(&self, errno: Errno) -> SnapshotError {
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

fn open_dir_at<Fd: AsFd, P: ?Sized + nix::NixPath>(parent: Fd, path: &P) -> nix::Result<OwnedFd> {
    openat(
        parent,
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

fn new_header(kind: EntryType, stat: &FileStat) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(stat.st_mode & 0o7777);
    header.set_mtime(u64::try_from(stat.st_mtime).unwrap_or(0));
    header.set_uid(0);
    header.set_gid(0);
    header
}

enum ReadFailure {
    /// The file ended before the size it had when the header was written.
    Shrunk,
    Io(io::Error),
}

/// Reads exactly `remaining` bytes of a file through a large reused buffer
/// (tar's copy loop asks for 8 KiB at a time); remembers why it failed so
/// that read errors are not mistaken for write errors.
struct FileReader<'b> {
    file: File,
    buf: &'b mut [u8],
    start: usize,
    end: usize,
    remaining: u64,
    failure: Option<ReadFailure>,
}

impl Read for FileReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if self.remaining == 0 {
                return Ok(0);
            }
            let want = usize::try_from(self.remaining)
                .unwrap_or(usize::MAX)
                .min(self.buf.len());
            let n = loop {
                match self.file.read(&mut self.buf[..want]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let kind = e.kind();
                        self.failure = Some(ReadFailure::Io(e));
                        return Err(io::Error::from(kind));
                    }
                }
            };
            if n == 0 {
                self.failure = Some(ReadFailure::Shrunk);
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            self.start = 0;
            self.end = n;
            self.remaining -= n as u64;
        }
        let n = out.len().min(self.end - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}
