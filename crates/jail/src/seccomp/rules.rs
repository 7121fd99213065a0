//! The seccomp policy as tables: an **allowlist** with a reason per entry,
//! default deny. seccomp/bpf.rs compiles it; the x86_64 architecture check and
//! the x32 rule live there. docs/security.md names every entry (seccomp/doc_check.rs).
//!
//! The tables' shape, for anyone generating another format from them (a
//! Docker/OCI seccomp profile, for instance):
//!
//! - [`ALLOWED`]: one [`Allowed`] per system call the sandbox may make:
//!   `name` (the x86_64 name), `nr`, `reason`, and optionally `args`. Without
//!   `args` the call is allowed whatever its arguments. With `args`, it is
//!   allowed when any alternative of `args.allowed_when` holds, an alternative
//!   being a list of [`Check`]s that must all hold (each compares the low 32
//!   bits of one argument); other argument values are refused with EPERM and
//!   reported as `args.label`.
//! - Everything not in [`ALLOWED`] is refused with [`DEFAULT_DENY`] (EPERM).
//! - [`REFUSED`]: calls that are refused (none of them is in [`ALLOWED`]),
//!   named with the reason because they matter; those marked
//!   [`Deny::Enosys`] return ENOSYS instead of EPERM so that callers fall back
//!   to an allowed call (clone3 -> clone).
//! - [`COMMAND_RULES`]: refused in the commands the guest runs, on top of the
//!   sandbox filter (see `CommandFilter`).

/// What a refused call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deny {
    Eperm,
    /// "Not implemented": callers such as glibc fall back (clone3 -> clone).
    Enosys,
}

/// What any call missing from [`ALLOWED`] returns. EPERM rather than ENOSYS:
/// a refused call must look refused, not absent, except where a caller is
/// known to need ENOSYS to fall back (those are listed in [`REFUSED`]).
pub const DEFAULT_DENY: Deny = Deny::Eperm;

/// One test on the low 32 bits of a syscall argument. Every argument filtered
/// here is an int or is truncated to 32 bits by the kernel (clone flags,
/// ioctl request, mknod mode, socket family), so the high half cannot smuggle
/// a value past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Eq { arg: u8, value: u32 },
    Ne { arg: u8, value: u32 },
    MaskedEq { arg: u8, mask: u32, value: u32 },
}

/// The argument values an allowed call is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgLimit {
    /// How the refused values are reported (Enforcement.seccomp_denied).
    pub label: &'static str,
    /// Allowed when any alternative holds, an alternative being a list of
    /// checks that must all hold. Never empty, nor is any alternative.
    pub allowed_when: &'static [&'static [Check]],
    /// Why the other values are refused.
    pub why: &'static str,
}

/// One system call the sandbox may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    pub name: &'static str,
    pub nr: i64,
    /// Why the sandbox needs it.
    pub reason: &'static str,
    pub args: Option<ArgLimit>,
}

/// A call refused on purpose, named for the report and the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// How it is reported (Enforcement.seccomp_denied).
    pub label: &'static str,
    pub nr: i64,
    pub deny: Deny,
    pub reason: &'static str,
}

const fn allow(name: &'static str, nr: libc::c_long, reason: &'static str) -> Allowed {
    Allowed {
        name,
        nr,
        reason,
        args: None,
    }
}

const fn limited(
    name: &'static str,
    nr: libc::c_long,
    reason: &'static str,
    args: ArgLimit,
) -> Allowed {
    Allowed {
        name,
        nr,
        reason,
        args: Some(args),
    }
}

const fn refuse(label: &'static str, nr: libc::c_long, reason: &'static str) -> Refused {
    Refused {
        label,
        nr,
        deny: Deny::Eperm,
        reason,
    }
}

/// open_tree_attr(2), Linux 6.15; not in libc yet.
const SYS_OPEN_TREE_ATTR: libc::c_long = 467;
/// map_shadow_stack(2), Linux 6.6; not in libc yet.
const SYS_MAP_SHADOW_STACK: libc::c_long = 453;
/// futex_wake(2), futex_wait(2), futex_requeue(2), Linux 6.7; not in libc yet.
const SYS_FUTEX_WAKE: libc::c_long = 454;
const SYS_FUTEX_WAIT: libc::c_long = 455;
const SYS_FUTEX_REQUEUE: libc::c_long = 456;

const fn masked(arg: u8, mask: u32, value: u32) -> Check {
    Check::MaskedEq { arg, mask, value }
}
const fn eq(arg: u8, value: u32) -> Check {
    Check::Eq { arg, value }
}
const fn ne(arg: u8, value: u32) -> Check {
    Check::Ne { arg, value }
}

const S_IFMT: u32 = libc::S_IFMT;
const CLONE_NEW_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;
const SOCK_TYPE_MASK: u32 = 0xf;
const AF_UNIX: u32 = libc::AF_UNIX as u32;
const AF_INET: u32 = libc::AF_INET as u32;
const AF_INET6: u32 = libc::AF_INET6 as u32;
const AF_NETLINK: u32 = libc::AF_NETLINK as u32;
const NETLINK_ROUTE: u32 = libc::NETLINK_ROUTE as u32;
const SOCK_STREAM: u32 = libc::SOCK_STREAM as u32;
const SOCK_DGRAM: u32 = libc::SOCK_DGRAM as u32;

const SETID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;
const O_CREAT: u32 = libc::O_CREAT as u32;
/// O_TMPFILE without its O_DIRECTORY part.
const O_TMPFILE_BIT: u32 = 0o20_000_000;

