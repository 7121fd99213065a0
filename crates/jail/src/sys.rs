//! Thin wrappers over the system calls that nix does not cover safely (new
//! mount API, raw clone, fork, close_range, capget, ioctl, signal handlers,
//! landlock and seccomp probes).
//!
//! The one module of the workspace's libraries allowed `unsafe` (lib.rs
//! says so on its `mod` line): every block carries a `// SAFETY:` comment
//! (clippy's `undocumented_unsafe_blocks` is denied), and every function
//! here is safe to call, taking a token such as [`SingleThreaded`] where its
//! soundness depends on the caller's state.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::{ForkResult, Pid};

use crate::process::threads::SingleThreaded;

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;
pub(crate) const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn check_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub(crate) fn cstring(path: impl AsRef<OsStr>) -> io::Result<CString> {
    CString::new(path.as_ref().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// A fork-like clone: the child continues from this call with a copy of the
/// address space and returns `Ok(0)`; the parent gets the child's pid.
/// `SingleThreaded` proves no other thread could hold a lock the child would
/// inherit forever.
pub(crate) fn clone_process(
    flags: libc::c_ulong,
    _single: &SingleThreaded,
) -> io::Result<libc::pid_t> {
    // SAFETY: clone without CLONE_VM, without a new stack and without tid or
    // TLS pointers behaves like fork(2): the child runs on a copy-on-write copy
    // of this stack, and the process has a single thread (the token).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags | libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    Ok(check(ret)? as libc::pid_t)
}

/// open_tree(OPEN_TREE_CLONE): a detached copy of the mount at `path`.
pub(crate) fn open_tree_clone(path: &Path) -> io::Result<OwnedFd> {
    let path = cstring(path)?;
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    let fd = check(ret)? as RawFd;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// open_tree(OPEN_TREE_CLONE) of what `fd` (an O_PATH descriptor of a
/// directory or file) refers to: a detached bind of exactly that object, with
/// the mounts below it when `recursive`. No path is looked up again.
pub(crate) fn open_tree_clone_fd(fd: BorrowedFd<'_>, recursive: bool) -> io::Result<OwnedFd> {
    let mut flags =
        OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: a descriptor and the empty C string, both valid for the call.
    let ret = unsafe { libc::syscall(libc::SYS_open_tree, fd.as_raw_fd(), c"".as_ptr(), flags) };
    let fd = check(ret)? as RawFd;
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// mount_setattr(2) on a detached tree (and every mount in it when
/// `recursive`), setting `attrs` and, when given, the idmapping of the user
/// namespace `userns`.
pub(crate) fn set_tree_attrs(
    tree: BorrowedFd<'_>,
    attrs: u64,
    userns: Option<BorrowedFd<'_>>,
    recursive: bool,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: attrs
            | if userns.is_some() {
                MOUNT_ATTR_IDMAP
            } else {
                0
            },
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.map_or(0, |fd| fd.as_raw_fd() as u64),
    };
    let mut flags = libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: the empty path is a valid C string; `attr` is a properly laid
    // out struct mount_attr whose size is passed along.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(ret).map(drop)
}

/// mount_setattr(2) on the mount at `path`: adds `attrs` (MOUNT_ATTR_*), to
/// every mount below it too when `recursive`. Only ever adds restrictions, so
/// it works on mounts whose flags are locked by a less privileged namespace.
pub(crate) fn restrict_mount(path: &Path, attrs: u64, recursive: bool) -> io::Result<()> {
    let path = cstring(path)?;
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: valid C string and struct mount_attr, both outliving the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(ret).map(drop)
}

/// move_mount(2) of a detached tree onto `target`.
pub(crate) fn move_tree(tree: BorrowedFd<'_>, target: &Path) -> io::Result<()> {
    let target = cstring(target)?;
    // SAFETY: valid descriptor and C strings that outlive the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(ret).map(drop)
}

/// move_mount(2) of a detached tree onto the object `target` (an O_PATH
/// descriptor) refers to; no path is looked up.
pub(crate) fn move_tree_onto(tree: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: valid descriptors and empty C strings that outlive the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    check(ret).map(drop)
}

/// Closes every descriptor from `first` on.
pub(crate) fn close_from(first: libc::c_uint) -> io::Result<()> {
    // SAFETY: close_range only closes descriptors; the callers own every
    // descriptor at or above `first` and hold no Rust handle to them afterwards.
    check_int(unsafe { libc::close_range(first, libc::c_uint::MAX, 0) }).map(drop)
}

/// [`close_from`], or where close_range is missing (gVisor answers EINVAL)
/// closing each descriptor /proc/self/fd lists from `first` on.
pub(crate) fn close_from_or_each(first: libc::c_uint) -> io::Result<()> {
    match close_from(first) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
            let fds: Vec<libc::c_int> = std::fs::read_dir("/proc/self/fd")?
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .filter(|fd: &libc::c_int| u32::try_from(*fd).is_ok_and(|fd| fd >= first))
                .collect();
            for fd in fds {
                // SAFETY: as for close_range; the listing's own descriptor
                // is already closed, so EBADF is expected and ignored.
                unsafe { libc::close(fd) };
            }
            Ok(())
        }
        other => other,
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// (effective, permitted, inheritable) of this thread, as 64-bit masks.
pub(crate) fn capget() -> io::Result<(u64, u64, u64)> {
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and a writable two-element data array, as capget(2) expects for v3.
    check(unsafe { libc::syscall(libc::SYS_capget, &header, data.as_mut_ptr()) })?;
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok((
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ))
}

/// The landlock ABI version the kernel offers, None when landlock is absent.
pub(crate) fn landlock_abi() -> Option<u32> {
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call only
    // returns the ABI version (or an error); it touches no memory.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(ret).ok().filter(|&abi| abi > 0)
}

/// Whether the kernel's seccomp filter mode supports the return action `action`.
pub(crate) fn seccomp_action_available(action: u32) -> bool {
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 from the pointer we pass.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    ret == 0
}

/// Whether mount_setattr(2), which idmapped mounts need, exists in this kernel.
pub(crate) fn mount_setattr_exists() -> bool {
    // SAFETY: an invalid descriptor and a NULL attr: the kernel rejects the
    // call before reading anything (EBADF/EINVAL); ENOSYS means it is absent.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1,
            std::ptr::null::<libc::c_char>(),
            0,
            std::ptr::null::<MountAttr>(),
            0usize,
        )
    };
    !(ret < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS))
}

