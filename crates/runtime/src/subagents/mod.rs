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
//! - `tools`: what the root agent calls; children never get these tools.

mod apply;
mod changes;
mod child_dir;
mod contract;
mod family;
mod link_tree;
mod prepare;
mod report;
mod tools;

use std::fmt;
use std::sync::Arc;

use paddock_core::model::ModelProvider;
use paddock_core::store::SubagentProfile;

pub use family::SubagentHandle;
pub(crate) use family::{Family, FamilyParts, Gate};
pub use report::{ChangeKind, ChangeSetState, ChangedPath, ChildReport};
pub(crate) use tools::{refuse_for_child, register_root_tools};

/// Where the model of each subagent comes from (a test gives each child its
/// own script; a product may pick a cheaper model for `explore`).
pub trait SubagentModels: Send + Sync + fmt::Debug {
    /// The model for the child working on `task_id` with `profile`; None:
    /// the parent's model.
    fn model(&self, profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>>;
}
