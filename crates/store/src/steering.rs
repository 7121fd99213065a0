//! Steering messages: posted by anyone who may see the run, delivered by the
//! session's lease holder (the loop driving the run) before a model request
//! in the transaction that puts them into the history ([`deliver`]),
//! and the queue closed by it as the run is about to end (migration 0009's
//! `runs.steering_closed_at`), so that every accepted message is either
//! delivered or reported undelivered. A run that resumes an interrupted one
//! takes over the messages it left waiting ([`carry`]).

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{
    Lease, RunState, SteeringCaps, SteeringClose, SteeringClosed, SteeringDelivered,
    SteeringDelivery, SteeringMessage, StoreError, Timestamp,
};
use sqlx::AnyConnection;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::engine::Engine;
use crate::error::{db, to_i64};
use crate::fence;
use crate::open::SqlStore;
use crate::rows::{Reader, known};
use crate::{events, messages, runs};

/// Whether a run in `state` still asks for messages: not terminal nor
/// `awaiting_user` (its loop ended with a question). A run whose loop
/// closed its queue (`steering_closed_at`) takes none either.
fn open_state(state: RunState) -> bool {
    !state.is_terminal() && state != RunState::AwaitingUser
}

fn read(row: &AnyRow) -> Result<SteeringMessage, StoreError> {
    let r = Reader::new(row, "steering message", "seq");
    Ok(SteeringMessage {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        id: r.count("seq")?,
        text: r.text("text")?,
        created_at: r.time("created_at")?,
        delivered_at: r.opt_time("delivered_at")?,
    })
}

