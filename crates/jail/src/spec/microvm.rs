//! The microvm tier: what the microvm backend tells the guest it boots as
//! the VM's init besides the policy.

use paddock_proto::{CgroupEnforcement, VmEnforcement};
use serde::{Deserialize, Serialize};

/// The 9p mount tag of the workspace share (QEMU's `mount_tag`).
pub const WORKSPACE_TAG: &str = "workspace";

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
}
