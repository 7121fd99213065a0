//! Starting a command the way posix_spawn does (`clone(CLONE_VM |
//! CLONE_VFORK)`, no copy of the address space) but with only the system
//! calls it needs in the child: under gVisor's ptrace platform each one is
//! a trapped call. glibc's posix_spawn gets and sets every signal's
//! disposition in the child (121 of its 128 calls); [`VforkSpawner`] resets
//! only the signals whose disposition is not SIG_DFL, read once when it is
//! made. The raw calls are in `sys`.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::BorrowedFd;

/// The child's stack: it only makes raw system calls from one frame.
const STACK: usize = 64 * 1024;

/// Starts commands from the thread that made it (its signal set is read
/// then; a thread-directed handler set later is not seen, so make it after
/// the process installed its handlers and install none afterwards).
#[derive(Debug)]
pub struct VforkSpawner {
    /// The signals a child resets to SIG_DFL.
    resets: Vec<libc::c_int>,
    /// Reused by every child; `&mut self` keeps it to one at a time.
    stack: Box<[u8]>,
}

impl VforkSpawner {
    /// Reads which signals have a disposition other than SIG_DFL now.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            resets: crate::sys::signals_not_default()?,
            stack: vec![0u8; STACK].into_boxed_slice(),
        })
    }

    /// The signals each child resets to SIG_DFL before its execve.
    pub fn resets(&self) -> &[libc::c_int] {
        &self.resets
    }

    /// Starts `path` with `argv` (`argv[0]` included) and the environment
    /// `envp` ("NAME=value"), its stdin, stdout and stderr `stdio`, in a
    /// process group of its own, an empty signal mask, the working
    /// directory and seccomp filter of this thread. The child exits with
    /// SIGCHLD to this process; the caller reaps it. An error is the one
    /// execve (or a step before it) failed with, the child reaped.
    pub fn spawn(
        &mut self,
        path: &CStr,
        argv: &[CString],
        envp: &[CString],
        stdio: [BorrowedFd<'_>; 3],
    ) -> io::Result<libc::pid_t> {
        let pointers = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        let (argv, envp) = (pointers(argv), pointers(envp));
        crate::sys::vfork_exec(&mut self.stack, path, &argv, &envp, &self.resets, stdio)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use nix::sys::wait::{WaitStatus, waitpid};
    use nix::unistd::Pid;

    use super::*;

    fn c(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    fn run(spawner: &mut VforkSpawner, script: &str) -> (WaitStatus, String) {
        let null = std::fs::File::open("/dev/null").unwrap();
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let pid = spawner
            .spawn(
                &c("/bin/sh"),
                &[c("sh"), c("-c"), c(script)],
                &[c("PATH=/bin:/usr/bin"), c("X=1")],
                [null.as_fd(), write.as_fd(), write.as_fd()],
            )
            .unwrap();
        drop(write);
        let out = std::io::read_to_string(std::fs::File::from(read)).unwrap();
        (waitpid(Pid::from_raw(pid), None).unwrap(), out)
    }

    #[test]
    fn a_child_runs_with_its_argv_env_and_pipes_in_its_own_group() {
        let mut spawner = VforkSpawner::new().unwrap();
        let (status, out) = run(
            &mut spawner,
            r#"echo "$X $0"; echo err >&2; test "$(cut -d' ' -f5 /proc/$$/stat)" = $$ && echo leader; exit 3"#,
        );
        assert_eq!(out, "1 sh\nerr\nleader\n");
        assert!(matches!(status, WaitStatus::Exited(_, 3)), "{status:?}");
    }

    #[test]
    fn ignored_signals_are_default_again_and_the_mask_empty_in_the_child() {
        // SIGPIPE is ignored by std in this process; the child gets it back.
        let mut spawner = VforkSpawner::new().unwrap();
        assert!(spawner.resets().contains(&libc::SIGPIPE));
        let (_, out) = run(&mut spawner, "grep -E '^Sig(Ign|Blk)' /proc/self/status");
        assert_eq!(
            out,
            "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
        );
    }

    #[test]
    fn a_missing_program_is_its_execve_error_and_leaves_no_child() {
        let mut spawner = VforkSpawner::new().unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        let fd = null.as_fd();
        let err = spawner
            .spawn(&c("/nonexistent/x"), &[c("x")], &[], [fd, fd, fd])
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "echo hi\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = CString::new(script.as_os_str().as_encoded_bytes()).unwrap();
        // Another test thread forking while `write` held the file open leaves
        // a copy of that descriptor in its child until the child execs, and
        // the kernel answers ETXTBSY meanwhile: retry that window away.
        let mut err = None;
        for _ in 0..100 {
            let e = spawner
                .spawn(&path, &[c("s")], &[], [fd, fd, fd])
                .unwrap_err();
            if e.raw_os_error() != Some(libc::ETXTBSY) {
                err = Some(e);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(err.unwrap().raw_os_error(), Some(libc::ENOEXEC));
        // Nothing since `new` changed a disposition: the resets still cover
        // every signal that is not SIG_DFL.
        assert_eq!(crate::sys::signals_not_default().unwrap(), spawner.resets());
    }
}
