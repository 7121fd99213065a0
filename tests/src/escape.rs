//! What the escape battery needs around it on the host: the probes every
//! report must hold, secret canary files outside any workspace, the host's
//! addresses, and the traces a write that got through would leave.

use std::fs;
use std::io::ErrorKind;
use std::net::{IpAddr, TcpListener};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bins::profile_dir;
use crate::report::Report;

pub const MIB: u64 = 1 << 20;
pub const MEMORY: u64 = 512 * MIB;
pub const PIDS: u64 = 64;
pub const TMP: u64 = 64 * MIB;

/// Probes that must be in every report: a battery that silently skipped
/// them would otherwise pass.
pub const REQUIRED_PROBES: &[&str] = &[
    "syscall mount(tmpfs)",
    "syscall umount2",
    "syscall pivot_root",
    "syscall chroot",
    "syscall unshare(CLONE_NEWUSER)",
    "syscall setns(/proc/1/ns/mnt)",
    "syscall ptrace(PTRACE_ATTACH, pid 1)",
    "syscall ptrace(PTRACE_TRACEME) + exec",
    "syscall process_vm_readv(pid 1)",
    "syscall kexec_load",
    "syscall init_module",
    "syscall finit_module",
    "syscall delete_module",
    "syscall bpf(BPF_MAP_CREATE)",
    "syscall perf_event_open",
    "syscall keyctl (session keyring)",
    "syscall add_key",
    "syscall request_key",
    "syscall io_uring_setup",
    "syscall userfaultfd",
    "syscall reboot",
    "syscall swapon",
    "syscall swapoff",
    "syscall acct",
    "syscall quotactl",
    "syscall open_by_handle_at",
    "syscall name_to_handle_at",
    "syscall iopl",
    "syscall ioperm",
    "syscall clock_settime(CLOCK_REALTIME)",
    "syscall settimeofday",
    "syscall adjtimex",
    "syscall mknod(char device 1:3)",
    "syscall mknodat(block device 8:0)",
    "syscall openat2(setuid file in /workspace)",
    "nested user namespace via clone(CLONE_NEWUSER)",
    "nested user namespace via clone3(CLONE_NEWUSER)",
    "nested user namespace via unshare --user true",
    "open /proc/sys/kernel/core_pattern for writing",
    "open /proc/sysrq-trigger for writing",
    "open /proc/kcore",
    "open /dev/mem",
    "mount cgroup v1 (memory) for release_agent",
    "write a release_agent under /sys/fs/cgroup",
    "raw socket AF_INET/SOCK_RAW",
    "packet socket AF_PACKET/SOCK_RAW",
    "only the loopback interface",
    "see the host process",
    "open the guest's /proc/PID/fd/* (PID 1",
    "open the guest's /proc/PID/fd/* (the battery's parent",
    "write a forged frame to the guest's fds (PID 1",
    "write a forged frame to the guest's fds (the battery's parent",
    "open the guest's /proc/PID/mem (PID 1",
    "open the guest's /proc/PID/mem (the battery's parent",
    "read the guest's /proc/PID/environ (PID 1",
    "read the guest's /proc/PID/environ (the battery's parent",
    "ptrace(PTRACE_SEIZE) the guest (PID 1",
    "ptrace(PTRACE_SEIZE) the guest (the battery's parent",
    "fork bomb",
    "memory bomb",
    "fill /tmp",
];

/// Secret files on the host, outside any workspace; removed on drop.
#[derive(Debug)]
pub struct Canaries {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Canaries {
    pub fn plant() -> Self {
        // One set per call: tests planting canaries at once must not remove
        // each other's.
        static PLANTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = PLANTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("paddock-canary-{}-{n}", std::process::id());
        let dirs = [
            PathBuf::from("/root"),
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
            PathBuf::from("/etc"),
            profile_dir(),
        ];
        let files = dirs
            .iter()
            .filter(|d| d.is_dir())
            .map(|d| {
                let path = d.join(&tag);
                let content = format!("secret {} {}", path.display(), std::process::id());
                fs::write(&path, &content)
                    .unwrap_or_else(|e| panic!("planting {}: {e}", path.display()));
                (path, content.into_bytes())
            })
            .collect();
        Self { files }
    }

    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    pub fn assert_unchanged(&self) {
        for (path, content) in &self.files {
            assert_eq!(
                &fs::read(path).unwrap_or_else(|e| panic!("canary {}: {e}", path.display())),
                content,
                "canary {} changed",
                path.display()
            );
        }
    }
}

impl Drop for Canaries {
    fn drop(&mut self) {
        for (path, _) in &self.files {
            let _ = fs::remove_file(path);
        }
    }
}

/// The host's non-loopback IPv4 addresses (the sandbox must reach none).
pub fn host_addresses() -> Vec<IpAddr> {
    let Ok(out) = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.find(|w| *w == "inet")?;
            words.next()?.split('/').next()?.parse().ok()
        })
        .filter(|a: &IpAddr| !a.is_loopback())
        .collect()
}

