//! The services every front end (HTTP API, CLI, later MCP) calls with typed
//! commands, one folder each:
//!
//! - [`sandboxes`]: the sandbox service ([`SandboxService`]): long-lived
//!   sandboxes, their workspaces, commands, files, processes, terminals,
//!   quotas, expiry, and their snapshots (`sandboxes/snapshots/`).
//! - [`agent`]: the agent service ([`AgentService`]): sessions and runs over
//!   the runtime, with their checkpoints, memory, model choice and views.
//!
//! The paths front ends name (`service::commands`, `service::sessions`,
//! `service::checkpoints`, ...) are kept as re-exports.

pub mod agent;
pub mod sandboxes;

/// The agent service's module under the name front ends use for its
/// session and run commands.
pub use agent as sessions;
pub use agent::{
    AddMemory, AgentError, AgentService, CheckpointDiffView, CheckpointView, FileChangeView,
    MemoryQuery, MemoryView, ModelChoice, ModelPolicy, QuarantineView, RewindSession, RewindView,
    RunView, SessionView, SteerRun, SteeringView, TakenUp, WidenMemory, checkpoints, doctor,
    memory, models,
};
pub use sandboxes::{
    ActivityGuard, BackendEntry, BackendHealth, BackendRefused, Backends, BackendsError, BlobSweep,
    CPU_OVERCOMMIT, ComponentHealth, CreateSnapshot, CreateVolume, DEFAULT_CPU_MILLIS,
    DEFAULT_EXEC_OUTPUT_CAP, DEFAULT_TENANT_RUNS, DEFAULT_TENANT_SANDBOXES, DiskUsage,
    DuplicateSecret, ExecResult, ExecStream, ExitView, ExportWorkspace, FileEntry, Health,
    HostTotals, ImportSnapshot, ImportWorkspace, KNOWN_BACKENDS, LimitsPolicy, MAX_EXEC_OUTPUT_CAP,
    MAX_RESTORE_COUNT, MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_FILES, NetworkChanged, NetworkView, OnIdle,
    OperatorSecret, PauseSandbox, PauseView, PortTunnel, ProcessFollow, ProcessOutputView,
    ProcessView, Quota, QuotaScope, Quotas, RESUME_TIMEOUT, ReconcileReport, RestoreSnapshot,
    SandboxFilter, SandboxService, SandboxView, SearchView, SecretCatalog, SecretGrant, SecretRef,
    SecretRefused, ServiceConfig, ServiceError, SetNetwork, SnapshotArchive, SnapshotView,
    StoreWrites, SuppliedSecret, VolumeView, WorkspaceArchive, WorkspaceView, commands, secrets,
};
pub use sandboxes::{CreateVolumeSnapshot, SnapshotSource, VolumeSnapshotView};