/// Installs a seccomp program on the calling thread without allocating
/// (usable between fork and exec).
pub(crate) fn install_seccomp(program: &[seccompiler::sock_filter]) -> io::Result<()> {
    #[repr(C)]
    struct SockFprog {
        len: libc::c_ushort,
        filter: *const seccompiler::sock_filter,
    }
    let len = libc::c_ushort::try_from(program.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let prog = SockFprog {
        len,
        filter: program.as_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integers only.
    check_int(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    // SAFETY: `prog` points at `program`, a live array of `len` classic BPF
    // instructions with the kernel's struct sock_filter layout.
    check(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &prog as *const SockFprog,
        )
    })
    .map(drop)
}

/// Sets the signal the kernel sends this process when its parent dies.
pub(crate) fn set_parent_death_signal(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and touches no memory.
    check_int(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) })
        .map(drop)
}

/// prctl(2) with integer arguments only.
pub(crate) fn prctl(
    option: libc::c_int,
    arg2: libc::c_ulong,
    arg3: libc::c_ulong,
) -> io::Result<libc::c_int> {
    // SAFETY: every option passed by this crate takes integer arguments only
    // (PR_CAPBSET_*, PR_CAP_AMBIENT, PR_SET/GET_SECUREBITS, PR_*_NO_NEW_PRIVS).
    check_int(unsafe { libc::prctl(option, arg2, arg3, 0 as libc::c_ulong, 0 as libc::c_ulong) })
}

