//! Every syscall the seccomp filter must deny, invoked directly with arguments
//! that would work (or at least get past argument checks) if it were allowed,
//! yet harm nothing even then. Each runs in a forked child. Integer arguments
//! are passed as `c_long`/`usize`: syscall(2) is variadic, and the kernel reads
//! whole registers.

use std::ffi::CStr;
use std::ptr;

use libc::{c_long, c_ulong, c_void};

use crate::Battery;
use crate::child::{DENIED, check, errno, in_child, judge, kill_and_reap, wait_child};
use crate::scratch;

type Attempt = fn() -> Result<(), i32>;

/// Namespace creation may also be refused by a zero namespace limit.
const NS_DENIED: &[i32] = &[
    libc::EPERM,
    libc::EACCES,
    libc::ENOSYS,
    libc::ENOSPC,
    libc::EUSERS,
];

pub fn run(b: &mut Battery) {
    let table: &[(&str, Attempt, &[i32])] = &[
        ("syscall mount(tmpfs)", mount_tmpfs, DENIED),
        ("syscall umount2", umount2, DENIED),
        ("syscall pivot_root", pivot_root, DENIED),
        ("syscall chroot", chroot, DENIED),
        ("syscall fsopen(tmpfs)", fsopen, DENIED),
        ("syscall open_tree(clone /)", open_tree, DENIED),
        (
            "syscall unshare(CLONE_NEWUSER)",
            || unshare(libc::CLONE_NEWUSER),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWNS)",
            || unshare(libc::CLONE_NEWNS),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWNET)",
            || unshare(libc::CLONE_NEWNET),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWPID)",
            || unshare(libc::CLONE_NEWPID),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWUTS)",
            || unshare(libc::CLONE_NEWUTS),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWIPC)",
            || unshare(libc::CLONE_NEWIPC),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWCGROUP)",
            || unshare(libc::CLONE_NEWCGROUP),
            NS_DENIED,
        ),
        (
            "syscall unshare(CLONE_NEWTIME)",
            || unshare(CLONE_NEWTIME),
            NS_DENIED,
        ),
        (
            "nested user namespace via clone(CLONE_NEWUSER)",
            clone_newuser,
            NS_DENIED,
        ),
        (
            "nested user namespace via clone3(CLONE_NEWUSER)",
            clone3_newuser,
            NS_DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/user)",
            || setns(c"/proc/1/ns/user"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/mnt)",
            || setns(c"/proc/1/ns/mnt"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/net)",
            || setns(c"/proc/1/ns/net"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/pid)",
            || setns(c"/proc/1/ns/pid"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/uts)",
            || setns(c"/proc/1/ns/uts"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/ipc)",
            || setns(c"/proc/1/ns/ipc"),
            DENIED,
        ),
        (
            "syscall setns(/proc/1/ns/cgroup)",
            || setns(c"/proc/1/ns/cgroup"),
            DENIED,
        ),
        (
            "syscall ptrace(PTRACE_ATTACH, pid 1)",
            ptrace_attach_pid1,
            DENIED,
        ),
        (
            "syscall ptrace(PTRACE_TRACEME) + exec",
            ptrace_traceme_exec,
            DENIED,
        ),
        (
            "syscall ptrace(PTRACE_ATTACH) of another process",
            ptrace_attach_other,
            DENIED,
        ),
        ("syscall process_vm_readv(pid 1)", process_vm_readv, DENIED),
        (
            "syscall process_vm_writev(pid 1)",
            process_vm_writev,
            DENIED,
        ),
        ("syscall kexec_load", kexec_load, DENIED),
        ("syscall kexec_file_load", kexec_file_load, DENIED),
        ("syscall init_module", init_module, DENIED),
        ("syscall finit_module", finit_module, DENIED),
        ("syscall delete_module", delete_module, DENIED),
        ("syscall bpf(BPF_MAP_CREATE)", bpf_map_create, DENIED),
        ("syscall perf_event_open", perf_event_open, DENIED),
        ("syscall keyctl (session keyring)", keyctl, DENIED),
        ("syscall add_key", add_key, DENIED),
        ("syscall request_key", request_key, DENIED),
        ("syscall io_uring_setup", io_uring_setup, DENIED),
        ("syscall io_uring_enter", io_uring_enter, DENIED),
        ("syscall io_uring_register", io_uring_register, DENIED),
        ("syscall userfaultfd", userfaultfd, DENIED),
        ("syscall reboot", reboot, DENIED),
        ("syscall swapon", swapon, DENIED),
        ("syscall swapoff", swapoff, DENIED),
        ("syscall acct", acct, DENIED),
        ("syscall quotactl", quotactl, DENIED),
        ("syscall open_by_handle_at", open_by_handle_at, DENIED),
        ("syscall name_to_handle_at", name_to_handle_at, DENIED),
        ("syscall iopl", iopl, DENIED),
        ("syscall ioperm", ioperm, DENIED),
        (
            "syscall clock_settime(CLOCK_REALTIME)",
            clock_settime,
            DENIED,
        ),
        ("syscall settimeofday", settimeofday, DENIED),
        ("syscall adjtimex", adjtimex, DENIED),
        ("syscall mknod(char device 1:3)", mknod_char, DENIED),
        ("syscall mknodat(block device 8:0)", mknodat_block, DENIED),
        (
            "syscall mknodat(char device in /workspace)",
            mknodat_workspace,
            DENIED,
        ),
        // The guest keeps openat2; the commands it starts must not have it.
        (
            "syscall openat2(setuid file in /workspace)",
            openat2_setuid,
            &[libc::ENOSYS],
        ),
    ];
    for (name, attempt, denied) in table {
        b.probe(name, || judge(in_child(*attempt), denied));
    }
}

