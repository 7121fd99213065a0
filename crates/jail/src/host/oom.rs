//! Telling an out-of-memory kill from any other SIGKILL. The kernel counts
//! the OOM kills of each memory cgroup (`oom_kill N` in v2's memory.events
//! and in v1's memory.oom_control, kernel 4.13+); the host reads the
//! sandbox's counter before and after a command, since the guest sees
//! neither the cgroup files nor why its child died.

use std::path::{Path, PathBuf};

use crate::host::cgroup::{CgroupMounts, Hierarchies};
use crate::{JailError, validate};

/// The file counting the OOM kills of the memory cgroup `dir`.
pub fn oom_counter_in(dir: &Path, v2: bool) -> PathBuf {
    dir.join(if v2 {
        "memory.events"
    } else {
        "memory.oom_control"
    })
}

/// Where the native sandbox `sandbox_id` under `cgroup_parent` counts its
/// OOM kills (the memory cgroup the monitor makes when a memory limit is
/// set; the file exists only then). None: no hierarchy has the memory
/// controller.
pub fn sandbox_oom_counter(
    cgroup_parent: &str,
    sandbox_id: &str,
) -> Result<Option<PathBuf>, JailError> {
    validate::cgroup_parent(cgroup_parent)?;
    validate::sandbox_id(sandbox_id)?;
    let mounts = CgroupMounts::read()?;
    Ok(
        match Hierarchies::choose(&mounts, &mounts.v2_controllers()) {
            Hierarchies::V2 { root } => Some(oom_counter_in(
                &root.join(cgroup_parent).join(sandbox_id),
                true,
            )),
            Hierarchies::V1 { memory, .. } => {
                memory.map(|root| oom_counter_in(&root.join(cgroup_parent).join(sandbox_id), false))
            }
        },
    )
}

/// The `oom_kill` count in the text of either counter file.
pub fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == "oom_kill").then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_count_from_both_versions() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(parse_oom_kills(v2), Some(1));
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(parse_oom_kills(v1), Some(3));
        // oom_kill_disable is not the counter; a kernel without it says nothing.
        assert_eq!(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n"), None);
        assert_eq!(parse_oom_kills("oom_kill x\n"), None);
    }

    #[test]
    fn the_file_follows_the_version() {
        let dir = Path::new("/sys/fs/cgroup/memory/paddock/sb-1");
        assert_eq!(oom_counter_in(dir, false), dir.join("memory.oom_control"));
        assert_eq!(oom_counter_in(dir, true), dir.join("memory.events"));
    }

    #[test]
    fn ids_are_validated() {
        assert!(sandbox_oom_counter("../etc", "sb-1").is_err());
        assert!(sandbox_oom_counter("paddock", "../x").is_err());
    }
}
