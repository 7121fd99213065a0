//! Steering messages: posted by anyone who may see the run, taken by the
//! session's lease holder (the loop driving the run) before a model request,
//! and the queue closed by it as the run is about to end (migration 0009's
//! `runs.steering_closed_at`), so that every accepted message is either
//! delivered or reported undelivered. A run that resumes an interrupted one
//! takes over the messages it left waiting ([`carry`]).

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{
    Lease, RunState, SteeringClose, SteeringClosed, SteeringMessage, StoreError, Timestamp,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::engine::Engine;
use crate::error::db;
use crate::fence;
use crate::open::SqlStore;
use crate::rows::{Reader, known};
use crate::runs;

/// Whether a run in `state` still asks for messages: not terminal nor
/// `awaiting_user` (its loop ended with a question). A run whose loop
/// closed its queue (`steering_closed_at`) takes none either.
fn open_state(state: RunState) -> bool {
    !state.is_terminal() && state != RunState::AwaitingUser
}

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

/// Stores `text` for `run` if the run is still going and its queue is
/// open. The run's row is read locked ([`Engine::steering_post_sql`]), so a
/// close ([`close`]) either sees this message or refuses it: none is
/// accepted and then left behind.
///
/// [`Engine::steering_post_sql`]: crate::engine::Engine::steering_post_sql
pub(crate) async fn post(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
    text: &str,
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
    let row = sqlx::query(
        "INSERT INTO steering_messages (tenant_id, run_id, text, created_at) \
         VALUES ($1, $2, $3, $4) \
         RETURNING id, tenant_id, run_id, text, created_at, delivered_at",
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
    let rows = mark_delivered(&mut tx, tenant, run, now)
        .await
        .map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))?;
    let mut taken = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    taken.sort_by_key(|m| m.id);
    Ok(taken)
}

/// Closes `run`'s steering queue as its loop is about to end and takes
/// what waits, in one transaction under the run's row lock
/// ([`Engine::steering_close_sql`]): with [`SteeringClose::UnlessWaiting`]
/// waiting messages are marked delivered and the queue stays open (it
/// closes only when none waits); with [`SteeringClose::Always`] it closes
/// and the waiting messages come back undelivered. Fenced by the lease on
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
    let row = sqlx::query(store.engine.steering_close_sql())
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db(OP))?;
    let Some(row) = row else {
        return Err(runs::not_found(run));
    };
    let already = Reader::new(&row, "run", "id")
        .opt_time("steering_closed_at")?
        .is_some();
    let rows = match how {
        SteeringClose::UnlessWaiting => mark_delivered(&mut tx, tenant, run, now).await,
        SteeringClose::Always => {
            sqlx::query(
                "SELECT id, tenant_id, run_id, text, created_at, delivered_at \
                 FROM steering_messages \
                 WHERE tenant_id = $1 AND run_id = $2 AND delivered_at IS NULL",
            )
            .bind(tenant.as_str())
            .bind(run.as_str())
            .fetch_all(&mut *tx)
            .await
        }
    }
    .map_err(db(OP))?;
    let mut messages = rows.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    messages.sort_by_key(|m| m.id);
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

/// Marks `run`'s undelivered messages delivered at `now` (inside the
/// caller's transaction);
/// answers their rows (in no particular order).
async fn mark_delivered(
    conn: &mut AnyConnection,
    tenant: &TenantId,
    run: &RunId,
    now: Timestamp,
) -> Result<Vec<AnyRow>, sqlx::Error> {
    sqlx::query(
        "UPDATE steering_messages SET delivered_at = $1 \
         WHERE tenant_id = $2 AND run_id = $3 AND delivered_at IS NULL \
         RETURNING id, tenant_id, run_id, text, created_at, delivered_at",
    )
    .bind(now.as_millis())
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_all(conn)
    .await
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
