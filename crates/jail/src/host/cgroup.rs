//! Sandbox cgroups: memory, pids and cpu limits at
//! `<hierarchy>/<cgroup_parent>/<sandbox_id>`, on cgroup v2 when its mount
//! offers all three controllers, else on the v1 hierarchies.
//!
//! The monitor creates them and joins them before cloning the sandbox init, so
//! every sandbox process and the cgroup namespace start inside. Removal kills
//! whatever is still inside and is idempotent: the host calls
//! [`remove_sandbox_cgroups`] after a sandbox ended or was killed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use paddock_proto::{CgroupEnforcement, SandboxLimits};

use crate::{JailError, validate};

const CPU_PERIOD_US: u64 = 100_000;
/// How long removal keeps killing and retrying before it gives up.
const REMOVE_DEADLINE: Duration = Duration::from_secs(5);

/// cgroup mounts listed in /proc/self/mountinfo.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct CgroupMounts {
    pub v2: Option<PathBuf>,
    /// v1 hierarchies: mount point and the controllers mounted there.
    pub v1: Vec<(PathBuf, Vec<String>)>,
}

impl CgroupMounts {
    pub(crate) fn read() -> Result<Self, JailError> {
        let text = fs::read_to_string("/proc/self/mountinfo").map_err(JailError::DetectCgroups)?;
        Ok(parse_mountinfo(&text))
    }

    fn v1_with(&self, controller: &str) -> Option<&Path> {
        self.v1
            .iter()
            .find(|(_, controllers)| controllers.iter().any(|c| c == controller))
            .map(|(path, _)| path.as_path())
    }

    /// Controllers the v2 mount offers (its root's cgroup.controllers).
    pub(crate) fn v2_controllers(&self) -> Vec<String> {
        self.v2
            .as_ref()
            .and_then(|root| fs::read_to_string(root.join("cgroup.controllers")).ok())
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

/// Parses mountinfo lines; only whole hierarchies (mount root "/") count.
pub(crate) fn parse_mountinfo(text: &str) -> CgroupMounts {
    let mut mounts = CgroupMounts::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(root), Some(mount_point), Some(fstype), Some(super_opts)) = (
            fields.get(3),
            fields.get(4),
            fields.get(sep + 1),
            fields.get(sep + 3),
        ) else {
            continue;
        };
        if *root != "/" {
            continue;
        }
        let mount_point = PathBuf::from(unescape(mount_point));
        match *fstype {
            "cgroup2" if mounts.v2.is_none() => mounts.v2 = Some(mount_point),
            "cgroup" => {
                let controllers = super_opts
                    .split(',')
                    .filter(|o| matches!(*o, "memory" | "pids" | "cpu"))
                    .map(str::to_owned)
                    .collect::<Vec<_>>();
                if !controllers.is_empty() {
                    mounts.v1.push((mount_point, controllers));
                }
            }
            _ => {}
        }
    }
    mounts
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the sandbox cgroups go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hierarchies {
    V2 {
        root: PathBuf,
    },
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
        cpu: Option<PathBuf>,
    },
}

impl Hierarchies {
    /// v2 when its mount offers memory, pids and cpu; v1 otherwise.
    pub(crate) fn choose(mounts: &CgroupMounts, v2_controllers: &[String]) -> Self {
        let has = |c: &str| v2_controllers.iter().any(|x| x == c);
        match &mounts.v2 {
            Some(root) if has("memory") && has("pids") && has("cpu") => {
                Self::V2 { root: root.clone() }
            }
            _ => Self::V1 {
                memory: mounts.v1_with("memory").map(Path::to_path_buf),
                pids: mounts.v1_with("pids").map(Path::to_path_buf),
                cpu: mounts.v1_with("cpu").map(Path::to_path_buf),
            },
        }
    }

    pub(crate) fn version(&self) -> &'static str {
        match self {
            Self::V2 { .. } => "v2",
            Self::V1 { .. } => "v1",
        }
    }
}

