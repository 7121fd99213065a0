//! Tools: contracts, the built-in workspace/command/process/control tools, the
//! registry that offers them per mode, and the policy that checks every call.
//!
//! A guest that refuses a request (no such file, read-only workspace, ...)
//! gives a result with `is_error` set that the model reads; only a lost
//! connection to the guest is a [`ToolError::Guest`].

pub(crate) mod args;
mod command;
mod contract;
mod control;
mod edit;
mod execute;
mod lines;
mod live;
mod output;
pub mod paths;
mod policy;
mod process;
mod read;
mod registry;
mod search;
#[cfg(test)]
pub(crate) mod testing;
mod tree;
mod write;

pub use command::RunCommand;
pub use contract::{
    Access, Completion, CriterionClaim, Effect, IDEMPOTENCY_KEY_ENV, PathArgument, PlanStep,
    Replay, Role, TaskStatusArg, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
    VerdictArg, WriteScope,
};
pub use control::{AskUser, CompleteTask, ReportProgress, UpdatePlan};
pub use edit::EditFile;
pub use execute::execute;
pub use live::{LiveOutput, OutputSink};
pub use policy::Policy;
pub use process::{ProcessOutputTool, ProcessStart, ProcessStop};
pub use read::ReadFile;
pub use registry::ToolRegistry;
pub use search::Search;
pub use tree::WorkspaceTree;
pub use write::WriteFile;