/// fork(2). The child is a full copy that may run any code, including
/// allocating and building an async runtime: `SingleThreaded` proves no
/// other thread could hold a lock it would inherit forever.
pub(crate) fn fork(_single: &SingleThreaded) -> nix::Result<ForkResult> {
    // SAFETY: the process has exactly one thread (the token), so the child
    // inherits no lock held by a thread that does not exist there.
    unsafe { nix::unistd::fork() }
}

/// Sets the close-on-exec flag on every descriptor from `first` on; where
/// close_range has no CLOSE_RANGE_CLOEXEC (gVisor answers EINVAL), on each
/// descriptor /proc/self/fd lists from `first` on.
pub(crate) fn set_cloexec_from(first: libc::c_uint) -> nix::Result<()> {
    // SAFETY: with CLOSE_RANGE_CLOEXEC, close_range closes nothing and touches
    // no memory; it only marks descriptors, which no owner of them minds.
    let rc = unsafe {
        libc::close_range(
            first,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        )
    };
    match nix::errno::Errno::result(rc) {
        Err(nix::errno::Errno::EINVAL | nix::errno::Errno::ENOSYS) => {
            let fds: Vec<libc::c_int> = std::fs::read_dir("/proc/self/fd")
                .map_err(|_| nix::errno::Errno::EINVAL)?
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .filter(|fd: &libc::c_int| u32::try_from(*fd).is_ok_and(|fd| fd >= first))
                .collect();
            for fd in fds {
                // SAFETY: F_SETFD only sets the descriptor's flag; the
                // listing's own descriptor is closed by now (EBADF, ignored).
                unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
            }
            Ok(())
        }
        other => other.map(drop),
    }
}

/// Empties the process environment (clearenv(3)), first overwriting each
/// variable's bytes with zeros: /proc/PID/environ shows the memory the
/// environment started in, not the list clearenv empties, and gVisor serves
/// it to any process of the sandbox (it ignores the dumpable flag).
pub(crate) fn clear_environment(_single: &SingleThreaded) {
    // SAFETY: the process has one thread (the token), so no other thread
    // reads or changes the environment meanwhile, and no Rust code holds a
    // pointer into it (std copies what it reads). `environ` is a
    // NULL-terminated array of pointers to NUL-terminated strings in
    // writable memory (the initial stack, or setenv's heap copies); each
    // string is overwritten within its own length, its NUL kept.
    unsafe {
        let mut entry = libc::environ;
        while !entry.is_null() && !(*entry).is_null() {
            let string = *entry;
            std::ptr::write_bytes(string, 0, libc::strlen(string));
            entry = entry.add(1);
        }
        libc::clearenv();
    }
}

/// Closes descriptor 0, for a process in which no Rust handle owns it.
pub(crate) fn close_stdin() {
    // SAFETY: closing fd 0 frees no memory; the callers hold no handle to it.
    unsafe { libc::close(0) };
}

