//! Leases with fencing tokens.
//!
//! One row per resource, kept after release so its token only ever grows. Acquire
//! is one upsert statement: it takes a free row (released or expired) or the
//! caller's own, and bumps the token; a held row is left as it is and the
//! statement returns nothing.

use std::time::Duration;

use paddock_core::store::{Lease, StoreError, Timestamp};
use sqlx::any::AnyRow;

use crate::error::{db, to_i64};
use crate::open::SqlStore;
use crate::rows::Reader;

/// Attempts before giving up on a lease that is released or expires while we look.
const ACQUIRE_ATTEMPTS: usize = 3;

fn check_ttl(ttl: Duration) -> Result<(), StoreError> {
    if ttl.is_zero() {
        return Err(StoreError::Invalid {
            field: "ttl",
            reason: "a lease needs a positive time to live".to_owned(),
        });
    }
    Ok(())
}

pub(crate) async fn acquire(
    store: &SqlStore,
    resource: &str,
    owner: &str,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    const OP: &str = "acquire_lease";
    check_ttl(ttl)?;
    if owner.is_empty() {
        return Err(StoreError::Invalid {
            field: "owner",
            reason: "empty".to_owned(),
        });
    }
    for _ in 0..ACQUIRE_ATTEMPTS {
        let now = store.clock.now();
        let granted = sqlx::query(
            "INSERT INTO leases (resource, owner, token, expires_at) VALUES ($1, $2, 1, $3) \
             ON CONFLICT (resource) DO UPDATE \
               SET owner = excluded.owner, token = leases.token + 1, \
                   expires_at = excluded.expires_at \
               WHERE leases.owner IS NULL OR leases.owner = excluded.owner \
                  OR leases.expires_at <= $4 \
             RETURNING resource, owner, token, expires_at",
        )
        .bind(resource)
        .bind(owner)
        .bind(now.saturating_add(ttl).as_millis())
        .bind(now.as_millis())
        .fetch_optional(&store.pool)
        .await
        .map_err(db(OP))?;
        if let Some(row) = granted {
            let lease = read_lease(&row)?;
            tracing::debug!(resource, owner, token = lease.token, "lease acquired");
            return Ok(lease);
        }
        // Held by someone else: say by whom, unless it was freed meanwhile.
        if let Some(holder) = get(store, resource).await?
            && holder.expires_at > store.clock.now()
        {
            return Err(StoreError::LeaseHeld {
                resource: resource.to_owned(),
                owner: holder.owner,
                expires_at: holder.expires_at,
            });
        }
    }
    Err(StoreError::Conflict {
        entity: "lease",
        id: resource.to_owned(),
        reason: "changed hands while acquiring; try again".to_owned(),
    })
}

pub(crate) async fn renew(
    store: &SqlStore,
    lease: &Lease,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    check_ttl(ttl)?;
    let expires_at = store.clock.now().saturating_add(ttl);
    let done = sqlx::query(
        "UPDATE leases SET expires_at = $1 WHERE resource = $2 AND owner = $3 AND token = $4",
    )
    .bind(expires_at.as_millis())
    .bind(&lease.resource)
    .bind(&lease.owner)
    .bind(to_i64("token", lease.token)?)
    .execute(&store.pool)
    .await
    .map_err(db("renew_lease"))?;
    if done.rows_affected() == 0 {
        return Err(stale(lease));
    }
    Ok(Lease {
        expires_at,
        ..lease.clone()
    })
}

pub(crate) async fn release(store: &SqlStore, lease: &Lease) -> Result<(), StoreError> {
    let done = sqlx::query(
        "UPDATE leases SET owner = NULL, expires_at = $1 \
         WHERE resource = $2 AND owner = $3 AND token = $4",
    )
    .bind(store.clock.now().as_millis())
    .bind(&lease.resource)
    .bind(&lease.owner)
    .bind(to_i64("token", lease.token)?)
    .execute(&store.pool)
    .await
    .map_err(db("release_lease"))?;
    if done.rows_affected() == 0 {
        return Err(stale(lease));
    }
    tracing::debug!(resource = %lease.resource, token = lease.token, "lease released");
    Ok(())
}

pub(crate) async fn get(store: &SqlStore, resource: &str) -> Result<Option<Lease>, StoreError> {
    let row = sqlx::query(
        "SELECT resource, owner, token, expires_at FROM leases \
         WHERE resource = $1 AND owner IS NOT NULL",
    )
    .bind(resource)
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_lease"))?;
    row.as_ref().map(read_lease).transpose()
}

pub(crate) fn stale(lease: &Lease) -> StoreError {
    StoreError::StaleLease {
        resource: lease.resource.clone(),
        token: lease.token,
    }
}

fn read_lease(row: &AnyRow) -> Result<Lease, StoreError> {
    let r = Reader::new(row, "lease", "resource");
    Ok(Lease {
        resource: r.text("resource")?,
        owner: r.text("owner")?,
        token: r.count("token")?,
        expires_at: Timestamp::from_millis(r.int("expires_at")?),
    })
}
