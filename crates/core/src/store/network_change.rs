//! A change of a running sandbox's network, kept after the sandbox stops
//! and across restarts of the server (`GET /v1/sandboxes/{id}/network/changes`).

use paddock_proto::NetworkPolicy;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::TenantId;
use crate::sandbox::SandboxId;

/// One `network.changed` event of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkChangeRecord {
    pub tenant: TenantId,
    pub sandbox: SandboxId,
    /// Per-sandbox number from 1, in the order the changes were made; the
    /// store assigns it (what a caller passes is ignored).
    pub seq: u64,
    pub old: NetworkPolicy,
    pub new: NetworkPolicy,
    /// Who made it: the tenant the request's token names.
    pub by: String,
    /// The open connections the change cut (`host:port`).
    pub cut: Vec<String>,
    pub at: Timestamp,
}
