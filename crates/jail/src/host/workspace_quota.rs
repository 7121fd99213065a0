//! The workspace quota (bytes and inodes) and how the kernel enforces it.
//!
//! A temporary workspace (made for this sandbox and removed with it) becomes
//! a tmpfs mounted at /workspace inside the sandbox with `size=` and
//! `nr_inodes=`: writes past either fail with ENOSPC and nothing reaches the
//! host's disk (tmpfs pages are charged to the sandbox's memory cgroup). A
//! persistent workspace would need a project quota (ext4/XFS with prjquota)
//! or an image-backed filesystem, which this jail does not set up: a quota on
//! one is refused unless the operator allowed the `workspace_quota`
//! downgrade, and the report then says it is not enforced.

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
    pub state: LayerState,
}

/// What to do for `limits`' workspace quota. `temporary`: the workspace is
/// the sandbox's own and starts empty. A read-only or write-scoped workspace
/// is the host's directory, which a tmpfs would not hold.
pub(crate) fn plan(
    limits: &SandboxLimits,
    temporary: bool,
    read_only: bool,
    has_write_scope: bool,
    allowed: impl Fn(DowngradeLayer) -> bool,
) -> Result<QuotaPlan, JailError> {
    if limits.workspace_bytes.is_none() && limits.workspace_inodes.is_none() {
        return Ok(QuotaPlan {
            tmpfs: None,
            state: LayerState::NotRequested,
        });
    }
    let unenforceable = if !temporary {
        Some(
            "the workspace is a persistent host directory; a quota on it needs a project \
             quota or an image-backed filesystem, which the jail does not set up",
        )
    } else if read_only || has_write_scope {
        Some("a read-only or write-scoped workspace is bound from the host, not a tmpfs")
    } else {
        None
    };
    if let Some(reason) = unenforceable {
        if allowed(DowngradeLayer::WorkspaceQuota) {
            return Ok(QuotaPlan {
                tmpfs: None,
                state: LayerState::Downgraded {
                    reason: reason.to_owned(),
                },
            });
        }
        return Err(JailError::WorkspaceQuotaUnavailable {
            reason: reason.to_owned(),
        });
    }
    Ok(QuotaPlan {
        tmpfs: workspace_tmpfs(limits),
        state: LayerState::Enforced,
    })
}

/// Whether the workspace is a tmpfs inside the sandbox (in its memory),
/// not the host's directory: what [`plan`] makes of a temporary, writable,
/// unscoped workspace under a quota.
pub fn workspace_in_sandbox_memory(
    limits: &SandboxLimits,
    temporary: bool,
    read_only: bool,
    has_write_scope: bool,
) -> bool {
    plan(limits, temporary, read_only, has_write_scope, |_| true)
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
        let p = plan(&quota(Some(8 << 20), None), true, false, false, |_| false).unwrap();
        assert_eq!(p.state, LayerState::Enforced);
        assert_eq!(
            p.tmpfs,
            Some(WorkspaceQuotaEnforcement {
                mechanism: "tmpfs".into(),
                bytes: 8 << 20,
                inodes: 2048
            })
        );
        let inodes_only = plan(&quota(None, Some(50)), true, false, false, |_| false).unwrap();
        assert_eq!(inodes_only.tmpfs.map(|t| t.inodes), Some(50));
        let none = plan(&quota(None, None), false, false, false, |_| false).unwrap();
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
                plan(&asked, temporary, read_only, scoped, |_| false),
                Err(JailError::WorkspaceQuotaUnavailable { .. })
            ));
            let allowed = plan(&asked, temporary, read_only, scoped, |l| {
                l == DowngradeLayer::WorkspaceQuota
            })
            .unwrap();
            assert!(matches!(allowed.state, LayerState::Downgraded { .. }));
            assert_eq!(allowed.tmpfs, None);
        }
    }
}
