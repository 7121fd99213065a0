//! Packing: a directory tree streamed as tar through zstd into a writer.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::dir::Dir;
use nix::sys::stat::FileStat;
use paddock_core::blob::BlobKey;
use tar::{EntryType, Header};

use crate::error::{SnapshotError, lossy};
use crate::exclude::Excludes;
use crate::hashing::HashingWriter;
use crate::options::PackOptions;
use crate::tree_walk::{Opened, SpecialKind, Visitor, Walk};

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
    let mut walk = Walk::new(&excludes, opts.limits.max_files);
    let encoder = new_encoder(HashingWriter::new(out), opts)?;
    let mut packer = Packer {
        builder: tar::Builder::new(BufWriter::with_capacity(WRITE_BUF, encoder)),
        opts,
        buf: vec![0; READ_BUF],
        stats: Counts::default(),
    };
    walk.run(root, &mut packer)?;
    packer.stats.excluded = walk.excluded();

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
    opts: &'o PackOptions,
    buf: Vec<u8>,
    stats: Counts,
}

impl<W: Write> Visitor for Packer<'_, W> {
    // The type from readdir saves a stat for regular files: the opened
    // file is checked with fstat anyway.
    const STAT_FILES: bool = false;

    fn file(
        &mut self,
        walk: &Walk,
        dir: &Dir,
        name: &OsStr,
        _stat: Option<&FileStat>,
    ) -> Result<(), SnapshotError> {
        let (file, stat) = match walk.open_file(dir, name, None)? {
            Opened::File(file, stat) => (file, stat),
            Opened::Gone => return Ok(()),
            Opened::Special(kind) => return self.special(walk, kind),
        };
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        walk.check_bytes(
            self.stats.bytes_raw.saturating_add(size),
            self.opts.limits.max_bytes,
        )?;

        let mut header = new_header(EntryType::Regular, &stat);
        header.set_size(size);
        let mut reader = FileReader {
            file,
            buf: &mut self.buf,
            start: 0,
            end: 0,
            remaining: size,
            failure: None,
        };
        let appended = self
            .builder
            .append_data(&mut header, archive_path(walk), &mut reader);
        if let Some(failure) = reader.failure.take() {
            return Err(match failure {
                ReadFailure::Shrunk => walk.changed(),
                ReadFailure::Io(source) => SnapshotError::ReadFile {
                    path: lossy(walk.path()),
                    source,
                },
            });
        }
        appended.map_err(|source| SnapshotError::Write { source })?;
        self.stats.files += 1;
        self.stats.bytes_raw += size;
        Ok(())
    }

    fn dir(&mut self, walk: &Walk, stat: &FileStat) -> Result<(), SnapshotError> {
        let mut header = new_header(EntryType::Directory, stat);
        header.set_size(0);
        self.builder
            .append_data(&mut header, archive_path(walk), io::empty())
            .map_err(|source| SnapshotError::Write { source })?;
        self.stats.dirs += 1;
        Ok(())
    }

    fn symlink(
        &mut self,
        walk: &Walk,
        stat: &FileStat,
        target: &OsStr,
    ) -> Result<(), SnapshotError> {
        let mut header = new_header(EntryType::Symlink, stat);
        header.set_size(0);
        self.builder
            .append_link(&mut header, archive_path(walk), Path::new(target))
            .map_err(|source| SnapshotError::Write { source })?;
        self.stats.symlinks += 1;
        Ok(())
    }

    fn special(&mut self, walk: &Walk, kind: SpecialKind) -> Result<(), SnapshotError> {
        self.stats.skipped_total += 1;
        if self.stats.skipped.len() < SKIPPED_LISTED {
            self.stats.skipped.push(SkippedEntry {
                path: lossy(walk.path()),
                kind,
            });
        }
        Ok(())
    }
}

/// The walk's current path as the archive's entry name.
fn archive_path(walk: &Walk) -> std::path::PathBuf {
    std::path::PathBuf::from(OsStr::from_bytes(walk.path()))
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
