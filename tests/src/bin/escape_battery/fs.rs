//! Filesystem escapes: host files outside the workspace, writes outside
//! /workspace and /tmp, /proc and /sys knobs, device nodes.

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::Battery;
use crate::child::errno_name;

/// Directories nothing in the sandbox may create files in.
const READ_ONLY_DIRS: &[&str] = &[
    "/",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/var",
    "/var/tmp",
    "/root",
    "/home",
    "/opt",
    "/srv",
    "/boot",
    "/run",
    "/mnt",
    "/media",
    "/work",
    "/dev",
    "/proc",
    "/sys",
    "/sys/fs/cgroup",
];

/// Existing files that must not open for writing (nothing is ever written).
const READ_ONLY_FILES: &[&str] = &[
    "/etc/passwd",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/bin/sh",
    "/usr/bin/env",
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/kernel/sysrq",
    "/proc/sys/kernel/panic",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/vm/overcommit_memory",
    "/proc/sys/fs/suid_dumpable",
    "/proc/sys/net/ipv4/ip_forward",
    "/proc/sysrq-trigger",
    "/proc/1/mem",
    "/proc/1/attr/current",
    "/sys/kernel/uevent_helper",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/power/state",
];

/// Kernel memory, raw disks and kernel logs: none may open.
const DEVICES: &[&str] = &[
    "/dev/mem",
    "/dev/kmem",
    "/dev/port",
    "/dev/sda",
    "/dev/sdb",
    "/dev/vda",
    "/dev/xvda",
    "/dev/hda",
    "/dev/nvme0n1",
    "/dev/loop0",
    "/dev/loop-control",
    "/dev/mapper/control",
    "/dev/dm-0",
    "/dev/kmsg",
    "/dev/tty0",
    "/dev/mcelog",
    "/proc/kcore",
    "/proc/kmsg",
];

pub fn run(b: &mut Battery, canaries: &[PathBuf]) {
    for canary in canaries {
        b.probe(&format!("read host canary {}", canary.display()), || {
            read_canary(canary)
        });
    }
    for dir in READ_ONLY_DIRS {
        b.probe(&format!("create a file in {dir}"), || create_in(dir));
    }
    for dir in ["/", "/usr", "/etc"] {
        b.probe(&format!("mkdir in {dir}"), || mkdir_in(dir));
    }
    for file in READ_ONLY_FILES {
        b.probe(&format!("open {file} for writing"), || open_for_write(file));
    }
    b.probe("chmod /etc/passwd", || chmod_same("/etc/passwd"));
    for dev in DEVICES {
        b.probe(&format!("open {dev}"), || open_and_read(dev));
    }
    b.probe("no block devices under /dev", no_block_devices);
}

fn read_canary(canary: &Path) -> (bool, String) {
    let mut tried = Vec::new();
    let rel = canary.strip_prefix("/").unwrap_or(canary);
    let candidates = [
        canary.to_path_buf(),
        Path::new("/proc/1/root").join(rel),
        Path::new("/proc/self/root").join(rel),
    ];
    for path in candidates {
        match fs::read(&path) {
            Ok(bytes) => {
                return (
                    false,
                    format!("READ {} bytes through {}", bytes.len(), path.display()),
                );
            }
            Err(e) => tried.push(format!("{}: {}", path.display(), io_errno(&e))),
        }
    }
    (true, format!("unreadable: {}", tried.join("; ")))
}

fn create_in(dir: &str) -> (bool, String) {
    let path = Path::new(dir).join(format!(".paddock-battery-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(_) => {
            let _ = fs::remove_file(&path);
            (false, format!("CREATED {} (removed again)", path.display()))
        }
        Err(e) => (true, format!("refused: {}", io_errno(&e))),
    }
}

fn mkdir_in(dir: &str) -> (bool, String) {
    let path = Path::new(dir).join(format!(".paddock-battery-dir-{}", std::process::id()));
    match fs::create_dir(&path) {
        Ok(()) => {
            let _ = fs::remove_dir(&path);
            (false, format!("CREATED {} (removed again)", path.display()))
        }
        Err(e) => (true, format!("refused: {}", io_errno(&e))),
    }
}

fn open_for_write(file: &str) -> (bool, String) {
    match OpenOptions::new().write(true).open(file) {
        Ok(_) => (false, "OPENED for writing (nothing written)".to_string()),
        Err(e) => (true, format!("refused: {}", io_errno(&e))),
    }
}

fn chmod_same(file: &str) -> (bool, String) {
    use std::os::unix::fs::PermissionsExt;
    let mode = match fs::metadata(file) {
        Ok(m) => m.permissions().mode(),
        Err(e) => return (true, format!("not even visible: {}", io_errno(&e))),
    };
    match fs::set_permissions(file, fs::Permissions::from_mode(mode)) {
        Ok(()) => (false, format!("CHMOD succeeded (mode kept at {mode:o})")),
        Err(e) => (true, format!("refused: {}", io_errno(&e))),
    }
}

fn open_and_read(path: &str) -> (bool, String) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // Non-blocking: a real /proc/kmsg would otherwise block until the kernel logs.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let mut f = match opened {
        Ok(f) => f,
        Err(e) => return (true, format!("refused: {}", io_errno(&e))),
    };
    let masked = f
        .metadata()
        .is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3));
    if masked {
        return (true, "masked with /dev/null".to_string());
    }
    let mut byte = [0u8; 1];
    match f.read(&mut byte) {
        Ok(0) => (true, "opened, but nothing to read (masked)".to_string()),
        Ok(n) => (false, format!("OPENED and read {n} byte(s)")),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => (
            false,
            "OPENED the kernel interface (no data waiting yet)".to_string(),
        ),
        Err(e) => (
            true,
            format!("opened, but reading refused: {}", io_errno(&e)),
        ),
    }
}

fn no_block_devices() -> (bool, String) {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::from("/dev")];
    // Two levels deep is all a minimal /dev has (pts, shm, mapper ...).
    for _ in 0..2 {
        let mut next = Vec::new();
        for dir in dirs {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(ft) = entry.file_type() else { continue };
                if ft.is_block_device() {
                    found.push(entry.path().display().to_string());
                } else if ft.is_dir() {
                    next.push(entry.path());
                }
            }
        }
        dirs = next;
    }
    if found.is_empty() {
        (true, "none".to_string())
    } else {
        (false, format!("FOUND {}", found.join(", ")))
    }
}

pub fn io_errno(e: &std::io::Error) -> String {
    e.raw_os_error()
        .map(errno_name)
        .unwrap_or_else(|| e.to_string())
}
