//! Steering messages: posted by anyone who may see the run, taken by the
//! session's lease holder (the loop driving the run) before a model request.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Lease, SteeringMessage, StoreError, Timestamp};
use sqlx::any::AnyRow;

use crate::error::db;
use crate::fence;
use crate::open::SqlStore;
use crate::rows::Reader;
use crate::runs::{self, RUN_EXISTS};

/// The run, if its loop still asks for messages: not in a terminal state nor
/// `awaiting_user` (its loop ended with a question).
const OPEN_RUN: &str = "SELECT 1 FROM runs WHERE tenant_id = $1 AND id = $2 \
     AND state NOT IN ('completed', 'cancelled', 'failed', 'interrupted', 'awaiting_user')";

fn read(row: &AnyRow) -> Result<SteeringMessage, StoreError> {
    let r = Reader::new(row, "steering message", "id");
    Ok(SteeringMessage {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        id: r.count("id")?,
        text: r.text("text")?,
        created_at: r.time("created_at")?,
        delivered_at: r.opt_time("delivered_at")?,
    })
}

/// Stores `text` for `run` if the run is still going, in one statement (the
/// check and the insert cannot be split by the run ending on SQLite; on
/// Postgres a run that ends concurrently may leave it undelivered).
pub(crate) async fn post(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
    text: &str,
    now: Timestamp,
) -> Result<SteeringMessage, StoreError> {
    const OP: &str = "post_steering_message";
    let row = sqlx::query(&format!(
        "INSERT INTO steering_messages (tenant_id, run_id, text, created_at) \
         SELECT $1, $2, $3, $4 WHERE EXISTS ({}) \
         RETURNING id, tenant_id, run_id, text, created_at, delivered_at",
        OPEN_RUN
    ))
    .bind(tenant.as_str())
    .bind(run.as_str())
    .bind(text)
    .bind(now.as_millis())
    .fetch_optional(&store.pool)
    .await
    .map_err(db(OP))?;
    if let Some(row) = row {
        return read(&row);
    }
    let exists = sqlx::query(RUN_EXISTS)
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(&store.pool)
        .await
        .map_err(db(OP))?;
    match exists {
        None => Err(runs::not_found(run)),
        Some(_) => Err(StoreError::Conflict {
            entity: "run",
            id: run.to_string(),
            reason: "the run has finished; it takes no more messages".to_owned(),
        }),
    }
}

/// Whether `run` has messages not yet delivered (one indexed read, no lock).
async fn any_pending(store: &SqlStore, run: &RunId) -> Result<bool, StoreError> {
    let row = sqlx::query(
        "SELECT 1 FROM steering_messages WHERE run_id = $1 AND delivered_at IS NULL LIMIT 1",
    )
    .bind(run.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("take_steering_messages"))?;
    Ok(row.is_some())
}

/// Marks `run`'s undelivered messages delivered and returns them, oldest
/// first. Fenced by the lease on `session` (the run's).
pub(crate) async fn take(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    session: &SessionId,
    run: &RunId,
    now: Timestamp,
) -> Result<Vec<SteeringMessage>, StoreError> {
    const OP: &str = "take_steering_messages";
    // the common case, asked before every model request: nothing waits
    if !any_pending(store, run).await? {
        return Ok(Vec::new());
    }
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, session).await?;
    let rows = sqlx::query(
        "UPDATE steering_messages SET delivered_at = $1 \
         WHERE tenant_id = $2 AND run_id = $3 AND delivered_at IS NULL \
         RETURNING id, tenant_id, run_id, text, created_at, delivered_at",
    )
    .bind(now.as_millis())
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_all(&mut *tx)
    .await
    .map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))?;
    let mut taken = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    taken.sort_by_key(|m| m.id);
    Ok(taken)
}

/// Every message of `run`, oldest first (delivered or not).
pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Vec<SteeringMessage>, StoreError> {
    const OP: &str = "list_steering_messages";
    let rows = sqlx::query(
        "SELECT id, tenant_id, run_id, text, created_at, delivered_at FROM steering_messages \
         WHERE tenant_id = $1 AND run_id = $2 ORDER BY id",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    rows.iter().map(read).collect()
}