/// The values written to the cgroup files, in order, relative to one cgroup
/// directory. Pure so that the exact writes are unit-tested.
pub(crate) fn limit_writes(v2: bool, limits: &SandboxLimits) -> Vec<(&'static str, String)> {
    let mut writes = Vec::new();
    if let Some(bytes) = limits.memory_bytes {
        if v2 {
            writes.push(("memory.max", bytes.to_string()));
            writes.push(("memory.swap.max", "0".to_owned()));
        } else {
            writes.push(("memory.limit_in_bytes", bytes.to_string()));
            // memory+swap: same value, so the sandbox cannot swap its way past the limit.
            writes.push(("memory.memsw.limit_in_bytes", bytes.to_string()));
        }
    }
    if let Some(pids) = limits.pids {
        // +1: the monitor, which lives outside the sandbox, sits in this cgroup too.
        writes.push(("pids.max", pids.saturating_add(1).to_string()));
    }
    if let Some(millis) = limits.cpu_millis {
        // 1000 millicpus = one full period; the kernel's minimum quota is 1 ms.
        let quota = millis.saturating_mul(CPU_PERIOD_US / 1000).max(1000);
        if v2 {
            writes.push(("cpu.max", format!("{quota} {CPU_PERIOD_US}")));
        } else {
            writes.push(("cpu.cfs_period_us", CPU_PERIOD_US.to_string()));
            writes.push(("cpu.cfs_quota_us", quota.to_string()));
        }
    }
    writes
}

/// Files that may be missing without failing the limit (swap accounting off).
fn optional_file(name: &str) -> bool {
    matches!(name, "memory.swap.max" | "memory.memsw.limit_in_bytes")
}

/// The cgroups of one running sandbox.
#[derive(Debug)]
pub(crate) struct SandboxCgroups {
    version: &'static str,
    /// The sandbox's cgroup directories.
    dirs: Vec<PathBuf>,
    /// The hierarchy roots, where the monitor moves itself before removal.
    roots: Vec<PathBuf>,
}

impl SandboxCgroups {
    /// Creates the cgroups for the requested limits and writes the limits.
    pub(crate) fn create(
        hierarchies: &Hierarchies,
        parent: &str,
        sandbox_id: &str,
        limits: &SandboxLimits,
    ) -> Result<Self, JailError> {
        let mut created = Self {
            version: hierarchies.version(),
            dirs: Vec::new(),
            roots: Vec::new(),
        };
        let result = created.populate(hierarchies, parent, sandbox_id, limits);
        match result {
            Ok(()) => Ok(created),
            Err(e) => {
                let _ = remove_dirs(&created.dirs);
                Err(e)
            }
        }
    }

    fn populate(
        &mut self,
        hierarchies: &Hierarchies,
        parent: &str,
        sandbox_id: &str,
        limits: &SandboxLimits,
    ) -> Result<(), JailError> {
        match hierarchies {
            Hierarchies::V2 { root } => {
                let mut wanted = Vec::new();
                if limits.memory_bytes.is_some() {
                    wanted.push("+memory");
                }
                if limits.pids.is_some() {
                    wanted.push("+pids");
                }
                if limits.cpu_millis.is_some() {
                    wanted.push("+cpu");
                }
                let dir = self.make_dir(root, parent, sandbox_id, &wanted.join(" "))?;
                write_limits(&dir, limit_writes(true, limits))?;
            }
            Hierarchies::V1 { memory, pids, cpu } => {
                let needs = [
                    ("memory", memory, limits.memory_bytes.is_some()),
                    ("pids", pids, limits.pids.is_some()),
                    ("cpu", cpu, limits.cpu_millis.is_some()),
                ];
                // Check every controller first, so a missing one creates nothing.
                if let Some((controller, _, _)) = needs
                    .iter()
                    .find(|(_, mount, wanted)| *wanted && mount.is_none())
                {
                    return Err(JailError::MissingCgroupController { controller });
                }
                for (controller, mount, wanted) in needs {
                    let (Some(mount), true) = (mount, wanted) else {
                        continue;
                    };
                    let dir = self.make_dir(mount, parent, sandbox_id, "")?;
                    let only_this = SandboxLimits {
                        memory_bytes: limits.memory_bytes.filter(|_| controller == "memory"),
                        pids: limits.pids.filter(|_| controller == "pids"),
                        cpu_millis: limits.cpu_millis.filter(|_| controller == "cpu"),
                        ..limits.clone()
                    };
                    write_limits(&dir, limit_writes(false, &only_this))?;
                }
            }
        }
        Ok(())
    }

