//! Subagents: a root run fans work out to child runs, each in its own
//! session, workspace copy and sandbox, and gets their results back.
//!
//! - `family`: the children of one root run: the spawn limit, the running
//!   slots (the rest queue), the status events in the parent's session, and
//!   stopping every child when the parent ends.
//! - `prepare`: the child's workspace, a copy of the parent's at spawn time;
//!   spawns close together share one pack, unpacked into all their
//!   directories in one pass.
//! - `child_dir`: when a child's workspace directory is removed (once its
//!   run ended, at the latest when the parent ends).
//! - `changes`: a build child's change set (its end snapshot against the
//!   spawn-time base, both from the blob store).
//! - `apply`: the change set written to the parent's workspace through the
//!   parent's guest, all or nothing: conflicts reported and never
//!   overwritten, a write failing midway undone.
//! - `tools`: what the root agent calls, each tool holding its run's
//!   family; children never get these tools.

mod apply;
mod changes;
mod child_dir;
mod contract;
mod family;
mod link_tree;
mod models;
mod prepare;
mod report;
mod tools;

pub use crate::run::SubagentModels;
pub(crate) use family::{Family, FamilyParts};
pub use models::ModelsByKey;
pub use report::{ChangeKind, ChangeSetState, ChangedPath, ChildReport};
pub(crate) use tools::{APPLY, REJECT, register_tools, withhold_tools};
