//! The agent runtime: a goal comes in, a model plans and calls tools that run
//! inside the session's sandbox under a policy, and every step is persisted as
//! an event before it is published.
//!
//! [`Runtime`] is the one entry point front ends use: sessions (create, list,
//! rename, archive, fork), runs ([`Runtime::start_run`], cancel, wait) and
//! the session event stream ([`Runtime::event_stream`]). Event kinds and
//! their payloads are in [`events`]. Root runs can fan work out to
//! [`subagents`], each in its own session, workspace copy and sandbox.

mod checkpoints;
mod config;
mod context;
mod deletion;
pub mod drivers;
mod error;
pub mod events;
mod memory;
mod recover;
mod run;
mod runtime;
mod sessions;
mod settings;
mod snapshot_limits;
mod steering;
pub mod subagents;
pub mod tools;
mod usage;
mod util;
mod workspace;

pub use checkpoints::{CheckpointDiff, FileChange, Rewound};
pub use config::{
    DEFAULT_BUDGET_MAX, DEFAULT_MAX_CHECKPOINTS_PER_SESSION, DiskGuard, DiskUse, MemoryReview,
    OwnerProbe, RuntimeConfig, RuntimeDeps, SnapshotSettings, SteeringSettings, StorageSettings,
    SubagentSettings,
};
pub use deletion::SessionDeleted;
pub use drivers::external::{
    DEFAULT_AGENTS_DIR, ExternalDriver, ExternalSettings, ExternalSettingsError,
};
pub use drivers::{
    AgentDriver, BuiltinDriver, DriverCapabilities, DriverEgress, DriverRefused, Drivers,
    ModelTarget, ResumeSupport,
};
pub use error::RuntimeError;
pub use events::stream::EventStream;
pub use memory::NewMemory;
pub use recover::{RecoveryReport, SkippedRun};
pub use run::{
    AdmissionAsk, AdmissionGrant, AdmissionRefused, MAX_QUEUE_WAIT, MAX_QUEUED_PER_TENANT,
    QueueSettings, QueuedRun, ResumeRun, RunBackend, RunHandle, SandboxAdmission, StartRun,
    SubagentModels, WhenFull,
};
pub use runtime::{ChangesDecided, ChangesDecision, Runtime};
pub use settings::SettingsError;
