//! Unpacking: a safe, all-or-nothing restore of an archive into a directory.

mod fanout;
pub(crate) mod names;
pub(crate) mod paths;
pub(crate) mod reader;
mod staging;
pub(crate) mod tree;
pub(crate) mod walk;

use std::io::Read;
use std::path::Path;

use crate::error::SnapshotError;
use crate::options::UnpackOptions;
use paths::{check_symlink_target, components};
use reader::{Kind, decoder};
use staging::Staging;
use tree::Tree;
use walk::{Checked, Failure, ReadLimits, Visitor, tree_error, walk};

pub use fanout::unpack_many;

/// Archive data is copied through a buffer this large.
const COPY_BUF: usize = 256 * 1024;

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
}

impl UnpackStats {
    /// Everything the restore created, what its [`crate::Limits::max_files`]
    /// counted: files, directories (with parents the archive left implied),
    /// symlinks and hardlinks.
    pub fn entries(&self) -> u64 {
        self.files + self.dirs + self.symlinks + self.hardlinks
    }
}

/// Restores the zstd-compressed tar archive read from `input` into `target`,
/// which must not exist or be an empty directory.
///
/// Refused, with an error naming the entry: absolute paths, `..` components,
/// paths through a symlink or a non-directory, symlinks with an empty target,
/// hardlinks except to a regular
/// file restored earlier from the same archive, devices, fifos, sparse and
/// unknown entries, duplicates, and anything over the limits (declared sizes
/// are checked before anything is written, and actual bytes are counted).
/// A symlink is created as a link whatever its target (absolute, `..`): it is
/// never followed while the tree is written, and nothing is restored through
/// it, so it only points somewhere for whoever resolves it later (a sandbox,
/// inside its own root).
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
    let mut restorer = Restorer {
        tree: Tree::new(
            std::os::fd::AsFd::as_fd(staging.root()),
            opts.owner,
            opts.limits.max_files,
        ),
        buf: vec![0; COPY_BUF],
    };
    let bytes = walk(tar, &ReadLimits::from(opts), &mut restorer)?;
    let created = restorer
        .tree
        .finish()
        .map_err(|error| tree_error(error, b"."))?;
    Ok(UnpackStats {
        files: created.files,
        dirs: created.dirs,
        symlinks: created.symlinks,
        hardlinks: created.hardlinks,
        bytes,
    })
}

impl From<&UnpackOptions> for ReadLimits {
    fn from(opts: &UnpackOptions) -> Self {
        Self {
            limits: opts.limits,
            max_file_bytes: opts.max_file_bytes,
            max_disk_bytes: opts.max_disk_bytes,
        }
    }
}

struct Restorer<'r> {
    tree: Tree<'r>,
    buf: Vec<u8>,
}

impl Visitor for Restorer<'_> {
    fn member(&mut self, entry: Checked<'_>, data: &mut dyn Read) -> Result<(), Failure> {
        let Checked { member, path } = entry;
        let tree = &mut self.tree;
        match member.kind {
            Kind::Dir => tree.dir(path, member.mode, member.mtime)?,
            // Sizes were checked by the walk, before anything was read.
            Kind::File => tree.file(
                path,
                member.mode,
                member.mtime,
                member.size,
                data,
                &mut self.buf,
            )?,
            Kind::Symlink => {
                check_symlink_target(&member.link)?;
                tree.symlink(path, &member.link, member.mtime)?;
            }
            Kind::Hardlink => {
                let target = components(&member.link)?;
                tree.hardlink(path, &target)?;
            }
        }
        Ok(())
    }
}
