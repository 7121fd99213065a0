//! What a caller asks of a sandbox, and what it got.

use std::collections::BTreeSet;
use std::path::PathBuf;

use paddock_proto::NetworkMode;
use serde::{Deserialize, Serialize};

use super::SandboxId;

/// A request for one sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// Host directory mounted at /workspace. None: the backend makes a fresh
    /// empty directory and removes it when the sandbox is destroyed.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// The workspace is read-only inside the sandbox (mounts and landlock).
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub network: NetworkMode,
    #[serde(default)]
    pub limits: SandboxLimits,
    /// Hardening layers the operator allows to be missing; any other layer
    /// that cannot be applied fails the sandbox.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
}

/// Resource limits of one sandbox. `None` means no limit of that kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxLimits {
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// CPU quota in millicpus (1000 = one core).
    pub cpu_millis: Option<u64>,
    /// Size of the sandbox's /tmp.
    pub tmp_bytes: u64,
    /// Most open files per process.
    pub open_files: u64,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: Some(1 << 30),
            pids: Some(512),
            cpu_millis: None,
            tmp_bytes: 256 << 20,
            open_files: 4096,
        }
    }
}

/// A hardening layer an operator may explicitly allow to be missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DowngradeLayer {
    Cgroups,
    Landlock,
    Seccomp,
    /// The idmapped bind of the workspace (host root running sandboxes with a uid range).
    IdmappedWorkspace,
}

impl DowngradeLayer {
    pub const ALL: [DowngradeLayer; 4] = [
        DowngradeLayer::Cgroups,
        DowngradeLayer::Landlock,
        DowngradeLayer::Seccomp,
        DowngradeLayer::IdmappedWorkspace,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DowngradeLayer::Cgroups => "cgroups",
            DowngradeLayer::Landlock => "landlock",
            DowngradeLayer::Seccomp => "seccomp",
            DowngradeLayer::IdmappedWorkspace => "idmapped_workspace",
        }
    }
}

/// A running sandbox, as its backend created it. What the jail really
/// enforces is asked of the guest ([`super::GuestOps::info`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub id: SandboxId,
    /// Name of the backend that runs it ("native", ...).
    pub backend: String,
    /// Host directory behind /workspace.
    pub workspace: PathBuf,
    /// The workspace was made for this sandbox and goes away with it.
    pub workspace_is_temporary: bool,
    pub read_only: bool,
    pub network: NetworkMode,
    pub limits: SandboxLimits,
    /// Version string the guest agent reported in the handshake.
    pub agent_version: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}