const CLONE_NEWTIME: i32 = 0x80;

fn ok(ret: c_long) -> Result<(), i32> {
    check(ret).map(|_| ())
}

fn mount_tmpfs() -> Result<(), i32> {
    let target = scratch::MOUNT_DIR;
    // SAFETY: every pointer is a NUL-terminated string literal.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount,
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            0 as c_ulong,
            c"size=1m".as_ptr(),
        )
    };
    check(r)?;
    // SAFETY: undoes the mount just made, target is a string literal.
    unsafe {
        libc::syscall(
            libc::SYS_umount2,
            target.as_ptr(),
            libc::MNT_DETACH as c_long,
        )
    };
    Ok(())
}

fn umount2() -> Result<(), i32> {
    // SAFETY: a string literal; the target exists and is not a mount point, so
    // even a permitted call changes nothing (EINVAL).
    ok(unsafe { libc::syscall(libc::SYS_umount2, scratch::PLAIN_DIR.as_ptr(), 0 as c_long) })
}

fn pivot_root() -> Result<(), i32> {
    let dir = scratch::PLAIN_DIR;
    // SAFETY: string literals; the new root is not a mount point, so a permitted
    // call fails with EINVAL after the privilege check.
    ok(unsafe { libc::syscall(libc::SYS_pivot_root, dir.as_ptr(), dir.as_ptr()) })
}

fn chroot() -> Result<(), i32> {
    // SAFETY: a string literal; only this probe child would be affected.
    ok(unsafe { libc::syscall(libc::SYS_chroot, scratch::PLAIN_DIR.as_ptr()) })
}

fn fsopen() -> Result<(), i32> {
    // SAFETY: a string literal; the returned fd dies with the child.
    ok(unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 0 as c_long) })
}

fn open_tree() -> Result<(), i32> {
    const OPEN_TREE_CLONE: c_ulong = 1;
    // SAFETY: a string literal; a detached clone of / dies with the child.
    ok(unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD as c_long,
            c"/".as_ptr(),
            OPEN_TREE_CLONE,
        )
    })
}

fn unshare(flags: i32) -> Result<(), i32> {
    // SAFETY: integer argument; only this probe child changes namespaces.
    ok(unsafe { libc::syscall(libc::SYS_unshare, flags as c_long) })
}

