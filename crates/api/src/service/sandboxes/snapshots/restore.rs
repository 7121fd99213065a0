//! Restoring (forking) a snapshot into fresh sandboxes, all or nothing.

use super::{
    CreateSandbox, CreateWorkspace, MAX_RESTORE_COUNT, NetworkPolicy, RestoreSnapshot, SandboxId,
    SandboxService, SandboxView, ServiceError, SharedArchive, SnapshotId, SnapshotRecord, TenantId,
    WorkspaceId, blob_key, destroy_quietly, import_limits,
};
use crate::service::sandboxes::quota;

impl SandboxService {
    /// Makes `count` fresh sandboxes, each with a new workspace restored from
    /// the snapshot, concurrently. All or nothing: if one fails, the others
    /// are destroyed.
    pub async fn restore_snapshot(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        command: RestoreSnapshot,
    ) -> Result<Vec<SandboxView>, ServiceError> {
        if command.count == 0 || command.count > MAX_RESTORE_COUNT {
            return Err(ServiceError::invalid(
                "count",
                format!("expected 1 to {MAX_RESTORE_COUNT}"),
            ));
        }
        command.limits.resolve(&self.config.limits)?;
        ServiceError::check_network(&self.config.network, &command.network)?;
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        // Every sandbox of a fork gets its own copy of the files.
        let needed = restore_cost(&record).saturating_mul(u64::from(command.count));
        let _writing = self.disk_writer(tenant).await;
        self.disk_use(tenant).await?.check(needed, || {
            format!(
                "restoring snapshot {id} ({} bytes) {} time(s)",
                record.bytes_raw, command.count
            )
        })?;
        // One read of the blob feeds every sandbox of a fork.
        let sources = self
            .open_shared(tenant, &record.id, &key, command.count as usize)
            .await?;
        let restores = sources
            .into_iter()
            .map(|source| self.restore_one(tenant, &record, source, &command));
        let results = futures_util::future::join_all(restores).await;
        let mut views = Vec::new();
        let mut failure = None;
        for result in results {
            match result {
                Ok(view) => views.push(view),
                Err(err) => failure = failure.or(Some(err)),
            }
        }
        if let Some(err) = failure {
            for view in &views {
                if let Err(e) = self.delete_sandbox(tenant, &view.id).await {
                    tracing::warn!(sandbox_id = %view.id, error = %e, "destroying a sandbox of a failed restore");
                }
                if let Some(workspace) = &view.workspace {
                    self.remove_failed_workspace(tenant, workspace).await;
                }
            }
            return Err(err);
        }
        self.disk.forget(tenant);
        tracing::info!(snapshot_id = %id, count = views.len(), read_only = command.read_only, "snapshot restored");
        Ok(views)
    }

