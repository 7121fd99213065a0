//! Looking at the host from outside the sandboxes: are we root, and did any
//! sandbox leave a process, a mount or a cgroup behind?

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::run::wait_until;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP_PARENT: &str = "paddock";
/// Parents of the per-process cgroup parents of CLI owners.
const OWNER_PARENTS: [&str; 2] = ["paddock-cli", "paddock-run"];
const GUEST_COMM: &str = "paddock-guest";

/// The scenario tests create namespaces, cgroups and mounts: they need root.
/// Fails loudly instead of skipping, so a non-root run never looks green.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the Paddock scenario tests must run as root (namespaces, cgroups, id-mapped \
         mounts); run scripts/test.sh as root"
    );
}

/// What the host looked like at one moment, for leak comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSnapshot {
    pub guest_pids: BTreeSet<u32>,
    pub mounts: BTreeSet<String>,
    pub cgroup_dirs: BTreeSet<PathBuf>,
    /// Sandbox network namespaces, host-side veths and NAT rules (`full`).
    pub network: BTreeSet<String>,
}

impl HostSnapshot {
    pub fn capture() -> Self {
        Self {
            guest_pids: processes_named(GUEST_COMM),
            mounts: mountinfo(),
            cgroup_dirs: sandbox_cgroup_dirs(),
            network: network_state(None),
        }
    }

    /// Everything present now that was not in `before`, one line each.
    pub fn leaks_since(&self, before: &HostSnapshot) -> Vec<String> {
        let mut leaks = Vec::new();
        for pid in self.guest_pids.difference(&before.guest_pids) {
            leaks.push(format!("process {pid} ({})", cmdline(*pid)));
        }
        for m in self.mounts.difference(&before.mounts) {
            leaks.push(format!("mount {m}"));
        }
        for d in self.cgroup_dirs.difference(&before.cgroup_dirs) {
            leaks.push(format!("cgroup {}", d.display()));
        }
        for n in self.network.difference(&before.network) {
            leaks.push(n.clone());
        }
        leaks
    }
}

/// Sandbox network namespaces (/run/netns/paddock-*), host-side veths of
/// `full` sandboxes (pdk*) and the NAT's per-sandbox rules, one line each;
/// only those of `sandbox_id` when given.
pub fn network_state(sandbox_id: Option<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let names = |dir: &str| -> Vec<String> {
        fs::read_dir(dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let veth = sandbox_id.map(paddock_egress::nat::host_veth_name);
    for n in names("/run/netns") {
        let ours = match sandbox_id {
            Some(id) => n == format!("paddock-{id}"),
            None => n.starts_with("paddock-"),
        };
        if ours {
            found.insert(format!("netns {n}"));
        }
    }
    for n in names("/sys/class/net") {
        let ours = match &veth {
            Some(v) => &n == v,
            None => n.starts_with(paddock_egress::nat::VETH_PREFIX),
        };
        if ours {
            found.insert(format!("veth {n}"));
        }
    }
    for table in ["filter", "nat"] {
        let Ok(out) = std::process::Command::new("iptables")
            .args(["-w", "5", "-t", table, "-S"])
            .output()
        else {
            continue;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let ours = match sandbox_id {
                Some(id) => {
                    line.contains(id) || veth.as_ref().is_some_and(|v| line.contains(v.as_str()))
                }
                None => line.contains("paddock-nat") || line.starts_with("-N PDK-"),
            };
            if ours {
                found.insert(format!("rule {table}: {line}"));
            }
        }
    }
    found
}

/// Waits (bounded) until nothing new is left since `before`; returns what is
/// still leaked when the time is up (empty = clean).
pub fn wait_for_no_leaks(before: &HostSnapshot, timeout: Duration) -> Vec<String> {
    let mut leaks = Vec::new();
    wait_until(timeout, || {
        leaks = HostSnapshot::capture().leaks_since(before);
        leaks.is_empty()
    });
    leaks
}

/// pids of host processes whose command name is `comm`.
pub fn processes_named(comm: &str) -> BTreeSet<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == comm)
        })
        .collect()
}