fn clone_newuser() -> Result<(), i32> {
    let flags = (libc::CLONE_NEWUSER | libc::SIGCHLD) as c_ulong;
    // SAFETY: clone without CLONE_VM and with a null stack behaves like fork:
    // the child gets a copy of this single-threaded process and exits at once.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    reap_clone(pid)
}

fn clone3_newuser() -> Result<(), i32> {
    // struct clone_args (CLONE_ARGS_SIZE_VER2 = 88 bytes): flags, pidfd,
    // child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
    // set_tid_size, cgroup.
    let mut args = [0u64; 11];
    args[0] = libc::CLONE_NEWUSER as u64;
    args[4] = libc::SIGCHLD as u64;
    // SAFETY: `args` is a live, correctly sized clone_args; fork-like semantics
    // as above, the child exits at once.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args.as_mut_ptr(),
            std::mem::size_of_val(&args),
        )
    };
    reap_clone(pid)
}

fn reap_clone(pid: c_long) -> Result<(), i32> {
    if pid == 0 {
        // SAFETY: we are the freshly cloned child: leave immediately.
        unsafe { libc::_exit(0) };
    }
    let pid = check(pid)?;
    wait_child(pid as libc::pid_t);
    Ok(())
}

fn setns(path: &CStr) -> Result<(), i32> {
    // SAFETY: a string literal path; the fd (if any) dies with the child.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    // If the namespace file cannot even be opened, setns(-1) still shows whether
    // the syscall itself is filtered (EBADF when it is not).
    // SAFETY: integer arguments.
    ok(unsafe { libc::syscall(libc::SYS_setns, fd as c_long, 0 as c_long) })
}

fn ptrace_attach_pid1() -> Result<(), i32> {
    // SAFETY: integer arguments and null pointers.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_ATTACH,
            1,
            ptr::null_mut::<c_void>(),
            ptr::null_mut::<c_void>(),
        )
    };
    check(r)?;
    // Attached: let PID 1 go again before reporting the escape.
    let mut status = 0;
    // SAFETY: waits for the attach stop of our tracee and detaches from it.
    unsafe {
        libc::waitpid(1, &mut status, libc::__WALL);
        libc::ptrace(
            libc::PTRACE_DETACH,
            1,
            ptr::null_mut::<c_void>(),
            ptr::null_mut::<c_void>(),
        );
    }
    Ok(())
}

fn ptrace_traceme_exec() -> Result<(), i32> {
    // SAFETY: integer arguments and null pointers.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_TRACEME,
            0,
            ptr::null_mut::<c_void>(),
            ptr::null_mut::<c_void>(),
        )
    };
    check(r)?;
    let argv = [c"true".as_ptr(), ptr::null()];
    // SAFETY: NUL-terminated path and argv; on success this process stops at the
    // exec under trace, which the battery sees as "stopped" and kills.
    unsafe { libc::execv(c"/bin/true".as_ptr(), argv.as_ptr()) };
    Err(crate::child::PROBE_ERROR)
}

fn ptrace_attach_other() -> Result<(), i32> {
    // SAFETY: this probe child is single-threaded; the grandchild only pauses.
    let target = unsafe { libc::fork() };
    if target == 0 {
        loop {
            // SAFETY: waits for the SIGKILL that ends this process.
            unsafe { libc::pause() };
        }
    }
    if target < 0 {
        return Err(crate::child::PROBE_ERROR);
    }
    // SAFETY: integer arguments and null pointers.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_ATTACH,
            target,
            ptr::null_mut::<c_void>(),
            ptr::null_mut::<c_void>(),
        )
    };
    let result = check(r).map(|_| ());
    kill_and_reap(target);
    result
}

fn process_vm_readv() -> Result<(), i32> {
    let mut buf = [0u8; 8];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: 0x400000 as *mut c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec points at a live 8-byte buffer; the remote one is
    // only dereferenced by the kernel in the target, where a bad address is EFAULT.
    ok(unsafe {
        libc::syscall(
            libc::SYS_process_vm_readv,
            1 as c_long,
            &local as *const libc::iovec,
            1 as c_long,
            &remote as *const libc::iovec,
            1 as c_long,
            0 as c_long,
        )
    })
}

