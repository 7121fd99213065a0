//! What this host can enforce, for `paddock sandbox info`. Read-only probes,
//! cheap and side-effect free.

use std::fs;

use serde::Serialize;

use crate::host::cgroup::{CgroupMounts, Hierarchies};
use crate::init::landlock_rules::NEWEST_KNOWN_ABI;
use crate::seccomp::bpf::{SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS};
use crate::sys;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostCapabilities {
    /// `uname -r`.
    pub kernel_release: String,
    pub running_as_root: bool,
    /// ABI version from landlock_create_ruleset(VERSION); None without landlock.
    pub landlock_abi: Option<u32>,
    /// The ABI the jail would enforce (the kernel's, capped at the newest the
    /// jail knows).
    pub landlock_abi_used: Option<u32>,
    /// seccomp filter mode with the ERRNO and KILL_PROCESS actions.
    pub seccomp_filter: bool,
    pub user_namespaces: UserNamespaces,
    pub cgroup: CgroupSupport,
    /// Whether mount_setattr(2) exists (idmapped mounts also need a file
    /// system that supports them; the jail finds out when it binds).
    pub idmapped_mounts: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserNamespaces {
    /// /proc/sys/user/max_user_namespaces.
    pub max_user_namespaces: Option<u64>,
    /// Whether a non-root user may create one (max > 0 and neither Debian's
    /// kernel.unprivileged_userns_clone nor Ubuntu's AppArmor restriction
    /// forbids it).
    pub unprivileged_allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupSupport {
    /// "v2" or "v1": what the jail would use.
    pub version: String,
    /// Controllers the jail can use among memory, pids and cpu.
    pub controllers: Vec<String>,
    /// Where the cgroup2 file system is mounted, if it is.
    pub v2_mount: Option<String>,
    /// Controllers the cgroup2 mount offers.
    pub v2_controllers: Vec<String>,
}

fn read_number(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

pub fn probe_host() -> HostCapabilities {
    let landlock_abi = sys::landlock_abi();
    HostCapabilities {
        kernel_release: fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| r.trim().to_owned())
            .unwrap_or_default(),
        running_as_root: nix::unistd::geteuid().is_root(),
        landlock_abi,
        landlock_abi_used: landlock_abi.map(|abi| abi.min(NEWEST_KNOWN_ABI)),
        seccomp_filter: sys::seccomp_action_available(SECCOMP_RET_ERRNO)
            && sys::seccomp_action_available(SECCOMP_RET_KILL_PROCESS),
        user_namespaces: user_namespaces(),
        cgroup: cgroup_support(),
        idmapped_mounts: sys::mount_setattr_exists(),
    }
}

fn user_namespaces() -> UserNamespaces {
    let max = read_number("/proc/sys/user/max_user_namespaces");
    let debian_switch = read_number("/proc/sys/kernel/unprivileged_userns_clone");
    let apparmor = read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    UserNamespaces {
        max_user_namespaces: max,
        unprivileged_allowed: max.is_some_and(|m| m > 0)
            && debian_switch.is_none_or(|v| v != 0)
            && apparmor.is_none_or(|v| v == 0),
    }
}

fn cgroup_support() -> CgroupSupport {
    let mounts = CgroupMounts::read().unwrap_or_default();
    let v2_controllers = mounts.v2_controllers();
    let hierarchies = Hierarchies::choose(&mounts, &v2_controllers);
    let controllers = match &hierarchies {
        Hierarchies::V2 { .. } => vec!["memory".into(), "pids".into(), "cpu".into()],
        Hierarchies::V1 { memory, pids, cpu } => [("memory", memory), ("pids", pids), ("cpu", cpu)]
            .into_iter()
            .filter(|(_, mount)| mount.is_some())
            .map(|(name, _)| name.to_owned())
            .collect(),
    };
    CgroupSupport {
        version: hierarchies.version().to_owned(),
        controllers,
        v2_mount: mounts.v2.as_ref().map(|p| p.display().to_string()),
        v2_controllers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_this_host_reports_a_kernel_and_serializes() {
        let caps = probe_host();
        assert!(!caps.kernel_release.is_empty());
        assert!(matches!(caps.cgroup.version.as_str(), "v1" | "v2"));
        if let (Some(abi), Some(used)) = (caps.landlock_abi, caps.landlock_abi_used) {
            assert!(used <= abi);
        }
        let json = serde_json::to_value(&caps).unwrap();
        assert!(json.get("user_namespaces").is_some());
    }
}
