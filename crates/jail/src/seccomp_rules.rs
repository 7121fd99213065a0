//! The seccomp policy as a table: default allow, and each listed syscall (or
//! syscall with listed arguments) denied, with the reason. seccomp_bpf.rs
//! compiles it; the x86_64 architecture check and the x32 rule live there.

/// What a denied call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deny {
    Eperm,
    /// "Not implemented": callers such as glibc fall back (clone3 -> clone).
    Enosys,
}

/// One test on the low 32 bits of a syscall argument. Every argument filtered
/// here is an int or is truncated to 32 bits by the kernel (clone flags,
/// ioctl request, mknod mode), so the high half cannot smuggle a value past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    Eq { arg: u8, value: u32 },
    Ne { arg: u8, value: u32 },
    MaskedEq { arg: u8, mask: u32, value: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyscallRule {
    /// How the rule is reported (Enforcement.seccomp_denied).
    pub label: &'static str,
    pub nr: i64,
    /// Denied when any alternative holds, an alternative being a list of
    /// checks that must all hold. Empty: always denied.
    pub when: &'static [&'static [Check]],
    pub deny: Deny,
    pub reason: &'static str,
}

const fn always(label: &'static str, nr: libc::c_long, reason: &'static str) -> SyscallRule {
    SyscallRule {
        label,
        nr,
        when: &[],
        deny: Deny::Eperm,
        reason,
    }
}

const fn when(
    label: &'static str,
    nr: libc::c_long,
    when: &'static [&'static [Check]],
    reason: &'static str,
) -> SyscallRule {
    SyscallRule {
        label,
        nr,
        when,
        deny: Deny::Eperm,
        reason,
    }
}

/// open_tree_attr(2), Linux 6.15; not in libc yet.
const SYS_OPEN_TREE_ATTR: libc::c_long = 467;

const fn masked(arg: u8, mask: u32, value: u32) -> Check {
    Check::MaskedEq { arg, mask, value }
}
const fn eq(arg: u8, value: u32) -> Check {
    Check::Eq { arg, value }
}

const S_IFMT: u32 = libc::S_IFMT;
const CLONE_NEW_FLAGS: [u32; 7] = [
    libc::CLONE_NEWNS as u32,
    libc::CLONE_NEWCGROUP as u32,
    libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWIPC as u32,
    libc::CLONE_NEWUSER as u32,
    libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32,
];
const SOCK_TYPE_MASK: u32 = 0xf;
const AF_INET: u32 = libc::AF_INET as u32;
const AF_INET6: u32 = libc::AF_INET6 as u32;
const SOCK_RAW: u32 = libc::SOCK_RAW as u32;
/// Obsolete packet socket type of AF_INET (libc deprecates the constant).
const SOCK_PACKET: u32 = 10;

const S_ISUID: u32 = libc::S_ISUID;
const S_ISGID: u32 = libc::S_ISGID;
const O_CREAT: u32 = libc::O_CREAT as u32;
/// O_TMPFILE without its O_DIRECTORY part.
const O_TMPFILE_BIT: u32 = 0o20_000_000;

/// `mode` (argument `$mode`) asks for a setuid or setgid bit.
macro_rules! setid_mode {
    ($mode:literal) => {
        &[
            &[masked($mode, S_ISUID, S_ISUID)],
            &[masked($mode, S_ISGID, S_ISGID)],
        ]
    };
}

/// An open that creates a file (O_CREAT or O_TMPFILE in `flags`) with a
/// setuid or setgid `mode`.
macro_rules! creating_setid {
    ($flags:literal, $mode:literal) => {
        &[
            &[
                masked($flags, O_CREAT, O_CREAT),
                masked($mode, S_ISUID, S_ISUID),
            ],
            &[
                masked($flags, O_CREAT, O_CREAT),
                masked($mode, S_ISGID, S_ISGID),
            ],
            &[
                masked($flags, O_TMPFILE_BIT, O_TMPFILE_BIT),
                masked($mode, S_ISUID, S_ISUID),
            ],
            &[
                masked($flags, O_TMPFILE_BIT, O_TMPFILE_BIT),
                masked($mode, S_ISGID, S_ISGID),
            ],
        ]
    };
}

const SETID: &str = "files the sandbox creates in the workspace belong on disk to the workspace \
    owner (possibly host root): a setuid/setgid bit there would hand that identity to whoever \
    runs the file on the host";
