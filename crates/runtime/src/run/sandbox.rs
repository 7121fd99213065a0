//! A run's sandbox: created over the session's workspace when the run
//! starts (read-only in plan mode, writable only in its write scope for a
//! build subagent with one), recorded in the store while it lives,
//! and always torn down when the run ends, however it ends.

use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::ids::{RunId, TenantId, WorkspaceId};
use paddock_core::sandbox::{GuestOps, Sandbox, SandboxBackend, SandboxId, SandboxSpec};
use paddock_core::store::{RecordedSpec, SandboxRecord, SandboxState, Store};

use super::AdmissionGrant;
use crate::error::RuntimeError;
use crate::tools::{WriteScope, paths};
use crate::util::error_chain;

/// How much of the workspace a run's sandbox may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorkspaceAccess {
    ReadWrite,
    ReadOnly,
    /// Only these paths (normalized, relative, not empty).
    Scoped(Vec<String>),
}

impl WorkspaceAccess {
    /// Plan mode is read-only; a write scope narrows build mode to its
    /// paths (an empty scope is read-only, one covering the root is not a limit).
    pub(crate) fn of(read_only: bool, scope: Option<&WriteScope>) -> Self {
        if read_only {
            return WorkspaceAccess::ReadOnly;
        }
        let Some(WriteScope(entries)) = scope else {
            return WorkspaceAccess::ReadWrite;
        };
        let mut paths: Vec<String> = Vec::new();
        for entry in entries {
            match paths::normalize(entry) {
                Ok(path) if path.is_empty() => return WorkspaceAccess::ReadWrite,
                Ok(path) if !paths.contains(&path) => paths.push(path),
                // an entry that escapes never matches: it widens nothing
                _ => {}
            }
        }
        if paths.is_empty() {
            WorkspaceAccess::ReadOnly
        } else {
            WorkspaceAccess::Scoped(paths)
        }
    }
}

#[derive(Debug)]
pub(crate) struct RunSandbox {
    sandbox: Box<dyn Sandbox>,
    tenant: TenantId,
    recorded: bool,
    /// The run's admission (its slot and quota grant), held until the
    /// sandbox is destroyed.
    grant: Option<Box<dyn AdmissionGrant>>,
}

impl RunSandbox {
    /// Creates the sandbox and records it (a failed record is only logged:
    /// the row is bookkeeping, the run does not depend on it). `grant` (the
    /// run's admission) moves to the sandbox before its row exists, and is
    /// given back when it is destroyed (or here, if it fails to start).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn start(
        backend: &Arc<dyn SandboxBackend>,
        store: &Arc<dyn Store>,
        node: &str,
        template: &SandboxSpec,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        dir: PathBuf,
        access: WorkspaceAccess,
        run: &RunId,
        mut grant: Option<Box<dyn AdmissionGrant>>,
    ) -> Result<Self, RuntimeError> {
        let mut spec = template.clone();
        spec.workspace = Some(dir);
        match access {
            WorkspaceAccess::ReadWrite => spec.policy.read_only = false,
            WorkspaceAccess::ReadOnly => spec.policy.read_only = true,
            WorkspaceAccess::Scoped(paths) => {
                spec.policy.read_only = false;
                spec.policy.writable_paths = paths;
            }
        }
        // Without the host path: the record is shown over the API.
        let recorded = RecordedSpec::of(&spec);
        let sandbox = backend
            .create(spec)
            .await
            .map_err(|source| RuntimeError::Sandbox {
                run: run.clone(),
                source,
            })?;
        if let Some(grant) = grant.as_mut() {
            grant.started(&sandbox.info().id);
        }
        let now = store.now();
        let record = SandboxRecord {
            id: sandbox.info().id.clone(),
            tenant: tenant.clone(),
            workspace: Some(workspace.clone()),
            backend: backend.name().to_owned(),
            node: node.to_owned(),
            state: SandboxState::Running,
            spec: recorded,
            pid: sandbox.host_pid(),
            created_at: now,
            updated_at: now,
            last_active_at: now,
            expires_at: None,
            run: Some(run.clone()),
            pause: None,
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
            grant,
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

    /// The sandbox's egress decisions (None: no network).
    pub(crate) fn egress_log(&self) -> Option<paddock_core::sandbox::EgressLog> {
        self.sandbox.egress_log()
    }

    pub(crate) fn guest(&self) -> Arc<dyn GuestOps> {
        self.sandbox.guest()
    }

    /// Destroys the sandbox and marks its row stopped; returns what went wrong, if anything.
    pub(crate) async fn stop(self, store: &Arc<dyn Store>) -> Option<String> {
        let id = self.id().clone();
        let Self {
            sandbox,
            tenant,
            recorded,
            grant,
        } = self;
        let error = sandbox.destroy().await.err().map(|err| error_chain(&err));
        if let Some(error) = &error {
            tracing::warn!(sandbox_id = %id, %error, "destroying the run's sandbox");
        }
        if recorded
            && let Err(err) = store
                .set_sandbox_state(&tenant, &id, SandboxState::Stopped)
                .await
        {
            tracing::warn!(sandbox_id = %id, error = %error_chain(&err), "recording the stopped sandbox");
        }
        // the slot is free once the sandbox is gone and recorded so
        drop(grant);
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(entries: &[&str]) -> WriteScope {
        WriteScope(entries.iter().map(|e| (*e).to_owned()).collect())
    }

    #[test]
    fn a_write_scope_becomes_the_sandbox_writable_paths() {
        assert_eq!(WorkspaceAccess::of(true, None), WorkspaceAccess::ReadOnly);
        assert_eq!(WorkspaceAccess::of(false, None), WorkspaceAccess::ReadWrite);
        assert_eq!(
            WorkspaceAccess::of(false, Some(&scope(&["./src/", "src", "docs/a.md", "../x"]))),
            WorkspaceAccess::Scoped(vec!["src".into(), "docs/a.md".into()])
        );
        assert_eq!(
            WorkspaceAccess::of(false, Some(&scope(&[]))),
            WorkspaceAccess::ReadOnly
        );
        assert_eq!(
            WorkspaceAccess::of(false, Some(&scope(&["src", "."]))),
            WorkspaceAccess::ReadWrite
        );
    }
}
