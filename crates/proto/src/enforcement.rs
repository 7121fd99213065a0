//! What a sandbox really enforces, as measured by the jail while setting it up.

use serde::{Deserialize, Serialize};

use crate::{NetworkPolicy, SecretNotice};

/// State of one hardening layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LayerState {
    /// Applied and in force.
    Enforced,
    /// Not applied because the operator allowed this downgrade; `reason` says why.
    Downgraded { reason: String },
    /// Not requested by the sandbox spec (for example no memory limit was asked).
    NotRequested,
}

impl LayerState {
    pub fn is_enforced(&self) -> bool {
        matches!(self, LayerState::Enforced)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupEnforcement {
    /// "v2" or "v1".
    pub version: String,
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// CPU quota in millicpus (1000 = one core).
    pub cpu_millis: Option<u64>,
    /// Host path(s) of the sandbox's cgroup(s).
    pub paths: Vec<String>,
}

/// Every layer the jail set up, reported by the guest's `info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforcement {
    /// Namespaces the guest really lives in (user, mount, pid, net, ipc, uts, cgroup).
    pub namespaces: Vec<String>,
    /// The uid map as (inside, host, count): native maps sandbox uid 0 to
    /// the sandbox's own block; a runc container runs as its own host uid B,
    /// `(B, B, 1)`. None where the guest cannot see it (gVisor's sentry).
    pub uid_map: Option<(u32, u32, u32)>,
    pub gid_map: Option<(u32, u32, u32)>,
    pub pivot_root: LayerState,
    /// The workspace mount is read-only (read-only mode, or a write scope:
    /// then `writable_paths` lists what stays writable).
    pub read_only_workspace: bool,
    /// Paths below /workspace (relative to it) that are writable although
    /// the workspace is read-only, each its own read-write mount with
    /// landlock write rights. Empty: all of the workspace is as
    /// `read_only_workspace` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_paths: Vec<String>,
    /// The named volumes mounted, each at its path, read-only where it
    /// says (the native jail and the microVM guest mount them; a
    /// container's guest checks the engine's mounts before it reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<crate::VolumeMount>,
    /// The network policy in force.
    pub network: NetworkPolicy,
    /// How the sandbox's egress is carried and guarded
    /// ([`NetworkPolicy::egress_path`]); absent with no network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_path: Option<String>,
    /// The secrets the egress proxy injects for their hosts (names and
    /// hosts only; inside, each name holds a placeholder).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretNotice>,
    pub cgroup: Option<CgroupEnforcement>,
    pub cgroup_state: LayerState,
    pub rlimits: LayerState,
    pub capabilities_dropped: LayerState,
    pub no_new_privs: LayerState,
    /// Landlock ABI version in force, when enforced.
    pub landlock_abi: Option<u32>,
    pub landlock: LayerState,
    pub seccomp: LayerState,
    /// The seccomp allowlist: the only syscalls the sandbox may make (some
    /// with argument limits, listed in `seccomp_denied`). Empty when seccomp
    /// is not enforced.
    #[serde(default)]
    pub seccomp_allowed: Vec<String>,
    /// What the seccomp filter denies: first the default (everything not in
    /// `seccomp_allowed`), then the calls and argument values refused on
    /// purpose.
    pub seccomp_denied: Vec<String>,
    /// The workspace quota: enforced (with `workspace_quota_limits`),
    /// downgraded (why), or not requested.
    #[serde(default = "not_requested")]
    pub workspace_quota: LayerState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_quota_limits: Option<WorkspaceQuotaEnforcement>,
    /// The virtual machine around the guest (microvm tier); None elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmEnforcement>,
    /// How the guest's own processes stand against the commands they run;
    /// filled in by the guest once it forked its agent (None in a report
    /// made before that, or by an older guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestIsolation>,
}

/// What keeps a command from reading or impersonating the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestIsolation {
    /// `PR_SET_DUMPABLE` 0 on the init (PID 1) and the agent, read back in
    /// each: no command opens their `/proc/PID/fd/*`, `mem` or `environ`.
    pub not_dumpable: LayerState,
    /// The host connection is on a close-on-exec fd above 2 of the agent
    /// alone: the init closed every fd it inherited, no command inherits it.
    pub connection_in_agent_only: bool,
    /// The connection's fds and the agent's stderr have mode 0, so no
    /// command reopens them through /proc even where the kernel ignores the
    /// dumpable flag (gVisor).
    pub connection_mode_zero: bool,
    /// The uid the guest serves as, and the uid its commands run as.
    pub guest_uid: u32,
    pub command_uid: u32,
    /// Why commands run as the guest's own uid, where they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_uid_reason: Option<String>,
}

/// The microVM a guest runs in, as the host's backend started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmEnforcement {
    /// `kvm` or `tcg` (QEMU's software emulation).
    pub accelerator: String,
    /// Why this accelerator: KVM probed and working, or why not.
    pub accelerator_reason: String,
    pub vcpus: u32,
    pub memory_bytes: u64,
    /// The guest kernel's release (`uname -r` inside).
    pub kernel: String,
    /// How the workspace reaches the VM: `virtio-9p` (a host directory), or
    /// `tmpfs` (a temporary workspace under a quota, in the VM's RAM).
    pub workspace_transport: String,
}

fn not_requested() -> LayerState {
    LayerState::NotRequested
}

/// How the kernel holds the workspace to its quota.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceQuotaEnforcement {
    /// `tmpfs`: the workspace is a size- and inode-limited tmpfs.
    /// `btrfs qgroup 0/N`: a persistent workspace is a btrfs subvolume of
    /// the server's volume pool whose quota group N limits its bytes (the
    /// host's kernel refuses the write past it; `inodes` is 0: no limit).
    pub mechanism: String,
    pub bytes: u64,
    pub inodes: u64,
}

impl Enforcement {
    /// The report of a guest that runs with no jail at all (development and tests
    /// of the guest itself): every layer is listed as not requested.
    pub fn unconfined() -> Self {
        Self {
            namespaces: Vec::new(),
            uid_map: None,
            gid_map: None,
            pivot_root: LayerState::NotRequested,
            read_only_workspace: false,
            writable_paths: Vec::new(),
            volumes: Vec::new(),
            network: NetworkPolicy::Full,
            egress_path: Some(
                "the host's own network (unconfined: nothing is isolated)".to_owned(),
            ),
            secrets: Vec::new(),
            cgroup: None,
            cgroup_state: LayerState::NotRequested,
            rlimits: LayerState::NotRequested,
            capabilities_dropped: LayerState::NotRequested,
            no_new_privs: LayerState::NotRequested,
            landlock_abi: None,
            landlock: LayerState::NotRequested,
            seccomp: LayerState::NotRequested,
            seccomp_allowed: Vec::new(),
            seccomp_denied: Vec::new(),
            workspace_quota: LayerState::NotRequested,
            workspace_quota_limits: None,
            vm: None,
            guest: None,
        }
    }
}
