//! The workspace quota (bytes and inodes) and how the kernel enforces it.
//!
//! A temporary workspace (made for this sandbox and removed with it) becomes
//! a tmpfs mounted at /workspace inside the sandbox with `size=` and
//! `nr_inodes=`: writes past either fail with ENOSPC and nothing reaches the
//! host's disk (tmpfs pages are charged to the sandbox's memory cgroup). A
//! persistent workspace is held by the host or not at all: the server's
//! workspaces made with a quota are btrfs subvolumes with a qgroup limit in
//! its volume pool, and the host says so in the spec (`held`); the kernel
//! refuses the write past it (EDQUOT) whichever way the directory reaches the
//! sandbox. Any other persistent workspace (a registered host directory, one
//! made without a quota) has no quota the jail could set up: a quota on one
//! is refused unless the operator allowed the `workspace_quota` downgrade,
//! and the report then says it is not enforced.

use paddock_proto::{DowngradeLayer, LayerState, SandboxLimits, WorkspaceQuotaEnforcement};

use crate::JailError;

/// Inodes of a tmpfs workspace when only its size is asked: one per 4 KiB,
/// at least 1024 (as /tmp).
fn default_inodes(bytes: u64) -> u64 {
    (bytes / 4096).max(1024)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QuotaPlan {
    /// Mount a tmpfs of these limits at /workspace instead of the host directory.
    pub tmpfs: Option<WorkspaceQuotaEnforcement>,
    /// The host holds the persistent workspace to this quota (nothing to mount).
    pub held: Option<WorkspaceQuotaEnforcement>,
    pub state: LayerState,
}

impl QuotaPlan {
    /// The limits the report names: the tmpfs's or the host's.
    pub(crate) fn limits(&self) -> Option<WorkspaceQuotaEnforcement> {
        self.tmpfs.clone().or_else(|| self.held.clone())
    }
}

/// What to do for `limits`' workspace quota. `temporary`: the workspace is
/// the sandbox's own and starts empty. A read-only or write-scoped workspace
/// is the host's directory, which a tmpfs would not hold. `held`: the quota
/// the host holds a persistent workspace to (a btrfs qgroup), if any.
pub(crate) fn plan(
    limits: &SandboxLimits,
    temporary: bool,
    read_only: bool,
    has_write_scope: bool,
    held: Option<&WorkspaceQuotaEnforcement>,
    allowed: impl Fn(DowngradeLayer) -> bool,
) -> Result<QuotaPlan, JailError> {
    let not_held = |tmpfs, state| QuotaPlan {
        tmpfs,
        held: None,
        state,
    };
    if limits.workspace_bytes.is_none() && limits.workspace_inodes.is_none() {
        return Ok(not_held(None, LayerState::NotRequested));
    }
    let unenforceable = if !temporary {
        match held {
            Some(held) => match held_covers(limits, held) {
                Ok(()) => {
                    return Ok(QuotaPlan {
                        tmpfs: None,
                        held: Some(held.clone()),
                        state: LayerState::Enforced,
                    });
                }
                Err(reason) => Some(reason),
            },
            None => Some(
                "the workspace is a persistent host directory outside the server's volume \
                 pool (registered, or made without quota_bytes); a quota on it needs a \
                 project quota or an image-backed filesystem, which the jail does not set up"
                    .to_owned(),
            ),
        }
    } else if read_only || has_write_scope {
        Some("a read-only or write-scoped workspace is bound from the host, not a tmpfs".to_owned())
    } else {
        None
    };
    if let Some(reason) = unenforceable {
        if allowed(DowngradeLayer::WorkspaceQuota) {
            return Ok(not_held(None, LayerState::Downgraded { reason }));
        }
        return Err(JailError::WorkspaceQuotaUnavailable { reason });
    }
    Ok(not_held(workspace_tmpfs(limits), LayerState::Enforced))
}

/// Whether the host's quota on a persistent workspace is at least as tight
/// as the one asked; why not otherwise.
fn held_covers(limits: &SandboxLimits, held: &WorkspaceQuotaEnforcement) -> Result<(), String> {
    if limits.workspace_inodes.is_some() && held.inodes == 0 {
        return Err(format!(
            "the workspace's {} limits bytes, not inodes",
            held.mechanism
        ));
    }
    match limits.workspace_bytes {
        Some(asked) if held.bytes > asked => Err(format!(
            "the workspace's {} holds it to {} bytes, more than the {asked} asked",
            held.mechanism, held.bytes
        )),
        _ => Ok(()),
    }
}

/// Whether the workspace is a tmpfs inside the sandbox (in its memory),
/// not the host's directory: what `plan` makes of a temporary, writable,
/// unscoped workspace under a quota.
pub fn workspace_in_sandbox_memory(
    limits: &SandboxLimits,
    temporary: bool,
    read_only: bool,
    has_write_scope: bool,
) -> bool {
    plan(limits, temporary, read_only, has_write_scope, None, |_| {
        true
    })
    .is_ok_and(|plan| plan.tmpfs.is_some())
}

/// The tmpfs that holds a temporary workspace under `limits`' quota (None:
/// no quota asked). The native jail mounts it inside the sandbox; the
/// container tier asks the engine for it.
pub fn workspace_tmpfs(limits: &SandboxLimits) -> Option<WorkspaceQuotaEnforcement> {
    if limits.workspace_bytes.is_none() && limits.workspace_inodes.is_none() {
        return None;
    }
    // Only inodes asked: /tmp's size.
    let bytes = limits.workspace_bytes.unwrap_or(limits.tmp_bytes);
    let inodes = limits
        .workspace_inodes
        .unwrap_or_else(|| default_inodes(bytes));
    Some(WorkspaceQuotaEnforcement {
        mechanism: "tmpfs".to_owned(),
        bytes,
        inodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(bytes: Option<u64>, inodes: Option<u64>) -> SandboxLimits {
        SandboxLimits {
            workspace_bytes: bytes,
            workspace_inodes: inodes,
            ..SandboxLimits::default()
        }
    }

    #[test]
    fn a_temporary_workspace_gets_a_limited_tmpfs() {
        let p = plan(
            &quota(Some(8 << 20), None),
            true,
            false,
            false,
            None,
            |_| false,
        )
        .unwrap();
        assert_eq!(p.state, LayerState::Enforced);
        assert_eq!(
            p.tmpfs,
            Some(WorkspaceQuotaEnforcement {
                mechanism: "tmpfs".into(),
                bytes: 8 << 20,
                inodes: 2048
            })
        );
        let inodes_only =
            plan(&quota(None, Some(50)), true, false, false, None, |_| false).unwrap();
        assert_eq!(inodes_only.tmpfs.map(|t| t.inodes), Some(50));
        let none = plan(&quota(None, None), false, false, false, None, |_| false).unwrap();
        assert_eq!(none.state, LayerState::NotRequested);
        assert_eq!(none.tmpfs, None);
    }

    #[test]
    fn a_quota_the_kernel_cannot_hold_fails_unless_downgraded() {
        let asked = quota(Some(1 << 20), Some(10));
        for (temporary, read_only, scoped) in [
            (false, false, false),
            (true, true, false),
            (true, false, true),
        ] {
            assert!(matches!(
                plan(&asked, temporary, read_only, scoped, None, |_| false),
                Err(JailError::WorkspaceQuotaUnavailable { .. })
            ));
            let allowed = plan(&asked, temporary, read_only, scoped, None, |l| {
                l == DowngradeLayer::WorkspaceQuota
            })
            .unwrap();
            assert!(matches!(allowed.state, LayerState::Downgraded { .. }));
            assert_eq!(allowed.tmpfs, None);
        }
    }

    fn qgroup(bytes: u64) -> WorkspaceQuotaEnforcement {
        WorkspaceQuotaEnforcement {
            mechanism: "btrfs qgroup 0/257".into(),
            bytes,
            inodes: 0,
        }
    }

    #[test]
    fn a_persistent_workspace_the_host_holds_is_enforced_by_its_qgroup() {
        let held = qgroup(4 << 20);
        // read-only and write-scoped too: the host's kernel holds the directory
        for (read_only, scoped) in [(false, false), (true, false), (false, true)] {
            let p = plan(
                &quota(Some(8 << 20), None),
                false,
                read_only,
                scoped,
                Some(&held),
                |_| false,
            )
            .unwrap();
            assert_eq!(p.state, LayerState::Enforced);
            assert_eq!(p.tmpfs, None, "nothing to mount");
            assert_eq!(p.limits(), Some(held.clone()));
        }
        let exact = plan(
            &quota(Some(4 << 20), None),
            false,
            false,
            false,
            Some(&held),
            |_| false,
        );
        assert_eq!(exact.unwrap().state, LayerState::Enforced);
    }

    #[test]
    fn a_held_quota_looser_than_asked_or_without_inodes_is_not_enforcement() {
        let held = qgroup(16 << 20);
        let looser = plan(
            &quota(Some(8 << 20), None),
            false,
            false,
            false,
            Some(&held),
            |_| false,
        );
        assert!(
            matches!(&looser, Err(JailError::WorkspaceQuotaUnavailable { reason }) if reason.contains("more than")),
            "{looser:?}"
        );
        let inodes = plan(
            &quota(Some(32 << 20), Some(10)),
            false,
            false,
            false,
            Some(&held),
            |_| false,
        );
        assert!(
            matches!(&inodes, Err(JailError::WorkspaceQuotaUnavailable { reason }) if reason.contains("not inodes")),
            "{inodes:?}"
        );
        let downgraded = plan(
            &quota(Some(8 << 20), None),
            false,
            false,
            false,
            Some(&held),
            |l| l == DowngradeLayer::WorkspaceQuota,
        )
        .unwrap();
        assert!(matches!(downgraded.state, LayerState::Downgraded { .. }));
        assert_eq!(downgraded.limits(), None);
    }

    #[test]
    fn a_temporary_workspace_ignores_a_held_quota() {
        let held = qgroup(1 << 20);
        let p = plan(
            &quota(Some(8 << 20), None),
            true,
            false,
            false,
            Some(&held),
            |_| false,
        )
        .unwrap();
        assert_eq!(p.held, None);
        assert_eq!(p.tmpfs.map(|t| t.mechanism), Some("tmpfs".to_owned()));
    }
}
