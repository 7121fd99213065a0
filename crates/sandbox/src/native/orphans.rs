//! Finding and removing what native sandboxes left behind when their owner
//! died without destroying them: jail monitors and sandbox inits still
//! running, cgroups, temporary workspaces.
//!
//! Ownership is read from the host, not from a database: a monitor is
//! `paddock-guest jail --sandbox ID --owner TAG`, TAG a hash of the cgroup
//! parent (the sandbox's PID 1 shares this command line, so it names no host
//! path or cgroup), so an owner that gives each node its own parent only
//! ever touches its own sandboxes, even with several owners (or test runs)
//! on one host.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_core::sandbox::{BoxError, OrphanReport, SandboxId};

use super::NativeConfig;
use crate::shared::host::{owner_tag, sandbox_cgroups, temp_workspaces, wait_gone};

pub(super) fn reap(config: &NativeConfig, keep: &[SandboxId]) -> Result<OrphanReport, BoxError> {
    let keep: HashSet<&str> = keep.iter().map(SandboxId::as_str).collect();
    let mut report = OrphanReport::default();
    let mut removed: HashSet<String> = HashSet::new();
    if !config.unconfined {
        let victims: Vec<(u32, String)> = jail_processes(&config.cgroup_parent)
            .into_iter()
            .filter(|(_, id)| !keep.contains(id.as_str()))
            .collect();
        for (pid, id) in &victims {
            let Ok(raw) = i32::try_from(*pid) else {
                continue;
            };
            // The init dies with its monitor (parent-death signal) and every
            // process of the sandbox with its init (pid namespace).
            if kill(Pid::from_raw(raw), Signal::SIGKILL).is_ok() {
                report.processes_killed.push(*pid);
                removed.insert(id.clone());
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
    }
    if let Some(root) = &config.temp_root {
        for (id, dir) in temp_workspaces(root)? {
            if keep.contains(id.as_str()) {
                continue;
            }
            fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
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

/// Host pids and sandbox ids of `paddock-guest jail` processes (monitors and
/// the inits cloned from them) whose spec names `cgroup_parent`.
fn jail_processes(cgroup_parent: &str) -> Vec<(u32, String)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let id = jail_sandbox_id(&cmdline, cgroup_parent)?;
            Some((pid, id))
        })
        .collect()
}

/// The sandbox id of a `paddock-guest jail --sandbox ID --owner TAG`
/// command line whose tag is `cgroup_parent`'s.
fn jail_sandbox_id(cmdline: &[u8], cgroup_parent: &str) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let [exe, sub, sandbox_flag, id, owner_flag, owner, ..] = args.as_slice() else {
        return None;
    };
    let exe_name = Path::new(std::str::from_utf8(exe).ok()?).file_name()?;
    if exe_name != "paddock-guest"
        || *sub != b"jail"
        || *sandbox_flag != b"--sandbox"
        || *owner_flag != b"--owner"
        || *owner != owner_tag(cgroup_parent).as_bytes()
    {
        return None;
    }
    Some(std::str::from_utf8(id).ok()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmdline(args: &[&str]) -> Vec<u8> {
        args.join("\0").into_bytes()
    }

    #[test]
    fn recognises_only_monitors_of_its_own_cgroup_parent() {
        let tag = owner_tag("paddock/node-a");
        let line = cmdline(&[
            "/x/paddock-guest",
            "jail",
            "--sandbox",
            "sb-1",
            "--owner",
            &tag,
        ]);
        assert_eq!(
            jail_sandbox_id(&line, "paddock/node-a"),
            Some("sb-1".to_owned())
        );
        assert_eq!(jail_sandbox_id(&line, "paddock"), None);
        let other_exe = cmdline(&["/x/sh", "jail", "--sandbox", "sb-1", "--owner", &tag]);
        assert_eq!(jail_sandbox_id(&other_exe, "paddock/node-a"), None);
        let serve = cmdline(&["/x/paddock-guest", "serve", "--workspace", "/w"]);
        assert_eq!(jail_sandbox_id(&serve, "paddock/node-a"), None);
        // The tag hides the cgroup parent's name.
        assert!(!tag.contains("node"), "{tag}");
        assert_eq!(tag.len(), 16);
        assert_ne!(tag, owner_tag("paddock"));
    }
}
