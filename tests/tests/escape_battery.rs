//! Runs `paddock-escape-battery` inside a real sandbox and asserts that every
//! escape it tries is blocked and that the host is unharmed afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::ErrorKind;
use std::net::{IpAddr, TcpListener};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use paddock_tests::bins::{profile_dir, stage_in_workspace};
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::{HostSnapshot, require_root, wait_for_no_leaks};
use paddock_tests::report::Report;

const MIB: u64 = 1 << 20;
const MEMORY: u64 = 512 * MIB;
const PIDS: u64 = 64;
const TMP: u64 = 64 * MIB;

/// Probes that must be in every report: a battery that silently skipped
/// them would otherwise pass.
const REQUIRED_PROBES: &[&str] = &[
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
    "fork bomb",
    "memory bomb",
    "fill /tmp",
];

/// Secret files on the host, outside any workspace; removed on drop.
struct Canaries {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Canaries {
    fn plant() -> Self {
        let tag = format!("paddock-canary-{}", std::process::id());
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
                fs::write(&path, &content).unwrap();
                (path, content.into_bytes())
            })
            .collect();
        Self { files }
    }

    fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    fn assert_unchanged(&self) {
        for (path, content) in &self.files {
            assert_eq!(
                &fs::read(path).unwrap(),
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
fn host_addresses() -> Vec<IpAddr> {
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
fn stray_battery_files() -> Vec<PathBuf> {
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

#[test]
fn every_escape_is_blocked_and_the_host_is_unharmed() {
    require_root();
    let before = HostSnapshot::capture();
    let core_pattern = fs::read("/proc/sys/kernel/core_pattern").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let battery = stage_in_workspace(ws.path(), "paddock-escape-battery");
    let canaries = Canaries::plant();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let abstract_name = format!("paddock-battery-{}", std::process::id());
    let unix =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap())
            .unwrap();
    unix.set_nonblocking(true).unwrap();

    let mut argv = vec![
        battery,
        "--tcp-port".into(),
        port.to_string(),
        "--abstract-socket".into(),
        abstract_name,
        "--pids-limit".into(),
        PIDS.to_string(),
        "--memory-limit".into(),
        MEMORY.to_string(),
    ];
    for c in canaries.paths() {
        argv.extend(["--canary".into(), c.display().to_string()]);
    }
    // This test process itself must be invisible inside.
    let own_comm = fs::read_to_string("/proc/self/comm").unwrap();
    argv.extend(["--host-process".into(), own_comm.trim_end().to_owned()]);
    for a in host_addresses() {
        argv.extend(["--host-addr".into(), a.to_string()]);
    }
    let (json, run) = SandboxRun::new(argv)
        .workspace(ws.path())
        .memory(MEMORY)
        .pids(PIDS)
        .tmp_size(TMP)
        .timeout_secs(300)
        .deadline(Duration::from_secs(400))
        .run_json();
    assert_eq!(
        run.code(),
        0,
        "the battery itself failed: {}\n{}",
        json.stderr,
        json.stdout
    );
    let report: Report = serde_json::from_str(&json.stdout)
        .unwrap_or_else(|e| panic!("no report from the battery ({e}):\n{}", json.stdout));

    let failed_controls: Vec<String> = report
        .failed_controls()
        .iter()
        .map(|c| format!("  {}: {}", c.name, c.detail))
        .collect();
    assert!(
        failed_controls.is_empty(),
        "the sandbox is broken, probes cannot be trusted:\n{}",
        failed_controls.join("\n")
    );
    let names: Vec<&str> = report.probes.iter().map(|p| p.name.as_str()).collect();
    let missing: Vec<&&str> = REQUIRED_PROBES
        .iter()
        .filter(|r| !names.iter().any(|n| n.starts_with(**r)))
        .collect();
    assert!(
        missing.is_empty(),
        "probes missing from the report: {missing:?}"
    );
    assert!(
        report
            .probes
            .iter()
            .any(|p| p.name.starts_with("read host canary")),
        "no canary probe ran"
    );
    let escapes: Vec<String> = report
        .not_blocked()
        .iter()
        .map(|p| format!("  {}: {}", p.name, p.detail))
        .collect();
    assert!(
        escapes.is_empty(),
        "{} of {} escape attempts were NOT blocked:\n{}",
        escapes.len(),
        report.probes.len(),
        escapes.join("\n")
    );

    // The host is unharmed.
    canaries.assert_unchanged();
    assert_eq!(
        fs::read("/proc/sys/kernel/core_pattern").unwrap(),
        core_pattern,
        "the host's core_pattern changed"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host TCP listener was reached: {other:?}"),
    }
    match unix.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host abstract socket was reached: {other:?}"),
    }
    let strays = stray_battery_files();
    assert!(strays.is_empty(), "battery files on the host: {strays:?}");
    let leaks = wait_for_no_leaks(&before, Duration::from_secs(10));
    assert!(leaks.is_empty(), "left behind on the host: {leaks:#?}");
}
