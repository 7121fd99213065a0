//! Pausing and resuming sandboxes.
//!
//! A pause keeps what the sandbox's tier can keep ([`full_refusal`] says
//! why a tier cannot keep its memory, `Sandbox::suspend_refusal` why one
//! sandbox cannot) and releases everything it holds on the host. In `full`
//! mode the backend saves the whole sandbox (memory, processes) into a file
//! under [`ServiceConfig::saved_states_root`](super::ServiceConfig) that the
//! record names, and ends it (no process, no memory): the microVM into the
//! file itself, gVisor into a checkpoint of its container that the file
//! names (the backend removes it with `discard_saved` when the paused
//! sandbox is deleted, and reaping spares it: `reconcile.rs`). In `filesystem` mode
//! the sandbox is destroyed and only its files are kept: a workspace row's
//! directory keeps itself, a temporary workspace is exported first into a
//! snapshot that the record names. The record says `paused` with its
//! [`SandboxPause`], so a restarted server lists it and can resume it.
//!
//! A resume restores the saved sandbox (`full`), or starts a fresh sandbox
//! of the recorded spec on the same files (`filesystem`), under the same id
//! (the service's id; the backend's own instance behind it is new). Any request that needs the sandbox (exec, files, processes,
//! ports) resumes a paused one first ([`SandboxService::use_sandbox`]),
//! within [`RESUME_TIMEOUT`].

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_core::store::{PauseMode, SandboxPause, SandboxRecord, SandboxState};
use paddock_proto::error_chain;
use serde::{Deserialize, Serialize};

use super::live::Live;
use super::snapshots::CreateSnapshot;
use super::{SandboxService, SandboxView, ServiceError, destroy_quietly, quota};

/// The most a resume (a fresh sandbox and its files put back) may take.
pub const RESUME_TIMEOUT: Duration = Duration::from_secs(120);

/// `POST /v1/sandboxes/{id}/pause`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseSandbox {
    /// `full` (memory and processes kept) or `filesystem` (files only; the
    /// processes are stopped). None: the most the sandbox's tier can keep.
    #[serde(default)]
    pub mode: Option<PauseMode>,
}

/// What the sandbox's tier cannot do to keep its memory and processes, or
/// None when it can (then the sandbox itself may still refuse:
/// `Sandbox::suspend_refusal`). See docs/architecture.md, "Pause and
/// resume", for what was tried on this host.
pub fn full_refusal(backend: &str) -> Option<&'static str> {
    Some(match backend {
        "microvm" | "gvisor" => return None,
        "native" => {
            "a native sandbox is processes in namespaces on the host: their memory \
             cannot be saved and restored"
        }
        "docker" => {
            "a runc container's memory is saved only through CRIU (`docker checkpoint` \
             with runc), which this host does not have; the gVisor backend saves its \
             sandboxes whole"
        }
        _ => "this backend cannot save a sandbox's memory",
    })
}

/// The mode a pause asked for (or the strongest the sandbox can do), or
/// why it cannot be had. `sandbox_refusal`: why this one sandbox cannot be
/// saved whole (`Sandbox::suspend_refusal`), when its tier could.
pub fn pause_mode(
    backend: &str,
    asked: Option<PauseMode>,
    sandbox_refusal: Option<&str>,
) -> Result<PauseMode, String> {
    let refusal = full_refusal(backend).or(sandbox_refusal);
    match (asked, refusal) {
        (Some(PauseMode::Full), Some(reason)) => Err(reason.to_owned()),
        (Some(mode), _) => Ok(mode),
        (None, Some(_)) => Ok(PauseMode::Filesystem),
        (None, None) => Ok(PauseMode::Full),
    }
}

