//! What the kernel counts for one sandbox's cgroup, read from the host:
//! the cgroup found from a host pid of the sandbox (the jail's monitor, the
//! container's init, the VM's process: `/proc/<pid>/cgroup`, mapped to its
//! directory through `/proc/self/mountinfo`), then cgroup v2's
//! `memory.current`, `memory.max`, `memory.stat` (`file`) and `cpu.stat`,
//! or v1's memory and cpuacct files. Where the sandbox has no CPU
//! accounting cgroup of its own (a native sandbox on a v1 host has only a
//! memory one), its CPU time is the sum of its processes' (`/proc/<pid>/stat`
//! of the cgroup's `cgroup.procs`). A cgroup that is the server's own, or
//! the root, is never read as the sandbox's (an unconfined sandbox has
//! none). Only reads, through [`HostFiles`], which the tests fake; callers
//! run [`sample`] off the async workers.

use std::path::{Path as FsPath, PathBuf};

/// The kernel's clock ticks per second in `/proc/<pid>/stat` (USER_HZ,
/// 100 on every architecture Linux exports it for).
const TICK_NS: u64 = 10_000_000;
/// A v1 memory limit at or above this is "no limit".
const NO_LIMIT: u64 = 1 << 62;

/// The files the sample reads; faked in tests.
pub trait HostFiles {
    fn read(&self, path: &FsPath) -> Option<String>;
}

/// The host's own files.
#[derive(Debug)]
pub struct RealFiles;

impl HostFiles for RealFiles {
    fn read(&self, path: &FsPath) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// What the kernel counts for a sandbox's cgroup at one moment; None
/// where it cannot be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupSample {
    /// CPU time used so far.
    pub cpu_ns: Option<u64>,
    /// Memory charged, page cache included.
    pub mem_usage: Option<u64>,
    pub mem_cache: Option<u64>,
    pub mem_limit: Option<u64>,
}

/// One line of `/proc/<pid>/cgroup`: its controllers (none for v2) and path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Membership {
    controllers: Vec<String>,
    path: String,
}

fn parse_proc_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// A cgroup hierarchy mounted on the host: v2, or v1 with its controllers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupMount {
    root: String,
    mount_point: PathBuf,
    v2: bool,
    controllers: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let sep = fields.iter().position(|f| *f == "-")?;
            let fstype = *fields.get(sep + 1)?;
            let options = *fields.get(sep + 3)?;
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(CgroupMount {
                root: (*fields.get(3)?).to_owned(),
                mount_point: PathBuf::from(*fields.get(4)?),
                v2,
                controllers: if v2 {
                    Vec::new()
                } else {
                    options.split(',').map(str::to_owned).collect()
                },
            })
        })
        .collect()
}

/// The cgroups of one sandbox process, and where their files are.
struct Cgroups {
    mine: Vec<Membership>,
    server: Vec<Membership>,
    mounts: Vec<CgroupMount>,
}

impl Cgroups {
    /// The directory of the process's cgroup in the v2 hierarchy (None)
    /// or the v1 one holding `controller`, when it is its own: not the
    /// root, and not the server's.
    fn dir(&self, controller: Option<&str>) -> Option<PathBuf> {
        let of = |list: &[Membership]| {
            list.iter()
                .find(|m| match controller {
                    None => m.controllers.is_empty(),
                    Some(c) => m.controllers.iter().any(|have| have == c),
                })
                .map(|m| m.path.clone())
        };
        let path = of(&self.mine)?;
        if path == "/" || of(&self.server).as_ref() == Some(&path) {
            return None;
        }
        let mount = self.mounts.iter().find(|m| match controller {
            None => m.v2,
            Some(c) => !m.v2 && m.controllers.iter().any(|have| have == c),
        })?;
        let below = if mount.root == "/" {
            path.as_str()
        } else {
            path.strip_prefix(mount.root.as_str())?
        };
        Some(mount.mount_point.join(below.trim_start_matches('/')))
    }
}

fn number(files: &dyn HostFiles, path: PathBuf) -> Option<u64> {
    files.read(&path)?.trim().parse().ok()
}

/// The value of `key` in a `key value` file (`memory.stat`, `cpu.stat`).
fn keyed(files: &dyn HostFiles, path: PathBuf, key: &str) -> Option<u64> {
    files.read(&path)?.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// CPU time of a process so far (`utime + stime` of `/proc/<pid>/stat`).
fn process_cpu_ns(files: &dyn HostFiles, pid: &str) -> Option<u64> {
    let stat = files.read(&PathBuf::from(format!("/proc/{pid}/stat")))?;
    // the command name may hold spaces and parentheses: fields follow the last ')'
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime).saturating_mul(TICK_NS))
}

