//! Sandbox port: what every sandbox backend (native, docker, microvm) offers.
//!
//! A [`SandboxBackend`] turns a [`SandboxSpec`] into a running [`Sandbox`]; the
//! sandbox hands out its guest agent as [`GuestOps`], through which every
//! protocol operation (exec, background processes, files, search, info) runs.
//! Callers above the adapters (runtime, API, CLI) use only these types and the
//! wire types of `paddock_proto`.

mod egress;
mod error;
mod guest;
mod id;
mod orphans;
mod port;
mod spec;

pub use egress::{EGRESS_LOG_LEN, EgressLog, EgressSince, NetworkSwap};
pub use error::{BoxError, GuestError, SandboxError};
pub use guest::{
    ExecEvent, ExecOutput, Execution, FileData, GuestInfo, GuestOps, ProcessOutput, ProcessStarted,
    ProcessStatus, SearchResults, SnapshotExportOptions, SnapshotImportOptions, WriteOptions,
};
pub use id::{InvalidSandboxId, SandboxId};
pub use orphans::OrphanReport;
pub use port::{Sandbox, SandboxBackend};
// The sandbox-spec vocabulary is defined once in proto, shared with the jail.
pub use paddock_proto::{
    DowngradeLayer, InvalidSandboxSpec, MAX_WRITABLE_PATH_LEN, MAX_WRITABLE_PATHS, NetworkPolicy,
    SandboxLimits, SandboxPolicy,
};
pub use spec::{HostVolumeMount, SandboxInfo, SandboxSpec};