fn process_vm_writev() -> Result<(), i32> {
    // Zero iovecs: a permitted call returns 0 and writes nothing into PID 1.
    // SAFETY: null iovec arrays with zero counts.
    ok(unsafe {
        libc::syscall(
            libc::SYS_process_vm_writev,
            1 as c_long,
            ptr::null::<libc::iovec>(),
            0 as c_long,
            ptr::null::<libc::iovec>(),
            0 as c_long,
            0 as c_long,
        )
    })
}

fn kexec_load() -> Result<(), i32> {
    // An undefined flag bit (0x8000): even a permitted call stops at EINVAL
    // instead of unloading the host's crash kernel.
    // SAFETY: no segments, null pointer.
    ok(unsafe {
        libc::syscall(
            libc::SYS_kexec_load,
            0usize,
            0usize,
            ptr::null::<c_void>(),
            0x8000usize,
        )
    })
}

fn kexec_file_load() -> Result<(), i32> {
    // SAFETY: invalid fds and an empty command line: nothing is read.
    ok(unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            -1 as c_long,
            -1 as c_long,
            1usize,
            c"".as_ptr(),
            0x4usize,
        )
    })
}

fn init_module() -> Result<(), i32> {
    // SAFETY: a null image of length 0 and an empty parameter string.
    ok(unsafe {
        libc::syscall(
            libc::SYS_init_module,
            ptr::null::<c_void>(),
            0usize,
            c"".as_ptr(),
        )
    })
}

fn finit_module() -> Result<(), i32> {
    // SAFETY: invalid fd and an empty parameter string.
    ok(unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            -1 as c_long,
            c"".as_ptr(),
            0 as c_long,
        )
    })
}

fn delete_module() -> Result<(), i32> {
    // SAFETY: a module name that does not exist, as a string literal.
    ok(unsafe {
        libc::syscall(
            libc::SYS_delete_module,
            c"paddock_battery_no_such_module".as_ptr(),
            libc::O_NONBLOCK as c_long,
        )
    })
}

fn bpf_map_create() -> Result<(), i32> {
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries.
    let mut attr = [0u32; 12];
    attr[0] = 2; // BPF_MAP_TYPE_ARRAY
    attr[1] = 4;
    attr[2] = 4;
    attr[3] = 1;
    // SAFETY: a live, zero-padded attribute buffer and its size.
    ok(unsafe {
        libc::syscall(
            libc::SYS_bpf,
            0 as c_long, // BPF_MAP_CREATE
            attr.as_mut_ptr(),
            std::mem::size_of_val(&attr),
        )
    })
}

fn perf_event_open() -> Result<(), i32> {
    // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): a software
    // cpu-clock counter on this process, user space only.
    let mut attr = [0u64; 8];
    attr[0] = 1 | (64 << 32); // type = PERF_TYPE_SOFTWARE, size = 64
    attr[1] = 0; // config = PERF_COUNT_SW_CPU_CLOCK
    attr[5] = 1 | (1 << 5) | (1 << 6); // disabled, exclude_kernel, exclude_hv
    // SAFETY: a live 64-byte attribute buffer.
    ok(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_mut_ptr(),
            0 as c_long,
            -1 as c_long,
            -1 as c_long,
            0 as c_long,
        )
    })
}

fn keyctl() -> Result<(), i32> {
    const KEYCTL_GET_KEYRING_ID: c_long = 0;
    const KEY_SPEC_SESSION_KEYRING: c_long = -3;
    // SAFETY: integer arguments.
    ok(unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_GET_KEYRING_ID,
            KEY_SPEC_SESSION_KEYRING,
            0 as c_long,
        )
    })
}

fn add_key() -> Result<(), i32> {
    const KEY_SPEC_PROCESS_KEYRING: c_long = -2;
    // SAFETY: string literals and a one-byte payload from a literal.
    ok(unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            c"paddock-battery".as_ptr(),
            c"x".as_ptr(),
            1usize,
            KEY_SPEC_PROCESS_KEYRING,
        )
    })
}