const MOUNT_API: &str = "mounting is the sandbox's own business, done before this filter";
const PROCESS_ACCESS: &str =
    "reading or changing another process's memory or files: ptrace-level access";
const MODULES: &str = "loading kernel code";
const KEYS: &str = "the kernel keyring is not namespaced: keys of the host uid would be reachable";
const IO_URING: &str =
    "large kernel attack surface that also bypasses seccomp for the I/O it performs";
const CLOCK: &str = "setting the host's clock";
const HANDLES: &str =
    "file handles open files by inode, bypassing the path-based mount and landlock view";

pub(crate) const RULES: &[SyscallRule] = &[
    always("mount", libc::SYS_mount, MOUNT_API),
    always("umount2", libc::SYS_umount2, MOUNT_API),
    always("pivot_root", libc::SYS_pivot_root, MOUNT_API),
    always(
        "chroot",
        libc::SYS_chroot,
        "changing the root is a classic step of escapes",
    ),
    always("fsopen", libc::SYS_fsopen, MOUNT_API),
    always("fsconfig", libc::SYS_fsconfig, MOUNT_API),
    always("fsmount", libc::SYS_fsmount, MOUNT_API),
    always("fspick", libc::SYS_fspick, MOUNT_API),
    always("move_mount", libc::SYS_move_mount, MOUNT_API),
    always("open_tree", libc::SYS_open_tree, MOUNT_API),
    always("open_tree_attr", SYS_OPEN_TREE_ATTR, MOUNT_API),
    always("mount_setattr", libc::SYS_mount_setattr, MOUNT_API),
    always(
        "unshare",
        libc::SYS_unshare,
        "new namespaces: nested user namespaces regain capabilities",
    ),
    always("setns", libc::SYS_setns, "joining other namespaces"),
    when(
        "clone(CLONE_NEW*)",
        libc::SYS_clone,
        &[
            &[masked(0, CLONE_NEW_FLAGS[0], CLONE_NEW_FLAGS[0])],
            &[masked(0, CLONE_NEW_FLAGS[1], CLONE_NEW_FLAGS[1])],
            &[masked(0, CLONE_NEW_FLAGS[2], CLONE_NEW_FLAGS[2])],
            &[masked(0, CLONE_NEW_FLAGS[3], CLONE_NEW_FLAGS[3])],
            &[masked(0, CLONE_NEW_FLAGS[4], CLONE_NEW_FLAGS[4])],
            &[masked(0, CLONE_NEW_FLAGS[5], CLONE_NEW_FLAGS[5])],
            &[masked(0, CLONE_NEW_FLAGS[6], CLONE_NEW_FLAGS[6])],
        ],
        "new namespaces through clone, as unshare",
    ),
    SyscallRule {
        label: "clone3",
        nr: libc::SYS_clone3,
        when: &[],
        deny: Deny::Enosys,
        reason: "its flags live in memory seccomp cannot read; ENOSYS makes libc fall back to clone",
    },
    always("ptrace", libc::SYS_ptrace, PROCESS_ACCESS),
    always(
        "process_vm_readv",
        libc::SYS_process_vm_readv,
        PROCESS_ACCESS,
    ),
    always(
        "process_vm_writev",
        libc::SYS_process_vm_writev,
        PROCESS_ACCESS,
    ),
    always("process_madvise", libc::SYS_process_madvise, PROCESS_ACCESS),
    always("pidfd_getfd", libc::SYS_pidfd_getfd, PROCESS_ACCESS),
    always(
        "kcmp",
        libc::SYS_kcmp,
        "compares kernel objects of other processes (information leak)",
    ),
    always(
        "kexec_load",
        libc::SYS_kexec_load,
        "replacing the running kernel",
    ),
    always(
        "kexec_file_load",
        libc::SYS_kexec_file_load,
        "replacing the running kernel",
    ),
    always("init_module", libc::SYS_init_module, MODULES),
    always("finit_module", libc::SYS_finit_module, MODULES),
    always("delete_module", libc::SYS_delete_module, MODULES),
    always(
        "bpf",
        libc::SYS_bpf,
        "eBPF programs: kernel attack surface and tracing",
    ),
    always(
        "perf_event_open",
        libc::SYS_perf_event_open,
        "performance counters leak host activity; attack surface",
    ),
    always("keyctl", libc::SYS_keyctl, KEYS),
    always("add_key", libc::SYS_add_key, KEYS),
    always("request_key", libc::SYS_request_key, KEYS),
    always("io_uring_setup", libc::SYS_io_uring_setup, IO_URING),
    always("io_uring_enter", libc::SYS_io_uring_enter, IO_URING),
    always("io_uring_register", libc::SYS_io_uring_register, IO_URING),
    always(
        "userfaultfd",
        libc::SYS_userfaultfd,
        "stalls kernel page faults at will: a race-window widener for exploits",
    ),
    always("reboot", libc::SYS_reboot, "rebooting or halting"),
    always("swapon", libc::SYS_swapon, "host swap configuration"),
    always("swapoff", libc::SYS_swapoff, "host swap configuration"),
    always("acct", libc::SYS_acct, "process accounting to a file"),
    always("quotactl", libc::SYS_quotactl, "disk quota administration"),
    always(
        "quotactl_fd",
        libc::SYS_quotactl_fd,
        "disk quota administration",
    ),
    always("open_by_handle_at", libc::SYS_open_by_handle_at, HANDLES),
    always("name_to_handle_at", libc::SYS_name_to_handle_at, HANDLES),
    always("iopl", libc::SYS_iopl, "raw I/O port access"),
    always("ioperm", libc::SYS_ioperm, "raw I/O port access"),
    always("clock_settime", libc::SYS_clock_settime, CLOCK),
    always("settimeofday", libc::SYS_settimeofday, CLOCK),
    always("adjtimex", libc::SYS_adjtimex, CLOCK),
    always("clock_adjtime", libc::SYS_clock_adjtime, CLOCK),
    always(
        "lookup_dcookie",
        libc::SYS_lookup_dcookie,
        "profiling interface that resolves kernel dentry cookies",
    ),
    always("uselib", libc::SYS_uselib, "obsolete a.out loader"),
    always(
        "syslog",
        libc::SYS_syslog,
        "the kernel log shows host activity",
    ),
    when(
        "mknod(S_IFCHR|S_IFBLK)",
        libc::SYS_mknod,
        &[
            &[masked(1, S_IFMT, libc::S_IFCHR)],
            &[masked(1, S_IFMT, libc::S_IFBLK)],
        ],
        "device nodes would open host devices (FIFOs and sockets stay allowed)",
    ),
    when(
        "mknodat(S_IFCHR|S_IFBLK)",
        libc::SYS_mknodat,
        &[
            &[masked(2, S_IFMT, libc::S_IFCHR)],
            &[masked(2, S_IFMT, libc::S_IFBLK)],
        ],
        "device nodes would open host devices (FIFOs and sockets stay allowed)",
    ),
    when(
        "mknod(S_ISUID|S_ISGID)",
        libc::SYS_mknod,
        setid_mode!(1),
        SETID,
    ),
    when(
        "mknodat(S_ISUID|S_ISGID)",
        libc::SYS_mknodat,
        setid_mode!(2),
        SETID,
    ),
    when(
        "chmod(S_ISUID|S_ISGID)",
        libc::SYS_chmod,
        setid_mode!(1),
        SETID,
    ),
    when(
        "fchmod(S_ISUID|S_ISGID)",
        libc::SYS_fchmod,
        setid_mode!(1),
        SETID,
    ),
    when(
        "fchmodat(S_ISUID|S_ISGID)",
        libc::SYS_fchmodat,
        setid_mode!(2),
        SETID,
    ),
    when(
        "fchmodat2(S_ISUID|S_ISGID)",
        libc::SYS_fchmodat2,
        setid_mode!(2),
        SETID,
    ),
    when(
        "creat(S_ISUID|S_ISGID)",
        libc::SYS_creat,
        setid_mode!(1),
        SETID,
    ),
    when(
        "open(O_CREAT, S_ISUID|S_ISGID)",
        libc::SYS_open,
        creating_setid!(1, 2),
        SETID,
    ),
    when(
        "openat(O_CREAT, S_ISUID|S_ISGID)",
        libc::SYS_openat,
        creating_setid!(2, 3),
        SETID,
    ),
    when(
        "socket(AF_PACKET)",
        libc::SYS_socket,
        &[&[eq(0, libc::AF_PACKET as u32)]],
        "link-layer sockets see and forge raw frames",
    ),
    when(
        "socket(AF_INET*, SOCK_RAW|SOCK_PACKET)",
        libc::SYS_socket,
        &[
            &[eq(0, AF_INET), masked(1, SOCK_TYPE_MASK, SOCK_RAW)],
            &[eq(0, AF_INET6), masked(1, SOCK_TYPE_MASK, SOCK_RAW)],
            &[eq(0, AF_INET), masked(1, SOCK_TYPE_MASK, SOCK_PACKET)],
        ],
        "raw IP sockets forge packets (netlink raw sockets, used by ip and getaddrinfo, stay allowed)",
    ),
    when(
        "socket(AF_VSOCK)",
        libc::SYS_socket,
        &[&[eq(0, libc::AF_VSOCK as u32)]],
        "vsock is not network-namespaced: it would reach the hypervisor host even with network none",
    ),
    when(
        "ioctl(TIOCSTI|TIOCLINUX)",
        libc::SYS_ioctl,
        &[
            &[eq(1, libc::TIOCSTI as u32)],
            &[eq(1, libc::TIOCLINUX as u32)],
        ],
        "typing into a terminal's input queue, and console tricks, reach outside through a shared tty",
    ),
    when(
        "personality(!= PER_LINUX)",
        libc::SYS_personality,
        &[&[
            Check::Ne { arg: 0, value: 0 },
            Check::Ne {
                arg: 0,
                value: 0xffff_ffff,
            },
        ]],
        "execution domains such as READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE weaken exploit mitigations",
    ),
];

