//! Everything one connection's requests share.

use std::sync::Arc;

use paddock_proto::Enforcement;

use crate::exec::ExecRegistry;
use crate::exec::groups::ProcessGroups;
use crate::exec::spawner::Spawner;
use crate::files::Workspace;
use crate::ports::PortRegistry;
use crate::processes::ProcessTable;
use crate::snapshot::import::ImportRegistry;

#[derive(Debug)]
pub struct Agent {
    pub workspace: Workspace,
    /// What the jail reported (or `Enforcement::unconfined()`), for `Info`.
    pub enforcement: Enforcement,
    /// Starts every command (with the commands' seccomp filter in jail mode).
    pub spawner: Spawner,
    pub execs: ExecRegistry,
    pub processes: ProcessTable,
    /// Every process group started, killed when the connection ends.
    pub groups: ProcessGroups,
    /// Snapshot imports waiting for more archive chunks.
    pub imports: ImportRegistry,
    /// Port tunnels open (`PortConnect`).
    pub ports: Arc<PortRegistry>,
    /// Variables of commands in a sandbox with egress, besides the proxy's.
    pub egress_env: Vec<(String, String)>,
}

impl Agent {
    pub fn new(
        workspace: Workspace,
        enforcement: Enforcement,
        spawner: Spawner,
        ring_bytes: usize,
    ) -> Self {
        Self {
            workspace,
            enforcement,
            spawner,
            execs: ExecRegistry::default(),
            processes: ProcessTable::new(ring_bytes),
            groups: ProcessGroups::default(),
            imports: ImportRegistry::default(),
            ports: Arc::default(),
            egress_env: Vec::new(),
        }
    }
}