fn request_key() -> Result<(), i32> {
    // A permitted call answers ENOKEY.
    // SAFETY: string literals and a null callout.
    ok(unsafe {
        libc::syscall(
            libc::SYS_request_key,
            c"user".as_ptr(),
            c"paddock-battery-none".as_ptr(),
            ptr::null::<libc::c_char>(),
            0 as c_long,
        )
    })
}

fn io_uring_setup() -> Result<(), i32> {
    // struct io_uring_params is 120 bytes, all zero for defaults.
    let mut params = [0u32; 30];
    // SAFETY: a live, zeroed params buffer of the kernel's size.
    ok(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1 as c_long, params.as_mut_ptr()) })
}

fn io_uring_enter() -> Result<(), i32> {
    // A permitted call answers EBADF.
    // SAFETY: invalid fd, null sigset.
    ok(unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            -1 as c_long,
            0 as c_long,
            0 as c_long,
            0 as c_long,
            ptr::null::<c_void>(),
            0 as c_long,
        )
    })
}

fn io_uring_register() -> Result<(), i32> {
    // SAFETY: invalid fd, null argument.
    ok(unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            -1 as c_long,
            0 as c_long,
            ptr::null::<c_void>(),
            0 as c_long,
        )
    })
}

fn userfaultfd() -> Result<(), i32> {
    const UFFD_USER_MODE_ONLY: c_long = 1;
    // SAFETY: integer flags.
    ok(unsafe {
        libc::syscall(
            libc::SYS_userfaultfd,
            libc::O_CLOEXEC as c_long | UFFD_USER_MODE_ONLY,
        )
    })
}

fn reboot() -> Result<(), i32> {
    // Wrong magic numbers: a permitted call stops at EINVAL.
    // SAFETY: integer arguments and a null pointer.
    ok(unsafe {
        libc::syscall(
            libc::SYS_reboot,
            0 as c_long,
            0 as c_long,
            0 as c_long,
            ptr::null::<c_void>(),
        )
    })
}

fn swapon() -> Result<(), i32> {
    // SAFETY: a string literal naming a file that does not exist.
    ok(unsafe { libc::syscall(libc::SYS_swapon, scratch::MISSING.as_ptr(), 0 as c_long) })
}

fn swapoff() -> Result<(), i32> {
    // SAFETY: a string literal naming a file that does not exist.
    ok(unsafe { libc::syscall(libc::SYS_swapoff, scratch::MISSING.as_ptr()) })
}

fn acct() -> Result<(), i32> {
    // SAFETY: a string literal naming a file that does not exist.
    ok(unsafe { libc::syscall(libc::SYS_acct, scratch::MISSING.as_ptr()) })
}

fn quotactl() -> Result<(), i32> {
    // QCMD(Q_SYNC, USRQUOTA) with no device: syncs quota everywhere (harmless),
    // needs no privilege, so only the filter stops it.
    const Q_SYNC_USR: c_long = 0x800001 << 8;
    // SAFETY: null device and address.
    ok(unsafe {
        libc::syscall(
            libc::SYS_quotactl,
            Q_SYNC_USR,
            ptr::null::<libc::c_char>(),
            0 as c_long,
            ptr::null::<c_void>(),
        )
    })
}

#[repr(C)]
struct FileHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; 128],
}

fn open_by_handle_at() -> Result<(), i32> {
    // The "shocker" attack: open inode 2 (a root directory) by handle.
    let mut handle = FileHandle {
        handle_bytes: 8,
        handle_type: 1, // FILEID_INO32_GEN
        f_handle: [0; 128],
    };
    handle.f_handle[0] = 2;
    // SAFETY: a string literal.
    let mount_fd = unsafe { libc::open(c"/".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    if mount_fd < 0 {
        return Err(errno());
    }
    // SAFETY: a live, correctly laid out file_handle.
    ok(unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount_fd as c_long,
            &mut handle as *mut FileHandle,
            libc::O_RDONLY as c_long,
        )
    })
}