/// The pid [`kill_on_signal`]'s handler kills (0: none).
static KILL_ON_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn kill_registered(_signal: libc::c_int) {
    let pid = KILL_ON_SIGNAL.load(Ordering::SeqCst);
    if pid > 0 {
        // kill(2) is async-signal-safe; nix's wrapper neither allocates nor locks.
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Makes `signal` SIGKILL `pid` instead of its usual action (one pid per
/// process: the last one given).
pub(crate) fn kill_on_signal(signal: Signal, pid: Pid) -> nix::Result<()> {
    KILL_ON_SIGNAL.store(pid.as_raw(), Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(kill_registered),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only loads an atomic and calls kill(2), both
    // async-signal-safe.
    unsafe { nix::sys::signal::sigaction(signal, &action) }.map(drop)
}

/// Puts every signal this process inherited as ignored back to its default
/// action, except those in `keep`. "Ignore" is the one disposition that
/// survives execve, so without this whoever started the guest would decide
/// what the sandbox's commands do with a signal: a non-interactive shell
/// starts its background jobs with SIGINT and SIGQUIT ignored, nohup
/// ignores SIGHUP. glibc's own real-time signals (32 and 33, below
/// SIGRTMIN) are left as glibc set them.
pub(crate) fn default_inherited_ignores(keep: &[libc::c_int]) -> io::Result<()> {
    for signal in changeable_signals() {
        if keep.contains(&signal) || (GLIBC_SIGNALS_FROM..libc::SIGRTMIN()).contains(&signal) {
            continue;
        }
        if disposition(signal)? == libc::SIG_IGN as u64 {
            set_default(signal)?;
        }
    }
    Ok(())
}

/// Sets one of glibc's allocator tunables (`M_*`).
pub(crate) fn mallopt(option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: mallopt only changes the allocator's tunables.
    if unsafe { libc::mallopt(option, value) } == 1 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "mallopt({option}, {value}) was refused"
        )))
    }
}

/// `struct ifreq` with the flags member of its union.
#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Sets IFF_UP on the interface `name` (shorter than IFNAMSIZ, no NUL).
/// Sets CLOCK_REALTIME (a VM's init, from the host's clock).
pub(crate) fn set_realtime(unix_ms: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(unix_ms / 1000)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
        // below 1e9: fits every c_long
        tv_nsec: ((unix_ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: clock_settime only reads the timespec, which lives across the call.
    if unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &ts) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn set_interface_up(name: &[u8]) -> io::Result<()> {
    if name.len() >= libc::IFNAMSIZ || name.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let sock = nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(io::Error::from)?;
    let mut req = IfReqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    for (slot, byte) in req.name.iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of a
    // 40-byte struct ifreq, which IfReqFlags is (asserted by a test).
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    req.flags |= libc::IFF_UP as libc::c_short;
    // SAFETY: as above; SIOCSIFFLAGS only reads the struct.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `command`'s child lead a new session whose controlling terminal is
/// its stdin (a pseudo-terminal's slave side), between fork and exec. The
/// command must not also ask for a process group: setsid makes the child
/// its own group leader, and fails for a process that already leads one.
pub(crate) fn controlling_terminal_before_exec(command: &mut Command) {
    // SAFETY: the hook runs in the forked child before exec, after std has
    // moved the slave onto fds 0-2. It only issues the setsid and ioctl
    // system calls (async-signal-safe); it neither allocates nor takes locks.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid().map_err(io::Error::from)?;
            stdin_as_controlling_terminal()
        });
    }
}

fn stdin_as_controlling_terminal() -> io::Result<()> {
    // SAFETY: TIOCSCTTY takes an integer argument (0: do not steal a
    // terminal that is another session's); on fd 0 that is not a terminal
    // it fails with ENOTTY and touches nothing.
    check_int(unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0 as libc::c_int) }).map(drop)
}

/// Sets a terminal's window size (TIOCSWINSZ); the kernel sends SIGWINCH to
/// its foreground process group.
pub(crate) fn set_window_size(fd: BorrowedFd<'_>, rows: u16, cols: u16) -> io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one `winsize` through the pointer, which
    // points at a live local for the whole call; `fd` is a borrowed open fd.
    check_int(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &size) }).map(drop)
}

/// A terminal's window size (TIOCGWINSZ): (rows, cols).
pub(crate) fn window_size(fd: BorrowedFd<'_>) -> io::Result<(u16, u16)> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which
    // points at a live, writable local for the whole call.
    check_int(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut size) })?;
    Ok((size.ws_row, size.ws_col))
}

/// The kernel's `struct sigaction` as rt_sigaction(2) reads and writes it,
/// with room to spare (handler first on every architecture; glibc's struct
/// differs, so the raw call gets this one).
type KernelSigaction = [u64; 4];
/// The size of the kernel's signal set, as rt_sigaction/rt_sigprocmask take it.
const KERNEL_SIGSET: usize = 8;
/// The highest signal number (SIGRTMAX on Linux).
const LAST_SIGNAL: libc::c_int = 64;

