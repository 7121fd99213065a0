//! The backend port itself.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::{GuestOps, OrphanReport, SandboxError, SandboxId, SandboxInfo, SandboxSpec};

/// Makes sandboxes. Implemented by the native and docker backends, and by the
/// warm pool in front of either.
#[async_trait]
pub trait SandboxBackend: Send + Sync + Debug {
    /// Short name of the backend ("native", ...).
    fn name(&self) -> &'static str;

    /// Creates a sandbox and completes the handshake with its guest: when this
    /// returns, the guest is ready to serve requests.
    async fn create(&self, spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError>;

    /// Whether it binds a spec's named volumes (the policy's `volumes`);
    /// one that does not refuses a spec with any.
    fn mounts_volumes(&self) -> bool {
        false
    }

    /// Whether the backend can make sandboxes now (for health checks).
    async fn check(&self) -> Result<(), SandboxError> {
        Ok(())
    }

    /// Kills and removes what sandboxes of this backend left on the host
    /// (processes, cgroups, temporary workspaces) when their owner died
    /// without destroying them, except the sandboxes in `keep`. Only touches
    /// what this backend's configuration owns, so several owners can share a
    /// host. The server calls it at startup.
    async fn reap_orphans(&self, keep: &[SandboxId]) -> Result<OrphanReport, SandboxError> {
        let _ = keep;
        Ok(OrphanReport::default())
    }

    /// Starts a sandbox of `spec` (the one the saved sandbox was made
    /// with) from the state [`Sandbox::suspend`] wrote to `state`: its
    /// memory and processes as they were, its guest greeted anew. The file
    /// is only read; the caller removes it once the sandbox runs.
    async fn restore(
        &self,
        spec: SandboxSpec,
        state: &Path,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        let _ = spec;
        Err(SandboxError::Restore {
            state: state.to_path_buf(),
            source: format!("the {} backend cannot restore a saved sandbox", self.name()).into(),
        })
    }

    /// The backend's own sandbox that a saved sandbox's `state` keeps on
    /// the host (a checkpointed container), for reaping to spare; None
    /// when the state file is all there is (a microVM's).
    async fn saved_instance(&self, state: &Path) -> Option<SandboxId> {
        let _ = state;
        None
    }

    /// Removes what a saved sandbox's `state` keeps on the host besides
    /// the file itself, which the caller removes.
    async fn discard_saved(&self, state: &Path) -> Result<(), SandboxError> {
        let _ = state;
        Ok(())
    }

    /// Sandboxes this backend holds started for itself (a warm pool's ready
    /// ones): no caller owns them yet, and reaping must leave them alone,
    /// whichever backend of the same kind reaps.
    fn kept(&self) -> Vec<SandboxId> {
        Vec::new()
    }
}

/// A running sandbox. Dropping it without [`Sandbox::destroy`] still kills it,
/// but only `destroy` reports whether everything was cleaned up.
#[async_trait]
pub trait Sandbox: Send + Sync + Debug {
    fn info(&self) -> &SandboxInfo;

    /// The guest agent inside. Clones stay usable until the sandbox is
    /// destroyed; after that every call fails with `GuestError::Disconnected`.
    fn guest(&self) -> Arc<dyn GuestOps>;

    /// Host pid of the process that holds the sandbox (the native jail
    /// monitor), recorded so a restarted owner can tell whether it is gone.
    fn host_pid(&self) -> Option<u32> {
        None
    }

    /// The egress decisions of a sandbox with network (None: no egress).
    fn egress_log(&self) -> Option<super::EgressLog> {
        None
    }

    /// Replaces the network policy of the running sandbox (an allowlist by
    /// another: `NetworkPolicy::change_to`), cutting the open connections
    /// the new one refuses. A backend without a live egress proxy refuses.
    async fn set_network(
        &self,
        policy: paddock_proto::NetworkPolicy,
    ) -> Result<super::NetworkSwap, SandboxError> {
        let _ = policy;
        Err(SandboxError::NetworkChange {
            id: self.info().id.clone(),
            source:
                "this backend has no egress proxy whose rules can change while the sandbox runs"
                    .into(),
        })
    }

    /// Why this sandbox cannot be saved whole by [`Sandbox::suspend`], or
    /// None when it can.
    fn suspend_refusal(&self) -> Option<String> {
        Some("this backend cannot save a sandbox's memory".to_owned())
    }

    /// Saves the whole sandbox (memory, processes) into `state` and stops
    /// it: afterwards it holds no CPU and no memory on the host, and only
    /// [`Sandbox::destroy`] is left to release the rest. On an error the
    /// sandbox keeps running as it was (and `state` may be partly written).
    async fn suspend(&self, state: &Path) -> Result<(), SandboxError> {
        let _ = state;
        Err(SandboxError::Suspend {
            id: self.info().id.clone(),
            source: self
                .suspend_refusal()
                .unwrap_or_else(|| "not implemented".to_owned())
                .into(),
        })
    }

    /// Stops the guest and every process of the sandbox and removes what the
    /// sandbox left on the host (cgroups, temporary workspace).
    async fn destroy(self: Box<Self>) -> Result<(), SandboxError>;
}
