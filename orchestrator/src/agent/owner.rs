//! Lease owners of local `paddock run` processes: `HOST-run-PID-START`, the
//! process's pid and its start time (clock ticks after boot, /proc/PID/stat),
//! so that a later command on this host can tell the owner's process is gone
//! even when the pid was reused.

use std::fs;

use paddock_runtime::OwnerProbe;

/// This process's lease-owner node name.
pub fn this_process(host: &str) -> String {
    let pid = std::process::id();
    match start_time(pid) {
        Some(start) => format!("{host}-run-{pid}-{start}"),
        // No /proc: owners without a start time are never judged gone.
        None => format!("{host}-run-{pid}"),
    }
}

/// Judges owners of `paddock run` processes on `host` by their pid and
/// start time; every other owner is left to its lease expiry.
#[derive(Debug)]
pub struct LocalProcesses {
    pub host: String,
}

impl OwnerProbe for LocalProcesses {
    fn is_gone(&self, owner: &str) -> bool {
        match parse(owner) {
            Some((host, pid, start)) => host == self.host && start_time(pid) != Some(start),
            None => false,
        }
    }
}

impl LocalProcesses {
    /// The pid of the `paddock run` process on this host that `owner` names,
    /// when it is still that process (same start time).
    pub fn live_pid(&self, owner: &str) -> Option<u32> {
        let (host, pid, start) = parse(owner)?;
        (host == self.host && start_time(pid) == Some(start)).then_some(pid)
    }
}

/// `HOST-run-PID-START[/...]` as (host, pid, start).
fn parse(owner: &str) -> Option<(&str, u32, u64)> {
    let node = owner.split_once('/').map_or(owner, |(node, _)| node);
    let (host, process) = node.rsplit_once("-run-")?;
    let (pid, start) = process.split_once('-')?;
    Some((host, pid.parse().ok()?, start.parse().ok()?))
}

/// The start time of process `pid` (field 22 of /proc/PID/stat), None when
/// there is no such process.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // from the last ')'. The fields after it start with field 3.
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_is_not_gone_a_dead_or_reused_pid_is() {
        let probe = LocalProcesses { host: "box".into() };
        let me = this_process("box");
        assert!(me.contains("-run-"), "{me}");
        assert!(!probe.is_gone(&format!("{me}/run-1")));
        assert_eq!(
            probe.live_pid(&format!("{me}/run-1")),
            Some(std::process::id())
        );

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        child.wait().unwrap();
        assert!(probe.is_gone(&format!("box-run-{pid}-{}/run-1", start.unwrap_or(1))));
        // The same pid with another start time: a new process in its place.
        let pid = std::process::id();
        let start = start_time(pid).unwrap();
        assert!(probe.is_gone(&format!("box-run-{pid}-{}/run-1", start + 1)));
        assert_eq!(
            probe.live_pid(&format!("box-run-{pid}-{}/run-1", start + 1)),
            None
        );

        // Other hosts, servers and old-style owners wait for expiry.
        assert!(!probe.is_gone(&format!("other-run-{pid}-{}/run-1", start + 1)));
        assert!(!probe.is_gone("node-a/run-1"));
        assert!(!probe.is_gone("box-run-123/run-1"));
    }
}
