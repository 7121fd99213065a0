//! The checked reading of an archive that every reader of one shares (a
//! restore, a manifest, reading chosen files): the zstd stream decoded, long
//! names and pax records resolved, entry types, declared sizes and the
//! whole stream held to the limits, every entry path checked, and the
//! end-of-archive marker and the zstd checksum verified. What becomes of a
//! member is the [`Visitor`]'s business.

use std::io::{self, Read};
use std::rc::Rc;

use super::paths::components;
use super::reader::{Kind, Member, Pending, Source, SourceState, Step, read_step};
use super::tree::TreeError;
use crate::error::{Limit, Refusal, SnapshotError, lossy};
use crate::options::Limits;

/// Bytes accepted after the end-of-archive marker (GNU tar pads archives to
/// 10 KiB records); more is refused rather than decompressed for nothing.
const MAX_TRAILING: u64 = 1024 * 1024;
const TAR_BLOCK: u64 = 512;
/// Tar stream allowed per entry beyond file content: headers plus long
/// names and link names up to PATH_MAX.
const ENTRY_OVERHEAD: u64 = 16 * 1024;

/// The limits a reading holds an archive to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadLimits {
    pub(crate) limits: Limits,
    /// Largest single file.
    pub(crate) max_file_bytes: u64,
    /// Most disk the members may cost ([`crate::disk::estimate`]).
    pub(crate) max_disk_bytes: u64,
}

/// Why a visitor refused a member; the walk adds the entry's name.
pub(crate) enum Failure {
    Snapshot(SnapshotError),
    Tree(TreeError),
}

impl From<TreeError> for Failure {
    fn from(error: TreeError) -> Self {
        Self::Tree(error)
    }
}

impl From<SnapshotError> for Failure {
    fn from(error: SnapshotError) -> Self {
        Self::Snapshot(error)
    }
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Self::Tree(TreeError::Refused(refusal))
    }
}

/// A member below the root whose path was checked and split into `path`.
pub(crate) struct Checked<'m> {
    pub(crate) member: &'m Member,
    pub(crate) path: &'m [&'m [u8]],
}

/// What is done with each member of an archive.
pub(crate) trait Visitor {
    /// One member, in archive order; `data` yields a file's content.
    fn member(&mut self, entry: Checked<'_>, data: &mut dyn Read) -> Result<(), Failure>;
}

/// Reads the decompressed tar stream `tar` to its end, handing each member
/// to `visitor`; the declared bytes of all its files.
pub(crate) fn walk<R: Read>(
    tar: R,
    limits: &ReadLimits,
    visitor: &mut impl Visitor,
) -> Result<u64, SnapshotError> {
    let state = Rc::new(SourceState::default());
    let mut source = Source::new(tar, Rc::clone(&state));
    let mut archive = tar::Archive::new(&mut source);
    let entries = archive
        .entries()
        .map_err(|e| state.error(e, None))?
        .raw(true);
    let mut pending = Pending::default();
    let mut last: Option<Vec<u8>> = None;
    let mut bytes = 0u64;
    // What the members so far cost on disk, charged before each is written.
    let mut disk = 0u64;
    // Where the end-of-archive marker must start.
    let mut end_of_members = 0u64;
    let budget = stream_budget(&limits.limits);
    for entry in entries {
        let mut entry = entry.map_err(|e| state.error(e, last.as_deref()))?;
        end_of_members = entry.raw_file_position() + entry.size().div_ceil(TAR_BLOCK) * TAR_BLOCK;
        let step = read_step(&mut entry, &mut pending, &state)?;
        if let Step::Member(member) = &step
            && member.kind == Kind::File
        {
            check_size(limits, bytes, member)?;
        }
        // Before the data of a member is read, or skipped by the tar reader.
        if end_of_members > budget {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Stream(budget),
                path: match &step {
                    Step::Member(member) => lossy(&member.path),
                    Step::Extension => lossy(&entry.header().path_bytes()),
                },
            });
        }
        let member = match step {
            Step::Extension => continue,
            Step::Member(member) => member,
        };
        disk = disk.saturating_add(disk_cost(&member));
        if disk > limits.max_disk_bytes {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Disk(limits.max_disk_bytes),
                path: lossy(&member.path),
            });
        }
        visit(visitor, &member, &mut entry).map_err(|error| match error {
            Failure::Snapshot(error) => error,
            Failure::Tree(TreeError::Source(e)) => state.error(e, Some(&member.path)),
            Failure::Tree(error) => tree_error(error, &member.path),
        })?;
        if member.kind == Kind::File {
            bytes += member.size;
        }
        last = Some(member.path);
    }
    // Ends the archive's borrow of `source`.
    let _ = archive.into_inner();

    if !pending.is_empty() {
        return Err(SnapshotError::Truncated {
            detail: "long-name or pax records describe no entry",
            at: last.as_deref().map(lossy),
        });
    }
    if state.consumed() < end_of_members + TAR_BLOCK {
        return Err(SnapshotError::Truncated {
            detail: "no end-of-archive marker",
            at: last.as_deref().map(lossy),
        });
    }
    drain_trailing(&mut source, &state)?;
    Ok(bytes)
}

