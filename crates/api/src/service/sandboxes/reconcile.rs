//! Startup reconciliation: after a crash of this node, nothing it ran is left
//! on the host and its records say so.

use paddock_core::sandbox::{OrphanReport, SandboxId};
use paddock_core::store::SandboxState;
use serde::Serialize;

use super::{SandboxService, ServiceError};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Sandboxes recorded running on this node that no longer run: now `lost`.
    pub lost: Vec<SandboxId>,
    /// What the backend found on the host and removed.
    pub orphans: OrphanReport,
}

impl SandboxService {
    /// Kills and removes the backend's leftovers that this service does not
    /// run (sandbox processes, cgroups, temporary workspaces), then marks every
    /// sandbox recorded running on this node but not run by this service as
    /// `lost`. Call it at startup, before serving.
    pub async fn reconcile(&self) -> Result<ReconcileReport, ServiceError> {
        let keep: Vec<SandboxId> = self.live_map().keys().cloned().collect();
        // Warm pools' ready sandboxes carry the node's labels too.
        let mut spared = keep.clone();
        spared.extend(self.backends.kept());
        spared.extend(self.saved_instances().await?);
        let mut orphans = OrphanReport::default();
        for entry in self.backends.one_per_name() {
            match entry.backend.reap_orphans(&spared).await {
                Ok(report) => {
                    orphans.processes_killed.extend(report.processes_killed);
                    orphans.sandboxes_removed.extend(report.sandboxes_removed);
                }
                Err(err) => {
                    // Leftovers stay on the host, but the records can still be fixed.
                    tracing::error!(backend = %entry.name, error = %err, "removing orphaned sandboxes");
                }
            }
        }
        if !orphans.is_empty() {
            tracing::warn!(
                killed = ?orphans.processes_killed,
                removed = ?orphans.sandboxes_removed,
                "removed sandboxes left by an earlier run"
            );
        }
        let recorded = self
            .store
            .list_node_sandboxes(&self.config.node, SandboxState::Running)
            .await
            .map_err(ServiceError::store("list_node_sandboxes"))?;
        let mut lost = Vec::new();
        for record in recorded {
            if keep.contains(&record.id) {
                continue;
            }
            self.store
                .set_sandbox_state(&record.tenant, &record.id, SandboxState::Lost)
                .await
                .map_err(ServiceError::store("set_sandbox_state"))?;
            self.release_dead_volume_leases(
                &record.tenant,
                &record.id,
                &record.spec.policy.volumes,
            )
            .await;
            tracing::warn!(sandbox_id = %record.id, pid = ?record.pid, "sandbox lost");
            lost.push(record.id);
        }
        Ok(ReconcileReport { lost, orphans })
    }

    /// What the sandboxes paused `full` on this node keep on the host (a
    /// gVisor sandbox's checkpointed container), which reaping must spare.
    async fn saved_instances(&self) -> Result<Vec<SandboxId>, ServiceError> {
        let paused = self
            .store
            .list_node_sandboxes(&self.config.node, SandboxState::Paused)
            .await
            .map_err(ServiceError::store("list_node_sandboxes"))?;
        let mut kept = Vec::new();
        for record in paused {
            let Some(state) = record.pause.as_ref().and_then(|p| p.saved_state.as_ref()) else {
                continue;
            };
            let Ok(entry) = self.backends.choose(Some(&record.backend), None) else {
                continue;
            };
            if let Some(instance) = entry.backend.saved_instance(state).await {
                kept.push(instance);
            }
        }
        Ok(kept)
    }
}