/// Files the battery may have left in host directories if a write got through.
pub fn stray_battery_files() -> Vec<PathBuf> {
    ["/", "/usr", "/etc", "/root", "/var/tmp", "/tmp", "/dev"]
        .iter()
        .filter_map(|d| fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".paddock-battery"))
        })
        .collect()
}

/// What one battery run aims at on the host and must leave as it was: the
/// canaries, a TCP listener on every address, an abstract unix socket, and
/// the kernel's core_pattern.
#[derive(Debug)]
pub struct HostTargets {
    canaries: Canaries,
    listener: TcpListener,
    unix: UnixListener,
    abstract_name: String,
    core_pattern: Vec<u8>,
}

// Test support: a set-up or check that fails is the test failing.
#[allow(clippy::unwrap_used)]
impl HostTargets {
    /// `tag` keeps the abstract socket name of concurrent runs apart.
    pub fn plant(tag: &str) -> Self {
        let core_pattern = fs::read("/proc/sys/kernel/core_pattern").unwrap();
        let canaries = Canaries::plant();
        let listener = TcpListener::bind("0.0.0.0:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let abstract_name = format!("paddock-battery-{tag}-{}", std::process::id());
        let unix = UnixListener::bind_addr(
            &SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap(),
        )
        .unwrap();
        unix.set_nonblocking(true).unwrap();
        Self {
            canaries,
            listener,
            unix,
            abstract_name,
            core_pattern,
        }
    }

    /// The battery's command line, aimed at these targets; this test process
    /// (which must be invisible inside) and the host's addresses included.
    pub fn argv(&self, battery: String, pids: u64) -> Vec<String> {
        let mut argv = vec![
            battery,
            "--tcp-port".into(),
            self.listener.local_addr().unwrap().port().to_string(),
            "--abstract-socket".into(),
            self.abstract_name.clone(),
            "--pids-limit".into(),
            pids.to_string(),
            "--memory-limit".into(),
            MEMORY.to_string(),
        ];
        for c in self.canaries.paths() {
            argv.extend(["--canary".into(), c.display().to_string()]);
        }
        let own_comm = fs::read_to_string("/proc/self/comm").unwrap();
        argv.extend(["--host-process".into(), own_comm.trim_end().to_owned()]);
        for a in host_addresses() {
            argv.extend(["--host-addr".into(), a.to_string()]);
        }
        argv
    }

    /// Canaries unchanged, core_pattern unchanged, neither socket reached,
    /// no battery file in a host directory.
    pub fn assert_unharmed(&self) {
        self.canaries.assert_unchanged();
        assert_eq!(
            fs::read("/proc/sys/kernel/core_pattern").unwrap(),
            self.core_pattern,
            "the host's core_pattern changed"
        );
        match self.listener.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => panic!("the host TCP listener was reached: {other:?}"),
        }
        match self.unix.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => panic!("the host abstract socket was reached: {other:?}"),
        }
        let strays = stray_battery_files();
        assert!(strays.is_empty(), "battery files on the host: {strays:?}");
    }
}

/// A battery report that can be trusted and shows no escape: every control
/// passed, every required probe ran (but those in `excused`, run elsewhere),
/// a canary probe ran, and every probe was blocked. `label` names the run.
pub fn assert_report(report: &Report, excused: &[&str], label: &str) {
    let failed_controls: Vec<String> = report
        .failed_controls()
        .iter()
        .map(|c| format!("  {}: {}", c.name, c.detail))
        .collect();
    assert!(
        failed_controls.is_empty(),
        "[{label}] the sandbox is broken, probes cannot be trusted:\n{}",
        failed_controls.join("\n")
    );
    let names: Vec<&str> = report.probes.iter().map(|p| p.name.as_str()).collect();
    let missing: Vec<&&str> = REQUIRED_PROBES
        .iter()
        .filter(|r| !names.iter().any(|n| n.starts_with(**r)))
        .filter(|r| !excused.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "[{label}] probes missing from the report: {missing:?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("read host canary")),
        "[{label}] no canary probe ran"
    );
    let escapes: Vec<String> = report
        .not_blocked()
        .iter()
        .map(|p| format!("  {}: {}", p.name, p.detail))
        .collect();
    assert!(
        escapes.is_empty(),
        "[{label}] {} of {} escape attempts were NOT blocked:\n{}",
        escapes.len(),
        report.probes.len(),
        escapes.join("\n")
    );
}