/// The extra filter for the commands the guest runs (`CommandFilter`): the
/// guest itself needs openat2 (RESOLVE_BENEATH path resolution), the
/// untrusted commands do not.
pub(crate) const COMMAND_RULES: &[SyscallRule] = &[SyscallRule {
    label: "openat2",
    nr: libc::SYS_openat2,
    when: &[],
    deny: Deny::Enosys,
    reason: "its mode lives in memory seccomp cannot read, so it could create setuid files (see \
             the setid rules); ENOSYS makes callers fall back to openat",
}];

/// Names of what the filter denies, for Enforcement.seccomp_denied.
pub(crate) fn denied_labels() -> Vec<String> {
    let mut labels: Vec<String> = RULES.iter().map(|r| r.label.to_owned()).collect();
    labels.push("x32 ABI (syscall nr >= 0x40000000)".to_owned());
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_syscall_the_issue_requires_is_denied() {
        let required = [
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "unshare",
            "setns",
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "bpf",
            "perf_event_open",
            "keyctl",
            "add_key",
            "request_key",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "userfaultfd",
            "reboot",
            "swapon",
            "swapoff",
            "acct",
            "quotactl",
            "open_by_handle_at",
            "name_to_handle_at",
            "iopl",
            "ioperm",
            "clock_settime",
            "settimeofday",
            "adjtimex",
            "clock_adjtime",
            "fsopen",
            "fsmount",
            "move_mount",
            "open_tree",
            "mount_setattr",
            "lookup_dcookie",
            "clone3",
        ];
        for name in required {
            let rule = RULES.iter().find(|r| r.label == name);
            assert!(
                rule.is_some_and(|r| r.when.is_empty()),
                "{name} is not denied unconditionally"
            );
        }
        for prefix in [
            "mknod(S_IFCHR",
            "mknodat(S_IFCHR",
            "chmod(S_ISUID",
            "fchmodat(S_ISUID",
            "openat(O_CREAT",
            "clone(",
            "socket(AF_PACKET",
            "ioctl(",
            "personality(",
        ] {
            assert!(
                RULES.iter().any(|r| r.label.starts_with(prefix)),
                "{prefix} missing"
            );
        }
    }

    #[test]
    fn rules_are_well_formed() {
        for r in RULES.iter().chain(COMMAND_RULES) {
            assert!(!r.reason.is_empty(), "{} has no reason", r.label);
            assert!(r.nr >= 0 && r.nr < 1024, "{} has nr {}", r.label, r.nr);
            for alternative in r.when {
                assert!(
                    !alternative.is_empty(),
                    "{} has an empty alternative",
                    r.label
                );
            }
            // The prelude only supports unconditional ENOSYS rules.
            if r.deny == Deny::Enosys {
                assert!(r.when.is_empty());
            }
        }
        let mut labels: Vec<&str> = RULES.iter().map(|r| r.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), RULES.len(), "duplicate labels");
    }

    #[test]
    fn syscall_numbers_are_the_x86_64_ones() {
        let nr = |label: &str| RULES.iter().find(|r| r.label == label).unwrap().nr;
        assert_eq!(nr("mount"), 165);
        assert_eq!(nr("ptrace"), 101);
        assert_eq!(nr("clone3"), 435);
        assert_eq!(nr("open_tree_attr"), 467);
        assert_eq!(nr("clone(CLONE_NEW*)"), 56);
    }
}
