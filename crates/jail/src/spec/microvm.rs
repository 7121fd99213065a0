//! The microvm tier: what the microvm backend tells the guest it boots as
//! the VM's init besides the policy.

use paddock_proto::{CgroupEnforcement, VmEnforcement};
use serde::{Deserialize, Serialize};

/// The 9p mount tag of the workspace share (QEMU's `mount_tag`).
pub const WORKSPACE_TAG: &str = "workspace";

/// The 9p mount tag of the policy's `index`-th named volume.
pub fn volume_tag(index: usize) -> String {
    format!("volume{index}")
}

/// The name of the virtio-serial port the host talks to the guest on.
pub const GUEST_PORT: &str = "org.paddock.guest";

/// The VM's side of a microvm sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MicroVmTier {
    /// The workspace owner on the host: the guest's commands run as it, so
    /// what they write over 9p is the owner's (QEMU itself runs as it too).
    pub uid: u32,
    pub gid: u32,
    /// The QEMU process's cgroup on the host, as the backend wrote it.
    #[serde(default)]
    pub cgroup: Option<CgroupEnforcement>,
    /// The VM as the host started it; the guest fills in its kernel.
    pub vm: VmEnforcement,
    /// The workspace was made for this sandbox and starts empty: under a
    /// workspace quota it is a tmpfs in the VM instead of the 9p share.
    #[serde(default)]
    pub temporary_workspace: bool,
    /// Present exactly when the policy has egress: the VM then has one
    /// virtio-net device on a tap in a namespace the host owns.
    #[serde(default)]
    pub network: Option<MicroVmNetwork>,
    /// The host's wall clock (ms since the epoch) when it sent the spec:
    /// the VM has no RTC, and TLS (the proxy's leaves for secrets' hosts)
    /// needs a clock that is not in 1970.
    #[serde(default)]
    pub clock_unix_ms: Option<u64>,
}

/// What the guest of a VM with network needs of its host-side egress (eth0
/// itself is configured by the image's init, from the kernel command line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MicroVmNetwork {
    /// The gateway on the tap: the VM's DNS (written to /etc/resolv.conf).
    pub resolver: std::net::Ipv4Addr,
    /// Variables every command gets: the proxy's at the gateway, and with
    /// secrets their placeholders (never a value) and the CA bundle's paths.
    #[serde(default)]
    pub egress_env: Vec<(String, String)>,
    /// The names and hosts of the secrets, for the enforcement report.
    #[serde(default)]
    pub secrets: Vec<paddock_proto::SecretNotice>,
    /// With secrets: the host's system roots and the sandbox's own CA
    /// (PEM), written at [`crate::CA_BUNDLE_PATH`] (the VM has no roots of
    /// its own: its /etc is the image's).
    #[serde(default)]
    pub ca_bundle: Option<String>,
}
