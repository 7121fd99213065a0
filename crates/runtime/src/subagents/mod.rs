//! Subagents: a root run fans work out to child runs, each in its own
//! session, workspace copy and sandbox, and gets their results back.
//!
//! - [`family`]: the children of one root run: the spawn limit, the running
//!   slots (the rest queue), the status events in the parent's session, and
//!   stopping every child when the parent ends.
//! - [`prepare`]: the child's workspace, a copy of the parent's at spawn time;
//!   spawns close together share one pack, unpacked into all their
//!   directories in one pass.
//! - [`changes`]: a build child's change set (its end snapshot against the
//!   spawn-time base), applied to the parent's workspace through the
//!   parent's guest, conflicts reported and never overwritten.
//! - [`tools`]: what the root agent calls; children never get these tools.

mod changes;
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