/// The first real-time signal glibc keeps for itself (thread cancellation
/// and set*id across threads); `libc::SIGRTMIN()` is past them.
const GLIBC_SIGNALS_FROM: libc::c_int = 32;

/// Every signal whose disposition can change: all but SIGKILL and SIGSTOP.
fn changeable_signals() -> impl Iterator<Item = libc::c_int> {
    (1..=LAST_SIGNAL).filter(|&s| s != libc::SIGKILL && s != libc::SIGSTOP)
}

/// The handler word of `signal`'s disposition in this process (SIG_DFL,
/// SIG_IGN or a handler's address), read with the raw call so that glibc's
/// internal signals (32, 33) are seen too.
fn disposition(signal: libc::c_int) -> io::Result<u64> {
    let mut old: KernelSigaction = [0; 4];
    // SAFETY: rt_sigaction with a null new action only writes the old one
    // into `old`, which is larger than the kernel's struct sigaction.
    check(unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            std::ptr::null::<KernelSigaction>(),
            old.as_mut_ptr(),
            KERNEL_SIGSET,
        )
    })?;
    Ok(old[0])
}

/// Sets `signal`'s disposition to SIG_DFL (a zeroed kernel sigaction).
fn set_default(signal: libc::c_int) -> io::Result<()> {
    let default: KernelSigaction = [0; 4];
    // SAFETY: SIG_DFL installs no handler; the kernel reads only `default`.
    check(unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            default.as_ptr(),
            std::ptr::null_mut::<KernelSigaction>(),
            KERNEL_SIGSET,
        )
    })
    .map(drop)
}

/// Every signal whose disposition in this process is not SIG_DFL (a handler
/// or SIG_IGN), SIGKILL and SIGSTOP aside (theirs cannot change).
pub(crate) fn signals_not_default() -> io::Result<Vec<libc::c_int>> {
    let mut set = Vec::new();
    for signal in changeable_signals() {
        if disposition(signal)? != libc::SIG_DFL as u64 {
            set.push(signal);
        }
    }
    Ok(set)
}

/// What the vfork child reads; everything it points to outlives the child's
/// execve (the parent is suspended until then) and was built before clone.
#[repr(C)]
struct VforkArgs {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    resets: *const libc::c_int,
    resets_len: usize,
    stdio: [RawFd; 3],
    /// Where the child stores execve's (or an earlier step's) errno.
    failed: *const AtomicI32,
}

/// The vfork child: raw system calls only, no allocation, no lock, no
/// panic (it runs on the parent's memory, on its own small stack).
extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `VforkArgs` the parent passed to clone, alive
    // until this child execs or exits (CLONE_VFORK suspends the parent).
    let args = unsafe { &*arg.cast::<VforkArgs>() };
    let fail = |args: &VforkArgs| -> ! {
        // SAFETY: errno is this (shared) thread's; the failed slot lives in
        // the suspended parent's frame; _exit runs no atexit handler.
        unsafe {
            let errno = *libc::__errno_location();
            (*args.failed).store(
                if errno == 0 { libc::EINVAL } else { errno },
                Ordering::SeqCst,
            );
            libc::_exit(127)
        }
    };
    let default: KernelSigaction = [0; 4];
    for i in 0..args.resets_len {
        // SAFETY: `resets` holds `resets_len` signal numbers; setting SIG_DFL
        // (a zeroed struct) touches only this child's own handler table
        // (no CLONE_SIGHAND), so no handler of the agent can run here.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                *args.resets.add(i),
                default.as_ptr(),
                std::ptr::null_mut::<KernelSigaction>(),
                KERNEL_SIGSET,
            )
        };
        if ret < 0 {
            fail(args);
        }
    }
    // SAFETY: setpgid(0, 0) makes this child its own process group leader.
    if unsafe { libc::syscall(libc::SYS_setpgid, 0, 0) } < 0 {
        fail(args);
    }
    for (target, &source) in (0..).zip(args.stdio.iter()) {
        // SAFETY: plain descriptor calls on numbers the parent holds open;
        // a source already at its target only loses close-on-exec.
        let ret = unsafe {
            if source == target {
                libc::syscall(libc::SYS_fcntl, source, libc::F_SETFD, 0)
            } else {
                libc::syscall(libc::SYS_dup3, source, target, 0)
            }
        };
        if ret < 0 {
            fail(args);
        }
    }
    let empty: u64 = 0;
    // SAFETY: sets this child's signal mask to empty, from a local set.
    if unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &raw const empty,
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET,
        )
    } < 0
    {
        fail(args);
    }
    // SAFETY: path, argv and envp are NUL-terminated strings and
    // null-terminated pointer arrays the parent keeps alive.
    unsafe { libc::syscall(libc::SYS_execve, args.path, args.argv, args.envp) };
    fail(args)
}

