//! A run's sandbox: created over the session's workspace when the run
//! starts (read-only in plan mode), recorded in the store while it lives,
//! and always torn down when the run ends, however it ends.

use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::ids::{RunId, TenantId, WorkspaceId};
use paddock_core::sandbox::{GuestOps, Sandbox, SandboxBackend, SandboxId, SandboxSpec};
use paddock_core::store::{SandboxRecord, SandboxState, Store};

use crate::error::RuntimeError;
use crate::util::error_chain;

#[derive(Debug)]
pub(crate) struct RunSandbox {
    sandbox: Box<dyn Sandbox>,
    tenant: TenantId,
    recorded: bool,
}

impl RunSandbox {
    /// Creates the sandbox and records it (a failed record is only logged:
    /// the row is bookkeeping, the run does not depend on it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn start(
        backend: &Arc<dyn SandboxBackend>,
        store: &Arc<dyn Store>,
        node: &str,
        template: &SandboxSpec,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        dir: PathBuf,
        read_only: bool,
        run: &RunId,
    ) -> Result<Self, RuntimeError> {
        let mut spec = template.clone();
        spec.workspace = Some(dir);
        spec.read_only = read_only;
        let sandbox =
            backend
                .create(spec.clone())
                .await
                .map_err(|source| RuntimeError::Sandbox {
                    run: run.clone(),
                    source,
                })?;
        let now = store.now();
        let record = SandboxRecord {
            id: sandbox.info().id.clone(),
            tenant: tenant.clone(),
            workspace: Some(workspace.clone()),
            backend: backend.name().to_owned(),
            node: node.to_owned(),
            state: SandboxState::Running,
            spec: serde_json::to_string(&spec).unwrap_or_default(),
            pid: sandbox.host_pid(),
            created_at: now,
            updated_at: now,
            last_active_at: now,
            expires_at: None,
        };
        let recorded = match store.create_sandbox(&record).await {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(sandbox_id = %record.id, error = %error_chain(&err), "recording the run's sandbox");
                false
            }
        };
        Ok(Self {
            sandbox,
            tenant: tenant.clone(),
            recorded,
        })
    }

    pub(crate) fn id(&self) -> &SandboxId {
        &self.sandbox.info().id
    }

    pub(crate) fn backend(&self) -> &str {
        &self.sandbox.info().backend
    }

    pub(crate) fn read_only(&self) -> bool {
        self.sandbox.info().read_only
    }

    pub(crate) fn guest(&self) -> Arc<dyn GuestOps> {
        self.sandbox.guest()
    }

    /// Destroys the sandbox and marks its row stopped; returns what went wrong, if anything.
    pub(crate) async fn stop(self, store: &Arc<dyn Store>) -> Option<String> {
        let id = self.id().clone();
        let error = self
            .sandbox
            .destroy()
            .await
            .err()
            .map(|err| error_chain(&err));
        if let Some(error) = &error {
            tracing::warn!(sandbox_id = %id, %error, "destroying the run's sandbox");
        }
        if self.recorded
            && let Err(err) = store
                .set_sandbox_state(&self.tenant, &id, SandboxState::Stopped)
                .await
        {
            tracing::warn!(sandbox_id = %id, error = %error_chain(&err), "recording the stopped sandbox");
        }
        error
    }
}