const SETID: &str = "files the sandbox creates in the workspace belong on disk to the workspace \
    owner (possibly host root): a setuid/setgid bit there would hand that identity to whoever \
    runs the file on the host";

/// `mode` (argument `$mode`) has no setuid or setgid bit.
macro_rules! no_setid {
    ($label:literal, $mode:literal) => {
        ArgLimit {
            label: $label,
            allowed_when: &[&[masked($mode, SETID_BITS, 0)]],
            why: SETID,
        }
    };
}

/// An open that does not create a file (neither O_CREAT nor O_TMPFILE in
/// `flags`), or creates one without a setuid or setgid `mode`.
macro_rules! open_without_setid {
    ($label:literal, $flags:literal, $mode:literal) => {
        ArgLimit {
            label: $label,
            allowed_when: &[
                &[masked($flags, O_CREAT | O_TMPFILE_BIT, 0)],
                &[masked($mode, SETID_BITS, 0)],
            ],
            why: SETID,
        }
    };
}

/// A node that is a regular file, FIFO or socket (type 0 means regular),
/// without setuid or setgid bit.
macro_rules! plain_node {
    ($label:literal, $mode:literal) => {
        ArgLimit {
            label: $label,
            allowed_when: &[
                &[masked($mode, S_IFMT | SETID_BITS, 0)],
                &[masked($mode, S_IFMT | SETID_BITS, libc::S_IFREG)],
                &[masked($mode, S_IFMT | SETID_BITS, libc::S_IFIFO)],
                &[masked($mode, S_IFMT | SETID_BITS, libc::S_IFSOCK)],
            ],
            why: "device nodes would open host devices (regular files, FIFOs and sockets stay \
                  allowed); setid bits, see the setid rules",
        }
    };
}

const CLONE: ArgLimit = ArgLimit {
    label: "clone(CLONE_NEW*)",
    allowed_when: &[&[masked(0, CLONE_NEW_FLAGS, 0)]],
    why: "new namespaces through clone, as unshare",
};
const IOCTL: ArgLimit = ArgLimit {
    label: "ioctl(TIOCSTI|TIOCLINUX)",
    allowed_when: &[&[ne(1, libc::TIOCSTI as u32), ne(1, libc::TIOCLINUX as u32)]],
    why: "typing into a terminal's input queue, and console tricks, reach outside through a \
          shared tty",
};
const PERSONALITY: ArgLimit = ArgLimit {
    label: "personality(!= PER_LINUX)",
    allowed_when: &[&[eq(0, 0)], &[eq(0, 0xffff_ffff)]],
    why: "execution domains such as READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE weaken exploit \
          mitigations",
};
const MKNOD: ArgLimit = plain_node!("mknod(S_IFCHR|S_IFBLK|S_ISUID|S_ISGID)", 1);
const MKNODAT: ArgLimit = plain_node!("mknodat(S_IFCHR|S_IFBLK|S_ISUID|S_ISGID)", 2);
const CHMOD: ArgLimit = no_setid!("chmod(S_ISUID|S_ISGID)", 1);
const FCHMOD: ArgLimit = no_setid!("fchmod(S_ISUID|S_ISGID)", 1);
const FCHMODAT: ArgLimit = no_setid!("fchmodat(S_ISUID|S_ISGID)", 2);
const FCHMODAT2: ArgLimit = no_setid!("fchmodat2(S_ISUID|S_ISGID)", 2);
const CREAT: ArgLimit = no_setid!("creat(S_ISUID|S_ISGID)", 1);
const OPEN: ArgLimit = open_without_setid!("open(O_CREAT, S_ISUID|S_ISGID)", 1, 2);
const OPENAT: ArgLimit = open_without_setid!("openat(O_CREAT, S_ISUID|S_ISGID)", 2, 3);
const SOCKET: ArgLimit = ArgLimit {
    label: "socket(other than AF_UNIX, AF_INET*/stream|dgram, NETLINK_ROUTE)",
    allowed_when: &[
        &[eq(0, AF_UNIX)],
        &[eq(0, AF_INET), masked(1, SOCK_TYPE_MASK, SOCK_STREAM)],
        &[eq(0, AF_INET), masked(1, SOCK_TYPE_MASK, SOCK_DGRAM)],
        &[eq(0, AF_INET6), masked(1, SOCK_TYPE_MASK, SOCK_STREAM)],
        &[eq(0, AF_INET6), masked(1, SOCK_TYPE_MASK, SOCK_DGRAM)],
        &[eq(0, AF_NETLINK), eq(2, NETLINK_ROUTE)],
    ],
    why: "a sandbox needs unix sockets, TCP/UDP (ICMP echo through datagram sockets) and route \
          netlink (ip, getaddrinfo); raw and packet sockets forge traffic, vsock is not \
          network-namespaced, other netlink families and exotic families are kernel attack \
          surface",
};
const SOCKETPAIR: ArgLimit = ArgLimit {
    label: "socketpair(!= AF_UNIX)",
    allowed_when: &[&[eq(0, AF_UNIX)]],
    why: "only unix socket pairs exist in practice; other families are attack surface",
};

const FILE_IO: &str = "reading and writing open files";
const FILE_OPEN: &str = "opening and creating files (setid modes refused)";
const FILE_META: &str = "file metadata, directories and the working directory";
const FILE_TREE: &str = "creating, renaming and removing names in the tree";
const FILE_OWNER: &str = "file permissions and owners (within the sandbox's mapped ids)";
const XATTR: &str = "extended attributes (cp -a, tar, git)";
const MEMORY: &str = "the process's own memory";
const PROCESS: &str = "starting, running and ending processes inside the sandbox's pid namespace";
const IDS: &str = "the process's ids and capabilities, inside the user namespace (no gain: all \
    capabilities are dropped and no_new_privs is set)";
