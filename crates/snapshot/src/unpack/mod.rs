//! Unpacking: a safe, all-or-nothing restore of an archive into a directory.

mod fanout;
mod paths;
mod reader;
mod staging;
mod tree;

use std::io::{self, Read};
use std::path::Path;
use std::rc::Rc;

use crate::error::{Limit, SnapshotError, lossy};
use crate::options::{SymlinkPolicy, UnpackOptions};
use paths::{check_symlink_target, components};
use reader::{Kind, Member, Pending, Source, SourceState, Step, decoder, read_step};
use staging::Staging;
use tree::{Tree, TreeError};

pub use fanout::unpack_many;

/// Archive data is copied through a buffer this large.
const COPY_BUF: usize = 256 * 1024;
/// Bytes accepted after the end-of-archive marker (GNU tar pads archives to
/// 10 KiB records); more is refused rather than decompressed for nothing.
const MAX_TRAILING: u64 = 1024 * 1024;
const TAR_BLOCK: u64 = 512;
/// Tar stream allowed per entry beyond file content: headers plus long
/// names and link names up to PATH_MAX.
const ENTRY_OVERHEAD: u64 = 16 * 1024;

/// What [`unpack`] restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpackStats {
    pub files: u64,
    /// Directories created, including parents the archive did not list.
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    /// File content written.
    pub bytes: u64,
    /// Symlinks left out under [`SymlinkPolicy::Skip`].
    pub skipped_symlinks: Vec<String>,
}

/// Restores the zstd-compressed tar archive read from `input` into `target`,
/// which must not exist or be an empty directory.
///
/// Refused, with an error naming the entry: absolute paths, `..` components,
/// paths through a symlink or a non-directory, symlinks that could resolve
/// outside the target (see [`SymlinkPolicy`]), hardlinks except to a regular
/// file restored earlier from the same archive, devices, fifos, sparse and
/// unknown entries, duplicates, and anything over the limits (declared sizes
/// are checked before anything is written, and actual bytes are counted).
/// Modes keep the permission bits only (no setuid, setgid or sticky); owners
/// are the restorer's or [`UnpackOptions::owner`]; mtimes of files, symlinks
/// and directories are restored.
///
/// The tree is built in a staging directory and moved into place only when
/// the whole archive, its zstd checksum included, was read without error; on
/// any error the staging directory is removed and the target is untouched.
pub fn unpack<R: Read>(
    input: R,
    target: &Path,
    opts: &UnpackOptions,
) -> Result<UnpackStats, SnapshotError> {
    let decoder =
        decoder(input).map_err(|source| SnapshotError::Decompress { at: None, source })?;
    restore(decoder, target, opts)
}

/// Restores the decompressed tar stream `tar` into `target`, all or nothing.
fn restore<R: Read>(
    tar: R,
    target: &Path,
    opts: &UnpackOptions,
) -> Result<UnpackStats, SnapshotError> {
    let staging = Staging::prepare(target)?;
    let stats = extract(tar, &staging, opts)?;
    staging.commit(opts.owner)?;
    tracing::debug!(
        target = %target.display(),
        files = stats.files,
        dirs = stats.dirs,
        bytes = stats.bytes,
        "restored snapshot"
    );
    Ok(stats)
}