    /// One sandbox of a restore in a new workspace; on failure neither the
    /// sandbox nor the workspace (row and directory) is left.
    async fn restore_one(
        &self,
        tenant: &TenantId,
        snapshot: &SnapshotRecord,
        source: SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<SandboxView, ServiceError> {
        let workspace = self
            .create_workspace(
                tenant,
                CreateWorkspace {
                    name: format!("restore of {}", snapshot.id),
                    quota_bytes: None,
                },
            )
            .await?;
        let restored = self
            .restore_into(tenant, &workspace.id, snapshot, source, command)
            .await;
        if restored.is_err() {
            self.remove_failed_workspace(tenant, &workspace.id).await;
        }
        restored
    }

    /// Deletes the workspace of a failed restore (its sandbox is gone).
    async fn remove_failed_workspace(&self, tenant: &TenantId, workspace: &WorkspaceId) {
        if let Err(e) = self.delete_workspace(tenant, workspace).await {
            tracing::warn!(workspace_id = %workspace, error = %e, "removing the workspace of a failed restore");
        }
    }

    async fn restore_into(
        &self,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        snapshot: &SnapshotRecord,
        mut source: SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<SandboxView, ServiceError> {
        let create = CreateSandbox {
            workspace: Some(workspace.clone()),
            limits: command.limits.clone(),
            network: command.network.clone(),
            read_only: command.read_only,
            backend: command.backend.clone(),
            image: command.image.clone(),
            // a restore names no secrets (not in its request)
            secrets: Vec::new(),
            // a restored sandbox is the caller's, not a console page's
            console: false,
            // nor does it name volumes
            volumes: Vec::new(),
            // a restore request names none: the server's
            on_idle: None,
            metadata: Default::default(),
            env: Default::default(),
        };
        let origin = Some(snapshot.id.clone());
        if command.read_only {
            // The guest of a read-only sandbox cannot write its workspace:
            // the files go in first, through a short-lived sandbox.
            self.fill_workspace(tenant, workspace, snapshot, &mut source, command)
                .await?;
            return self.create_sandbox_from(tenant, create, origin).await;
        }
        let view = self.create_sandbox_from(tenant, create, origin).await?;
        if let Err(err) = self
            .import_blob(tenant, &view.id, snapshot, &mut source)
            .await
        {
            if let Err(e) = self.delete_sandbox(tenant, &view.id).await {
                tracing::warn!(sandbox_id = %view.id, error = %e, "destroying a sandbox of a failed restore");
            }
            return Err(err);
        }
        Ok(view)
    }

    /// Restores the snapshot into the (new, empty) workspace through a
    /// read-write sandbox that is neither recorded nor kept: the same guest
    /// restore as any other, with the owners a sandbox of this backend sees.
    async fn fill_workspace(
        &self,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        snapshot: &SnapshotRecord,
        source: &mut SharedArchive,
        command: &RestoreSnapshot,
    ) -> Result<(), ServiceError> {
        let entry = self
            .backends
            .choose(command.backend.as_deref(), command.image.as_deref())?;
        let limits = command.limits.resolve(&self.config.limits)?;
        // Admitted as any sandbox of the tenant (slot and quotas); being
        // unrecorded, its slot and reservation count it until it is gone.
        let (_slot, _reservation) = self.admit(tenant, quota::Grant::of(&limits)).await?;
        let spec = self.config.sandbox_spec(
            Some(self.workspace_dir(workspace).await?),
            false,
            NetworkPolicy::None,
            limits,
        );
        let sandbox = entry
            .backend
            .create(spec)
            .await
            .map_err(ServiceError::CreateSandbox)?;
        let id = sandbox.info().id.clone();
        let guest = sandbox.guest();
        let imported = guest.snapshot_import(import_limits(snapshot), source).await;
        drop(guest);
        destroy_quietly(sandbox).await;
        match imported.map(|_| ()) {
            Ok(()) => Ok(()),
            Err(source) => Err(ServiceError::Guest {
                id,
                op: "snapshot_import",
                source,
            }),
        }
    }

    /// Streams the archive into the sandbox's (empty) workspace.
    async fn import_blob(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        snapshot: &SnapshotRecord,
        source: &mut SharedArchive,
    ) -> Result<(), ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live
            .guest
            .snapshot_import(import_limits(snapshot), source)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "snapshot_import", e).await),
        }
    }
}

/// What restoring the snapshot takes on disk at most: its content in
/// blocks, and a block and an inode per entry.
fn restore_cost(record: &SnapshotRecord) -> u64 {
    paddock_snapshot::disk::estimate(record.bytes_raw).saturating_add(
        record
            .file_count
            .saturating_mul(paddock_snapshot::disk::DIR_BYTES),
    )
}

impl SandboxService {
    /// Streams snapshot `id` into the (empty) workspace behind `guest`: how
    /// a resumed sandbox gets back the files of its temporary workspace.
    pub(crate) async fn import_snapshot_into(
        &self,
        tenant: &TenantId,
        sandbox: &SandboxId,
        id: &SnapshotId,
        guest: &dyn paddock_core::sandbox::GuestOps,
    ) -> Result<(), ServiceError> {
        let record = self.snapshot_record(tenant, id).await?;
        let key = blob_key(&record)?;
        let mut sources = self.open_shared(tenant, &record.id, &key, 1).await?;
        let Some(mut source) = sources.pop() else {
            return Err(ServiceError::SnapshotsUnavailable);
        };
        guest
            .snapshot_import(import_limits(&record), &mut source)
            .await
            .map(|_| ())
            .map_err(|source| ServiceError::Guest {
                id: sandbox.clone(),
                op: "snapshot_import",
                source,
            })
    }
}
