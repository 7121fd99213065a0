//! cgroup escapes: mounting a cgroup v1 hierarchy to write its release_agent
//! (the classic container breakout), writing a reachable release_agent, and
//! raising the sandbox's own limits.

use std::ffi::CStr;
use std::fs::{self, OpenOptions};
use std::path::PathBuf;

use libc::c_ulong;

use crate::Battery;
use crate::child::{DENIED, check, in_child, judge};
use crate::fs::io_errno;
use crate::scratch;

pub fn run(b: &mut Battery) {
    b.probe("mount cgroup v1 (memory) for release_agent", || {
        judge(in_child(|| mount_cgroup(c"cgroup", c"memory")), DENIED)
    });
    b.probe("mount cgroup v1 (rdma) for release_agent", || {
        judge(in_child(|| mount_cgroup(c"cgroup", c"rdma")), DENIED)
    });
    b.probe("mount cgroup2", || {
        judge(in_child(|| mount_cgroup(c"cgroup2", c"")), DENIED)
    });
    b.probe(
        "write a release_agent under /sys/fs/cgroup",
        write_release_agent,
    );
    b.probe("raise the sandbox's own cgroup limits", raise_own_limits);
}

/// Mounts a cgroup filesystem in the scratch dir (success alone is the escape:
/// its release_agent would then be writable), then unmounts it again.
fn mount_cgroup(fstype: &CStr, options: &CStr) -> Result<(), i32> {
    let target = scratch::CGROUP_DIR;
    // SAFETY: every pointer is a NUL-terminated string.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount,
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0 as c_ulong,
            options.as_ptr(),
        )
    })?;
    // SAFETY: undoes the mount just made.
    unsafe {
        libc::syscall(
            libc::SYS_umount2,
            target.as_ptr(),
            libc::MNT_DETACH as libc::c_long,
        )
    };
    Ok(())
}

fn write_release_agent() -> (bool, String) {
    let mut candidates = vec![PathBuf::from("/sys/fs/cgroup/release_agent")];
    if let Ok(entries) = fs::read_dir("/sys/fs/cgroup") {
        candidates.extend(entries.flatten().map(|e| e.path().join("release_agent")));
    }
    let mut refused = Vec::new();
    for path in &candidates {
        match OpenOptions::new().write(true).open(path) {
            Ok(_) => {
                return (
                    false,
                    format!("OPENED {} for writing (nothing written)", path.display()),
                );
            }
            Err(e) => refused.push(format!("{}: {}", path.display(), io_errno(&e))),
        }
    }
    (true, format!("refused: {}", refused.join("; ")))
}

/// Every limit file of the sandbox's own cgroups, as the sandbox sees them.
fn own_limit_files() -> Vec<PathBuf> {
    const FILES: &[&str] = &[
        "memory.limit_in_bytes",
        "memory.memsw.limit_in_bytes",
        "memory.max",
        "pids.max",
        "cpu.cfs_quota_us",
        "cpu.max",
        "cgroup.procs",
    ];
    let mut dirs = vec![PathBuf::from("/sys/fs/cgroup")];
    for line in fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
    {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        dirs.push(PathBuf::from("/sys/fs/cgroup").join(rel));
        for c in controllers.split(',').filter(|c| !c.is_empty()) {
            dirs.push(PathBuf::from("/sys/fs/cgroup").join(c).join(rel));
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs.iter()
        .flat_map(|d| FILES.iter().map(move |f| d.join(f)))
        .collect()
}

fn raise_own_limits() -> (bool, String) {
    let mut opened = Vec::new();
    let mut refused = 0;
    for path in own_limit_files() {
        match OpenOptions::new().write(true).open(&path) {
            Ok(_) => opened.push(path.display().to_string()),
            Err(_) => refused += 1,
        }
    }
    if opened.is_empty() {
        (
            true,
            format!("all {refused} limit files refused writing (or absent)"),
        )
    } else {
        (
            false,
            format!(
                "OPENED for writing (nothing written): {}",
                opened.join(", ")
            ),
        )
    }
}
