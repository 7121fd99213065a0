//! Resource limits of the sandbox init, inherited by everything it starts.
//! RLIMIT_NPROC is deliberately absent: it counts per host uid across every
//! sandbox sharing that uid; the pids cgroup bounds processes per sandbox.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use paddock_proto::SandboxLimits;

use crate::JailError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RlimitRule {
    pub name: &'static str,
    pub resource: Resource,
    /// Soft and hard limit (lowered to the current hard limit if above it,
    /// since raising a hard limit needs a capability the sandbox never has).
    pub value: u64,
    pub reason: &'static str,
}

/// Locked memory allowed per process: enough for small mlock users (gpg,
/// ssh-agent), nothing that would pin real memory outside reclaim.
const MEMLOCK_BYTES: u64 = 64 << 10;

pub(crate) fn rules(limits: &SandboxLimits) -> Vec<RlimitRule> {
    vec![
        RlimitRule {
            name: "RLIMIT_CORE",
            resource: Resource::RLIMIT_CORE,
            value: 0,
            reason: "no core files: they would dump sandbox memory into the workspace or /tmp",
        },
        RlimitRule {
            name: "RLIMIT_NOFILE",
            resource: Resource::RLIMIT_NOFILE,
            value: limits.open_files,
            reason: "bounds open descriptors per process (spec limits.open_files)",
        },
        RlimitRule {
            name: "RLIMIT_MEMLOCK",
            resource: Resource::RLIMIT_MEMLOCK,
            value: MEMLOCK_BYTES,
            reason: "locked pages escape reclaim; 64 KiB covers mlock of secrets",
        },
        RlimitRule {
            name: "RLIMIT_RTPRIO",
            resource: Resource::RLIMIT_RTPRIO,
            value: 0,
            reason: "no real-time scheduling: a SCHED_FIFO loop would starve host CPUs past the cpu quota",
        },
        RlimitRule {
            name: "RLIMIT_NICE",
            resource: Resource::RLIMIT_NICE,
            value: 0,
            reason: "no raising of scheduling priority above the default",
        },
    ]
}

pub(crate) fn apply(limits: &SandboxLimits) -> Result<(), JailError> {
    for rule in rules(limits) {
        let to_err = |e: nix::errno::Errno| JailError::SetRlimit {
            resource: rule.name,
            source: e.into(),
        };
        let (soft, hard) = getrlimit(rule.resource).map_err(to_err)?;
        let value = rule.value.min(hard);
        if soft == value && hard == value {
            // Already in force (gVisor refuses even a no-op RLIMIT_RTPRIO change).
            continue;
        }
        setrlimit(rule.resource, value, value).map_err(to_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_sets_the_expected_limits() {
        let limits = SandboxLimits {
            open_files: 1234,
            ..SandboxLimits::default()
        };
        let table: Vec<(&str, u64)> = rules(&limits).iter().map(|r| (r.name, r.value)).collect();
        assert_eq!(
            table,
            [
                ("RLIMIT_CORE", 0),
                ("RLIMIT_NOFILE", 1234),
                ("RLIMIT_MEMLOCK", 64 << 10),
                ("RLIMIT_RTPRIO", 0),
                ("RLIMIT_NICE", 0),
            ]
        );
        assert!(rules(&limits).iter().all(|r| !r.reason.is_empty()));
        assert!(
            !rules(&limits)
                .iter()
                .any(|r| r.resource == Resource::RLIMIT_NPROC)
        );
    }
}
