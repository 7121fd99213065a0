//! What [`super::SandboxBackend::reap_orphans`] found and removed.

use serde::{Deserialize, Serialize};

use super::SandboxId;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrphanReport {
    /// Host pids of sandbox processes that were killed.
    pub processes_killed: Vec<u32>,
    /// Sandboxes whose host leftovers (cgroups, temporary workspace) were removed.
    pub sandboxes_removed: Vec<SandboxId>,
}

impl OrphanReport {
    pub fn is_empty(&self) -> bool {
        self.processes_killed.is_empty() && self.sandboxes_removed.is_empty()
    }
}
