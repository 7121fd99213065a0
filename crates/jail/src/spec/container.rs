//! The container tier: what the docker backend (runc or gVisor) tells the
//! guest it starts as a container's PID 1 besides the policy.

use paddock_proto::CgroupEnforcement;
use serde::{Deserialize, Serialize};

/// The engine's side of a container sandbox, as the backend asked for it
/// and checked it from the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerTier {
    /// "docker" or "gvisor": which engine made the container.
    pub engine: String,
    /// Namespaces the engine was asked for; the backend checks them from the
    /// host before the handshake and fails the sandbox when one is missing.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The container's cgroup limits as the backend read them on the host
    /// (None when the engine gave no cgroup); checked before the handshake.
    #[serde(default)]
    pub cgroup: Option<CgroupEnforcement>,
    /// The workspace was made for this sandbox and starts empty: a
    /// workspace quota is then the engine's size-limited tmpfs at
    /// /workspace (as the native jail's), checked by the guest.
    #[serde(default)]
    pub temporary_workspace: bool,
    /// With network: variables every command gets besides the proxy's
    /// (the secrets' placeholders, never a value, and the CA bundle's
    /// paths), as the native tier's.
    #[serde(default)]
    pub egress_env: Vec<(String, String)>,
    /// The names and hosts of the secrets the host's egress proxy injects,
    /// for the enforcement report (never a value).
    #[serde(default)]
    pub secrets: Vec<paddock_proto::SecretNotice>,
}
