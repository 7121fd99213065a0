//! Errors of packing and unpacking snapshots.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A limit that a snapshot or a restore went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Entries (files, directories, symlinks, hardlinks) in the archive.
    Files(u64),
    /// Bytes of file content before compression, all files together.
    Bytes(u64),
    /// Bytes of one file's content.
    FileBytes(u64),
    /// Bytes of the whole decompressed tar stream: file content plus a
    /// bounded overhead per entry (headers, long names), so that data
    /// attached to directories or endless chains of pax records cannot make
    /// a restore decompress without end.
    Stream(u64),
    /// Decompressed tar stream per byte of compressed archive read (beyond
    /// a fixed allowance): archives that expand like a zip bomb.
    Ratio(u64),
    /// Disk the restored tree would take: each entry's content rounded up
    /// to whole blocks plus an inode ([`crate::disk::estimate`]).
    Disk(u64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Files(n) => write!(f, "max_files = {n} entries"),
            Self::Bytes(n) => write!(f, "max_bytes = {n} bytes in total"),
            Self::FileBytes(n) => write!(f, "max_file_bytes = {n} bytes in one file"),
            Self::Stream(n) => write!(
                f,
                "{n} bytes of tar stream (max_bytes plus a per-entry overhead)"
            ),
            Self::Disk(n) => write!(
                f,
                "{n} bytes of disk (each entry's blocks and inode, not its declared size)"
            ),
            Self::Ratio(n) => write!(
                f,
                "a compression ratio of {n}:1 (decompressed bytes per compressed byte read)"
            ),
        }
    }
}

/// Why an archive entry was refused by a restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    AbsolutePath,
    ParentComponent,
    EmptyPath,
    NulByte,
    NameTooLong,
    TooDeep,
    /// A parent of the entry is a symlink of the archive.
    ThroughSymlink {
        link: String,
    },
    /// A parent of the entry is not a directory.
    ThroughNonDirectory,
    Duplicate,
    EmptySymlink,
    /// A hardlink whose target is not a regular file restored earlier from this archive.
    HardlinkTarget {
        target: String,
    },
    Device,
    Fifo,
    Sparse,
    UnsupportedType {
        kind: u8,
    },
    /// A pax `size` record that disagrees with the header.
    PaxSizeOverride,
    /// A pax or GNU long-name record too large to be a path.
    OversizeExtension,
    MalformedExtension,
    /// A manifest path not in its canonical form (`./a`, `a//b`, `a/`).
    NotCanonical,
    /// A manifest mode with bits beyond the permission bits.
    BadMode {
        mode: u32,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AbsolutePath => f.write_str("absolute path"),
            Self::ParentComponent => f.write_str("path contains a `..` component"),
            Self::EmptyPath => f.write_str("empty path"),
            Self::NulByte => f.write_str("path contains a NUL byte"),
            Self::NameTooLong => f.write_str("a path component is longer than 255 bytes"),
            Self::TooDeep => f.write_str("path is nested too deep"),
            Self::ThroughSymlink { link } => write!(f, "path goes through the symlink {link:?}"),
            Self::ThroughNonDirectory => f.write_str("a parent of the path is not a directory"),
            Self::Duplicate => f.write_str("the path was already restored by an earlier entry"),
            Self::EmptySymlink => f.write_str("symlink with an empty target"),
            Self::HardlinkTarget { target } => write!(
                f,
                "hardlink to {target:?}, which is not a regular file restored earlier"
            ),
            Self::Device => f.write_str("device node"),
            Self::Fifo => f.write_str("fifo"),
            Self::Sparse => f.write_str("sparse file entries are not supported"),
            Self::UnsupportedType { kind } => {
                write!(f, "unsupported entry type {:?}", char::from(*kind))
            }
            Self::PaxSizeOverride => f.write_str("pax size record disagrees with the header"),
            Self::OversizeExtension => f.write_str("long-name or pax record is too large"),
            Self::MalformedExtension => f.write_str("malformed pax record"),
            Self::NotCanonical => f.write_str("path is not in its canonical form"),
            Self::BadMode { mode } => write!(f, "mode {mode:o} has bits beyond 0o7777"),
        }
    }
}

/// Packing or unpacking a snapshot failed.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("invalid exclude pattern {pattern:?}: {reason}")]
    InvalidExclude {
        pattern: String,
        reason: &'static str,
    },
    #[error("opening snapshot root {path}")]
    OpenRoot {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading directory {path:?}")]
    ReadDir {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("reading metadata of {path:?}")]
    Stat {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("reading {path:?}")]
    ReadFile {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path:?} changed while it was being archived")]
    Changed { path: String },
    #[error("{path:?} is nested deeper than {max} directories")]
    TooDeep { path: String, max: usize },
    #[error("over the limit {limit} at {path:?}")]
    OverLimit { limit: Limit, path: String },
    #[error("setting up the zstd encoder")]
    Encoder {
        #[source]
        source: io::Error,
    },
    #[error("writing the archive")]
    Write {
        #[source]
        source: io::Error,
    },
    #[error("restore target {path} exists and is not an empty directory")]
    TargetNotEmpty { path: PathBuf },
    #[error("preparing restore target {path}")]
    Target {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("creating staging directory {path}")]
    Staging {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "decompressing the archive (truncated or corrupted zstd stream){}",
        fmt_at(at)
    )]
    Decompress {
        at: Option<String>,
        #[source]
        source: io::Error,
    },
    #[error("reading the tar archive{}", fmt_at(at))]
    ReadArchive {
        at: Option<String>,
        #[source]
        source: io::Error,
    },
    #[error("archive is truncated: {detail}{}", fmt_at(at))]
    Truncated {
        detail: &'static str,
        at: Option<String>,
    },
    #[error("refusing archive entry {entry:?}: {reason}")]
    Refused { entry: String, reason: Refusal },
    #[error("restoring {entry:?}")]
    Extract {
        entry: String,
        #[source]
        source: io::Error,
    },
    #[error("reading or writing a checkpoint manifest")]
    Manifest {
        #[source]
        source: serde_json::Error,
    },
    #[error("reading a checkpoint manifest: {reason} (at byte {at})")]
    ManifestFormat { at: usize, reason: &'static str },
    #[error("checkpoint manifest version {version} is not known here")]
    ManifestVersion { version: u32 },
    #[error("blob store: {what}")]
    Blob {
        what: String,
        #[source]
        source: paddock_core::blob::BlobError,
    },
    #[error("blob {key} does not hold the content its name promises (stored for {path:?})")]
    BlobMismatch { key: String, path: String },
    #[error("writing {path:?} into the workspace")]
    WriteFile {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("removing {path:?} from the workspace")]
    Remove {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("moving the restored tree into {path}")]
    Commit {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn fmt_at(at: &Option<String>) -> String {
    match at {
        Some(entry) => format!(" at entry {entry:?}"),
        None => String::new(),
    }
}

/// Display form of a path stored as bytes.
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn io_err(errno: nix::errno::Errno) -> io::Error {
    io::Error::from(errno)
}
