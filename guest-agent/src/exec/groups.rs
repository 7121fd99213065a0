//! The process groups this agent started, so they can all be killed when the
//! connection ends.

use std::collections::BTreeSet;
use std::sync::Mutex;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use paddock_proto::{ErrorCode, ErrorInfo};

use crate::error::bad_request;

#[derive(Debug, Default)]
pub struct ProcessGroups {
    live: Mutex<BTreeSet<i32>>,
}

impl ProcessGroups {
    pub fn insert(&self, pgid: i32) {
        if let Ok(mut live) = self.live.lock() {
            live.insert(pgid);
        }
    }

    /// Forgets a group once nothing is left in it. A group whose leader exited
    /// but that still has members (a daemonized grandchild) stays tracked.
    pub fn forget_if_empty(&self, pgid: i32) {
        if killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
            && let Ok(mut live) = self.live.lock()
        {
            live.remove(&pgid);
        }
    }

    /// SIGKILLs every tracked group.
    pub fn kill_all(&self) {
        let groups: Vec<i32> = match self.live.lock() {
            Ok(mut live) => std::mem::take(&mut *live).into_iter().collect(),
            Err(_) => return,
        };
        for pgid in groups {
            kill_group(pgid, Signal::SIGKILL);
        }
    }
}

/// Signals a whole process group; a group that is already gone is not an error.
pub fn signal_group(pgid: i32, signal: Signal) -> Result<(), ErrorInfo> {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(ErrorInfo::new(
            ErrorCode::Io,
            format!("signalling process group {pgid}: {}", e.desc()),
        )),
    }
}

pub fn kill_group(pgid: i32, signal: Signal) {
    if let Err(e) = signal_group(pgid, signal) {
        tracing::warn!(pgid, error = %e, "killing process group failed");
    }
}

pub fn parse_signal(number: i32) -> Result<Signal, ErrorInfo> {
    Signal::try_from(number).map_err(|_| bad_request(format!("unknown signal {number}")))
}
