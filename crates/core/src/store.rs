//! Store port: the control plane's persistence contract.
//!
//! The orchestrator keeps tenants, workspaces, sandboxes, sessions, runs, their
//! events and tool invocations, snapshots and leases behind [`Store`]. Every read
//! of an entity that belongs to a tenant takes the tenant and never returns
//! another tenant's rows. Writes made on behalf of a session's driver carry its
//! [`Lease`]; the store refuses them once a newer holder exists ([`StoreError::StaleLease`]).

/// An enum stored as text: `as_str` for writing, `parse` for reading back.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The variant written as `s`, if any.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

mod agent;
mod checkpoint;
mod clock;
mod error;
mod lease;
mod memory;
mod network_change;
mod port;
mod quarantine;
mod recorded_spec;
mod records;
mod run;
mod writer;

pub use agent::{
    Budgets, CriterionReview, DriverKind, EndReason, Goal, GoalStatus, Plan, Review, RunMode,
    RunUsage, STEERING_TEXT_MAX, SessionPatch, SteeringCaps, SteeringClose, SteeringClosed,
    SteeringDelivered, SteeringDelivery, SteeringMessage, StoredMessage, SubagentProfile, Task,
    TaskStatus, Verdict,
};
pub use checkpoint::{Checkpoint, CheckpointReason, HistoryPoint, Rewind, visible_messages};
pub use clock::{Clock, ManualClock, SystemClock, Timestamp};
pub use error::{BoxError, StoreError};
pub use lease::Lease;
pub use memory::{
    Compaction, MEMORY_TEXT_MAX, MemoryApproval, MemoryFilter, MemoryKind, MemoryRecord,
    MemoryScope, MemoryStatus, SessionMemory, StoredSessionMemory,
};
pub use network_change::NetworkChangeRecord;
pub use port::{MAX_PAGE, Page, SnapshotFilter, Store};
pub use quarantine::QuarantinedRow;
pub use recorded_spec::RecordedSpec;
pub use records::{
    OnIdle, PauseMode, SandboxPause, SandboxRecord, SandboxState, Session, SessionDeletion,
    SessionStatus, SharedHistory, SnapshotRecord, Tenant, Workspace,
};
pub use run::{
    NewEvent, Run, RunEvent, RunState, RunUpdate, ToolInvocation, ToolOutcome, ToolStatus,
};
pub use writer::{WriterLeaseError, acquire_writer, release_dead_holder, release_dead_writer};
