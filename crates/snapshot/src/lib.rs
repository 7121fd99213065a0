//! Workspace snapshots: a directory tree packed as a tar archive compressed
//! with zstd, restored safely, and kept in a content-addressed blob store.
//!
//! - [`pack`] streams a tree into any writer (never staging the archive),
//!   skipping excluded names, enforcing the file and byte limits and hashing
//!   the compressed stream into the [`BlobKey`] it will be stored under.
//! - [`unpack`] restores an archive into a new or empty directory, refusing
//!   every entry that could write outside it (absolute paths, `..`, writes
//!   through symlinks, hardlinks, devices, fifos, oversize entries); symlinks
//!   are created as links whatever they point at, and never followed; it works in a staging directory and only moves the result into
//!   place when everything succeeded, so a failed restore leaves nothing.
//! - [`archive`] reads an archive without restoring it (its manifest, the
//!   contents of chosen files) through the same checks as [`unpack`].
//! - [`snapshot_record`] builds a snapshot's row from the statistics of its
//!   pack (or of the restore that checked it), so its counts mean one thing.
//! - [`checkpoint`] records a workspace as a manifest of content-addressed
//!   files, incrementally, and restores one in place, touching only what differs.
//! - [`LocalBlobStore`] implements [`paddock_core::blob::BlobStore`] over a
//!   local directory.
//!
//! Everything here is blocking `std::io`: async callers run it in
//! `spawn_blocking` (host) or on a plain thread (guest agent).

pub mod archive;
pub mod checkpoint;
pub mod disk;
mod error;
mod exclude;
mod hashing;
mod local_store;
mod options;
mod pack;
mod record;
mod tree_walk;
mod unpack;

pub use error::{Limit, Refusal, SnapshotError};
pub use hashing::HashingWriter;
pub use local_store::LocalBlobStore;
pub use options::{
    DEFAULT_EXCLUDES, DEFAULT_LEVEL, DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, Limits,
    MAX_REQUEST_BYTES, MAX_REQUEST_FILES, Owner, PackOptions, UnpackOptions,
};
pub use pack::{PackStats, SkippedEntry, pack};
pub use paddock_core::blob::BlobKey;
pub use record::{ArchiveCounts, snapshot_record};
pub use tree_walk::SpecialKind;
pub use unpack::{UnpackStats, unpack, unpack_many};
