//! Checkpoints: a workspace recorded as a [`Manifest`] (path -> content
//! key, mode, size and stat) whose files are blobs of their own in the
//! content-addressed blob store, so what a checkpoint costs follows what
//! changed since the previous one, not the workspace's size:
//!
//! - [`capture`] walks the tree and hashes only the files whose stat
//!   differs from the previous manifest's; a file's content is stored only
//!   when the store does not hold that content yet, so an unchanged file is
//!   never stored twice.
//! - [`restore`] makes a directory what a manifest records, touching only
//!   what differs from its current state, through `O_NOFOLLOW` directory
//!   descriptors, after refusing a manifest with any unsafe path.
//! - [`diff`] lists the paths two manifests disagree on; [`unified_text`]
//!   gives a text file's unified diff.

mod capture;
mod codec;
mod diff;
mod manifest;
mod previous;
mod restore;

pub use capture::{CaptureOptions, CaptureStats, DiskBudget, capture};
pub use diff::{ChangeKind, PathChange, diff, unified_text};
pub use manifest::{Entry, MANIFEST_VERSION, Manifest, Node, StatKey};
pub use restore::{RestoreStats, restore};
