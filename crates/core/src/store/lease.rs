//! Leases: one driver per resource (a session) at a time, with fencing tokens.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::{SessionId, TenantId, WorkspaceId};
use crate::volume::VolumeName;

/// A time-limited claim on a resource.
///
/// `token` grows every time the lease is granted (to a new owner, or again to the
/// same one) and is never reused, even after release. Every write made by the
/// holder carries the lease; the store refuses it once a higher token exists, so a
/// holder that stalled past its expiry cannot overwrite its successor's work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub resource: String,
    pub owner: String,
    pub token: u64,
    pub expires_at: Timestamp,
}

impl Lease {
    /// The lease resource that guards writes to a session (its runs, events and
    /// tool invocations).
    pub fn session_resource(session: &SessionId) -> String {
        format!("session:{session}")
    }

    /// The lease resource of a workspace's one writer: a run or a sandbox
    /// that may write the workspace holds it; readers take none.
    pub fn workspace_resource(workspace: &WorkspaceId) -> String {
        format!("workspace:{workspace}")
    }

    /// The lease resource of a named volume's one read-write mount: the
    /// sandbox that binds it read-write holds it; read-only mounts take none.
    pub fn volume_resource(tenant: &TenantId, volume: &VolumeName) -> String {
        format!("volume:{tenant}/{volume}")
    }
}