    /// mkdir -p of the parent (enabling `subtree` controllers on the way for
    /// v2), then a fresh sandbox directory.
    fn make_dir(
        &mut self,
        root: &Path,
        parent: &str,
        sandbox_id: &str,
        subtree: &str,
    ) -> Result<PathBuf, JailError> {
        let mut dir = root.to_path_buf();
        for component in parent.split('/') {
            if !subtree.is_empty() {
                write_file(&dir.join("cgroup.subtree_control"), subtree)?;
            }
            dir.push(component);
            match fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => return Err(JailError::CreateCgroup { path: dir, source }),
            }
        }
        if !subtree.is_empty() {
            write_file(&dir.join("cgroup.subtree_control"), subtree)?;
        }
        dir.push(sandbox_id);
        fs::create_dir(&dir).map_err(|source| JailError::CreateCgroup {
            path: dir.clone(),
            source,
        })?;
        self.dirs.push(dir.clone());
        self.roots.push(root.to_path_buf());
        Ok(dir)
    }

    /// Moves the calling (single-threaded) process into every sandbox cgroup.
    pub(crate) fn join_self(&self) -> Result<(), JailError> {
        self.dirs
            .iter()
            .try_for_each(|dir| write_file(&dir.join(self.self_file()), "0"))
    }

    /// Moves the calling process back to the hierarchy roots, then kills what
    /// is left inside and removes the directories.
    pub(crate) fn leave_and_remove(&self) -> Result<(), JailError> {
        for root in &self.roots {
            write_file(&root.join(self.self_file()), "0")?;
        }
        remove_dirs(&self.dirs)
    }

    /// Where writing "0" moves the caller. On v1, "tasks" moves only the
    /// calling thread, which lets the kernel skip the global threadgroup
    /// lock whose RCU synchronisation costs milliseconds; the processes
    /// moved are single-threaded. v2 only has cgroup.procs.
    fn self_file(&self) -> &'static str {
        if self.version == "v1" {
            "tasks"
        } else {
            "cgroup.procs"
        }
    }

    pub(crate) fn report(&self, limits: &SandboxLimits) -> CgroupEnforcement {
        CgroupEnforcement {
            version: self.version.to_owned(),
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpu_millis: limits.cpu_millis,
            paths: self.dirs.iter().map(|d| d.display().to_string()).collect(),
        }
    }
}

/// The cgroup(s) of a process the host starts itself, whole (every
/// thread): the microvm backend's QEMU. Removed with
/// [`remove_sandbox_cgroups`].
#[derive(Debug)]
pub struct HostCgroup {
    cgroups: SandboxCgroups,
}

impl HostCgroup {
    /// Creates `parent/sandbox_id` in every hierarchy `limits` needs and
    /// writes the limits.
    pub fn create(
        parent: &str,
        sandbox_id: &str,
        limits: &SandboxLimits,
    ) -> Result<Self, JailError> {
        crate::validate::cgroup_parent(parent)?;
        crate::validate::sandbox_id(sandbox_id)?;
        let mounts = CgroupMounts::read()?;
        let hierarchies = Hierarchies::choose(&mounts, &mounts.v2_controllers());
        let cgroups = SandboxCgroups::create(&hierarchies, parent, sandbox_id, limits)?;
        Ok(Self { cgroups })
    }

    /// Moves process `pid` with all its threads in (cgroup.procs).
    pub fn add_process(&self, pid: u32) -> Result<(), JailError> {
        self.cgroups
            .dirs
            .iter()
            .try_for_each(|dir| write_file(&dir.join("cgroup.procs"), &pid.to_string()))
    }

    pub fn report(&self, limits: &SandboxLimits) -> CgroupEnforcement {
        self.cgroups.report(limits)
    }
}

