//! Tools: contracts, the built-in workspace/command/process/control tools, the
//! registry that offers them per mode, and the policy that checks every call.

mod contract;

pub use contract::{
    Access, Completion, CriterionClaim, Effect, PlanStep, Replay, TaskStatusArg, Tool,
    ToolContext, ToolContract, ToolError, ToolOutput, VerdictArg, WriteScope,
};
