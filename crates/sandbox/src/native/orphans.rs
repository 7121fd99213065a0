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
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_core::sandbox::{BoxError, OrphanReport, SandboxId};

use super::NativeConfig;

/// How long reaping waits for killed processes to disappear.
const KILL_WAIT: Duration = Duration::from_secs(3);

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

/// The `--owner` tag of native monitors under `cgroup_parent`: the first 16
/// hex digits of its SHA-256 (the command line must not name the parent).
pub fn owner_tag(cgroup_parent: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(cgroup_parent.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
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

pub(crate) fn wait_gone(pids: &[u32]) {
    let deadline = Instant::now() + KILL_WAIT;
    while pids.iter().any(|pid| is_alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Exists and is not a zombie.
fn is_alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Names of the sandbox cgroups under `cgroup_parent` in every hierarchy.
pub(crate) fn sandbox_cgroups(cgroup_parent: &str) -> Result<Vec<String>, BoxError> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")?;
    let mut ids: Vec<String> = Vec::new();
    for root in cgroup_roots(&mountinfo) {
        let Ok(entries) = fs::read_dir(root.join(cgroup_parent)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_dir && is_generated_id(&name) && !ids.contains(&name) {
                ids.push(name);
            }
        }
    }
    Ok(ids)
}

/// Mount points of whole cgroup hierarchies (v1 and v2) in mountinfo.
fn cgroup_roots(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let sep = fields.iter().position(|f| *f == "-")?;
            let fstype = *fields.get(sep + 1)?;
            let whole = *fields.get(3)? == "/";
            let mount_point = fields.get(4)?.replace("\\040", " ");
            (whole && (fstype == "cgroup" || fstype == "cgroup2"))
                .then(|| PathBuf::from(mount_point))
        })
        .collect()
}

/// Only directories named like generated sandbox ids are sandboxes; a nested
/// cgroup parent of another owner is left alone.
fn is_generated_id(name: &str) -> bool {
    name.starts_with("sb-") && SandboxId::parse(name).is_ok()
}

/// Temporary workspaces (`paddock-<id>-<random>`) directly under `root`.
pub(crate) fn temp_workspaces(root: &Path) -> Result<Vec<(String, PathBuf)>, BoxError> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("listing {}: {e}", root.display()).into()),
    };
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let (stem, _random) = name.strip_prefix("paddock-")?.rsplit_once('-')?;
            is_generated_id(stem).then(|| (stem.to_owned(), entry.path()))
        })
        .collect())
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

    #[test]
    fn finds_whole_cgroup_hierarchies() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
32 25 0:28 /sub /mnt/partial rw - cgroup cgroup rw,pids
33 25 0:29 / /proc rw - proc proc rw";
        assert_eq!(
            cgroup_roots(mountinfo),
            [
                PathBuf::from("/sys/fs/cgroup/memory"),
                PathBuf::from("/sys/fs/cgroup/unified")
            ]
        );
    }

    #[test]
    fn lists_temporary_workspaces_by_sandbox_id() {
        let root = tempfile::tempdir().unwrap();
        let id = SandboxId::generate();
        fs::create_dir(root.path().join(format!("paddock-{id}-Ab12Cd"))).unwrap();
        fs::create_dir(root.path().join("paddock-not-an-id-x")).unwrap();
        fs::create_dir(root.path().join("unrelated")).unwrap();
        let found = temp_workspaces(root.path()).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, id.as_str());
        assert!(
            temp_workspaces(&root.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_zombie_or_missing_process_is_not_alive() {
        assert!(is_alive(std::process::id()));
        assert!(!is_alive(u32::MAX));
    }
}
