//! The per-session, append-only event log.
//!
//! The session row holds the last sequence number; an appender bumps it and
//! inserts the event in one transaction (see [`sessions::next`]). The
//! (session_id, seq) primary key backs this up.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Lease, NewEvent, RunEvent, StoreError};
use sqlx::any::AnyRow;

use crate::error::{db, is_foreign_key_violation, to_i64};
use crate::fence;
use crate::open::SqlStore;
use crate::rows::Reader;
use crate::runs;
use crate::sessions::{self, Counter};

/// Most events one `list_events` or `list_run_events` call returns.
const MAX_EVENTS: u32 = 1_000;

pub(crate) async fn append(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    event: &NewEvent,
) -> Result<RunEvent, StoreError> {
    const OP: &str = "append_event";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &event.session).await?;
    let seq = sessions::next(&mut tx, OP, Counter::Events, tenant, &event.session).await?;
    let row = sqlx::query(
        "INSERT INTO run_events (tenant_id, session_id, seq, run_id, kind, payload, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING tenant_id, session_id, seq, run_id, kind, payload, created_at",
    )
    .bind(tenant.as_str())
    .bind(event.session.as_str())
    .bind(to_i64("seq", seq)?)
    .bind(event.run.as_ref().map(|r| r.as_str()))
    .bind(&event.kind)
    .bind(&event.payload)
    .bind(store.clock.now().as_millis())
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| match &event.run {
        // The run must be one of this session's.
        Some(run) if is_foreign_key_violation(&e) => runs::not_found(run),
        _ => db(OP)(e),
    })?;
    let stored = read_event(&row)?;
    tx.commit().await.map_err(db(OP))?;
    Ok(stored)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
    after_seq: u64,
    limit: u32,
) -> Result<Vec<RunEvent>, StoreError> {
    let rows = sqlx::query(
        "SELECT tenant_id, session_id, seq, run_id, kind, payload, created_at FROM run_events \
         WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(tenant.as_str())
    .bind(session.as_str())
    .bind(to_i64("after_seq", after_seq)?)
    .bind(i64::from(limit.clamp(1, MAX_EVENTS)))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_events"))?;
    rows.iter().map(read_event).collect()
}

pub(crate) async fn list_of_run(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
    after_seq: u64,
    limit: u32,
) -> Result<Vec<RunEvent>, StoreError> {
    let rows = sqlx::query(
        "SELECT tenant_id, session_id, seq, run_id, kind, payload, created_at FROM run_events \
         WHERE tenant_id = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .bind(to_i64("after_seq", after_seq)?)
    .bind(i64::from(limit.clamp(1, MAX_EVENTS)))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_run_events"))?;
    rows.iter().map(read_event).collect()
}

fn read_event(row: &AnyRow) -> Result<RunEvent, StoreError> {
    let r = Reader::new(row, "run event", "session_id");
    Ok(RunEvent {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        seq: r.count("seq")?,
        run: r.opt_parsed("run_id", RunId::parse)?,
        kind: r.text("kind")?,
        payload: r.text("payload")?,
        created_at: r.time("created_at")?,
    })
}
