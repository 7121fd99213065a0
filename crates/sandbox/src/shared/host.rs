//! Host state every backend's sandboxes leave and every backend's reaper
//! reads: the owner tag, sandbox cgroups under a parent, temporary
//! workspaces, processes waited out after a kill.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use paddock_core::sandbox::{BoxError, SandboxId};

/// How long reaping waits for killed processes to disappear.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// The owner tag of sandboxes under `cgroup_parent` (native monitors' `--owner`, microVMs' names): the first 16
/// hex digits of its SHA-256 (the command line must not name the parent).
pub fn owner_tag(cgroup_parent: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(cgroup_parent.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
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
pub(crate) fn is_generated_id(name: &str) -> bool {
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