fn name_to_handle_at() -> Result<(), i32> {
    let mut handle = FileHandle {
        handle_bytes: 128,
        handle_type: 0,
        f_handle: [0; 128],
    };
    let mut mount_id: i32 = 0;
    // SAFETY: a string literal, a live handle buffer of the declared size and
    // a live int for the mount id.
    ok(unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD as c_long,
            c"/tmp".as_ptr(),
            &mut handle as *mut FileHandle,
            &mut mount_id as *mut i32,
            0 as c_long,
        )
    })
}

fn iopl() -> Result<(), i32> {
    // SAFETY: integer argument; only this probe child would gain port access.
    ok(unsafe { libc::syscall(libc::SYS_iopl, 3 as c_long) })
}

fn ioperm() -> Result<(), i32> {
    // SAFETY: integer arguments; only this probe child would gain port access.
    ok(unsafe { libc::syscall(libc::SYS_ioperm, 0x80 as c_long, 1 as c_long, 1 as c_long) })
}

fn clock_settime() -> Result<(), i32> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a live timespec to fill.
    check(unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_REALTIME as c_long,
            &mut now,
        )
    })?;
    // Setting the clock to the time just read: a permitted call moves it by microseconds.
    // SAFETY: a live timespec.
    ok(unsafe {
        libc::syscall(
            libc::SYS_clock_settime,
            libc::CLOCK_REALTIME as c_long,
            &now,
        )
    })
}

fn settimeofday() -> Result<(), i32> {
    // Both null: a permitted call only passes the privilege check and changes nothing.
    // SAFETY: null pointers.
    ok(unsafe {
        libc::syscall(
            libc::SYS_settimeofday,
            ptr::null::<libc::timeval>(),
            ptr::null::<c_void>(),
        )
    })
}

fn adjtimex() -> Result<(), i32> {
    // SAFETY: libc::timex is plain old data, all-zero is a valid value.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // modes = 0: a read-only query, so a permitted call changes nothing.
    // SAFETY: a live timex.
    ok(unsafe { libc::syscall(libc::SYS_adjtimex, &mut tx as *mut libc::timex) })
}

fn mknod_char() -> Result<(), i32> {
    let dev = libc::makedev(1, 3);
    // SAFETY: a string literal path in the sandbox's /tmp scratch directory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mknod,
            scratch::DEV_NODE.as_ptr(),
            (libc::S_IFCHR | 0o600) as c_long,
            dev,
        )
    };
    check(r)?;
    scratch::remove(scratch::DEV_NODE);
    Ok(())
}

fn mknodat_block() -> Result<(), i32> {
    let dev = libc::makedev(8, 0);
    // SAFETY: a string literal path in the sandbox's /tmp scratch directory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mknodat,
            libc::AT_FDCWD as c_long,
            scratch::DEV_NODE.as_ptr(),
            (libc::S_IFBLK | 0o600) as c_long,
            dev,
        )
    };
    check(r)?;
    scratch::remove(scratch::DEV_NODE);
    Ok(())
}

fn mknodat_workspace() -> Result<(), i32> {
    let dev = libc::makedev(1, 3);
    // SAFETY: a string literal path inside the workspace.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mknodat,
            libc::AT_FDCWD as c_long,
            scratch::WORKSPACE_DEV_NODE.as_ptr(),
            (libc::S_IFCHR | 0o666) as c_long,
            dev,
        )
    };
    check(r)?;
    scratch::remove(scratch::WORKSPACE_DEV_NODE);
    Ok(())
}

/// The struct openat2(2) reads its flags and mode from (`struct open_how`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

fn openat2_setuid() -> Result<(), i32> {
    let how = OpenHow {
        flags: (libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC) as u64,
        mode: 0o4755,
        resolve: 0,
    };
    // SAFETY: a string literal path and a live open_how of the given size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD as c_long,
            scratch::WORKSPACE_SETUID_FILE.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let fd = check(r)?;
    // SAFETY: the descriptor was just opened here.
    unsafe { libc::close(fd as libc::c_int) };
    scratch::remove(scratch::WORKSPACE_SETUID_FILE);
    Ok(())
}
