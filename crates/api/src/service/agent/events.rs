//! A session's and a run's events over the API: stored, then live.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::RunEvent;
use paddock_runtime::{EventStream, RuntimeError};

use super::{AgentError, AgentService};

impl AgentService {
    /// One run's events after `after_seq`, then live ones, until its `run.finished`.
    pub async fn run_events(
        &self,
        tenant: &TenantId,
        run: &RunId,
        after_seq: u64,
    ) -> Result<EventStream, AgentError> {
        self.runtime
            .run_event_stream(tenant, run, after_seq)
            .await
            .map_err(AgentError::runtime("run_event_stream"))
    }

    /// The session's events after `after_seq`, then live ones as they come.
    pub async fn events(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
    ) -> Result<EventStream, AgentError> {
        self.session(tenant, session).await?;
        self.runtime
            .event_stream(tenant, session, after_seq)
            .await
            .map_err(AgentError::runtime("event_stream"))
    }

    /// Up to `limit` stored events of the session after `after_seq`.
    pub async fn event_page(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<RunEvent>, AgentError> {
        self.runtime
            .store()
            .list_events(tenant, session, after_seq, limit)
            .await
            .map_err(|source| AgentError::Runtime {
                op: "list_events",
                source: Box::new(RuntimeError::Store {
                    operation: "list_events",
                    source,
                }),
            })
    }
}