/// pids of host processes whose command line contains `needle`.
pub fn processes_with_cmdline(needle: &str) -> BTreeSet<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| cmdline(*pid).contains(needle))
        .collect()
}

fn all_pids() -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The command line of a host process, arguments separated by spaces.
pub fn cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The lines of this process's mountinfo (mount ids make each line unique).
pub fn mountinfo() -> BTreeSet<String> {
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Every per-sandbox cgroup directory: `/sys/fs/cgroup/<hierarchy>/paddock/<id>`
/// on v1 hosts, `/sys/fs/cgroup/paddock/<id>` on a v2-only host, and the
/// same below each CLI owner's `paddock-cli/<owner>` or `paddock-run/<owner>`.
pub fn sandbox_cgroup_dirs() -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::new();
    let root = Path::new(CGROUP_ROOT);
    let mut hierarchies = vec![root.to_path_buf()];
    if let Ok(entries) = fs::read_dir(root) {
        hierarchies.extend(entries.flatten().map(|e| e.path()));
    }
    let mut parents = Vec::new();
    for hierarchy in hierarchies {
        parents.push(hierarchy.join(CGROUP_PARENT));
        // `paddock sandbox run` and `paddock run` keep their sandboxes below
        // their own parent, `<prefix>/<pid>-<start>` (docs/architecture.md).
        for prefix in OWNER_PARENTS {
            if let Ok(owners) = fs::read_dir(hierarchy.join(prefix)) {
                parents.extend(owners.flatten().map(|e| e.path()));
            }
        }
    }
    for parent in parents {
        if let Ok(entries) = fs::read_dir(&parent) {
            dirs.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    dirs
}

/// The cgroup directories that belong to one sandbox.
pub fn cgroup_dirs_of(sandbox_id: &str) -> Vec<PathBuf> {
    sandbox_cgroup_dirs()
        .into_iter()
        .filter(|d| d.file_name().is_some_and(|n| n == sandbox_id))
        .collect()
}

/// Waits (bounded) until the sandbox's cgroups are gone; returns those left.
pub fn wait_for_cgroups_gone(sandbox_id: &str, timeout: Duration) -> Vec<PathBuf> {
    let mut left = Vec::new();
    wait_until(timeout, || {
        left = cgroup_dirs_of(sandbox_id);
        left.is_empty()
    });
    left
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn snapshot(pids: &[u32], mounts: &[&str], cgroups: &[&str]) -> HostSnapshot {
        HostSnapshot {
            guest_pids: pids.iter().copied().collect(),
            mounts: mounts.iter().map(|m| (*m).to_owned()).collect(),
            cgroup_dirs: cgroups.iter().map(PathBuf::from).collect(),
            network: BTreeSet::new(),
        }
    }

    #[test]
    fn only_what_appeared_since_counts_as_a_leak() {
        let before = snapshot(
            &[10],
            &["22 1 0:1 / / rw"],
            &["/sys/fs/cgroup/pids/paddock/a"],
        );
        let after = snapshot(
            &[10, 4_000_000],
            &["22 1 0:1 / / rw", "99 22 0:5 / /x rw"],
            &[
                "/sys/fs/cgroup/pids/paddock/a",
                "/sys/fs/cgroup/memory/paddock/b",
            ],
        );
        let leaks = after.leaks_since(&before);
        assert_eq!(leaks.len(), 3, "{leaks:?}");
        assert!(leaks[0].starts_with("process 4000000"));
        assert_eq!(leaks[1], "mount 99 22 0:5 / /x rw");
        assert_eq!(leaks[2], "cgroup /sys/fs/cgroup/memory/paddock/b");
        // Things that went away are not leaks.
        assert!(before.leaks_since(&after).is_empty());
    }

    #[test]
    fn cmdline_of_this_process_is_readable() {
        let me = cmdline(std::process::id());
        assert!(!me.is_empty());
        assert!(processes_with_cmdline(&me).contains(&std::process::id()));
    }
}
