//! The hardening a guest applies to itself where the isolation boundary
//! was made outside it (a container engine's container, a microVM): the
//! same rlimits, no_new_privs, landlock and seccomp table as the native
//! jail, then the report of what is in force. The container and microVM
//! guests differ only in what they check or set up before it.

use paddock_proto::{
    CgroupEnforcement, DowngradeLayer, Enforcement, LayerState, SandboxLimits, SandboxPolicy,
    SecretNotice, VmEnforcement,
};

use crate::host::workspace_quota::QuotaPlan;
use crate::process::threads::SingleThreaded;
use crate::{
    JailError, init::landlock_rules, init::rlimits, seccomp::bpf as seccomp_bpf,
    seccomp::rules as seccomp_rules, sys,
};

/// What one guest's boundary is and asks for, as its spec and the checks
/// before [`harden`] found it.
#[derive(Debug)]
pub(crate) struct GuestLayers<'a> {
    /// The sandbox's policy, as its spec carries it.
    pub policy: &'a SandboxPolicy,
    /// The policy's write scope validated, relative to /workspace.
    pub writable_paths: Vec<String>,
    /// The cgroup the host put the sandbox in, as the backend read it.
    pub cgroup: Option<&'a CgroupEnforcement>,
    /// Why the limits would go unenforced without that cgroup: the error's
    /// detail (or the downgrade's reason, when cgroups may be downgraded).
    pub no_cgroup: String,
    pub quota: QuotaPlan,
    /// The uid and gid maps as (inside, outside, count), where the guest
    /// can tell them (a runc container runs in the host's user namespace).
    pub uid_map: Option<(u32, u32, u32)>,
    pub gid_map: Option<(u32, u32, u32)>,
    /// The namespaces the boundary made (none inside a VM).
    pub namespaces: Vec<String>,
    pub vm: Option<VmEnforcement>,
    /// How the boundary carries the policy's egress (None: it has none).
    pub egress_path: Option<String>,
    /// The secrets the host-side proxy injects for this sandbox.
    pub secrets: Vec<SecretNotice>,
}

/// Applies rlimits, no_new_privs, landlock and seccomp in the calling
/// (single-threaded) process, empties its environment, closes every fd
/// above 2 and reports every layer. Called once the process holds no
/// capability (the guest checked or dropped them).
pub(crate) fn harden(
    single: &SingleThreaded,
    layers: GuestLayers<'_>,
) -> Result<Enforcement, JailError> {
    let allowed = |layer| layers.policy.allows_downgrade(layer);
    rlimits::apply(&layers.policy.limits)?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| JailError::NoNewPrivs(e.into()))?;
    if !nix::sys::prctl::get_no_new_privs().map_err(|e| JailError::NoNewPrivs(e.into()))? {
        return Err(JailError::NoNewPrivs(std::io::Error::other(
            "no_new_privs reads back as unset",
        )));
    }
    let cgroup_state = match (layers.cgroup, limits_requested(&layers.policy.limits)) {
        (Some(_), _) => LayerState::Enforced,
        (None, false) => LayerState::NotRequested,
        (None, true) if allowed(DowngradeLayer::Cgroups) => LayerState::Downgraded {
            reason: layers.no_cgroup,
        },
        (None, true) => {
            return Err(JailError::EngineLayerMissing {
                layer: "cgroups",
                detail: layers.no_cgroup,
            });
        }
    };
    let (landlock_abi, landlock) = landlock_rules::enforce(
        layers.policy.read_only,
        &layers.writable_paths,
        &layers.policy.volumes,
        sys::landlock_abi(),
        allowed(DowngradeLayer::Landlock),
    )?;
    let program = seccomp_bpf::compile_table()?;
    let seccomp = seccomp_bpf::install(&program, allowed(DowngradeLayer::Seccomp))?;
    sys::clear_environment(single);
    sys::close_from_or_each(3).map_err(JailError::CloseFds)?;
    let (seccomp_allowed, seccomp_denied) = seccomp_rules::report(seccomp.is_enforced());
    Ok(Enforcement {
        namespaces: layers.namespaces,
        uid_map: layers.uid_map,
        gid_map: layers.gid_map,
        // The boundary's own root (the engine's pivot_root into the image,
        // the VM's initramfs), checked or made read-only before this.
        pivot_root: LayerState::Enforced,
        read_only_workspace: layers.policy.read_only || !layers.writable_paths.is_empty(),
        writable_paths: layers.writable_paths,
        volumes: layers.policy.volumes.clone(),
        network: layers.policy.network.clone(),
        egress_path: layers.egress_path,
        secrets: layers.secrets,
        cgroup: layers.cgroup.cloned(),
        cgroup_state,
        rlimits: LayerState::Enforced,
        capabilities_dropped: LayerState::Enforced,
        no_new_privs: LayerState::Enforced,
        landlock_abi,
        landlock,
        seccomp,
        seccomp_allowed,
        seccomp_denied,
        workspace_quota: layers.quota.state.clone(),
        workspace_quota_limits: layers.quota.limits(),
        vm: layers.vm,
        // the guest fills it in once its agent is forked
        guest: None,
    })
}

fn limits_requested(limits: &SandboxLimits) -> bool {
    limits.memory_bytes.is_some() || limits.pids.is_some() || limits.cpu_millis.is_some()
}