fn extract<R: Read>(
    tar: R,
    staging: &Staging,
    opts: &UnpackOptions,
) -> Result<UnpackStats, SnapshotError> {
    let state = Rc::new(SourceState::default());
    let mut source = Source::new(tar, Rc::clone(&state));
    let mut tree = Tree::new(
        std::os::fd::AsFd::as_fd(staging.root()),
        opts.owner,
        opts.limits.max_files,
    );
    let mut restorer = Restorer {
        opts,
        bytes: 0,
        skipped_symlinks: Vec::new(),
        buf: vec![0; COPY_BUF],
    };

    let mut archive = tar::Archive::new(&mut source);
    let entries = archive
        .entries()
        .map_err(|e| state.error(e, None))?
        .raw(true);
    let mut pending = Pending::default();
    let mut last: Option<Vec<u8>> = None;
    // Where the end-of-archive marker must start.
    let mut end_of_members = 0u64;
    let budget = stream_budget(opts);
    for entry in entries {
        let mut entry = entry.map_err(|e| state.error(e, last.as_deref()))?;
        end_of_members = entry.raw_file_position() + entry.size().div_ceil(TAR_BLOCK) * TAR_BLOCK;
        let step = read_step(&mut entry, &mut pending, &state)?;
        if let Step::Member(member) = &step
            && member.kind == Kind::File
        {
            restorer.check_size(member)?;
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
        restorer
            .restore(&mut tree, &member, &mut entry)
            .map_err(|error| match error {
                Failure::Snapshot(error) => error,
                Failure::Tree(TreeError::Source(e)) => state.error(e, Some(&member.path)),
                Failure::Tree(error) => tree_error(error, &member.path),
            })?;
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

    let created = tree.finish().map_err(|error| tree_error(error, b"."))?;
    Ok(UnpackStats {
        files: created.files,
        dirs: created.dirs,
        symlinks: created.symlinks,
        hardlinks: created.hardlinks,
        bytes: restorer.bytes,
        skipped_symlinks: restorer.skipped_symlinks,
    })
}

/// How much tar stream a restore within the limits can need.
fn stream_budget(opts: &UnpackOptions) -> u64 {
    let entries = opts.limits.max_files.saturating_add(1);
    opts.limits
        .max_bytes
        .saturating_add(entries.saturating_mul(ENTRY_OVERHEAD))
        .saturating_add(MAX_TRAILING)
}

/// Reads what follows the end marker to the end of the zstd stream, so that
/// a truncated or corrupted tail (and the frame checksum) is noticed before
/// the restore is committed.
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

enum Failure {
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

struct Restorer<'o> {
    opts: &'o UnpackOptions,
    /// Declared bytes of the files restored so far.
    bytes: u64,
    skipped_symlinks: Vec<String>,
    buf: Vec<u8>,
}

impl Restorer<'_> {
    fn restore(
        &mut self,
        tree: &mut Tree<'_>,
        member: &Member,
        data: &mut dyn Read,
    ) -> Result<(), Failure> {
        let refuse = |reason| SnapshotError::Refused {
            entry: lossy(&member.path),
            reason,
        };
        let path = components(&member.path).map_err(refuse)?;
        if path.is_empty() {
            // The root itself (`./`): the target keeps its own metadata.
            return match member.kind {
                Kind::Dir => Ok(()),
                _ => Err(refuse(crate::Refusal::EmptyPath).into()),
            };
        }
        match member.kind {
            Kind::Dir => tree.dir(&path, member.mode, member.mtime)?,
            Kind::File => {
                // Sizes were checked by the caller, before anything was read.
                tree.file(
                    &path,
                    member.mode,
                    member.mtime,
                    member.size,
                    data,
                    &mut self.buf,
                )?;
                self.bytes += member.size;
            }
            Kind::Symlink => match check_symlink_target(path.len() - 1, &member.link) {
                Ok(()) => tree.symlink(&path, &member.link, member.mtime)?,
                Err(_) if self.opts.unsafe_symlinks == SymlinkPolicy::Skip => {
                    tree.skipped_symlink(&path);
                    self.skipped_symlinks.push(lossy(&member.path));
                }
                Err(reason) => return Err(refuse(reason).into()),
            },
            Kind::Hardlink => {
                let target = components(&member.link).map_err(refuse)?;
                tree.hardlink(&path, &target)?;
            }
        }
        Ok(())
    }

    /// Checks the declared size against the limits before anything is written.
    fn check_size(&self, member: &Member) -> Result<(), SnapshotError> {
        let over = |limit| SnapshotError::OverLimit {
            limit,
            path: lossy(&member.path),
        };
        if member.size > self.opts.max_file_bytes {
            return Err(over(Limit::FileBytes(self.opts.max_file_bytes)));
        }
        if self.bytes.saturating_add(member.size) > self.opts.limits.max_bytes {
            return Err(over(Limit::Bytes(self.opts.limits.max_bytes)));
        }
        Ok(())
    }
}

fn tree_error(error: TreeError, path: &[u8]) -> SnapshotError {
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