fn write_limits(dir: &Path, writes: Vec<(&'static str, String)>) -> Result<(), JailError> {
    for (name, value) in writes {
        match write_file(&dir.join(name), &value) {
            Err(JailError::WriteCgroup { source, .. })
                if optional_file(name) && source.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(())
}

fn write_file(path: &Path, value: &str) -> Result<(), JailError> {
    fs::write(path, value).map_err(|source| JailError::WriteCgroup {
        path: path.to_path_buf(),
        source,
    })
}

/// Kills every process still in the sandbox's cgroups and removes them.
/// Idempotent: missing directories are fine. Called by the host after a
/// sandbox ended or was killed (the monitor also does it when it can).
pub fn remove_sandbox_cgroups(cgroup_parent: &str, sandbox_id: &str) -> Result<(), JailError> {
    validate::cgroup_parent(cgroup_parent)?;
    validate::sandbox_id(sandbox_id)?;
    let mounts = CgroupMounts::read()?;
    let mut roots: Vec<&PathBuf> = mounts.v2.iter().collect();
    roots.extend(mounts.v1.iter().map(|(path, _)| path));
    let dirs: Vec<PathBuf> = roots
        .into_iter()
        .map(|root| root.join(cgroup_parent).join(sandbox_id))
        .collect();
    remove_dirs(&dirs)
}

/// Removes an owner's own cgroup parent in every hierarchy once its
/// sandboxes' cgroups are gone (crash reaping of a dead owner). Idempotent;
/// a parent still holding cgroups is an error and stays.
pub fn remove_cgroup_parent(cgroup_parent: &str) -> Result<(), JailError> {
    validate::cgroup_parent(cgroup_parent)?;
    let mounts = CgroupMounts::read()?;
    let mut roots: Vec<&PathBuf> = mounts.v2.iter().collect();
    roots.extend(mounts.v1.iter().map(|(path, _)| path));
    let dirs: Vec<PathBuf> = roots
        .into_iter()
        .map(|root| root.join(cgroup_parent))
        .collect();
    remove_dirs(&dirs)
}

fn remove_dirs(dirs: &[PathBuf]) -> Result<(), JailError> {
    let mut first_error = None;
    for dir in dirs {
        if let Err(e) = remove_dir(dir) {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn remove_dir(dir: &Path) -> Result<(), JailError> {
    let deadline = Instant::now() + REMOVE_DEADLINE;
    let mut pause = Duration::from_micros(100);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                kill_members(dir);
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(source) => {
                return Err(JailError::RemoveCgroup {
                    path: dir.to_path_buf(),
                    source,
                });
            }
        }
    }
}

fn kill_members(dir: &Path) {
    // v2 (5.14+): one write kills the whole cgroup.
    let _ = fs::write(dir.join("cgroup.kill"), "1");
    let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if pid > 0 {
            // A pid that already exited yields ESRCH, which is fine.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THIS_MACHINE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
90 41 0:38 /sub /mnt/bound\\040dir rw - cgroup cgroup rw,memory
";

    #[test]
    fn parses_v1_hierarchies_and_the_v2_mount() {
        let mounts = parse_mountinfo(THIS_MACHINE);
        assert_eq!(mounts.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            mounts.v1,
            vec![
                (PathBuf::from("/sys/fs/cgroup/cpu"), vec!["cpu".to_owned()]),
                (
                    PathBuf::from("/sys/fs/cgroup/memory"),
                    vec!["memory".to_owned()]
                ),
                (
                    PathBuf::from("/sys/fs/cgroup/pids"),
                    vec!["pids".to_owned()]
                ),
            ]
        );
    }

    #[test]
    fn v2_without_controllers_falls_back_to_v1() {
        let mounts = parse_mountinfo(THIS_MACHINE);
        assert_eq!(
            Hierarchies::choose(&mounts, &[]),
            Hierarchies::V1 {
                memory: Some("/sys/fs/cgroup/memory".into()),
                pids: Some("/sys/fs/cgroup/pids".into()),
                cpu: Some("/sys/fs/cgroup/cpu".into()),
            }
        );
        let all: Vec<String> = ["cpuset", "cpu", "io", "memory", "pids"]
            .map(str::to_owned)
            .into();
        assert_eq!(
            Hierarchies::choose(&mounts, &all),
            Hierarchies::V2 {
                root: "/sys/fs/cgroup/unified".into()
            }
        );
        let partial: Vec<String> = vec!["memory".into(), "pids".into()];
        assert_eq!(Hierarchies::choose(&mounts, &partial).version(), "v1");
    }

    #[test]
    fn co_mounted_controllers_and_escaped_paths() {
        let mounts = parse_mountinfo(
            "5 1 0:9 / /cg/cpu\\054cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
             6 1 0:10 / /cg/a\\040b rw - cgroup2 cgroup2 rw\n",
        );
        assert_eq!(
            mounts.v1,
            vec![(PathBuf::from("/cg/cpu,cpuacct"), vec!["cpu".to_owned()])]
        );
        assert_eq!(mounts.v2, Some(PathBuf::from("/cg/a b")));
    }

    #[test]
    fn limit_files_for_both_versions() {
        let limits = SandboxLimits {
            memory_bytes: Some(1 << 20),
            pids: Some(64),
            cpu_millis: Some(1500),
            ..SandboxLimits::default()
        };
        assert_eq!(
            limit_writes(true, &limits),
            vec![
                ("memory.max", "1048576".to_owned()),
                ("memory.swap.max", "0".to_owned()),
                ("pids.max", "65".to_owned()),
                ("cpu.max", "150000 100000".to_owned()),
            ]
        );
        assert_eq!(
            limit_writes(false, &limits),
            vec![
                ("memory.limit_in_bytes", "1048576".to_owned()),
                ("memory.memsw.limit_in_bytes", "1048576".to_owned()),
                ("pids.max", "65".to_owned()),
                ("cpu.cfs_period_us", "100000".to_owned()),
                ("cpu.cfs_quota_us", "150000".to_owned()),
            ]
        );
        let tiny = SandboxLimits {
            memory_bytes: None,
            pids: None,
            cpu_millis: Some(1),
            ..SandboxLimits::default()
        };
        assert_eq!(
            limit_writes(true, &tiny),
            vec![("cpu.max", "1000 100000".to_owned())]
        );
    }

    #[test]
    fn creates_limits_and_removes_on_a_fake_v1_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let memory = tmp.path().join("memory");
        let pids = tmp.path().join("pids");
        fs::create_dir_all(&memory).unwrap();
        fs::create_dir_all(&pids).unwrap();
        let h = Hierarchies::V1 {
            memory: Some(memory.clone()),
            pids: Some(pids.clone()),
            cpu: None,
        };
        let limits = SandboxLimits {
            memory_bytes: Some(4096),
            pids: Some(10),
            cpu_millis: None,
            ..SandboxLimits::default()
        };
        let cg = SandboxCgroups::create(&h, "paddock/nested", "sb-1", &limits).unwrap();
        let mem_dir = memory.join("paddock/nested/sb-1");
        assert_eq!(
            fs::read_to_string(mem_dir.join("memory.limit_in_bytes")).unwrap(),
            "4096"
        );
        assert_eq!(
            fs::read_to_string(pids.join("paddock/nested/sb-1/pids.max")).unwrap(),
            "11"
        );
        let report = cg.report(&limits);
        assert_eq!(report.version, "v1");
        assert_eq!(report.paths.len(), 2);
        // A real cgroup directory holds only kernel files; the fake one must
        // be emptied before the rmdir that removal does.
        for dir in &cg.dirs {
            for entry in fs::read_dir(dir).unwrap() {
                fs::remove_file(entry.unwrap().path()).unwrap();
            }
        }
        remove_dirs(&cg.dirs).unwrap();
        assert!(!mem_dir.exists());
        remove_dirs(&cg.dirs).unwrap();
    }

    #[test]
    fn a_missing_controller_fails_and_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let memory = tmp.path().join("memory");
        fs::create_dir_all(&memory).unwrap();
        let h = Hierarchies::V1 {
            memory: Some(memory.clone()),
            pids: None,
            cpu: None,
        };
        let err = SandboxCgroups::create(&h, "paddock", "sb-2", &SandboxLimits::default());
        assert!(matches!(
            err,
            Err(JailError::MissingCgroupController { controller: "pids" })
        ));
        assert!(!memory.join("paddock/sb-2").exists());
    }
}