/// The sandbox's cgroup now, through the process `pid` of it.
pub fn sample(files: &dyn HostFiles, pid: u32) -> CgroupSample {
    let read = |path: &str| files.read(FsPath::new(path)).unwrap_or_default();
    let cgroups = Cgroups {
        mine: parse_proc_cgroup(&read(&format!("/proc/{pid}/cgroup"))),
        server: parse_proc_cgroup(&read("/proc/self/cgroup")),
        mounts: parse_mountinfo(&read("/proc/self/mountinfo")),
    };
    let mut found = CgroupSample::default();
    let v2 = cgroups
        .dir(None)
        .filter(|dir| files.read(&dir.join("memory.current")).is_some());
    let procs_dir = if let Some(dir) = v2 {
        found.mem_usage = number(files, dir.join("memory.current"));
        found.mem_limit = number(files, dir.join("memory.max"));
        found.mem_cache = keyed(files, dir.join("memory.stat"), "file");
        found.cpu_ns = keyed(files, dir.join("cpu.stat"), "usage_usec").map(|us| us * 1000);
        Some(dir)
    } else {
        let memory = cgroups.dir(Some("memory"));
        if let Some(dir) = &memory {
            found.mem_usage = number(files, dir.join("memory.usage_in_bytes"));
            found.mem_limit =
                number(files, dir.join("memory.limit_in_bytes")).filter(|l| *l < NO_LIMIT);
            found.mem_cache = keyed(files, dir.join("memory.stat"), "total_cache")
                .or_else(|| keyed(files, dir.join("memory.stat"), "cache"));
        }
        if let Some(dir) = cgroups.dir(Some("cpuacct")) {
            found.cpu_ns = number(files, dir.join("cpuacct.usage"));
        }
        memory
    };
    if found.cpu_ns.is_none()
        && let Some(dir) = procs_dir
        && let Some(procs) = files.read(&dir.join("cgroup.procs"))
    {
        found.cpu_ns = Some(
            procs
                .lines()
                .filter_map(|p| process_cpu_ns(files, p.trim()))
                .sum(),
        );
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::HashMap;

    use super::*;

    #[derive(Default)]
    struct FakeFiles(HashMap<PathBuf, String>);

    impl FakeFiles {
        fn with(mut self, path: &str, text: &str) -> Self {
            self.0.insert(PathBuf::from(path), text.to_owned());
            self
        }
    }

    impl HostFiles for FakeFiles {
        fn read(&self, path: &FsPath) -> Option<String> {
            self.0.get(path).cloned()
        }
    }

    const V1_MOUNTS: &str = "\
30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
31 25 0:27 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 25 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 25 0:35 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_v1_native_sandbox_is_read_from_its_memory_cgroup_and_its_processes() {
        let files = FakeFiles::default()
            .with("/proc/self/mountinfo", V1_MOUNTS)
            .with(
                "/proc/self/cgroup",
                "4:memory:/process_api/x\n2:cpuacct:/\n0::/\n",
            )
            .with(
                "/proc/7/cgroup",
                "4:memory:/paddock/n/sb-1\n2:cpuacct:/\n0::/\n",
            )
            .with(
                "/sys/fs/cgroup/memory/paddock/n/sb-1/memory.usage_in_bytes",
                "3000000\n",
            )
            .with(
                "/sys/fs/cgroup/memory/paddock/n/sb-1/memory.limit_in_bytes",
                "1073741824\n",
            )
            .with(
                "/sys/fs/cgroup/memory/paddock/n/sb-1/memory.stat",
                "cache 5\nrss 9\ntotal_cache 1000000\n",
            )
            .with(
                "/sys/fs/cgroup/memory/paddock/n/sb-1/cgroup.procs",
                "7\n8\n",
            )
            .with(
                "/proc/7/stat",
                "7 (paddock-guest) S 1 7 7 0 -1 0 0 0 0 0 3 2 0 0 20 0",
            )
            .with(
                "/proc/8/stat",
                "8 (a (b) c) R 7 8 8 0 -1 0 0 0 0 0 10 5 0 0 20 0",
            );
        assert_eq!(
            sample(&files, 7),
            CgroupSample {
                // the host's cpuacct root is not the sandbox's: its processes' ticks
                cpu_ns: Some(20 * TICK_NS),
                mem_usage: Some(3_000_000),
                mem_cache: Some(1_000_000),
                mem_limit: Some(1 << 30),
            }
        );
    }

    #[test]
    fn a_v2_sandbox_is_read_from_its_unified_cgroup() {
        let files = FakeFiles::default()
            .with(
                "/proc/self/mountinfo",
                "25 1 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
            )
            .with("/proc/self/cgroup", "0::/system.slice/paddock.service\n")
            .with("/proc/9/cgroup", "0::/paddock/sb-2\n")
            .with("/sys/fs/cgroup/paddock/sb-2/memory.current", "4096\n")
            .with("/sys/fs/cgroup/paddock/sb-2/memory.max", "max\n")
            .with(
                "/sys/fs/cgroup/paddock/sb-2/memory.stat",
                "anon 1\nfile 1024\n",
            )
            .with(
                "/sys/fs/cgroup/paddock/sb-2/cpu.stat",
                "usage_usec 1500\nuser_usec 1000\n",
            );
        assert_eq!(
            sample(&files, 9),
            CgroupSample {
                cpu_ns: Some(1_500_000),
                mem_usage: Some(4096),
                mem_cache: Some(1024),
                mem_limit: None,
            }
        );
    }

    #[test]
    fn the_servers_own_cgroup_is_never_read_as_the_sandboxs() {
        let files = FakeFiles::default()
            .with("/proc/self/mountinfo", V1_MOUNTS)
            .with("/proc/self/cgroup", "4:memory:/srv\n0::/\n")
            .with("/proc/5/cgroup", "4:memory:/srv\n0::/\n")
            .with("/sys/fs/cgroup/memory/srv/memory.usage_in_bytes", "999\n");
        assert_eq!(sample(&files, 5), CgroupSample::default());
    }
}
