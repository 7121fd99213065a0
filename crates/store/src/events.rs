//! The per-session, append-only event log.
//!
//! The session row holds the last sequence number; an appender bumps it (by
//! the number of events it appends) and inserts the events in one transaction
//! (see [`sessions::advance`]). The (session_id, seq) primary key backs this up.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Lease, NewEvent, RunEvent, StoreError, Timestamp};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, is_foreign_key_violation, to_i64};
use crate::fence;
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::rows::Reader;
use crate::runs;
use crate::sessions::{self, Counter};

/// Most events one `list_events` or `list_run_events` call returns.
const MAX_EVENTS: u32 = 1_000;

/// Most events one INSERT statement carries (7 parameters each, well under
/// either engine's parameter limit).
const ROWS_PER_INSERT: usize = 64;

pub(crate) async fn append(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    event: &NewEvent,
) -> Result<RunEvent, StoreError> {
    let stored = append_all(
        store,
        "append_event",
        lease,
        tenant,
        std::slice::from_ref(event),
    )
    .await?;
    stored
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Invalid {
            field: "event",
            reason: "the append stored nothing".to_owned(),
        })
}

/// Appends `events` (one session's) in one transaction: one fence check, one
/// counter bump for all of them, and multi-row inserts.
pub(crate) async fn append_all(
    store: &SqlStore,
    operation: &'static str,
    lease: &Lease,
    tenant: &TenantId,
    events: &[NewEvent],
) -> Result<Vec<RunEvent>, StoreError> {
    let Some(first) = events.first() else {
        return Ok(Vec::new());
    };
    let session = &first.session;
    if let Some(other) = events.iter().find(|e| e.session != *session) {
        return Err(StoreError::Invalid {
            field: "events",
            reason: format!(
                "one append holds events of sessions {session} and {}",
                other.session
            ),
        });
    }
    let mut tx = store.begin_write(operation).await?;
    fence::check(&mut tx, store.engine, operation, lease, session).await?;
    let stored = sequence(&mut tx, operation, tenant, events, store.clock.now()).await?;
    if let Err(e) = insert_all(&mut tx, &stored).await {
        drop(tx);
        return Err(if is_foreign_key_violation(&e) {
            // an event may only name a run of its own session
            missing_run(store, session, events)
                .await
                .unwrap_or_else(|| db(operation)(e))
        } else {
            db(operation)(e)
        });
    }
    tx.commit().await.map_err(db(operation))?;
    Ok(stored)
}

/// `events` (one session's, at least one) numbered with the session's next
/// sequence numbers, taken in the caller's fenced write transaction; the
/// rows are not inserted yet ([`insert_all`]).
pub(crate) async fn sequence(
    conn: &mut AnyConnection,
    operation: &'static str,
    tenant: &TenantId,
    events: &[NewEvent],
    created_at: Timestamp,
) -> Result<Vec<RunEvent>, StoreError> {
    let Some(first) = events.first() else {
        return Ok(Vec::new());
    };
    let session = &first.session;
    let count = u64::try_from(events.len()).map_err(|_| StoreError::Invalid {
        field: "events",
        reason: format!("{} events in one append", events.len()),
    })?;
    let last = sessions::advance(conn, operation, Counter::Events, tenant, session, count).await?;
    Ok(events
        .iter()
        .zip(last + 1 - count..)
        .map(|(event, seq)| RunEvent {
            tenant: tenant.clone(),
            session: session.clone(),
            seq,
            run: event.run.clone(),
            kind: event.kind.clone(),
            payload: event.payload.clone(),
            created_at,
        })
        .collect())
}

/// Inserts the rows [`sequence`] numbered, in multi-row statements.
pub(crate) async fn insert_all(
    conn: &mut AnyConnection,
    stored: &[RunEvent],
) -> Result<(), sqlx::Error> {
    let Some(first) = stored.first() else {
        return Ok(());
    };
    let first_seq = i64::try_from(first.seq).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    for (chunk, at) in stored
        .chunks(ROWS_PER_INSERT)
        .zip((first_seq..).step_by(ROWS_PER_INSERT))
    {
        insert(&mut *conn, at, chunk).await?;
    }
    Ok(())
}

/// Inserts `rows`, numbered from `first_seq` on.
async fn insert(
    conn: &mut AnyConnection,
    first_seq: i64,
    rows: &[RunEvent],
) -> Result<(), sqlx::Error> {
    let mut sql = String::from(
        "INSERT INTO run_events (tenant_id, session_id, seq, run_id, kind, payload, created_at) \
         VALUES ",
    );
    for index in 0..rows.len() {
        let p = index * 7;
        if index > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!(
            "(${}, ${}, ${}, ${}, ${}, ${}, ${})",
            p + 1,
            p + 2,
            p + 3,
            p + 4,
            p + 5,
            p + 6,
            p + 7
        ));
    }
    // Each row count is a statement of its own: only the one-row insert (every
    // single append) is kept prepared, so batches of every size do not push
    // the store's other statements out of the connection's statement cache.
    let mut query = sqlx::query(&sql).persistent(rows.len() == 1);
    for (row, seq) in rows.iter().zip(first_seq..) {
        query = query
            .bind(row.tenant.as_str())
            .bind(row.session.as_str())
            .bind(seq)
            .bind(row.run.as_ref().map(|r| r.as_str()))
            .bind(row.kind.as_str())
            .bind(row.payload.as_str())
            .bind(row.created_at.as_millis());
    }
    query.execute(conn).await.map(drop)
}

/// After a foreign key refused an append: the first run named by `events`
/// that is not one of `session`'s runs.
async fn missing_run(
    store: &SqlStore,
    session: &SessionId,
    events: &[NewEvent],
) -> Option<StoreError> {
    for run in events.iter().filter_map(|e| e.run.as_ref()) {
        let found = sqlx::query("SELECT 1 FROM runs WHERE session_id = $1 AND id = $2")
            .bind(session.as_str())
            .bind(run.as_str())
            .fetch_optional(&store.pool)
            .await
            .ok()?;
        if found.is_none() {
            return Some(runs::not_found(run));
        }
    }
    None
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
    quarantine::read_rows(store, Table::RunEvents, &rows, read_event).await
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
    quarantine::read_rows(store, Table::RunEvents, &rows, read_event).await
}

fn read_event(row: &AnyRow) -> Result<RunEvent, StoreError> {
    let r = Reader::new(row, "run event", "session_id");
    Ok(RunEvent {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        seq: r.count("seq")?,
        run: r.opt_parsed("run_id", RunId::parse)?,
        kind: r.text("kind")?,
        // decoded by the reader of each kind; here only checked to be JSON
        payload: r.parsed("payload", |p| {
            serde_json::from_str::<serde::de::IgnoredAny>(p).map(|_| p.to_owned())
        })?,
        created_at: r.time("created_at")?,
    })
}