impl SandboxService {
    /// Pauses a running sandbox (see the module doc).
    pub async fn pause_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: PauseSandbox,
    ) -> Result<SandboxView, ServiceError> {
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        super::refuse_if_run_owned(&record)?;
        let live = match self.live_map().get(id).cloned() {
            Some(live) if &live.tenant == tenant => live,
            _ => return Err(not_running(&record, "pause")),
        };
        let sandbox_refusal = live.suspend_refusal().await;
        let mode = pause_mode(&record.backend, command.mode, sandbox_refusal.as_deref()).map_err(
            |reason| ServiceError::PauseRefused {
                id: id.clone(),
                mode: PauseMode::Full,
                reason,
            },
        )?;
        if live.secrets {
            return Err(ServiceError::PauseRefused {
                id: id.clone(),
                mode,
                reason: "its secrets' values are not kept, so a resumed sandbox could not \
                         inject them"
                    .to_owned(),
            });
        }
        self.pause_live(&record, &live, mode, "requested").await?;
        self.get_sandbox(tenant, id).await
    }

    /// Saves the whole sandbox (`full`) or keeps its files (a temporary
    /// workspace into a snapshot), records the pause, then destroys the
    /// sandbox and releases what it held.
    pub(super) async fn pause_live(
        &self,
        record: &SandboxRecord,
        live: &Arc<Live>,
        mode: PauseMode,
        reason: &str,
    ) -> Result<(), ServiceError> {
        let id = &record.id;
        let (snapshot, saved_state) = match (mode, &record.workspace) {
            (PauseMode::Full, _) => (None, Some(self.suspend_live(id, live).await?)),
            (PauseMode::Filesystem, Some(_)) => (None, None),
            (PauseMode::Filesystem, None) => {
                let view = self
                    .create_snapshot(&live.tenant, id, CreateSnapshot::default())
                    .await?;
                (Some(view.id), None)
            }
        };
        let pause = SandboxPause {
            mode,
            snapshot,
            saved_state,
            reason: reason.to_owned(),
            paused_at: self.clock.now(),
        };
        let Some(live) = self.live_map().remove(id) else {
            // retired meanwhile (deleted, expired): what it kept is not needed
            self.drop_pause_snapshot(&live.tenant, &record.backend, &pause)
                .await;
            return Err(not_running(record, "pause"));
        };
        let recorded = self
            .store
            .pause_sandbox(&live.tenant, id, &pause)
            .await
            .map_err(ServiceError::store("pause_sandbox"));
        self.release_all_but_volumes(id, &live).await;
        if recorded.is_err() {
            self.release_volumes(&live.volume_leases).await;
            self.drop_pause_snapshot(&live.tenant, &record.backend, &pause)
                .await;
        } else {
            self.hold_volumes_paused(record, &live.volume_leases).await;
        }
        tracing::info!(sandbox_id = %id, mode = %mode, reason, snapshot = ?pause.snapshot, "sandbox paused");
        recorded.map(|_| ())
    }

    /// Has the backend save the whole sandbox into its file under
    /// `saved_states_root` (the sandbox then runs no more; releasing it
    /// removes the rest). On a refusal it runs on as it was.
    async fn suspend_live(&self, id: &SandboxId, live: &Live) -> Result<PathBuf, ServiceError> {
        let dir = self.config.saved_states_root.clone();
        let made = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&dir)
            }
        })
        .await;
        let refused = |reason: String| ServiceError::PauseRefused {
            id: id.clone(),
            mode: PauseMode::Full,
            reason,
        };
        match made {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(sandbox_id = %id, dir = %dir.display(), error = %e, "making the saved sandboxes' directory");
                return Err(refused(
                    "the server cannot store saved sandboxes".to_owned(),
                ));
            }
            Err(e) => return Err(refused(format!("saving it was interrupted: {e}"))),
        }
        let path = dir.join(format!("{id}.vm"));
        let handle = live.handle.lock().await;
        let Some(sandbox) = handle.as_ref() else {
            return Err(ServiceError::NotRunning {
                id: id.clone(),
                state: SandboxState::Stopped,
            });
        };
        if let Err(err) = sandbox.suspend(&path).await {
            remove_saved_state(&path).await;
            return Err(refused(error_chain(&err).to_string()));
        }
        Ok(path)
    }

    /// Resumes a paused sandbox: a fresh one of its recorded spec on its
    /// files, under its id. One resume at a time; a second caller for the
    /// same sandbox finds it running.
    pub async fn resume_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<SandboxView, ServiceError> {
        let _one = self.resuming.lock().await;
        let record = self
            .store
            .get_sandbox(tenant, id)
            .await
            .map_err(ServiceError::store("get_sandbox"))?;
        let Some(pause) = record
            .pause
            .clone()
            .filter(|_| record.state == SandboxState::Paused)
        else {
            return Err(ServiceError::Conflict {
                entity: "sandbox",
                id: id.to_string(),
                reason: format!(
                    "it is {}, not paused: only a paused sandbox resumes",
                    record.state
                ),
            });
        };
        tokio::time::timeout(RESUME_TIMEOUT, self.resume_record(tenant, &record, &pause))
            .await
            .map_err(|_| ServiceError::Conflict {
                entity: "sandbox",
                id: id.to_string(),
                reason: format!(
                    "its resume took longer than {} s; it stays paused",
                    RESUME_TIMEOUT.as_secs()
                ),
            })??;
        self.get_sandbox(tenant, id).await
    }

    async fn resume_record(
        &self,
        tenant: &TenantId,
        record: &SandboxRecord,
        pause: &SandboxPause,
    ) -> Result<(), ServiceError> {
        let id = &record.id;
        let entry = self
            .backends
            .choose(Some(&record.backend), record.spec.image.as_deref())?;
        let limits = record.spec.policy.limits.clone();
        let (_slot, grant) = self.admit(tenant, quota::Grant::of(&limits)).await?;
        let workspace = match &record.workspace {
            Some(workspace) => Some(self.workspace_location(tenant, workspace).await?),
            None => None,
        };
        let volumes = self
            .resolve_volume_mounts(tenant, &record.spec.policy.volumes)
            .await?;
        let (workspace, workspace_quota) = match workspace {
            Some(w) => (Some(w.path), w.quota),
            None => (None, None),
        };
        let mut policy = record.spec.policy.clone();
        policy.network = self.current_network(tenant, id, &policy.network).await?;
        let spec = SandboxSpec {
            workspace,
            policy,
            secrets: Vec::new(),
            volume_dirs: volumes,
            workspace_quota,
        };
        // Leases first: a workspace another sandbox writes now refuses the
        // resume before a restore, which for gVisor spends the checkpoint
        // (a restored sandbox destroyed could not be restored again).
        let leases = self
            .take_leases(
                tenant,
                id,
                record.workspace.as_ref(),
                record.spec.policy.read_only,
                &record.spec.policy.volumes,
            )
            .await?;
        let started = match &pause.saved_state {
            Some(state) => entry.backend.restore(spec, state).await,
            None => entry.backend.create(spec).await,
        };
        let sandbox = match started {
            Ok(sandbox) => sandbox,
            Err(err) => {
                self.release_leases(&leases).await;
                return Err(ServiceError::CreateSandbox(err));
            }
        };
        let release = |sandbox| async {
            destroy_quietly(sandbox).await;
            self.release_leases(&leases).await;
        };
        if let Some(snapshot) = &pause.snapshot {
            let guest = sandbox.guest();
            if let Err(err) = self
                .import_snapshot_into(tenant, id, snapshot, guest.as_ref())
                .await
            {
                drop(guest);
                release(sandbox).await;
                return Err(err);
            }
        }
        let resumed = match self
            .store
            .resume_sandbox(tenant, id, sandbox.host_pid())
            .await
        {
            Ok(resumed) => resumed,
            Err(err) => {
                release(sandbox).await;
                return Err(ServiceError::store("resume_sandbox")(err));
            }
        };
        grant.commit(id);
        let now = self.clock.now();
        let mut live = Live::new(
            sandbox,
            tenant.clone(),
            now,
            resumed.expires_at.unwrap_or(now),
            leases.writer,
            resumed
                .spec
                .console
                .then(|| now.saturating_add(super::console::KEEPALIVE)),
        );
        live.id = id.clone();
        live.volume_leases = leases.volumes;
        live.env = Arc::new(resumed.spec.env.clone());
        self.live_map().insert(id.clone(), Arc::new(live));
        if let Some(snapshot) = &pause.snapshot
            && let Err(err) = self.delete_snapshot(tenant, snapshot).await
        {
            tracing::warn!(sandbox_id = %id, snapshot_id = %snapshot, error = %err, "removing a resumed sandbox's pause snapshot");
        }
        if let Some(state) = &pause.saved_state {
            remove_saved_state(state).await;
        }
        tracing::info!(sandbox_id = %id, mode = %pause.mode, "sandbox resumed");
        if self.shutdown.is_cancelled() {
            self.retire(id, SandboxState::Stopped, "shutdown").await?;
            return Err(ServiceError::ShuttingDown);
        }
        Ok(())
    }

    /// Deleting a paused sandbox: recorded `stopped`, its pause snapshot removed.
    pub(super) async fn stop_paused(&self, record: &SandboxRecord) -> Result<(), ServiceError> {
        self.store
            .set_sandbox_state(&record.tenant, &record.id, SandboxState::Stopped)
            .await
            .map_err(ServiceError::store("set_sandbox_state"))?;
        self.release_dead_volume_leases(&record.tenant, &record.id, &record.spec.policy.volumes)
            .await;
        if let Some(pause) = &record.pause {
            self.drop_pause_snapshot(&record.tenant, &record.backend, pause)
                .await;
        }
        tracing::info!(sandbox_id = %record.id, "paused sandbox deleted");
        Ok(())
    }

    /// Removes what a pause kept outside the workspace: its snapshot, its
    /// saved sandbox (what `backend` keeps of it on the host, and its file).
    async fn drop_pause_snapshot(&self, tenant: &TenantId, backend: &str, pause: &SandboxPause) {
        if let Some(snapshot) = &pause.snapshot
            && let Err(err) = self.delete_snapshot(tenant, snapshot).await
        {
            tracing::warn!(snapshot_id = %snapshot, error = %err, "removing a pause snapshot");
        }
        if let Some(state) = &pause.saved_state {
            if let Ok(entry) = self.backends.choose(Some(backend), None)
                && let Err(err) = entry.backend.discard_saved(state).await
            {
                // Its file stays, so reaping at the next start spares nothing
                // of it and removes the rest.
                tracing::warn!(path = %state.display(), error = %error_chain(&err), "removing a saved sandbox's container");
            }
            remove_saved_state(state).await;
        }
    }
}

