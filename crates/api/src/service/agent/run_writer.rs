//! A run's claim on its workspace over the API: when the workspace's writer
//! is a console sandbox nothing uses, the run takes the workspace over from
//! it (the sandbox ends; the console makes another on next use); any other
//! holder refuses the run with `workspace_busy` naming it, since when, and
//! how to free it.

use std::future::Future;

use paddock_core::ids::TenantId;
use paddock_runtime::RuntimeError;

use super::{AgentError, AgentService};

impl AgentService {
    /// Runs `start` (a run's start or resume); if the workspace's writer is
    /// an idle console sandbox, ends it and tries once more.
    pub(super) async fn taking_over_console<T, F, Fut>(
        &self,
        tenant: &TenantId,
        op: &'static str,
        start: F,
    ) -> Result<T, AgentError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, RuntimeError>>,
    {
        let first = match start().await {
            Err(RuntimeError::WorkspaceBusy { holder, .. })
                if self.sandboxes().yield_idle_console(tenant, &holder).await =>
            {
                start().await
            }
            other => other,
        };
        first.map_err(|err| self.named_writer(op, err))
    }

    /// A runtime error as the agent service answers it; a busy workspace
    /// names its writer as the sandbox service describes it.
    pub(super) fn named_writer(&self, op: &'static str, err: RuntimeError) -> AgentError {
        match err {
            RuntimeError::WorkspaceBusy {
                workspace,
                holder,
                until,
            } => AgentError::WorkspaceBusy {
                workspace: workspace.to_string(),
                held_by: self.sandboxes().describe_writer(&holder, until),
            },
            err => AgentError::runtime(op)(err),
        }
    }
}