/// Starts `path` as posix_spawn does, with `clone(CLONE_VM | CLONE_VFORK)`
/// onto `stack`, but resetting only the signals in `resets` to SIG_DFL (the
/// rest are SIG_DFL already), in a process group of its own, with `stdio`
/// as its descriptors 0, 1 and 2 and an empty signal mask. All signals are
/// blocked on this thread around the clone so no handler of the agent runs
/// in the child before its resets. `argv` and `envp` are null-terminated.
/// An error is the child's (execve's) errno, the child already reaped.
pub(crate) fn vfork_exec(
    stack: &mut [u8],
    path: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    resets: &[libc::c_int],
    stdio: [BorrowedFd<'_>; 3],
) -> io::Result<libc::pid_t> {
    if argv.last().is_none_or(|p| !p.is_null()) || envp.last().is_none_or(|p| !p.is_null()) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let failed = AtomicI32::new(0);
    let args = VforkArgs {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        resets: resets.as_ptr(),
        resets_len: resets.len(),
        stdio: stdio.map(|fd| fd.as_raw_fd()),
        failed: &raw const failed,
    };
    // The stack grows down on every Linux architecture Rust supports; clone
    // wants its top, 16-byte aligned.
    let top = stack.as_mut_ptr_range().end;
    let top = top.wrapping_sub(top as usize % 16);
    let all: u64 = !0;
    let mut old: u64 = 0;
    // SAFETY: blocks every signal on this thread, saving the old mask.
    check(unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &raw const all,
            &raw mut old,
            KERNEL_SIGSET,
        )
    })?;
    // SAFETY: the child runs `vfork_child` on `stack` (exclusively borrowed,
    // unused by anyone else) sharing our memory while this thread is
    // suspended (CLONE_VFORK) until it execs or exits; it only reads `args`
    // and what it points to, all alive in this frame, and makes raw system
    // calls. Signals are blocked, so no handler runs on the shared memory.
    let pid = unsafe {
        libc::clone(
            vfork_child,
            top.cast::<libc::c_void>(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw const args).cast_mut().cast::<libc::c_void>(),
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    let restored = check(unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &raw const old,
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET,
        )
    });
    if pid < 0 {
        return Err(clone_error);
    }
    restored?;
    let errno = failed.load(Ordering::SeqCst);
    if errno != 0 {
        // The child exited with 127 without running anything: reap it here.
        while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(Pid::from_raw(pid), None)
        {
        }
        return Err(io::Error::from_raw_os_error(errno));
    }
    Ok(pid)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ifreq_has_the_kernel_size() {
        assert_eq!(std::mem::size_of::<super::IfReqFlags>(), 40);
    }

    #[test]
    fn an_interface_name_too_long_or_with_a_nul_is_refused() {
        let long = [b'a'; libc::IFNAMSIZ];
        for name in [&long[..], &b"l\0"[..]] {
            let err = super::set_interface_up(name).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{name:?}");
        }
    }
}
