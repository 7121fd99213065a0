//! A started command as the agent holds it: its pid (also its process
//! group), the parent's ends of its pipes, and its exit.
//!
//! Every command is started by the spawner (its own vfork, or a fork for a
//! terminal), not by tokio, so its exit is watched here. SIGCHLD is blocked
//! in every thread of the agent and read from a signalfd ([`ChildExits`]):
//! no handler runs, so a command's exit costs one read, not a signal frame,
//! a handler's write to a self-pipe, its reads and a system call
//! interrupted (under gVisor's ptrace platform each is a trapped call).
//! Each SIGCHLD wakes every waiting child, each of which asks
//! `waitpid(pid, WNOHANG)` for its own pid only, never `waitpid(-1)`.
//! gVisor 20221219 has no pidfd_open, so a pidfd cannot replace the signal.
//! A child dropped before its exit was seen is reaped by a task left behind
//! (nothing is killed: groups are killed by their owners, as before).
//! Commands start with an empty signal mask (the vfork child sets it, std's
//! fork path resets it), so the blocked SIGCHLD is the agent's alone.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::sync::watch;

/// A started command.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    /// None once reaped.
    reap: Option<Reap>,
}

impl Child {
    /// A child on a terminal: no pipes (its terminal is its stdio).
    pub fn on_terminal(reap: Reap) -> Self {
        Self {
            pid: reap.pid.as_raw().unsigned_abs(),
            stdin: None,
            stdout: None,
            stderr: None,
            reap: Some(reap),
        }
    }

    /// A child on pipes, watched with `reap` (made before it started, so
    /// no exit of it is missed).
    pub fn spawned(
        reap: Reap,
        stdin: Option<pipe::Sender>,
        stdout: pipe::Receiver,
        stderr: pipe::Receiver,
    ) -> Self {
        Self {
            pid: reap.pid.as_raw().unsigned_abs(),
            stdin,
            stdout: Some(stdout),
            stderr: Some(stderr),
            reap: Some(reap),
        }
    }

    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits for the exit (again: the status it had).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.reap.as_mut() {
            Some(r) => {
                let status = r.wait().await?;
                r.status = Some(status);
                Ok(status)
            }
            None => Err(io::Error::other("child already reaped")),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(mut reap) = self.reap.take()
            && reap.status.is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(e) = reap.wait().await {
                    tracing::warn!(pid = reap.pid.as_raw(), error = %e, "reaping a dropped child failed");
                }
            });
        }
    }
}

/// The agent's SIGCHLDs, counted: each one read from the signalfd bumps
/// the count every [`Reap`] watches.
#[derive(Debug, Clone)]
pub struct ChildExits {
    count: watch::Receiver<u64>,
}

impl ChildExits {
    /// Blocks SIGCHLD in the calling thread. Call it before any other
    /// thread of the agent starts: threads inherit the mask, and a thread
    /// that did not block it would take the signal (ignored by default)
    /// away from the signalfd.
    pub fn block() -> io::Result<()> {
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&sigchld()), None).map_err(io::Error::from)
    }

    /// Opens the signalfd and starts the task that reads it, on the current
    /// runtime.
    pub fn watch() -> io::Result<Self> {
        let fd = SignalFd::with_flags(&sigchld(), SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(io::Error::from)?;
        // The SignalFd owns its fd, moved in: nothing else can close it
        // while it is registered (the I/O-safety hole `new` was deprecated
        // for, which `register` only moves into an unsafe contract).
        #[allow(deprecated)]
        let fd = AsyncFd::new(fd)?;
        let (count, watched) = watch::channel(0u64);
        tokio::spawn(async move {
            loop {
                let mut ready = match fd.readable().await {
                    Ok(ready) => ready,
                    Err(e) => {
                        tracing::error!(error = %e, "watching SIGCHLD failed");
                        return;
                    }
                };
                match ready.get_inner().read_signal() {
                    Ok(Some(_)) => {
                        // SIGCHLD is a standard signal: at most one is
                        // pending, so after this read none is, and the next
                        // one is a new edge. Not asking again saves a read
                        // that would only say EAGAIN.
                        ready.clear_ready();
                        count.send_modify(|n| *n = n.wrapping_add(1));
                    }
                    Ok(None) | Err(Errno::EINTR) => ready.clear_ready(),
                    Err(e) => {
                        tracing::error!(error = %e, "reading SIGCHLD failed");
                        return;
                    }
                }
            }
        });
        Ok(Self { count: watched })
    }

    /// The watch of a child about to start: made before it starts, so that
    /// its exit is a SIGCHLD counted after this.
    pub fn before_start(&self) -> Starting {
        let mut exits = self.count.clone();
        exits.borrow_and_update();
        Starting { exits }
    }
}

/// A [`Reap`] waiting for its child's pid.
#[derive(Debug)]
pub struct Starting {
    exits: watch::Receiver<u64>,
}

impl Starting {
    /// Watches `pid`, the child started since [`ChildExits::before_start`].
    pub fn started(self, pid: i32) -> Reap {
        Reap {
            pid: Pid::from_raw(pid),
            exits: self.exits,
            status: None,
        }
    }
}

fn sigchld() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    set
}

/// Watches one pid's exit.
#[derive(Debug)]
pub struct Reap {
    pid: Pid,
    exits: watch::Receiver<u64>,
    status: Option<ExitStatus>,
}

impl Reap {
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            // Asked only after a SIGCHLD since the last answer: the child
            // cannot have ended without one (a waitpid is a trapped call
            // under gVisor, and the first one would find it running).
            if self.exits.changed().await.is_err() {
                return Err(io::Error::other("the SIGCHLD watch ended"));
            }
            match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => return Ok(ExitStatus::from_raw(code << 8)),
                Ok(WaitStatus::Signaled(_, signal, core)) => {
                    let raw = signal as i32 | if core { 0x80 } else { 0 };
                    return Ok(ExitStatus::from_raw(raw));
                }
                // Still running (stops are not asked for).
                Ok(_) | Err(Errno::EINTR) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use nix::sys::wait::{Id, waitid};

    use super::*;

    /// A watch bumped by hand stands for the signalfd: a unit test's
    /// process has threads that do not block SIGCHLD (the scenario tests
    /// run every command through the real one).
    fn exits() -> (watch::Sender<u64>, ChildExits) {
        let (count, watched) = watch::channel(0);
        (count, ChildExits { count: watched })
    }

    #[tokio::test]
    // `ours` is reaped by the Reap under test, not by std.
    #[allow(clippy::zombie_processes)]
    async fn a_child_exit_is_read_for_its_pid_only_once_a_sigchld_is_counted() {
        let (count, exits) = exits();
        let starting = exits.before_start();
        // A child of std's: its status must stay for its own wait.
        let mut other = std::process::Command::new("sh")
            .args(["-c", "exit 5"])
            .spawn()
            .unwrap();
        let ours = std::process::Command::new("sh")
            .args(["-c", "read line; kill -TERM $$"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = i32::try_from(ours.id()).unwrap();
        let mut reap = starting.started(pid);
        let waiting = tokio::spawn(async move { reap.wait().await });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "no exit yet, and no SIGCHLD counted"
        );
        drop(ours.stdin);
        // Its exit (seen without reaping it), then its SIGCHLD as the
        // signalfd would count it.
        tokio::task::spawn_blocking(move || {
            waitid(
                Id::Pid(Pid::from_raw(pid)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            )
        })
        .await
        .unwrap()
        .unwrap();
        count.send_modify(|n| *n += 1);
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
        assert_eq!(other.wait().unwrap().code(), Some(5));
    }
}
