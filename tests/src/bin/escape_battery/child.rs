//! Running one attempt in a forked child, so a probe that seccomp kills (or that
//! hangs, or that succeeds and changes the process) never takes the battery down.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, RawFd};

/// Exit code a child uses when the probe itself went wrong (not an errno).
pub const PROBE_ERROR: i32 = 255;
/// Every child is killed by SIGALRM after this long, so no probe can hang the battery.
const CHILD_ALARM_SECS: u32 = 20;

/// How a probe child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `_exit(code)`: 0 = the attempt succeeded, 1..=254 = the errno it failed with.
    Exited(i32),
    /// Killed by a signal (SIGSYS = seccomp, SIGKILL = OOM killer, SIGALRM = hung).
    Signaled(i32),
    /// Stopped under ptrace (then killed by the battery).
    Stopped(i32),
    /// The battery could not even fork.
    ForkFailed(i32),
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `Ok(ret)` for a non-negative syscall return, `Err(errno)` for -1.
pub fn check(ret: libc::c_long) -> Result<libc::c_long, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

/// Runs `attempt` in a forked child and reports how the child ended.
pub fn in_child(attempt: impl FnOnce() -> Result<(), i32>) -> Outcome {
    in_child_with_progress(|_| attempt()).0
}

/// Like [`in_child`], and the child may report progress numbers on the fd it is
/// given; the parent returns the last number reported (0 when none).
pub fn in_child_with_progress(attempt: impl FnOnce(RawFd) -> Result<(), i32>) -> (Outcome, u64) {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: `fds` is a valid two-int array for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return (Outcome::ForkFailed(errno()), 0);
    }
    let [read_fd, write_fd] = fds;
    // SAFETY: the battery is single-threaded, so the forked child may allocate
    // and run ordinary code; it leaves only through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = errno();
        close(read_fd);
        close(write_fd);
        return (Outcome::ForkFailed(e), 0);
    }
    if pid == 0 {
        close(read_fd);
        // SAFETY: alarm only arms a timer for this process.
        unsafe { libc::alarm(CHILD_ALARM_SECS) };
        let code = match attempt(write_fd) {
            Ok(()) => 0,
            Err(e) => e.clamp(1, PROBE_ERROR),
        };
        // SAFETY: leaves the child at once, without running the parent's atexit
        // handlers or flushing its copy of the parent's stdio buffers.
        unsafe { libc::_exit(code) };
    }
    close(write_fd);
    let outcome = wait_child(pid);
    // SAFETY: read_fd is the pipe's read end, owned by nobody else from here on.
    let mut reader = unsafe { File::from_raw_fd(read_fd) };
    let mut buf = Vec::new();
    let _ = reader.read_to_end(&mut buf);
    let last = buf
        .chunks_exact(8)
        .next_back()
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .unwrap_or(0);
    (outcome, last)
}

/// Reports a progress number from inside a child started by [`in_child_with_progress`].
pub fn report_progress(fd: RawFd, value: u64) {
    let bytes = value.to_le_bytes();
    // SAFETY: writes 8 bytes from a live local array to a pipe fd this child owns.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// Waits for `pid` (a child or a ptrace tracee); a stopped child is killed and reaped.
pub fn wait_child(pid: libc::pid_t) -> Outcome {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r == pid {
            break;
        }
        if r < 0 && errno() != libc::EINTR {
            return Outcome::ForkFailed(errno());
        }
    }
    if libc::WIFSTOPPED(status) {
        let sig = libc::WSTOPSIG(status);
        kill_and_reap(pid);
        return Outcome::Stopped(sig);
    }
    if libc::WIFSIGNALED(status) {
        return Outcome::Signaled(libc::WTERMSIG(status));
    }
    Outcome::Exited(libc::WEXITSTATUS(status))
}

/// SIGKILLs a child and reaps it.
pub fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: signals and reaps our own child; `status` is a valid out-pointer.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, libc::__WALL) < 0 && errno() == libc::EINTR {}
    }
}

pub fn close(fd: RawFd) {
    // SAFETY: closes an fd this process owns and no Rust object wraps.
    unsafe { libc::close(fd) };
}

/// A short, stable name for an errno, with its text.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::ENOTBLK => "ENOTBLK",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EINVAL => "EINVAL",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::ENOSYS => "ENOSYS",
        libc::ENOKEY => "ENOKEY",
        libc::EUSERS => "EUSERS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ESTALE => "ESTALE",
        libc::ETXTBSY => "ETXTBSY",
        PROBE_ERROR => return "probe error".to_string(),
        _ => "errno",
    };
    format!("{name} ({})", std::io::Error::from_raw_os_error(e))
}

/// A signal number's name.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGALRM => "SIGALRM",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGBUS => "SIGBUS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Blocked errnos when a syscall is refused by seccomp or by missing privilege.
pub const DENIED: &[i32] = &[libc::EPERM, libc::EACCES, libc::ENOSYS];

/// The verdict for a syscall-level attempt: blocked when it failed with one of
/// `denied` or was killed by seccomp; anything else means it reached the kernel.
pub fn judge(outcome: Outcome, denied: &[i32]) -> (bool, String) {
    match outcome {
        Outcome::Exited(0) => (false, "SUCCEEDED".to_string()),
        Outcome::Exited(PROBE_ERROR) => (false, "probe error (could not set up)".to_string()),
        Outcome::Exited(e) if denied.contains(&e) => (true, format!("denied: {}", errno_name(e))),
        Outcome::Exited(e) => (
            false,
            format!("reached the kernel, failed only with {}", errno_name(e)),
        ),
        Outcome::Signaled(libc::SIGSYS) => (true, "killed by SIGSYS (seccomp)".to_string()),
        Outcome::Signaled(s) => (false, format!("probe child killed by {}", signal_name(s))),
        Outcome::Stopped(s) => (
            false,
            format!("probe child stopped under ptrace ({})", signal_name(s)),
        ),
        Outcome::ForkFailed(e) => (
            false,
            format!("could not fork the probe: {}", errno_name(e)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_and_seccomp_kills_count_as_blocked() {
        assert!(judge(Outcome::Exited(libc::EPERM), DENIED).0);
        assert!(judge(Outcome::Exited(libc::ENOSYS), DENIED).0);
        assert!(judge(Outcome::Signaled(libc::SIGSYS), DENIED).0);
        // Success, or failing only on the arguments, means the syscall got through.
        assert!(!judge(Outcome::Exited(0), DENIED).0);
        assert!(!judge(Outcome::Exited(libc::EINVAL), DENIED).0);
        assert!(!judge(Outcome::Exited(PROBE_ERROR), DENIED).0);
        assert!(!judge(Outcome::Stopped(libc::SIGTRAP), DENIED).0);
        assert!(!judge(Outcome::Signaled(libc::SIGALRM), DENIED).0);
        assert!(!judge(Outcome::ForkFailed(libc::EAGAIN), DENIED).0);
    }

    #[test]
    fn a_child_reports_its_errno_and_its_progress() {
        let (outcome, progress) = in_child_with_progress(|fd| {
            report_progress(fd, 7);
            report_progress(fd, 42);
            Err(libc::EACCES)
        });
        assert_eq!(outcome, Outcome::Exited(libc::EACCES));
        assert_eq!(progress, 42);
        assert_eq!(in_child(|| Ok(())), Outcome::Exited(0));
    }
}
