//! Crash reconciliation: what dead owners' VMs left on the host — QEMU
//! processes (found by their `-name paddock:<owner tag>:<id>`), cgroups,
//! socket directories, temporary workspaces, and the network namespaces
//! and NAT of those with network.

use std::collections::HashSet;
use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_core::sandbox::{BoxError, OrphanReport, SandboxId};

use super::config::MicroVmConfig;
use super::qemu::NAME_PREFIX;
use crate::shared::host::{sandbox_cgroups, temp_workspaces, wait_gone};

pub(super) fn reap(
    config: &MicroVmConfig,
    owner: &str,
    owner_dir: &Path,
    keep: &[SandboxId],
) -> Result<OrphanReport, BoxError> {
    let keep: HashSet<&str> = keep.iter().map(SandboxId::as_str).collect();
    let mut report = OrphanReport::default();
    let mut removed: HashSet<String> = HashSet::new();
    for (pid, id) in qemu_processes(owner) {
        if keep.contains(id.as_str()) {
            continue;
        }
        let Ok(raw) = i32::try_from(pid) else {
            continue;
        };
        if kill(Pid::from_raw(raw), Signal::SIGKILL).is_ok() {
            report.processes_killed.push(pid);
            if SandboxId::parse(&id).is_ok() {
                removed.insert(id);
            }
        }
    }
    wait_gone(&report.processes_killed);
    for id in sandbox_cgroups(&config.cgroup_parent)? {
        if keep.contains(id.as_str()) {
            continue;
        }
        paddock_jail::remove_sandbox_cgroups(&config.cgroup_parent, &id)?;
        removed.insert(id);
    }
    if let Ok(entries) = std::fs::read_dir(owner_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if SandboxId::parse(&name).is_err() || keep.contains(name.as_str()) {
                continue;
            }
            std::fs::remove_dir_all(entry.path())
                .map_err(|e| format!("removing {}: {e}", entry.path().display()))?;
            removed.insert(name);
        }
    }
    if let Some(root) = &config.temp_root {
        for (id, dir) in temp_workspaces(root)? {
            if keep.contains(id.as_str()) {
                continue;
            }
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("removing {}: {e}", dir.display()))?;
            removed.insert(id);
        }
    }
    let mut ids: Vec<SandboxId> = removed
        .iter()
        .filter_map(|id| SandboxId::parse(id).ok())
        .collect();
    ids.sort();
    report.sandboxes_removed = ids;
    Ok(report)
}

/// The network of the VMs reaped: a `full` sandbox's host-side NAT (veth,
/// rules, found by the owner tag in their comments) and every reaped
/// sandbox's namespace (its tap goes with it).
pub(super) async fn reap_network(
    owner: &str,
    keep: &[&str],
    report: &mut OrphanReport,
) -> Result<(), paddock_egress::EgressError> {
    let nat_ids = paddock_egress::nat::reap(owner, keep).await?;
    for id in nat_ids {
        if let Ok(id) = SandboxId::parse(&id)
            && !report.sandboxes_removed.contains(&id)
        {
            report.sandboxes_removed.push(id);
        }
    }
    for id in report.sandboxes_removed.iter().map(SandboxId::as_str) {
        paddock_egress::Netns::remove_stale(id).await;
    }
    report.sandboxes_removed.sort();
    Ok(())
}

/// Host pids and sandbox ids (or `probe`/`bare`) of this owner's QEMUs.
fn qemu_processes(owner: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            Some((pid, vm_id(&cmdline, owner)?))
        })
        .collect()
}

/// The id in a QEMU command line's `-name paddock:<owner>:<id>`.
fn vm_id(cmdline: &[u8], owner: &str) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let name = args
        .windows(2)
        .find(|w| w[0] == b"-name")
        .map(|w| std::str::from_utf8(w[1]).ok())??;
    let rest = name.strip_prefix(NAME_PREFIX)?.strip_prefix(owner)?;
    Some(rest.strip_prefix(':')?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_its_owners_vms() {
        let line =
            |name: &str| format!("qemu-system-x86_64\0-name\0{name}\0-m\0mem\0").into_bytes();
        assert_eq!(
            vm_id(&line("paddock:abc:sb-1"), "abc").as_deref(),
            Some("sb-1")
        );
        assert_eq!(vm_id(&line("paddock:abcd:sb-1"), "abc"), None);
        assert_eq!(vm_id(&line("other:abc:sb-1"), "abc"), None);
        assert_eq!(vm_id(b"qemu-system-x86_64\0-m\0mem\0", "abc"), None);
    }
}