/// Stores `text` for `run` if the run is still going and its queue is
/// open, as the run's next message (its id is the run's own count,
/// migration 0011: it says nothing of other runs). The run's row is read locked ([`Engine::steering_post_sql`]), so a
/// close ([`close`]) either sees this message or refuses it: none is
/// accepted and then left behind.
///
/// [`Engine::steering_post_sql`]: crate::engine::Engine::steering_post_sql
pub(crate) async fn post(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
    text: &str,
    caps: SteeringCaps,
    now: Timestamp,
) -> Result<SteeringMessage, StoreError> {
    const OP: &str = "post_steering_message";
    let mut tx = store.begin_write(OP).await?;
    let row = sqlx::query(store.engine.steering_post_sql())
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db(OP))?;
    let Some(row) = row else {
        return Err(runs::not_found(run));
    };
    let r = Reader::new(&row, "run", "id");
    let state = r.parsed("state", known(RunState::parse))?;
    if !open_state(state) || r.opt_time("steering_closed_at")?.is_some() {
        return Err(StoreError::Conflict {
            entity: "run",
            id: run.to_string(),
            reason: "the run has finished; it takes no more messages".to_owned(),
        });
    }
    // under the run's row lock (Postgres) or the write lock (SQLite): two
    // posts cannot both take the last place
    let taken = sqlx::query(
        "SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(text)), 0) AS chars \
         FROM steering_messages WHERE tenant_id = $1 AND run_id = $2",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let count = u64::try_from(taken.try_get::<i64, _>("n").map_err(db(OP))?).unwrap_or(0);
    let chars = u64::try_from(taken.try_get::<i64, _>("chars").map_err(db(OP))?).unwrap_or(0);
    let adding = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    let limit = |reason: String| StoreError::Limit {
        entity: "run",
        id: run.to_string(),
        reason,
    };
    if count >= u64::from(caps.max_messages) {
        return Err(limit(format!(
            "the run already has {count} steering messages, the most one run takes ({})",
            caps.max_messages
        )));
    }
    if chars.saturating_add(adding) > caps.max_total_chars {
        return Err(limit(format!(
            "the run's steering messages would hold {} characters, more than one run takes ({}); \
             {chars} are used",
            chars.saturating_add(adding),
            caps.max_total_chars
        )));
    }
    let row = sqlx::query(
        "INSERT INTO steering_messages (tenant_id, run_id, seq, text, created_at) \
         SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4 FROM steering_messages \
         WHERE tenant_id = $1 AND run_id = $2 \
         RETURNING seq, tenant_id, run_id, text, created_at, delivered_at",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .bind(text)
    .bind(now.as_millis())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let message = read(&row)?;
    tx.commit().await.map_err(db(OP))?;
    Ok(message)
}

/// `run`'s messages not yet delivered, oldest first (one indexed read, no
/// lock).
pub(crate) async fn waiting(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Vec<SteeringMessage>, StoreError> {
    let rows = sqlx::query(WAITING_SQL)
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_all(&store.pool)
        .await
        .map_err(db("waiting_steering_messages"))?;
    rows.iter().map(read).collect()
}

const WAITING_SQL: &str = "SELECT seq, tenant_id, run_id, text, created_at, delivered_at \
     FROM steering_messages \
     WHERE tenant_id = $1 AND run_id = $2 AND delivered_at IS NULL ORDER BY seq";

/// Delivers `deliveries` (messages of `run`) in one transaction, fenced by
/// the lease on `session` and under the run's row lock
/// ([`Engine::steering_close_sql`]): each message still waiting is marked
/// delivered, its history entry appended ([`messages::insert`]) and its
/// event written ([`events::sequence`]), the events after the entries as
/// the run's writer orders them. A message no longer waiting (delivered, or
/// carried to the run resuming this one) is skipped, and so is every one
/// once the queue closed: [`close`] with [`SteeringClose::Always`] reported
/// them undelivered.
///
/// [`Engine::steering_close_sql`]: crate::engine::Engine::steering_close_sql
pub(crate) async fn deliver(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    session: &SessionId,
    run: &RunId,
    deliveries: &[SteeringDelivery],
    now: Timestamp,
) -> Result<Vec<SteeringDelivered>, StoreError> {
    const OP: &str = "deliver_steering_messages";
    if deliveries.is_empty() {
        return Ok(Vec::new());
    }
    let foreign = deliveries.iter().any(|d| {
        d.message.tenant != *tenant
            || d.message.session != *session
            || d.message.run != *run
            || d.event.session != *session
            || d.event.run.as_ref() != Some(run)
    });
    if foreign {
        return Err(StoreError::Invalid {
            field: "deliveries",
            reason: "a delivery's message or event is not of the run".to_owned(),
        });
    }
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, session).await?;
    if lock_run(&mut tx, store.engine, OP, tenant, run).await? {
        return Ok(Vec::new());
    }
    let mut appended = Vec::with_capacity(deliveries.len());
    let mut events = Vec::with_capacity(deliveries.len());
    for delivery in deliveries {
        let marked = sqlx::query(
            "UPDATE steering_messages SET delivered_at = $1 \
             WHERE tenant_id = $2 AND run_id = $3 AND seq = $4 AND delivered_at IS NULL",
        )
        .bind(now.as_millis())
        .bind(tenant.as_str())
        .bind(run.as_str())
        .bind(to_i64("steering id", delivery.id)?)
        .execute(&mut *tx)
        .await
        .map_err(db(OP))?;
        if marked.rows_affected() == 0 {
            continue;
        }
        appended.push((
            delivery.id,
            messages::insert(&mut tx, OP, &delivery.message).await?,
        ));
        events.push(delivery.event.clone());
    }
    let stored = events::sequence(&mut tx, OP, tenant, &events, now).await?;
    events::insert_all(&mut tx, &stored).await.map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))?;
    Ok(appended
        .into_iter()
        .zip(stored)
        .map(|((id, message), event)| SteeringDelivered { id, message, event })
        .collect())
}

