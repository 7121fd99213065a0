//! Saving a gVisor sandbox whole (its sentry's memory, processes, open
//! files) as a checkpoint of its container, and what the state file says.
//!
//! Save: the guest detaches from its stdio (`Suspend`), the engine
//! checkpoints the container with `Exit` (runsc writes the sentry's state
//! under the engine's directory for the container; dockerd refuses a
//! directory of our own) and the container exits: no process, no memory.
//! The container is kept (it is made without auto-remove so the checkpoint
//! does not remove it), and so are its temporary workspace and host id
//! block; the state file names them. Restore: the engine starts the exited
//! container from the checkpoint with a newly attached stdio, and the
//! guest greets its new host there.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{InspectContainerOptions, KillContainerOptions};
use paddock_core::sandbox::{BoxError, SandboxSpec};
use serde::{Deserialize, Serialize};

use super::checkpoint::Checkpoints;
use super::config::Engine;
use super::sandbox::DockerSandbox;

/// The most of a state file read: a container's is a few hundred bytes.
const MAX_STATE_BYTES: u64 = 64 << 10;
/// How often the save looks whether the checkpointed container has exited.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// What a running container sandbox needs to be saved.
#[derive(Debug, Clone)]
pub(super) struct Saving {
    /// Why it cannot be, or None.
    pub refusal: Option<&'static str>,
    /// The engine's socket, for the checkpoint calls.
    pub socket: PathBuf,
    /// How long one engine call may take.
    pub timeout: Duration,
}

/// Saves `sandbox` into a checkpoint of its container and ends the
/// container (see the module doc); `state` names what stays on the host.
/// On an error before the checkpoint was taken the sandbox runs on and its
/// guest is greeted again.
pub(super) async fn save(sandbox: &DockerSandbox, state: &Path) -> Result<(), BoxError> {
    if let Some(reason) = sandbox.saving.refusal {
        return Err(reason.into());
    }
    let teardown = &sandbox.teardown;
    let container = teardown.container.as_str();
    let saved = SavedContainer {
        sandbox: sandbox.info().id.to_string(),
        container: container.to_owned(),
        checkpoint: format!("paddock-{}", crate::shared::start::now_ms()),
        temp_workspace: teardown
            .temp_workspace
            .as_ref()
            .map(|dir| dir.path().to_path_buf())
            .or_else(|| teardown.adopted_workspace.clone()),
        id_block: teardown.id_block.as_ref().map(|b| b.mapping.host_base),
    };
    // Written first: once the checkpoint is taken, nothing may fail that
    // would leave it unnamed.
    let path = state.to_path_buf();
    let written = saved.clone();
    tokio::task::spawn_blocking(move || written.write(&path)).await??;
    let checkpoints = Checkpoints {
        socket: &sandbox.saving.socket,
        docker: &teardown.docker,
        timeout: sandbox.saving.timeout,
    };
    sandbox.client().suspend().await?;
    if let Err(err) = checkpoints.create(container, &saved.checkpoint).await {
        let greeted = sandbox.client().greet().await;
        tracing::warn!(sandbox_id = %sandbox.info().id, error = %err, greeted = greeted.is_ok(), "checkpointing a container failed; it runs on");
        return Err(err.into());
    }
    teardown.saved.store(true, Ordering::SeqCst);
    // The checkpoint is taken and names everything a restore needs: a
    // container that lingers is killed rather than the save failed, which
    // would drop the state file and strand the checkpoint.
    if let Err(err) = wait_exited(&teardown.docker, container, sandbox.saving.timeout).await {
        tracing::warn!(sandbox_id = %sandbox.info().id, error = %err, "a checkpointed container runs on; killing it");
        match teardown
            .docker
            .kill_container(container, None::<KillContainerOptions>)
            .await
        {
            // 409: it stopped meanwhile
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => {}
            Err(err) => return Err(err.into()),
        }
        wait_exited(&teardown.docker, container, sandbox.saving.timeout).await?;
    }
    Ok(())
}

/// Waits until the engine reports `container` no longer running.
pub(super) async fn wait_exited(
    docker: &Docker,
    container: &str,
    timeout: Duration,
) -> Result<(), BoxError> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let inspected = docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await?;
        if !inspected.state.and_then(|s| s.running).unwrap_or_default() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "container {container} still runs {timeout:?} after its checkpoint"
            )
            .into());
        }
        tokio::time::sleep(EXIT_POLL).await;
    }
}

/// Why a container of the runc engine is not saved.
pub(super) const RUNC_REFUSAL: &str = "a runc container's memory is saved only through CRIU \
     (`docker checkpoint` with runc), which this host does not have; the gVisor backend \
     saves its sandboxes whole";
/// Why a gVisor sandbox with network is not saved (tried by hand).
pub(super) const NETWORK_REFUSAL: &str = "a gVisor sandbox with network runs under runsc-net \
     (host networking), and runsc refuses to checkpoint it: \"checkpoint not supported when \
     using hostinet\"";
/// Why a sandbox of an owner that does not pause sandboxes is not saved.
pub(super) const OWNER_REFUSAL: &str = "its owner does not keep saved containers (only a \
     server pauses sandboxes `full`): the container would go with its checkpoint";
