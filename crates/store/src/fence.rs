//! The fencing check every lease-holder write runs inside its own transaction.

use paddock_core::ids::SessionId;
use paddock_core::store::{Lease, StoreError};
use sqlx::AnyConnection;

use crate::engine::Engine;
use crate::error::db;
use crate::leases::stale;
use crate::rows::Reader;

/// Passes only if `lease` is on `session` and is still the current grant (same
/// owner and token, not released). Run it in the write's transaction, started
/// with [`SqlStore::begin_write`](crate::open::SqlStore): the row stays as checked
/// until the write commits, so no takeover can slip in between.
pub(crate) async fn check(
    conn: &mut AnyConnection,
    engine: Engine,
    operation: &'static str,
    lease: &Lease,
    session: &SessionId,
) -> Result<(), StoreError> {
    let expected = Lease::session_resource(session);
    if lease.resource != expected {
        return Err(StoreError::WrongLease {
            resource: lease.resource.clone(),
            expected,
        });
    }
    let row = sqlx::query(engine.fence_sql())
        .bind(&lease.resource)
        .fetch_optional(conn)
        .await
        .map_err(db(operation))?;
    let Some(row) = row else {
        return Err(stale(lease));
    };
    let r = Reader::new(&row, "lease", "resource");
    let current = r.opt_text("owner")?.as_deref() == Some(lease.owner.as_str())
        && r.count("token")? == lease.token;
    if current {
        Ok(())
    } else {
        tracing::warn!(resource = %lease.resource, token = lease.token, operation, "stale lease refused");
        Err(stale(lease))
    }
}
