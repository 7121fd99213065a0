//! What the backend checks on the host after the engine started a
//! container, before it trusts the sandbox: the container's processes live
//! in namespaces of their own, and its cgroup holds the limits asked.

use std::path::{Path, PathBuf};

use paddock_proto::CgroupEnforcement;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

pub(super) fn cgroup_version() -> &'static str {
    if Path::new(CGROUP_ROOT).join("cgroup.controllers").exists() {
        "v2"
    } else {
        "v1"
    }
}

fn ns_file(name: &str) -> &str {
    match name {
        "mount" => "mnt",
        other => other,
    }
}

/// Each of `expected` differs between the container's init (`pid`, a host
/// pid: the guest under runc, gVisor's sandbox process under runsc) and
/// this process.
pub(super) fn check_namespaces(pid: i64, expected: &[String]) -> Result<(), String> {
    for name in expected {
        let file = ns_file(name);
        let ours = std::fs::read_link(format!("/proc/self/ns/{file}"))
            .map_err(|e| format!("reading our {name} namespace: {e}"))?;
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{file}"))
            .map_err(|e| format!("reading the {name} namespace of pid {pid}: {e}"))?;
        if ours == theirs {
            return Err(format!("pid {pid} shares the host's {name} namespace"));
        }
    }
    Ok(())
}

/// Every uid and gid (real, effective, saved, filesystem) of host pid
/// `pid` is `id`, as /proc/<pid>/status shows them.
pub(super) fn check_ids(pid: i64, id: u32) -> Result<(), String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
    for key in ["Uid:", "Gid:"] {
        let ids: Vec<&str> = status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .map(|rest| rest.split_whitespace().collect())
            .unwrap_or_default();
        let expected = id.to_string();
        if ids.len() != 4 || ids.iter().any(|i| *i != expected) {
            return Err(format!(
                "pid {pid} runs with {key} {ids:?} on the host, {id} was given"
            ));
        }
    }
    Ok(())
}

fn read_value(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .map_err(|e| format!("reading {}: {e}", path.display()))
}

fn limit(value: &str) -> Option<u64> {
    value.parse().ok()
}

/// The file counting the OOM kills of the container's memory cgroup.
pub(super) fn oom_counter(parent: &str, container_id: &str) -> PathBuf {
    let rel = format!("{}/{container_id}", parent.trim_start_matches('/'));
    let root = Path::new(CGROUP_ROOT);
    if cgroup_version() == "v2" {
        paddock_jail::oom_counter_in(&root.join(rel), true)
    } else {
        paddock_jail::oom_counter_in(&root.join("memory").join(rel), false)
    }
}

/// Reads the container's cgroup and compares it with what was asked.
/// Returns the paths it read.
pub(super) fn check_cgroup(
    parent: &str,
    container_id: &str,
    asked: &CgroupEnforcement,
) -> Result<Vec<String>, String> {
    let rel = format!("{}/{container_id}", parent.trim_start_matches('/'));
    let mut paths = Vec::new();
    let mut check = |what: &str, asked: Option<u64>, got: Option<u64>, path: PathBuf| {
        paths.push(path.display().to_string());
        match asked {
            Some(want) if got != Some(want) => Err(format!(
                "{what} is {got:?} in {}, {want} was asked",
                path.display()
            )),
            _ => Ok(()),
        }
    };
    if cgroup_version() == "v2" {
        let dir = Path::new(CGROUP_ROOT).join(&rel);
        let memory = limit(&read_value(&dir.join("memory.max"))?);
        check("memory", asked.memory_bytes, memory, dir.join("memory.max"))?;
        let pids = limit(&read_value(&dir.join("pids.max"))?);
        check("pids", asked.pids, pids, dir.join("pids.max"))?;
        if asked.cpu_millis.is_some() {
            let cpu = read_value(&dir.join("cpu.max"))?;
            let mut parts = cpu.split_whitespace();
            let quota = parts.next().and_then(limit);
            let period = parts.next().and_then(limit);
            let millis = quota.zip(period).map(|(q, p)| q * 1000 / p.max(1));
            check("cpu", asked.cpu_millis, millis, dir.join("cpu.max"))?;
        }
    } else {
        let root = Path::new(CGROUP_ROOT);
        let memory_file = root.join("memory").join(&rel).join("memory.limit_in_bytes");
        let memory = limit(&read_value(&memory_file)?);
        check("memory", asked.memory_bytes, memory, memory_file)?;
        let pids_file = root.join("pids").join(&rel).join("pids.max");
        let pids = limit(&read_value(&pids_file)?);
        check("pids", asked.pids, pids, pids_file)?;
        if asked.cpu_millis.is_some() {
            let dir = root.join("cpu").join(&rel);
            let quota = limit(&read_value(&dir.join("cpu.cfs_quota_us"))?);
            let period = limit(&read_value(&dir.join("cpu.cfs_period_us"))?);
            let millis = quota.zip(period).map(|(q, p)| q * 1000 / p.max(1));
            check(
                "cpu",
                asked.cpu_millis,
                millis,
                dir.join("cpu.cfs_quota_us"),
            )?;
        }
    }
    Ok(paths)
}