const SIGNALS: &str = "signals, within the pid namespace";
const TIME: &str = "reading clocks, sleeping and timers (setting the clock is refused)";
const WAITING: &str = "waiting on descriptors, events and futexes";
const SCHED: &str = "scheduling of the sandbox's own processes (bounded by cgroups and rlimits)";
const LIMITS: &str = "resource limits and usage (raising beyond the hard limit needs a capability)";
const NETWORK: &str = "sockets, within the sandbox's network namespace (families limited)";
const IPC: &str = "System V and POSIX IPC, namespaced by the sandbox's IPC namespace";
const AIO: &str = "asynchronous file I/O (libaio), no kernel-side submission ring";
const RANDOM: &str = "random numbers";
const SELF_RESTRICT: &str = "a process may restrict itself further (filters and rulesets only \
    stack); the guest installs CommandFilter with it";
const GUEST_PATHS: &str = "the guest resolves workspace paths with RESOLVE_BENEATH; commands \
    lose it through CommandFilter";
const DEVICE: &str = "terminal and device control (TIOCSTI and TIOCLINUX refused)";

/// Every system call the sandbox may make.
pub const ALLOWED: &[Allowed] = &[
    allow("read", libc::SYS_read, FILE_IO),
    allow("write", libc::SYS_write, FILE_IO),
    allow("pread64", libc::SYS_pread64, FILE_IO),
    allow("pwrite64", libc::SYS_pwrite64, FILE_IO),
    allow("readv", libc::SYS_readv, FILE_IO),
    allow("writev", libc::SYS_writev, FILE_IO),
    allow("preadv", libc::SYS_preadv, FILE_IO),
    allow("pwritev", libc::SYS_pwritev, FILE_IO),
    allow("preadv2", libc::SYS_preadv2, FILE_IO),
    allow("pwritev2", libc::SYS_pwritev2, FILE_IO),
    allow("lseek", libc::SYS_lseek, FILE_IO),
    allow("close", libc::SYS_close, FILE_IO),
    allow("close_range", libc::SYS_close_range, FILE_IO),
    allow("pipe", libc::SYS_pipe, FILE_IO),
    allow("pipe2", libc::SYS_pipe2, FILE_IO),
    allow("dup", libc::SYS_dup, FILE_IO),
    allow("dup2", libc::SYS_dup2, FILE_IO),
    allow("dup3", libc::SYS_dup3, FILE_IO),
    allow("fcntl", libc::SYS_fcntl, FILE_IO),
    allow("flock", libc::SYS_flock, FILE_IO),
    allow("fsync", libc::SYS_fsync, FILE_IO),
    allow("fdatasync", libc::SYS_fdatasync, FILE_IO),
    allow("sync_file_range", libc::SYS_sync_file_range, FILE_IO),
    allow("fallocate", libc::SYS_fallocate, FILE_IO),
    allow("truncate", libc::SYS_truncate, FILE_IO),
    allow("ftruncate", libc::SYS_ftruncate, FILE_IO),
    allow("sendfile", libc::SYS_sendfile, FILE_IO),
    allow("copy_file_range", libc::SYS_copy_file_range, FILE_IO),
    allow("splice", libc::SYS_splice, FILE_IO),
    allow("tee", libc::SYS_tee, FILE_IO),
    allow("vmsplice", libc::SYS_vmsplice, FILE_IO),
    allow("readahead", libc::SYS_readahead, FILE_IO),
    allow("fadvise64", libc::SYS_fadvise64, FILE_IO),
    allow("sync", libc::SYS_sync, FILE_IO),
    allow("syncfs", libc::SYS_syncfs, FILE_IO),
    limited("open", libc::SYS_open, FILE_OPEN, OPEN),
    limited("openat", libc::SYS_openat, FILE_OPEN, OPENAT),
    limited("creat", libc::SYS_creat, FILE_OPEN, CREAT),
    allow("stat", libc::SYS_stat, FILE_META),
    allow("fstat", libc::SYS_fstat, FILE_META),
    allow("lstat", libc::SYS_lstat, FILE_META),
    allow("newfstatat", libc::SYS_newfstatat, FILE_META),
    allow("statx", libc::SYS_statx, FILE_META),
    allow("statfs", libc::SYS_statfs, FILE_META),
    allow("fstatfs", libc::SYS_fstatfs, FILE_META),
    allow("access", libc::SYS_access, FILE_META),
    allow("faccessat", libc::SYS_faccessat, FILE_META),
    allow("faccessat2", libc::SYS_faccessat2, FILE_META),
    allow("getdents", libc::SYS_getdents, FILE_META),
    allow("getdents64", libc::SYS_getdents64, FILE_META),
    allow("readlink", libc::SYS_readlink, FILE_META),
    allow("readlinkat", libc::SYS_readlinkat, FILE_META),
    allow("getcwd", libc::SYS_getcwd, FILE_META),
    allow("chdir", libc::SYS_chdir, FILE_META),
    allow("fchdir", libc::SYS_fchdir, FILE_META),
    allow("umask", libc::SYS_umask, FILE_META),
    allow("utime", libc::SYS_utime, FILE_META),
    allow("utimes", libc::SYS_utimes, FILE_META),
    allow("utimensat", libc::SYS_utimensat, FILE_META),
    allow("futimesat", libc::SYS_futimesat, FILE_META),
    allow("mkdir", libc::SYS_mkdir, FILE_TREE),
    allow("mkdirat", libc::SYS_mkdirat, FILE_TREE),
    allow("rmdir", libc::SYS_rmdir, FILE_TREE),
    allow("rename", libc::SYS_rename, FILE_TREE),
    allow("renameat", libc::SYS_renameat, FILE_TREE),
    allow("renameat2", libc::SYS_renameat2, FILE_TREE),
    allow("link", libc::SYS_link, FILE_TREE),
    allow("linkat", libc::SYS_linkat, FILE_TREE),
    allow("symlink", libc::SYS_symlink, FILE_TREE),
    allow("symlinkat", libc::SYS_symlinkat, FILE_TREE),
    allow("unlink", libc::SYS_unlink, FILE_TREE),
    allow("unlinkat", libc::SYS_unlinkat, FILE_TREE),
    limited("mknod", libc::SYS_mknod, FILE_TREE, MKNOD),
    limited("mknodat", libc::SYS_mknodat, FILE_TREE, MKNODAT),
    limited("chmod", libc::SYS_chmod, FILE_OWNER, CHMOD),
    limited("fchmod", libc::SYS_fchmod, FILE_OWNER, FCHMOD),
    limited("fchmodat", libc::SYS_fchmodat, FILE_OWNER, FCHMODAT),
    limited("fchmodat2", libc::SYS_fchmodat2, FILE_OWNER, FCHMODAT2),
    allow("chown", libc::SYS_chown, FILE_OWNER),
    allow("fchown", libc::SYS_fchown, FILE_OWNER),
    allow("lchown", libc::SYS_lchown, FILE_OWNER),
    allow("fchownat", libc::SYS_fchownat, FILE_OWNER),
    allow("setxattr", libc::SYS_setxattr, XATTR),
    allow("lsetxattr", libc::SYS_lsetxattr, XATTR),
    allow("fsetxattr", libc::SYS_fsetxattr, XATTR),
    allow("getxattr", libc::SYS_getxattr, XATTR),
    allow("lgetxattr", libc::SYS_lgetxattr, XATTR),
    allow("fgetxattr", libc::SYS_fgetxattr, XATTR),
    allow("listxattr", libc::SYS_listxattr, XATTR),
    allow("llistxattr", libc::SYS_llistxattr, XATTR),
    allow("flistxattr", libc::SYS_flistxattr, XATTR),
    allow("removexattr", libc::SYS_removexattr, XATTR),
    allow("lremovexattr", libc::SYS_lremovexattr, XATTR),
    allow("fremovexattr", libc::SYS_fremovexattr, XATTR),
    allow("brk", libc::SYS_brk, MEMORY),
    allow("mmap", libc::SYS_mmap, MEMORY),
    allow("munmap", libc::SYS_munmap, MEMORY),
    allow("mprotect", libc::SYS_mprotect, MEMORY),
    allow("mremap", libc::SYS_mremap, MEMORY),
    allow("msync", libc::SYS_msync, MEMORY),
    allow("mincore", libc::SYS_mincore, MEMORY),
    allow("madvise", libc::SYS_madvise, MEMORY),
    allow("mlock", libc::SYS_mlock, MEMORY),
    allow("mlock2", libc::SYS_mlock2, MEMORY),
    allow("munlock", libc::SYS_munlock, MEMORY),
    allow("mlockall", libc::SYS_mlockall, MEMORY),
    allow("munlockall", libc::SYS_munlockall, MEMORY),
    allow("pkey_mprotect", libc::SYS_pkey_mprotect, MEMORY),
    allow("pkey_alloc", libc::SYS_pkey_alloc, MEMORY),
    allow("pkey_free", libc::SYS_pkey_free, MEMORY),
    allow("memfd_create", libc::SYS_memfd_create, MEMORY),
    allow("membarrier", libc::SYS_membarrier, MEMORY),
    allow("mseal", libc::SYS_mseal, MEMORY),
    allow("get_mempolicy", libc::SYS_get_mempolicy, MEMORY),
    allow("set_mempolicy", libc::SYS_set_mempolicy, MEMORY),
    allow("mbind", libc::SYS_mbind, MEMORY),
    allow("fork", libc::SYS_fork, PROCESS),
    allow("vfork", libc::SYS_vfork, PROCESS),
    limited("clone", libc::SYS_clone, PROCESS, CLONE),
    allow("execve", libc::SYS_execve, PROCESS),
    allow("execveat", libc::SYS_execveat, PROCESS),
    allow("exit", libc::SYS_exit, PROCESS),
    allow("exit_group", libc::SYS_exit_group, PROCESS),
    allow("wait4", libc::SYS_wait4, PROCESS),
    allow("waitid", libc::SYS_waitid, PROCESS),
    allow("kill", libc::SYS_kill, PROCESS),
    allow("tkill", libc::SYS_tkill, PROCESS),
    allow("tgkill", libc::SYS_tgkill, PROCESS),
    allow("getpid", libc::SYS_getpid, PROCESS),
    allow("getppid", libc::SYS_getppid, PROCESS),
    allow("gettid", libc::SYS_gettid, PROCESS),
    allow("getpgid", libc::SYS_getpgid, PROCESS),
    allow("setpgid", libc::SYS_setpgid, PROCESS),
    allow("getpgrp", libc::SYS_getpgrp, PROCESS),
    allow("getsid", libc::SYS_getsid, PROCESS),
    allow("setsid", libc::SYS_setsid, PROCESS),
    allow("set_tid_address", libc::SYS_set_tid_address, PROCESS),
    allow("arch_prctl", libc::SYS_arch_prctl, PROCESS),
    allow("prctl", libc::SYS_prctl, PROCESS),
    limited("personality", libc::SYS_personality, PROCESS, PERSONALITY),
    allow("uname", libc::SYS_uname, PROCESS),
    allow("pidfd_open", libc::SYS_pidfd_open, PROCESS),
    allow("pidfd_send_signal", libc::SYS_pidfd_send_signal, PROCESS),
    allow("rseq", libc::SYS_rseq, PROCESS),
    allow("restart_syscall", libc::SYS_restart_syscall, PROCESS),
    allow("map_shadow_stack", SYS_MAP_SHADOW_STACK, PROCESS),
    allow("getuid", libc::SYS_getuid, IDS),
    allow("geteuid", libc::SYS_geteuid, IDS),
    allow("getgid", libc::SYS_getgid, IDS),
    allow("getegid", libc::SYS_getegid, IDS),
    allow("getresuid", libc::SYS_getresuid, IDS),
    allow("getresgid", libc::SYS_getresgid, IDS),
    allow("getgroups", libc::SYS_getgroups, IDS),
    allow("setuid", libc::SYS_setuid, IDS),
    allow("setgid", libc::SYS_setgid, IDS),
    allow("setreuid", libc::SYS_setreuid, IDS),
    allow("setregid", libc::SYS_setregid, IDS),
    allow("setresuid", libc::SYS_setresuid, IDS),
    allow("setresgid", libc::SYS_setresgid, IDS),
    allow("setgroups", libc::SYS_setgroups, IDS),
    allow("setfsuid", libc::SYS_setfsuid, IDS),
    allow("setfsgid", libc::SYS_setfsgid, IDS),
    allow("capget", libc::SYS_capget, IDS),
    allow("capset", libc::SYS_capset, IDS),
    allow("rt_sigaction", libc::SYS_rt_sigaction, SIGNALS),
    allow("rt_sigprocmask", libc::SYS_rt_sigprocmask, SIGNALS),
    allow("rt_sigreturn", libc::SYS_rt_sigreturn, SIGNALS),
    allow("rt_sigpending", libc::SYS_rt_sigpending, SIGNALS),
    allow("rt_sigtimedwait", libc::SYS_rt_sigtimedwait, SIGNALS),
    allow("rt_sigsuspend", libc::SYS_rt_sigsuspend, SIGNALS),
    allow("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo, SIGNALS),
    allow("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo, SIGNALS),
    allow("sigaltstack", libc::SYS_sigaltstack, SIGNALS),
    allow("signalfd", libc::SYS_signalfd, SIGNALS),
    allow("signalfd4", libc::SYS_signalfd4, SIGNALS),
    allow("pause", libc::SYS_pause, SIGNALS),
    allow("clock_gettime", libc::SYS_clock_gettime, TIME),
    allow("clock_getres", libc::SYS_clock_getres, TIME),
    allow("clock_nanosleep", libc::SYS_clock_nanosleep, TIME),
    allow("gettimeofday", libc::SYS_gettimeofday, TIME),
    allow("time", libc::SYS_time, TIME),
    allow("nanosleep", libc::SYS_nanosleep, TIME),
    allow("alarm", libc::SYS_alarm, TIME),
    allow("getitimer", libc::SYS_getitimer, TIME),
    allow("setitimer", libc::SYS_setitimer, TIME),
    allow("timer_create", libc::SYS_timer_create, TIME),
    allow("timer_settime", libc::SYS_timer_settime, TIME),
    allow("timer_gettime", libc::SYS_timer_gettime, TIME),
    allow("timer_getoverrun", libc::SYS_timer_getoverrun, TIME),
    allow("timer_delete", libc::SYS_timer_delete, TIME),
    allow("timerfd_create", libc::SYS_timerfd_create, TIME),
    allow("timerfd_settime", libc::SYS_timerfd_settime, TIME),
    allow("timerfd_gettime", libc::SYS_timerfd_gettime, TIME),
    allow("times", libc::SYS_times, TIME),
    allow("poll", libc::SYS_poll, WAITING),
    allow("ppoll", libc::SYS_ppoll, WAITING),
    allow("select", libc::SYS_select, WAITING),
    allow("pselect6", libc::SYS_pselect6, WAITING),
    allow("epoll_create", libc::SYS_epoll_create, WAITING),
    allow("epoll_create1", libc::SYS_epoll_create1, WAITING),
    allow("epoll_ctl", libc::SYS_epoll_ctl, WAITING),
    allow("epoll_wait", libc::SYS_epoll_wait, WAITING),
    allow("epoll_pwait", libc::SYS_epoll_pwait, WAITING),
    allow("epoll_pwait2", libc::SYS_epoll_pwait2, WAITING),
    allow("eventfd", libc::SYS_eventfd, WAITING),
    allow("eventfd2", libc::SYS_eventfd2, WAITING),
    allow("inotify_init", libc::SYS_inotify_init, WAITING),
    allow("inotify_init1", libc::SYS_inotify_init1, WAITING),
    allow("inotify_add_watch", libc::SYS_inotify_add_watch, WAITING),
    allow("inotify_rm_watch", libc::SYS_inotify_rm_watch, WAITING),
    allow("futex", libc::SYS_futex, WAITING),
    allow("futex_waitv", libc::SYS_futex_waitv, WAITING),
    allow("futex_wake", SYS_FUTEX_WAKE, WAITING),
    allow("futex_wait", SYS_FUTEX_WAIT, WAITING),
    allow("futex_requeue", SYS_FUTEX_REQUEUE, WAITING),
    allow("set_robust_list", libc::SYS_set_robust_list, WAITING),
    allow("get_robust_list", libc::SYS_get_robust_list, WAITING),
    allow("sched_yield", libc::SYS_sched_yield, SCHED),
    allow("sched_setparam", libc::SYS_sched_setparam, SCHED),
    allow("sched_getparam", libc::SYS_sched_getparam, SCHED),
    allow("sched_setscheduler", libc::SYS_sched_setscheduler, SCHED),
    allow("sched_getscheduler", libc::SYS_sched_getscheduler, SCHED),
    allow(
        "sched_get_priority_max",
        libc::SYS_sched_get_priority_max,
        SCHED,
    ),
    allow(
        "sched_get_priority_min",
        libc::SYS_sched_get_priority_min,
        SCHED,
    ),
    allow(
        "sched_rr_get_interval",
        libc::SYS_sched_rr_get_interval,
        SCHED,
    ),
    allow("sched_setaffinity", libc::SYS_sched_setaffinity, SCHED),
    allow("sched_getaffinity", libc::SYS_sched_getaffinity, SCHED),
    allow("sched_setattr", libc::SYS_sched_setattr, SCHED),
    allow("sched_getattr", libc::SYS_sched_getattr, SCHED),
    allow("getcpu", libc::SYS_getcpu, SCHED),
    allow("getpriority", libc::SYS_getpriority, SCHED),
    allow("setpriority", libc::SYS_setpriority, SCHED),
    allow("ioprio_get", libc::SYS_ioprio_get, SCHED),
    allow("ioprio_set", libc::SYS_ioprio_set, SCHED),
    allow("getrlimit", libc::SYS_getrlimit, LIMITS),
    allow("setrlimit", libc::SYS_setrlimit, LIMITS),
    allow("prlimit64", libc::SYS_prlimit64, LIMITS),
    allow("getrusage", libc::SYS_getrusage, LIMITS),
    allow("sysinfo", libc::SYS_sysinfo, LIMITS),
    limited("socket", libc::SYS_socket, NETWORK, SOCKET),
    limited("socketpair", libc::SYS_socketpair, NETWORK, SOCKETPAIR),
    allow("connect", libc::SYS_connect, NETWORK),
    allow("accept", libc::SYS_accept, NETWORK),
    allow("accept4", libc::SYS_accept4, NETWORK),
    allow("bind", libc::SYS_bind, NETWORK),
    allow("listen", libc::SYS_listen, NETWORK),
    allow("getsockname", libc::SYS_getsockname, NETWORK),
    allow("getpeername", libc::SYS_getpeername, NETWORK),
    allow("setsockopt", libc::SYS_setsockopt, NETWORK),
    allow("getsockopt", libc::SYS_getsockopt, NETWORK),
    allow("sendto", libc::SYS_sendto, NETWORK),
    allow("recvfrom", libc::SYS_recvfrom, NETWORK),
    allow("sendmsg", libc::SYS_sendmsg, NETWORK),
    allow("recvmsg", libc::SYS_recvmsg, NETWORK),
    allow("sendmmsg", libc::SYS_sendmmsg, NETWORK),
    allow("recvmmsg", libc::SYS_recvmmsg, NETWORK),
    allow("shutdown", libc::SYS_shutdown, NETWORK),
    allow("msgget", libc::SYS_msgget, IPC),
    allow("msgsnd", libc::SYS_msgsnd, IPC),
    allow("msgrcv", libc::SYS_msgrcv, IPC),
    allow("msgctl", libc::SYS_msgctl, IPC),
    allow("semget", libc::SYS_semget, IPC),
    allow("semop", libc::SYS_semop, IPC),
    allow("semctl", libc::SYS_semctl, IPC),
    allow("semtimedop", libc::SYS_semtimedop, IPC),
    allow("shmget", libc::SYS_shmget, IPC),
    allow("shmat", libc::SYS_shmat, IPC),
    allow("shmctl", libc::SYS_shmctl, IPC),
    allow("shmdt", libc::SYS_shmdt, IPC),
    allow("mq_open", libc::SYS_mq_open, IPC),
    allow("mq_unlink", libc::SYS_mq_unlink, IPC),
    allow("mq_timedsend", libc::SYS_mq_timedsend, IPC),
    allow("mq_timedreceive", libc::SYS_mq_timedreceive, IPC),
    allow("mq_notify", libc::SYS_mq_notify, IPC),
    allow("mq_getsetattr", libc::SYS_mq_getsetattr, IPC),
    allow("io_setup", libc::SYS_io_setup, AIO),
    allow("io_destroy", libc::SYS_io_destroy, AIO),
    allow("io_getevents", libc::SYS_io_getevents, AIO),
    allow("io_submit", libc::SYS_io_submit, AIO),
    allow("io_cancel", libc::SYS_io_cancel, AIO),
    allow("getrandom", libc::SYS_getrandom, RANDOM),
    allow("seccomp", libc::SYS_seccomp, SELF_RESTRICT),
    allow(
        "landlock_create_ruleset",
        libc::SYS_landlock_create_ruleset,
        SELF_RESTRICT,
    ),
    allow(
        "landlock_add_rule",
        libc::SYS_landlock_add_rule,
        SELF_RESTRICT,
    ),
    allow(
        "landlock_restrict_self",
        libc::SYS_landlock_restrict_self,
        SELF_RESTRICT,
    ),
    allow("openat2", libc::SYS_openat2, GUEST_PATHS),
    limited("ioctl", libc::SYS_ioctl, DEVICE, IOCTL),
];

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

/// Calls refused on purpose (none is in [`ALLOWED`]), named in the report.
pub const REFUSED: &[Refused] = &[
    refuse("mount", libc::SYS_mount, MOUNT_API),
    refuse("umount2", libc::SYS_umount2, MOUNT_API),
    refuse("pivot_root", libc::SYS_pivot_root, MOUNT_API),
    refuse(
        "chroot",
        libc::SYS_chroot,
        "changing the root is a classic step of escapes",
    ),
    refuse("fsopen", libc::SYS_fsopen, MOUNT_API),
    refuse("fsconfig", libc::SYS_fsconfig, MOUNT_API),
    refuse("fsmount", libc::SYS_fsmount, MOUNT_API),
    refuse("fspick", libc::SYS_fspick, MOUNT_API),
    refuse("move_mount", libc::SYS_move_mount, MOUNT_API),
    refuse("open_tree", libc::SYS_open_tree, MOUNT_API),
    refuse("open_tree_attr", SYS_OPEN_TREE_ATTR, MOUNT_API),
    refuse("mount_setattr", libc::SYS_mount_setattr, MOUNT_API),
    refuse(
        "unshare",
        libc::SYS_unshare,
        "new namespaces: nested user namespaces regain capabilities",
    ),
    refuse("setns", libc::SYS_setns, "joining other namespaces"),
    Refused {
        label: "clone3",
        nr: libc::SYS_clone3,
        deny: Deny::Enosys,
        reason: "its flags live in memory seccomp cannot read; ENOSYS makes libc fall back to clone",
    },
    refuse("ptrace", libc::SYS_ptrace, PROCESS_ACCESS),
    refuse(
        "process_vm_readv",
        libc::SYS_process_vm_readv,
        PROCESS_ACCESS,
    ),
    refuse(
        "process_vm_writev",
        libc::SYS_process_vm_writev,
        PROCESS_ACCESS,
    ),
    refuse("process_madvise", libc::SYS_process_madvise, PROCESS_ACCESS),
    refuse("pidfd_getfd", libc::SYS_pidfd_getfd, PROCESS_ACCESS),
    refuse(
        "kcmp",
        libc::SYS_kcmp,
        "compares kernel objects of other processes (information leak)",
    ),
    refuse(
        "kexec_load",
        libc::SYS_kexec_load,
        "replacing the running kernel",
    ),
    refuse(
        "kexec_file_load",
        libc::SYS_kexec_file_load,
        "replacing the running kernel",
    ),
    refuse("init_module", libc::SYS_init_module, MODULES),
    refuse("finit_module", libc::SYS_finit_module, MODULES),
    refuse("delete_module", libc::SYS_delete_module, MODULES),
    refuse(
        "bpf",
        libc::SYS_bpf,
        "eBPF programs: kernel attack surface and tracing",
    ),
    refuse(
        "perf_event_open",
        libc::SYS_perf_event_open,
        "performance counters leak host activity; attack surface",
    ),
    refuse("keyctl", libc::SYS_keyctl, KEYS),
    refuse("add_key", libc::SYS_add_key, KEYS),
    refuse("request_key", libc::SYS_request_key, KEYS),
    refuse("io_uring_setup", libc::SYS_io_uring_setup, IO_URING),
    refuse("io_uring_enter", libc::SYS_io_uring_enter, IO_URING),
    refuse("io_uring_register", libc::SYS_io_uring_register, IO_URING),
    refuse(
        "userfaultfd",
        libc::SYS_userfaultfd,
        "stalls kernel page faults at will: a race-window widener for exploits",
    ),
    refuse("reboot", libc::SYS_reboot, "rebooting or halting"),
    refuse("swapon", libc::SYS_swapon, "host swap configuration"),
    refuse("swapoff", libc::SYS_swapoff, "host swap configuration"),
    refuse("acct", libc::SYS_acct, "process accounting to a file"),
    refuse("quotactl", libc::SYS_quotactl, "disk quota administration"),
    refuse(
        "quotactl_fd",
        libc::SYS_quotactl_fd,
        "disk quota administration",
    ),
    refuse("open_by_handle_at", libc::SYS_open_by_handle_at, HANDLES),
    refuse("name_to_handle_at", libc::SYS_name_to_handle_at, HANDLES),
    refuse("iopl", libc::SYS_iopl, "raw I/O port access"),
    refuse("ioperm", libc::SYS_ioperm, "raw I/O port access"),
    refuse("clock_settime", libc::SYS_clock_settime, CLOCK),
    refuse("settimeofday", libc::SYS_settimeofday, CLOCK),
    refuse("adjtimex", libc::SYS_adjtimex, CLOCK),
    refuse("clock_adjtime", libc::SYS_clock_adjtime, CLOCK),
    refuse(
        "lookup_dcookie",
        libc::SYS_lookup_dcookie,
        "profiling interface that resolves kernel dentry cookies",
    ),
    refuse("uselib", libc::SYS_uselib, "obsolete a.out loader"),
    refuse(
        "syslog",
        libc::SYS_syslog,
        "the kernel log shows host activity",
    ),
];

/// Refused in the commands the guest runs (`CommandFilter`), on top of the
/// sandbox filter: the guest itself needs openat2 (RESOLVE_BENEATH path
/// resolution), the untrusted commands do not.
pub const COMMAND_RULES: &[Refused] = &[Refused {
    label: "openat2",
    nr: libc::SYS_openat2,
    deny: Deny::Enosys,
    reason: "its mode lives in memory seccomp cannot read, so it could create setuid files (see \
             the setid rules); ENOSYS makes callers fall back to openat",
}];

/// The first entry of Enforcement.seccomp_denied: the default.
pub(crate) const DEFAULT_LABEL: &str = "default: every syscall not in seccomp_allowed (EPERM)";

/// Names of what the filter denies, for Enforcement.seccomp_denied.
pub(crate) fn denied_labels() -> Vec<String> {
    let mut labels = vec![DEFAULT_LABEL.to_owned()];
    labels.extend(REFUSED.iter().map(|r| r.label.to_owned()));
    labels.extend(
        ALLOWED
            .iter()
            .filter_map(|a| a.args)
            .map(|a| a.label.to_owned()),
    );
    labels.push("x32 ABI (syscall nr >= 0x40000000)".to_owned());
    labels
}

/// Names of what the filter allows, for Enforcement.seccomp_allowed.
pub(crate) fn allowed_names() -> Vec<String> {
    ALLOWED.iter().map(|a| a.name.to_owned()).collect()
}

/// Enforcement's (seccomp_allowed, seccomp_denied): the tables when the
/// filter is in force, nothing when it was downgraded away.
pub(crate) fn report(enforced: bool) -> (Vec<String>, Vec<String>) {
    if enforced {
        (allowed_names(), denied_labels())
    } else {
        (Vec::new(), Vec::new())
    }
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
            let rule = REFUSED.iter().find(|r| r.label == name);
            assert!(rule.is_some(), "{name} is not in REFUSED");
            let nr = rule.map(|r| r.nr);
            assert!(
                !ALLOWED.iter().any(|a| Some(a.nr) == nr),
                "{name} is refused but also allowed"
            );
        }
        for prefix in [
            "mknod(S_IFCHR",
            "mknodat(S_IFCHR",
            "chmod(S_ISUID",
            "fchmodat(S_ISUID",
            "openat(O_CREAT",
            "clone(",
            "socket(",
            "socketpair(",
            "ioctl(",
            "personality(",
        ] {
            assert!(
                ALLOWED
                    .iter()
                    .filter_map(|a| a.args)
                    .any(|a| a.label.starts_with(prefix)),
                "{prefix} missing"
            );
        }
    }

    #[test]
    fn rules_are_well_formed() {
        for r in REFUSED.iter().chain(COMMAND_RULES) {
            assert!(!r.reason.is_empty(), "{} has no reason", r.label);
            assert!(r.nr >= 0 && r.nr < 1024, "{} has nr {}", r.label, r.nr);
        }
        for a in ALLOWED {
            assert!(!a.reason.is_empty(), "{} has no reason", a.name);
            assert!(a.nr >= 0 && a.nr < 1024, "{} has nr {}", a.name, a.nr);
            if let Some(args) = a.args {
                assert!(!args.why.is_empty(), "{} limits args without why", a.name);
                assert!(!args.allowed_when.is_empty(), "{} allows nothing", a.name);
                for alternative in args.allowed_when {
                    assert!(
                        !alternative.is_empty(),
                        "{} has an empty alternative",
                        a.name
                    );
                }
            }
        }
        let mut labels: Vec<&str> = REFUSED.iter().map(|r| r.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), REFUSED.len(), "duplicate labels");
        let mut names: Vec<&str> = ALLOWED.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALLOWED.len(), "duplicate allowed names");
        let mut nrs: Vec<i64> = ALLOWED.iter().map(|a| a.nr).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), ALLOWED.len(), "duplicate allowed numbers");
        for r in REFUSED {
            assert!(
                !ALLOWED.iter().any(|a| a.nr == r.nr),
                "{} is both refused and allowed",
                r.label
            );
        }
    }

    #[test]
    fn what_shells_and_common_tools_need_is_allowed() {
        // Seen under strace in `paddock sandbox run` of sh pipelines, python3
        // (subprocess, multiprocessing, sockets), git, gcc, tar --zstd, node.
        for name in [
            "pipe",
            "pipe2",
            "wait4",
            "vfork",
            "execve",
            "dup2",
            "fcntl",
            "rt_sigaction",
            "getdents64",
            "statx",
            "newfstatat",
            "faccessat2",
            "prlimit64",
            "sched_getaffinity",
            "socket",
            "epoll_pwait",
            "eventfd2",
            "futex",
            "rseq",
            "set_robust_list",
            "getrandom",
            "memfd_create",
            "copy_file_range",
            "close_range",
            "utimensat",
            "fsetxattr",
            "flock",
            "mkdirat",
            "renameat2",
        ] {
            assert!(
                ALLOWED.iter().any(|a| a.name == name),
                "{name} is not allowed"
            );
        }
    }

    #[test]
    fn dangerous_calls_stay_off_the_allowlist() {
        for nr in [
            libc::SYS_modify_ldt,
            libc::SYS_fanotify_init,
            libc::SYS_sethostname,
            libc::SYS_setdomainname,
            libc::SYS_vhangup,
            libc::SYS_move_pages,
            libc::SYS_migrate_pages,
            libc::SYS_memfd_secret,
            libc::SYS_sysfs,
            libc::SYS_ustat,
        ] {
            assert!(!ALLOWED.iter().any(|a| a.nr == nr), "nr {nr} is allowed");
        }
        assert_eq!(DEFAULT_DENY, Deny::Eperm);
    }

    #[test]
    fn syscall_numbers_are_the_x86_64_ones() {
        let nr = |label: &str| REFUSED.iter().find(|r| r.label == label).unwrap().nr;
        assert_eq!(nr("mount"), 165);
        assert_eq!(nr("ptrace"), 101);
        assert_eq!(nr("clone3"), 435);
        assert_eq!(nr("open_tree_attr"), 467);
        let allowed = |name: &str| ALLOWED.iter().find(|a| a.name == name).unwrap().nr;
        assert_eq!(allowed("clone"), 56);
        assert_eq!(allowed("read"), 0);
        assert_eq!(allowed("openat"), 257);
        assert_eq!(allowed("map_shadow_stack"), 453);
        assert_eq!(allowed("futex_requeue"), 456);
    }
}