/// Removes a saved sandbox's file (gone already is fine).
async fn remove_saved_state(path: &std::path::Path) {
    match tokio::fs::remove_file(path).await {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "removing a saved sandbox");
        }
    }
}

/// Why a sandbox that is not running here cannot be paused.
fn not_running(record: &SandboxRecord, op: &str) -> ServiceError {
    match record.state {
        SandboxState::Paused => ServiceError::Conflict {
            entity: "sandbox",
            id: record.id.to_string(),
            reason: format!("it is already paused; nothing to {op}"),
        },
        SandboxState::Running => ServiceError::NotRunning {
            id: record.id.clone(),
            state: SandboxState::Lost,
        },
        state => ServiceError::NotRunning {
            id: record.id.clone(),
            state,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_microvm_and_gvisor_tiers_keep_memory_and_each_other_says_why() {
        for backend in ["native", "docker", "other"] {
            let reason = full_refusal(backend).unwrap();
            assert!(!reason.is_empty(), "{backend}");
            assert_eq!(
                pause_mode(backend, Some(PauseMode::Full), None),
                Err(reason.to_owned())
            );
        }
        assert!(full_refusal("docker").unwrap().contains("CRIU"));
        for backend in ["microvm", "gvisor"] {
            assert_eq!(full_refusal(backend), None);
            assert_eq!(
                pause_mode(backend, Some(PauseMode::Full), None),
                Ok(PauseMode::Full)
            );
        }
        // a sandbox of the tier may still refuse, with its reason
        assert_eq!(
            pause_mode(
                "microvm",
                Some(PauseMode::Full),
                Some("its workspace is 9p")
            ),
            Err("its workspace is 9p".to_owned())
        );
    }

    #[test]
    fn the_default_is_the_strongest_mode_the_sandbox_can_do() {
        for backend in ["native", "docker"] {
            assert_eq!(pause_mode(backend, None, None), Ok(PauseMode::Filesystem));
            assert_eq!(
                pause_mode(backend, Some(PauseMode::Filesystem), None),
                Ok(PauseMode::Filesystem)
            );
        }
        for backend in ["microvm", "gvisor"] {
            assert_eq!(pause_mode(backend, None, None), Ok(PauseMode::Full));
            assert_eq!(
                pause_mode(backend, None, Some("it has network")),
                Ok(PauseMode::Filesystem)
            );
        }
    }

    #[test]
    fn the_request_reads_an_empty_body_and_refuses_unknown_modes() {
        let empty: PauseSandbox = serde_json::from_str("{}").unwrap();
        assert_eq!(empty.mode, None);
        let full: PauseSandbox = serde_json::from_str(r#"{"mode":"full"}"#).unwrap();
        assert_eq!(full.mode, Some(PauseMode::Full));
        assert!(serde_json::from_str::<PauseSandbox>(r#"{"mode":"memory"}"#).is_err());
        assert!(serde_json::from_str::<PauseSandbox>(r#"{"other":1}"#).is_err());
    }
}
