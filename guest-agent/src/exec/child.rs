//! A started command as the agent holds it: its pid (also its process
//! group), the parent's ends of its pipes, and its exit.
//!
//! A command on pipes is started by the spawner's own vfork
//! ([`paddock_jail::spawn::VforkSpawner`]), not by tokio, so its exit is
//! watched here: SIGCHLD (tokio's signal stream) wakes every waiting child,
//! each of which asks `waitpid(pid, WNOHANG)` for its own pid only, never
//! `waitpid(-1)`, so the statuses of tokio's children (the terminal path)
//! and others stay theirs. gVisor 20221219 has no pidfd_open, so a pidfd
//! cannot replace the signal. A child dropped before its exit was seen is
//! reaped by a task left behind (nothing is killed: groups are killed by
//! their owners, as before).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// A started command.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
    exit: Exit,
}

#[derive(Debug)]
enum Exit {
    /// Forked by tokio (a terminal's command): tokio reaps it.
    Forked(tokio::process::Child),
    /// Spawned by us: reaped here. None once reaped.
    Spawned(Option<Reap>),
}

impl Child {
    /// A child tokio forked; its pipes, if any, are not used.
    pub fn forked(child: tokio::process::Child) -> Option<Self> {
        Some(Self {
            pid: child.id()?,
            stdin: None,
            stdout: None,
            stderr: None,
            exit: Exit::Forked(child),
        })
    }

    /// A child we spawned, watched with `reap` (made before it started, so
    /// no SIGCHLD of it is missed).
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
            exit: Exit::Spawned(Some(reap)),
        }
    }

    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits for the exit (again: the status it had).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match &mut self.exit {
            Exit::Forked(child) => child.wait().await,
            Exit::Spawned(reap) => match reap.as_mut() {
                Some(r) => {
                    let status = r.wait().await?;
                    r.status = Some(status);
                    Ok(status)
                }
                None => Err(io::Error::other("child already reaped")),
            },
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Exit::Spawned(reap) = &mut self.exit
            && let Some(mut reap) = reap.take()
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

/// Watches one pid's exit.
#[derive(Debug)]
pub struct Reap {
    pid: Pid,
    sigchld: Signal,
    status: Option<ExitStatus>,
}

impl Reap {
    /// Listens for SIGCHLD; call on the runtime, before the child starts.
    pub fn listen() -> io::Result<Signal> {
        signal(SignalKind::child())
    }

    pub fn new(pid: i32, sigchld: Signal) -> Self {
        Self {
            pid: Pid::from_raw(pid),
            sigchld,
            status: None,
        }
    }

    async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
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
            if self.sigchld.recv().await.is_none() {
                return Err(io::Error::other("the SIGCHLD stream ended"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    // `ours` is reaped by the Reap under test, not by std.
    #[allow(clippy::zombie_processes)]
    async fn a_spawned_child_exit_is_read_for_its_pid_only() {
        let sigchld = Reap::listen().unwrap();
        // A child of std's: its status must stay for its own wait.
        let mut other = std::process::Command::new("sh")
            .args(["-c", "exit 5"])
            .spawn()
            .unwrap();
        let ours = std::process::Command::new("sh")
            .args(["-c", "kill -TERM $$"])
            .spawn()
            .unwrap();
        let mut reap = Reap::new(i32::try_from(ours.id()).unwrap(), sigchld);
        let status = reap.wait().await.unwrap();
        assert_eq!(status.signal(), Some(libc_sigterm()));
        assert_eq!(other.wait().unwrap().code(), Some(5));
    }

    fn libc_sigterm() -> i32 {
        nix::sys::signal::Signal::SIGTERM as i32
    }
}