/// Closes `run`'s steering queue as its loop is about to end and reads
/// what waits, in one transaction under the run's row lock
/// ([`Engine::steering_close_sql`]): with [`SteeringClose::UnlessWaiting`]
/// the queue stays open while a message waits (the loop delivers it,
/// [`deliver`]) and closes only when none does; with
/// [`SteeringClose::Always`] it closes. The waiting messages come back
/// undelivered either way. Fenced by the lease on
/// `session` (the run's).
///
/// [`Engine::steering_close_sql`]: crate::engine::Engine::steering_close_sql
pub(crate) async fn close(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    session: &SessionId,
    run: &RunId,
    how: SteeringClose,
    now: Timestamp,
) -> Result<SteeringClosed, StoreError> {
    const OP: &str = "close_steering";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, session).await?;
    let already = lock_run(&mut tx, store.engine, OP, tenant, run).await?;
    let rows = sqlx::query(WAITING_SQL)
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(db(OP))?;
    let messages = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    let closed = how == SteeringClose::Always || messages.is_empty();
    if closed && !already {
        sqlx::query("UPDATE runs SET steering_closed_at = $1 WHERE tenant_id = $2 AND id = $3")
            .bind(now.as_millis())
            .bind(tenant.as_str())
            .bind(run.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db(OP))?;
    }
    tx.commit().await.map_err(db(OP))?;
    Ok(SteeringClosed {
        closed: closed || already,
        messages,
    })
}

/// Locks `run`'s row for the rest of the transaction
/// ([`Engine::steering_close_sql`]) and says whether its steering is closed.
async fn lock_run(
    conn: &mut AnyConnection,
    engine: Engine,
    op: &'static str,
    tenant: &TenantId,
    run: &RunId,
) -> Result<bool, StoreError> {
    let row = sqlx::query(engine.steering_close_sql())
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db(op))?;
    let Some(row) = row else {
        return Err(runs::not_found(run));
    };
    Ok(Reader::new(&row, "run", "id")
        .opt_time("steering_closed_at")?
        .is_some())
}

/// Hands the queue of the interrupted run `from` to `to`, the run resuming
/// it, inside the transaction that creates `to` ([`crate::runs::create`]):
/// `from`'s queue closes (a later post to it is refused) and its messages
/// not yet delivered become `to`'s, keeping their ids and so their order,
/// for `to`'s loop to take before its first model request. Under `from`'s
/// row lock ([`Engine::steering_close_sql`]) a post racing the resume is
/// either carried or refused; a message moves once, so two resumes cannot
/// both carry it (and the session lease lets only one create its run).
///
/// [`Engine::steering_close_sql`]: crate::engine::Engine::steering_close_sql
pub(crate) async fn carry(
    conn: &mut AnyConnection,
    engine: Engine,
    tenant: &TenantId,
    from: &RunId,
    to: &RunId,
    now: Timestamp,
) -> Result<u64, sqlx::Error> {
    sqlx::query(engine.steering_close_sql())
        .bind(tenant.as_str())
        .bind(from.as_str())
        .fetch_optional(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE runs SET steering_closed_at = $1 \
         WHERE tenant_id = $2 AND id = $3 AND steering_closed_at IS NULL",
    )
    .bind(now.as_millis())
    .bind(tenant.as_str())
    .bind(from.as_str())
    .execute(&mut *conn)
    .await?;
    let moved = sqlx::query(
        "UPDATE steering_messages SET run_id = $1 \
         WHERE tenant_id = $2 AND run_id = $3 AND delivered_at IS NULL",
    )
    .bind(to.as_str())
    .bind(tenant.as_str())
    .bind(from.as_str())
    .execute(&mut *conn)
    .await?;
    Ok(moved.rows_affected())
}

/// Every message of `run`, oldest first (delivered or not).
pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Vec<SteeringMessage>, StoreError> {
    const OP: &str = "list_steering_messages";
    let rows = sqlx::query(
        "SELECT seq, tenant_id, run_id, text, created_at, delivered_at FROM steering_messages \
         WHERE tenant_id = $1 AND run_id = $2 ORDER BY seq",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    rows.iter().map(read).collect()
}
