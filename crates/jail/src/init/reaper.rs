//! PID 1 duties of the sandbox init, split off from the agent.
//!
//! The guest agent must not reap with `waitpid(-1)` itself: its async runtime
//! waits for its own children by pid, and a catch-all reaper in the same process
//! would steal their statuses. So the init forks once: the parent stays PID 1
//! (or the subreaper, outside a jail) and only reaps; the child runs the agent.

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, getpid, getppid};

use crate::process::threads::{Threads, count_threads};
use crate::sys;

#[derive(Debug, thiserror::Error)]
pub enum ReaperError {
    #[error("counting the threads of the sandbox init in /proc/self/stat")]
    CountThreads(#[source] std::io::Error),
    #[error("the sandbox init has {threads} threads; fork_reaper needs exactly one")]
    NotSingleThreaded { threads: u64 },
    #[error("marking inherited file descriptors close-on-exec")]
    CloseOnExec(#[source] Errno),
    #[error("forking the agent from the sandbox init")]
    Fork(#[source] Errno),
    #[error("setting the agent's parent-death signal")]
    ParentDeathSignal(#[source] Errno),
    #[error("putting the signals the guest inherited as ignored back to their default")]
    DefaultSignals(#[source] std::io::Error),
    #[error("making the guest not dumpable (PR_SET_DUMPABLE 0)")]
    NotDumpable(#[source] Errno),
    #[error("the guest still reads back as dumpable after PR_SET_DUMPABLE 0")]
    StillDumpable,
    #[error("opening /dev/null for the reaper's stdio")]
    OpenDevNull(#[source] std::io::Error),
}

/// Forks the agent off the calling process.
///
/// Returns `Ok(())` in the child (the agent), which gets SIGKILL if the parent
/// dies. The parent never returns: it reaps every child that is handed to it
/// (its own and every orphan of the sandbox) and, when the agent exits, exits
/// with the agent's status (128 + signal when a signal ended it). The parent
/// installs no signal handler, so as PID 1 of a pid namespace it keeps ignoring
/// signals sent from inside the sandbox.
///
/// Before forking, every descriptor above stderr is marked close-on-exec, so
/// nothing the agent runs inherits one by accident (the host connection, a
/// build tool's jobserver pipe, ...). In the agent, every signal the process
/// inherited as ignored but SIGPIPE is back to its default action.
///
/// Both processes are made not dumpable (`PR_SET_DUMPABLE` 0, checked in
/// each): the kernel then refuses a command (which holds no
/// `CAP_SYS_PTRACE`) their `/proc/PID/fd/*`, `mem` and `environ` even
/// where it runs as the same uid. A command gets its own dumpable flag back
/// from its execve. The reaper keeps nothing of what the process held: it
/// puts /dev/null on its fds 0, 1 and 2 and closes every other, so the host
/// connection (which the caller moved above fd 2 before this) and the
/// engine's streams live in the agent alone.
///
/// Must be called while the process has a single thread; that is checked.
/// Must be called after the last change of credentials: a change of uid
/// makes the process dumpable again.
pub fn fork_reaper() -> Result<(), ReaperError> {
    let single = match count_threads().map_err(ReaperError::CountThreads)? {
        Threads::One(single) => single,
        Threads::Many(threads) => return Err(ReaperError::NotSingleThreaded { threads }),
    };
    sys::set_cloexec_from(3).map_err(ReaperError::CloseOnExec)?;
    not_dumpable()?;
    // Opened before the fork: the reaper has no error to report to anyone.
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(ReaperError::OpenDevNull)?;
    let init = getpid();
    match sys::fork(&single).map_err(ReaperError::Fork)? {
        ForkResult::Child => {
            drop(devnull);
            // Inherited through fork on Linux; checked again, as the agent
            // is the process that serves.
            not_dumpable()?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(ReaperError::ParentDeathSignal)?;
            if getppid() != init {
                // The init died before the death signal was armed.
                std::process::exit(1);
            }
            // SIGPIPE stays ignored in the agent (std's choice: a write to a
            // closed pipe is an error, not death); commands get it back as
            // default from the spawn, as every other signal from here.
            sys::default_inherited_ignores(&[libc::SIGPIPE])
                .map_err(ReaperError::DefaultSignals)?;
            Ok(())
        }
        ForkResult::Parent { child } => {
            if keep_nothing(devnull).is_err() {
                // The agent dies with us (its parent-death signal).
                std::process::exit(1);
            }
            reap_until(child)
        }
    }
}

/// `PR_SET_DUMPABLE` 0, read back.
fn not_dumpable() -> Result<(), ReaperError> {
    nix::sys::prctl::set_dumpable(false).map_err(ReaperError::NotDumpable)?;
    match nix::sys::prctl::get_dumpable() {
        Ok(false) => Ok(()),
        Ok(true) => Err(ReaperError::StillDumpable),
        Err(e) => Err(ReaperError::NotDumpable(e)),
    }
}

/// /dev/null on fds 0, 1 and 2 and every other descriptor closed.
fn keep_nothing(devnull: std::fs::File) -> std::io::Result<()> {
    nix::unistd::dup2_stdin(&devnull)?;
    nix::unistd::dup2_stdout(&devnull)?;
    nix::unistd::dup2_stderr(&devnull)?;
    drop(devnull);
    sys::close_from_or_each(3)
}

fn reap_until(agent: Pid) -> ! {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == agent => std::process::exit(code),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == agent => {
                std::process::exit(128 + signal as i32)
            }
            Ok(_) | Err(Errno::EINTR) => {}
            // ECHILD cannot happen while the agent lives; anything else leaves
            // the init unable to do its job, and its exit ends the sandbox.
            Err(_) => std::process::exit(1),
        }
    }
}

pub(crate) fn thread_count() -> std::io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    parse_thread_count(&stat).ok_or_else(|| std::io::Error::other("no thread count field"))
}

/// num_threads is field 20 of /proc/PID/stat, the 18th after the
/// parenthesised command name (which may itself contain spaces and parens).
fn parse_thread_count(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(17)?.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_thread_count_past_a_tricky_command_name() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 123 456";
        assert_eq!(parse_thread_count(stat), Some(7));
        assert_eq!(parse_thread_count("42 (x) S 1"), None);
    }

    #[test]
    fn reads_a_thread_count_for_this_process() {
        assert!(thread_count().unwrap() >= 1);
    }
}
