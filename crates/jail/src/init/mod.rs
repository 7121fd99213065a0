//! The sandbox init (PID 1 of the new pid namespace): waits for its id maps,
//! becomes root inside, then applies every layer in order and reports what
//! is in force. Its layers live beside it: the mounts ([`mount_ops`], with
//! the sanitized /etc of [`etc`]), loopback ([`net`]), [`rlimits`],
//! [`capabilities`], [`landlock_rules`] (also the guests' own), and the PID 1
//! duties the guest keeps once serving ([`reaper`]).

pub(crate) mod capabilities;
pub(crate) mod etc;
pub(crate) mod landlock_rules;
pub(crate) mod mount_ops;
pub(crate) mod net;
pub(crate) mod reaper;
pub(crate) mod rlimits;

use std::os::fd::OwnedFd;

use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
use paddock_proto::{DowngradeLayer, Enforcement, LayerState};

use crate::host::ids::IdPlan;
use crate::host::prepare::Prepared;
use crate::host::{monitor, sync};
use crate::seccomp::{bpf as seccomp_bpf, rules as seccomp_rules};
use crate::{JailError, JailSpec, sys};

pub(crate) fn run(
    spec: &JailSpec,
    prepared: Prepared,
    channel: OwnedFd,
) -> Result<Enforcement, JailError> {
    sys::set_parent_death_signal(libc::SIGKILL).map_err(JailError::ParentDeathSignal)?;
    // The monitor's copy holds the id block's lock; this one is not needed.
    drop(prepared.id_block);
    // Leave the caller's session: no controlling terminal of the host.
    let _ = nix::unistd::setsid();
    match sync::recv(&channel).map_err(JailError::ReceiveStart)? {
        Some(sync::START) => {}
        _ => return Err(JailError::MonitorGone),
    }
    become_root(&prepared.ids)?;
    // Changing credentials cleared the parent-death signal: arm it again, then
    // make sure the monitor did not die in between.
    sys::set_parent_death_signal(libc::SIGKILL).map_err(JailError::ParentDeathSignal)?;
    if sync::peer_gone(&channel) {
        return Err(JailError::MonitorGone);
    }
    nix::unistd::sethostname(&prepared.hostname).map_err(|e| JailError::SetHostname {
        name: prepared.hostname.clone(),
        source: e.into(),
    })?;
    if spec.tier.netns.is_none() {
        net::loopback_up().map_err(JailError::LoopbackUp)?;
    }
    mount_ops::pivot_into_fresh_root()?;
    mount_ops::apply(
        &prepared.layout,
        prepared.workspace_tree,
        prepared.writable,
        prepared.volume_trees,
    )?;
    rlimits::apply(&spec.policy.limits)?;
    capabilities::drop_all()?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| JailError::NoNewPrivs(e.into()))?;
    if !nix::sys::prctl::get_no_new_privs().map_err(|e| JailError::NoNewPrivs(e.into()))? {
        return Err(JailError::NoNewPrivs(std::io::Error::other(
            "no_new_privs reads back as unset",
        )));
    }
    let allowed = |layer| spec.allowed(layer);
    let (landlock_abi, landlock) = landlock_rules::enforce(
        spec.policy.read_only,
        &prepared.writable_paths,
        &spec.policy.volumes,
        prepared.landlock_abi,
        allowed(DowngradeLayer::Landlock),
    )?;
    let seccomp = seccomp_bpf::install(&prepared.seccomp, allowed(DowngradeLayer::Seccomp))?;
    sys::clear_environment(&prepared.single);
    sync::send(&channel, sync::READY).map_err(JailError::ReportReady)?;
    drop(channel);
    sys::close_from(3).map_err(JailError::CloseFds)?;
    let (seccomp_allowed, seccomp_denied) = seccomp_rules::report(seccomp.is_enforced());
    Ok(Enforcement {
        namespaces: monitor::namespaces(spec.tier.netns.is_some()).1,
        uid_map: Some(prepared.ids.uid.as_tuple()),
        gid_map: Some(prepared.ids.gid.as_tuple()),
        pivot_root: LayerState::Enforced,
        read_only_workspace: spec.policy.read_only || !prepared.writable_paths.is_empty(),
        writable_paths: prepared.writable_paths,
        volumes: spec.policy.volumes.clone(),
        network: spec.policy.network.clone(),
        egress_path: spec.policy.network.egress_path().map(str::to_owned),
        secrets: spec.tier.secrets.clone(),
        cgroup: prepared.cgroup_report,
        cgroup_state: prepared.cgroup_state,
        rlimits: LayerState::Enforced,
        capabilities_dropped: LayerState::Enforced,
        no_new_privs: LayerState::Enforced,
        landlock_abi,
        landlock,
        seccomp,
        seccomp_allowed,
        seccomp_denied,
        workspace_quota: prepared.workspace_quota.state.clone(),
        workspace_quota_limits: prepared.workspace_quota.limits(),
        vm: None,
        // the guest fills it in once its agent is forked
        guest: None,
    })
}

fn become_root(ids: &IdPlan) -> Result<(), JailError> {
    let root_gid = Gid::from_raw(0);
    let root_uid = Uid::from_raw(0);
    setresgid(root_gid, root_gid, root_gid).map_err(|e| JailError::BecomeRoot(e.into()))?;
    if !ids.deny_setgroups {
        // Drop the caller's supplementary groups: they would still grant
        // host group access through group permission bits.
        setgroups(&[]).map_err(|e| JailError::BecomeRoot(e.into()))?;
    }
    setresuid(root_uid, root_uid, root_uid).map_err(|e| JailError::BecomeRoot(e.into()))
}
