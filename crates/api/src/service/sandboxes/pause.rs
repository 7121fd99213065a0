//! Pausing and resuming sandboxes.
//!
//! A pause keeps what the sandbox's tier can keep ([`full_refusal`] says
//! why a tier cannot keep its memory) and releases everything it holds on
//! the host: in `filesystem` mode the sandbox is destroyed (no process, no
//! cgroup, no memory) and only its files are kept: a workspace row's
//! directory keeps itself, a temporary workspace is exported first into a
//! snapshot that the record names. The record says `paused` with its
//! [`SandboxPause`], so a restarted server lists it and can resume it.
//!
//! A resume starts a fresh sandbox of the recorded spec on the same files,
//! under the same id (the service's id; the backend's own instance behind
//! it is new). Any request that needs the sandbox (exec, files, processes,
//! ports) resumes a paused one first ([`SandboxService::use_sandbox`]),
//! within [`RESUME_TIMEOUT`].

use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_core::store::{PauseMode, SandboxPause, SandboxRecord, SandboxState};
use serde::{Deserialize, Serialize};

use super::live::Live;
use super::snapshots::CreateSnapshot;
use super::{SandboxService, SandboxView, ServiceError, destroy_quietly, quota, writer};

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
/// None when it can. Every tier answers today (see docs/architecture.md,
/// "Pause and resume", for what was tried on this host).
pub fn full_refusal(backend: &str) -> Option<&'static str> {
    Some(match backend {
        "native" => {
            "a native sandbox is processes in namespaces on the host: their memory \
             cannot be saved and restored"
        }
        "docker" => {
            "docker saves a container's memory only through `docker checkpoint` (CRIU), \
             which needs dockerd's experimental mode; this server does not use it"
        }
        "gvisor" => {
            "`runsc checkpoint` saves a gVisor sandbox, but restoring it needs \
             `docker start --checkpoint`, which dockerd refuses without its experimental mode"
        }
        "microvm" => {
            "QEMU refuses to save a VM while a virtio-9p export is mounted in its guest, \
             and the microVM's /usr, guest agent and workspace are 9p shares"
        }
        _ => "this backend cannot save a sandbox's memory",
    })
}

/// The mode a pause asked for (or the strongest the tier can do), or why
/// it cannot be had.
pub fn pause_mode(backend: &str, asked: Option<PauseMode>) -> Result<PauseMode, &'static str> {
    match (asked, full_refusal(backend)) {
        (Some(PauseMode::Full), Some(reason)) => Err(reason),
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
        let mode = pause_mode(&record.backend, command.mode).map_err(|reason| {
            ServiceError::PauseRefused {
                id: id.clone(),
                mode: PauseMode::Full,
                reason: reason.to_owned(),
            }
        })?;
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

    /// Keeps the files (a temporary workspace into a snapshot), records the
    /// pause, then destroys the sandbox and releases what it held.
    pub(super) async fn pause_live(
        &self,
        record: &SandboxRecord,
        live: &Arc<Live>,
        mode: PauseMode,
        reason: &str,
    ) -> Result<(), ServiceError> {
        let id = &record.id;
        let snapshot = match &record.workspace {
            Some(_) => None,
            None => {
                let view = self
                    .create_snapshot(&live.tenant, id, CreateSnapshot::default())
                    .await?;
                Some(view.id)
            }
        };
        let pause = SandboxPause {
            mode,
            snapshot,
            reason: reason.to_owned(),
            paused_at: self.clock.now(),
        };
        let Some(live) = self.live_map().remove(id) else {
            // retired meanwhile (deleted, expired): its snapshot is not needed
            self.drop_pause_snapshot(&live.tenant, &pause).await;
            return Err(not_running(record, "pause"));
        };
        let recorded = self
            .store
            .pause_sandbox(&live.tenant, id, &pause)
            .await
            .map_err(ServiceError::store("pause_sandbox"));
        self.release_live(id, &live).await;
        if recorded.is_err() {
            self.drop_pause_snapshot(&live.tenant, &pause).await;
        }
        tracing::info!(sandbox_id = %id, mode = %mode, reason, snapshot = ?pause.snapshot, "sandbox paused");
        recorded.map(|_| ())
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
        let (workspace, workspace_quota) = match workspace {
            Some(w) => (Some(w.path), w.quota),
            None => (None, None),
        };
        let spec = SandboxSpec {
            workspace,
            policy: record.spec.policy.clone(),
            secrets: Vec::new(),
            workspace_quota,
        };
        let sandbox = entry
            .backend
            .create(spec)
            .await
            .map_err(ServiceError::CreateSandbox)?;
        let writer = match (&record.workspace, record.spec.policy.read_only) {
            (Some(workspace), false) => {
                let owner = format!("{}/{id}", self.config.node);
                let ttl = writer::ttl(self.config.effective_expiry_interval());
                let describe = |holder: &str, until| self.describe_writer(holder, until);
                match writer::acquire(self.store.as_ref(), workspace, &owner, ttl, describe).await {
                    Ok(lease) => Some(lease),
                    Err(err) => {
                        destroy_quietly(sandbox).await;
                        return Err(err);
                    }
                }
            }
            _ => None,
        };
        let release = |sandbox| async {
            destroy_quietly(sandbox).await;
            if let Some(lease) = &writer {
                writer::release(self.store.as_ref(), lease).await;
            }
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
            writer,
            resumed
                .spec
                .console
                .then(|| now.saturating_add(super::console::KEEPALIVE)),
        );
        live.id = id.clone();
        self.live_map().insert(id.clone(), Arc::new(live));
        if let Some(snapshot) = &pause.snapshot
            && let Err(err) = self.delete_snapshot(tenant, snapshot).await
        {
            tracing::warn!(sandbox_id = %id, snapshot_id = %snapshot, error = %err, "removing a resumed sandbox's pause snapshot");
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
        if let Some(pause) = &record.pause {
            self.drop_pause_snapshot(&record.tenant, pause).await;
        }
        tracing::info!(sandbox_id = %record.id, "paused sandbox deleted");
        Ok(())
    }

    async fn drop_pause_snapshot(&self, tenant: &TenantId, pause: &SandboxPause) {
        if let Some(snapshot) = &pause.snapshot
            && let Err(err) = self.delete_snapshot(tenant, snapshot).await
        {
            tracing::warn!(snapshot_id = %snapshot, error = %err, "removing a pause snapshot");
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
    fn no_tier_keeps_memory_today_and_each_says_why() {
        for backend in ["native", "docker", "gvisor", "microvm", "other"] {
            let reason = full_refusal(backend).unwrap();
            assert!(!reason.is_empty(), "{backend}");
            assert_eq!(pause_mode(backend, Some(PauseMode::Full)), Err(reason));
        }
        assert!(full_refusal("microvm").unwrap().contains("9p"));
        assert!(full_refusal("gvisor").unwrap().contains("experimental"));
    }

    #[test]
    fn the_default_is_the_strongest_mode_the_tier_can_do() {
        for backend in ["native", "docker", "gvisor", "microvm"] {
            assert_eq!(pause_mode(backend, None), Ok(PauseMode::Filesystem));
            assert_eq!(
                pause_mode(backend, Some(PauseMode::Filesystem)),
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
