//! The agent runtime's scenarios, one module per area, in one test binary.

mod support;

mod budgets;
mod checkpoint_tenants;
mod checkpoints;
mod compaction;
mod event_format;
mod events;
mod memory;
mod resume;
mod scenarios;
mod sessions;
mod subagents;
mod tools;
mod writers;