/// Why a restored gVisor sandbox is not saved again (tried by hand with
/// the plain CLI on this host's runsc 20221219).
pub(super) const RESTORED_REFUSAL: &str = "it was restored from a checkpoint already: runsc \
     (20221219) checkpoints a restored container but leaves its state and containerd shim \
     behind, and starting it again fails with \"id already in use\"";

/// Why a sandbox of `spec` on `engine` could not be saved whole, or None;
/// `kept`: the owner keeps saved containers (`DockerConfig::saves_sandboxes`).
/// Bound host directories (a workspace row's, write scopes, volumes) are
/// no reason: runsc reopens them at restore (tried on this host).
pub(super) fn refusal(engine: Engine, spec: &SandboxSpec, kept: bool) -> Option<&'static str> {
    match engine {
        Engine::Docker => Some(RUNC_REFUSAL),
        Engine::Gvisor if spec.policy.network.has_egress() => Some(NETWORK_REFUSAL),
        Engine::Gvisor if !kept => Some(OWNER_REFUSAL),
        Engine::Gvisor => None,
    }
}

/// What a saved sandbox left on the host, written to its state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SavedContainer {
    /// The sandbox id the container is labelled with (the backend's, which
    /// orphan reaping must spare).
    pub sandbox: String,
    /// The engine's id of the exited container.
    pub container: String,
    /// The checkpoint's name (unique, so a checkpoint of another save is
    /// never in the way).
    pub checkpoint: String,
    /// The sandbox's temporary workspace on the host, bound into the container.
    pub temp_workspace: Option<PathBuf>,
    /// The first host id of the block the container runs as.
    pub id_block: Option<u32>,
}

impl SavedContainer {
    /// Writes the state file (owner-only, synced).
    pub fn write(&self, path: &Path) -> Result<(), BoxError> {
        let text = serde_json::to_vec_pretty(self)?;
        let mut file = crate::shared::saved_state::create(path)?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        Ok(())
    }

    /// Reads the state file at `path` (a microVM's state file, a VM's
    /// memory, is not read whole to find it is none).
    pub fn read(path: &Path) -> Result<Self, BoxError> {
        use std::io::Read;
        let mut text = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_STATE_BYTES).read_to_end(&mut text))
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not a saved container: {e}", path.display()).into())
    }
}

/// The host id blocks of saved sandboxes, held by this process until they
/// are restored or discarded (another sandbox must not take one meanwhile:
/// the saved container's files and processes are of those ids). After a
/// restart of the owner the restore takes its block back by its number.
#[derive(Debug, Clone, Default)]
pub(super) struct HeldBlocks(Arc<Mutex<HashMap<u32, paddock_jail::IdBlock>>>);

impl HeldBlocks {
    pub fn hold(&self, block: paddock_jail::IdBlock) {
        if let Ok(mut held) = self.0.lock() {
            held.insert(block.mapping.host_base, block);
        }
    }

    /// The held block starting at `host_base`, or that block taken again
    /// from the pool (held by another sandbox: an error).
    pub fn take(
        &self,
        pool: Option<paddock_jail::IdPool>,
        host_base: u32,
    ) -> Result<paddock_jail::IdBlock, paddock_jail::JailError> {
        let held = self.0.lock().ok().and_then(|mut h| h.remove(&host_base));
        match held {
            Some(block) => Ok(block),
            None => paddock_jail::take_block(pool, host_base),
        }
    }

    /// Lets go of the block starting at `host_base` (its sandbox is gone).
    pub fn release(&self, host_base: u32) {
        if let Ok(mut held) = self.0.lock() {
            held.remove(&host_base);
        }
    }
}

#[cfg(test)]
mod tests {
    use paddock_proto::{NetworkPolicy, SandboxPolicy, VolumeMount};

    use super::*;

    #[test]
    fn only_a_servers_gvisor_sandbox_without_network_is_saved() {
        let plain = SandboxSpec::default();
        assert_eq!(refusal(Engine::Gvisor, &plain, true), None);
        assert_eq!(refusal(Engine::Gvisor, &plain, false), Some(OWNER_REFUSAL));
        assert_eq!(refusal(Engine::Docker, &plain, true), Some(RUNC_REFUSAL));
        let networked = SandboxSpec::with_policy(SandboxPolicy {
            network: NetworkPolicy::Full,
            ..SandboxPolicy::default()
        });
        assert_eq!(
            refusal(Engine::Gvisor, &networked, true),
            Some(NETWORK_REFUSAL)
        );
        let bound = SandboxSpec::default().map_policy(|p| {
            p.writable_paths = vec!["out".to_owned()];
            p.volumes = vec![VolumeMount {
                name: "data".to_owned(),
                path: "/data".to_owned(),
                read_only: false,
            }];
        });
        assert_eq!(refusal(Engine::Gvisor, &bound, true), None);
    }

    #[test]
    fn the_state_file_reads_back_what_was_written_and_is_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.vm");
        let saved = SavedContainer {
            sandbox: "sb-1".to_owned(),
            container: "abc".to_owned(),
            checkpoint: "paddock-1".to_owned(),
            temp_workspace: Some(PathBuf::from("/tmp/paddock-sb-1-x")),
            id_block: Some(200_000),
        };
        saved.write(&path).unwrap();
        assert_eq!(SavedContainer::read(&path).unwrap(), saved);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, b"QEMU").unwrap();
        assert!(SavedContainer::read(&path).is_err());
    }
}
