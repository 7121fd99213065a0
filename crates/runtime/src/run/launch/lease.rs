//! The session's lease for a new run, waiting out a recovery that holds it.

use paddock_core::ids::SessionId;
use paddock_core::store::{Lease, StoreError};
use tokio::time::Instant;

use crate::error::RuntimeError;
use crate::runtime::Shared;

/// Longest a new run waits for a recovery (of this node or another) that
/// holds its session's lease while it ends an interrupted run.
const RECOVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The session's lease for a new run. A recovery holding it lets go within
/// moments, so that is waited for (at most [`RECOVERY_WAIT`]); any other
/// holder is [`RuntimeError::SessionBusy`].
pub(super) async fn acquire_session_lease(
    shared: &Shared,
    session: &SessionId,
    owner: &str,
) -> Result<Lease, RuntimeError> {
    let store = &shared.store;
    let resource = Lease::session_resource(session);
    let deadline = Instant::now() + RECOVERY_WAIT;
    loop {
        match store
            .acquire_lease(&resource, owner, shared.config.lease_ttl)
            .await
        {
            Ok(lease) => return Ok(lease),
            Err(StoreError::LeaseHeld { owner: holder, .. })
                if crate::recover::is_recovery(&holder) && Instant::now() < deadline =>
            {
                tracing::debug!(session_id = %session, holder, "a recovery holds the session: waiting for it");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(StoreError::LeaseHeld { .. }) => {
                return Err(RuntimeError::SessionBusy {
                    session: session.clone(),
                });
            }
            Err(err) => return Err(RuntimeError::store("acquire_lease")(err)),
        }
    }
}