/// Checks the member's path and hands it on; the root itself (`./`) is no
/// member: the target keeps its own metadata.
fn visit(visitor: &mut impl Visitor, member: &Member, data: &mut dyn Read) -> Result<(), Failure> {
    let path = components(&member.path)?;
    if path.is_empty() {
        return match member.kind {
            Kind::Dir => Ok(()),
            _ => Err(Refusal::EmptyPath.into()),
        };
    }
    visitor.member(
        Checked {
            member,
            path: &path,
        },
        data,
    )
}

/// Checks a file's declared size against the limits before anything is
/// read; `bytes` were declared by the files before it.
fn check_size(limits: &ReadLimits, bytes: u64, member: &Member) -> Result<(), SnapshotError> {
    let over = |limit| SnapshotError::OverLimit {
        limit,
        path: lossy(&member.path),
    };
    if member.size > limits.max_file_bytes {
        return Err(over(Limit::FileBytes(limits.max_file_bytes)));
    }
    if bytes.saturating_add(member.size) > limits.limits.max_bytes {
        return Err(over(Limit::Bytes(limits.limits.max_bytes)));
    }
    Ok(())
}

/// What a member will cost on disk once written: a file its content's
/// blocks and an inode, a directory a block and an inode, a symlink or a
/// hard link an inode (a link adds a name to a directory, charged as an
/// inode too).
fn disk_cost(member: &Member) -> u64 {
    match member.kind {
        Kind::File => crate::disk::estimate(member.size),
        Kind::Dir => crate::disk::DIR_BYTES,
        Kind::Symlink | Kind::Hardlink => crate::disk::INODE_BYTES,
    }
}

/// How much tar stream a reading within the limits can need.
fn stream_budget(limits: &Limits) -> u64 {
    let entries = limits.max_files.saturating_add(1);
    limits
        .max_bytes
        .saturating_add(entries.saturating_mul(ENTRY_OVERHEAD))
        .saturating_add(MAX_TRAILING)
}

/// Reads what follows the end marker to the end of the zstd stream, so that
/// a truncated or corrupted tail (and the frame checksum) is noticed before
/// the reading is trusted.
fn drain_trailing<R: Read>(
    source: &mut Source<R>,
    state: &SourceState,
) -> Result<(), SnapshotError> {
    let drained = io::copy(&mut source.take(MAX_TRAILING + 1), &mut io::sink())
        .map_err(|e| state.error(e, None))?;
    if drained > MAX_TRAILING {
        return Err(SnapshotError::ReadArchive {
            at: None,
            source: io::Error::other("more than 1 MiB of data after the end of the archive"),
        });
    }
    Ok(())
}

/// The error of a tree operation (or check) on the entry at `path`.
pub(crate) fn tree_error(error: TreeError, path: &[u8]) -> SnapshotError {
    let entry = lossy(path);
    match error {
        TreeError::Refused(reason) => SnapshotError::Refused { entry, reason },
        TreeError::ShortData => SnapshotError::Truncated {
            detail: "an entry's data ends before its declared size",
            at: Some(entry),
        },
        TreeError::Io(source) | TreeError::Source(source) => {
            SnapshotError::Extract { entry, source }
        }
        TreeError::OverFiles(max) => SnapshotError::OverLimit {
            limit: Limit::Files(max),
            path: entry,
        },
    }
}
