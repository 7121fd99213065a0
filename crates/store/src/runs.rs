//! Runs: created and moved through their states by the session's lease holder.

use paddock_core::ids::{RunId, SessionId, SnapshotId, TenantId};
use paddock_core::store::{
    DriverKind, EndReason, Lease, NewEvent, Run, RunEvent, RunMode, RunState, RunUpdate,
    StoreError, SubagentProfile,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_json};
use crate::events;
use crate::fence;
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::records::{SESSION_EXISTS, require};
use crate::rows::{Reader, known};
use crate::snapshots::SNAPSHOT_EXISTS;
use crate::steering;

macro_rules! run_columns {
    () => {
        "id, tenant_id, session_id, parent_run_id, state, goal, error, mode, profile, task_key, \
         budgets, usage, end_reason, review, end_snapshot_id, created_at, updated_at, finished_at, \
         resumed_from, driver"
    };
}

pub(crate) const RUN_EXISTS: &str = "SELECT 1 FROM runs WHERE tenant_id = $1 AND id = $2";

/// The states `list_unfinished_runs` skips; the same text as the `runs_unfinished`
/// index predicate, so the planner uses the index.
const UNFINISHED: &str = "state NOT IN ('completed', 'cancelled', 'failed', 'interrupted')";

pub(crate) fn not_found(id: &RunId) -> StoreError {
    StoreError::NotFound {
        entity: "run",
        id: id.to_string(),
    }
}

/// Fails with `NotFound` unless `snapshot` is one of `tenant`'s (the column's
/// foreign key cannot check the tenant, see migration 0002).
async fn require_snapshot(
    conn: &mut AnyConnection,
    operation: &'static str,
    tenant: &str,
    snapshot: Option<&SnapshotId>,
) -> Result<(), StoreError> {
    match snapshot {
        Some(id) => {
            require(
                conn,
                operation,
                "snapshot",
                SNAPSHOT_EXISTS,
                tenant,
                id.as_str(),
            )
            .await
        }
        None => Ok(()),
    }
}

pub(crate) async fn create(store: &SqlStore, lease: &Lease, run: &Run) -> Result<(), StoreError> {
    const OP: &str = "create_run";
    let budgets = to_json("budgets", &run.budgets)?;
    let usage = to_json("usage", &run.usage)?;
    let review = run
        .review
        .as_ref()
        .map(|r| to_json("review", r))
        .transpose()?;
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &run.session).await?;
    let tenant = run.tenant.as_str();
    require(
        &mut tx,
        OP,
        "session",
        SESSION_EXISTS,
        tenant,
        run.session.as_str(),
    )
    .await?;
    for linked in [&run.parent_run, &run.resumed_from].into_iter().flatten() {
        require(&mut tx, OP, "run", RUN_EXISTS, tenant, linked.as_str()).await?;
    }
    require_snapshot(&mut tx, OP, tenant, run.end_snapshot.as_ref()).await?;
    sqlx::query(concat!(
        "INSERT INTO runs (",
        run_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20)"
    ))
    .bind(run.id.as_str())
    .bind(tenant)
    .bind(run.session.as_str())
    .bind(run.parent_run.as_ref().map(|p| p.as_str()))
    .bind(run.state.as_str())
    .bind(&run.goal)
    .bind(run.error.as_deref())
    .bind(run.mode.as_str())
    .bind(run.profile.map(SubagentProfile::as_str))
    .bind(run.task_key.as_deref())
    .bind(budgets)
    .bind(usage)
    .bind(run.end_reason.map(EndReason::as_str))
    .bind(review)
    .bind(run.end_snapshot.as_ref().map(|s| s.as_str()))
    .bind(run.created_at.as_millis())
    .bind(run.updated_at.as_millis())
    .bind(run.finished_at.map(|t| t.as_millis()))
    .bind(run.resumed_from.as_ref().map(|r| r.as_str()))
    .bind(run.driver.as_str())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "run", run.id.to_string()))?;
    if let Some(from) = &run.resumed_from {
        let carried = steering::carry(
            &mut tx,
            store.engine,
            &run.tenant,
            from,
            &run.id,
            run.created_at,
        )
        .await
        .map_err(db(OP))?;
        if carried > 0 {
            tracing::info!(run_id = %run.id, resumed_from = %from, carried, "steering messages carried to the resumed run");
        }
    }
    tx.commit().await.map_err(db(OP))
}

/// Moves a run to `update.state`, writes `error` as given and the other set
/// fields, keeping the stored value of the unset ones. A run in a terminal state
/// stays there ([`StoreError::Conflict`]).
pub(crate) async fn update(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    id: &RunId,
    update: &RunUpdate,
) -> Result<Run, StoreError> {
    update_with_events(store, lease, tenant, id, update, &[])
        .await
        .map(|(run, _)| run)
}

/// [`update`], and `events` of the run's session appended in the same
/// transaction: a reader who sees the new state sees the events too (a run's
/// end and its `run.finished`), and an update refused (the run already
/// ended, the lease lost) stores none of them.
pub(crate) async fn update_with_events(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    id: &RunId,
    update: &RunUpdate,
    events: &[NewEvent],
) -> Result<(Run, Vec<RunEvent>), StoreError> {
    const OP: &str = "update_run";
    let usage = update
        .usage
        .as_ref()
        .map(|u| to_json("usage", u))
        .transpose()?;
    let review = update
        .review
        .as_ref()
        .map(|r| to_json("review", r))
        .transpose()?;
    let mut tx = store.begin_write(OP).await?;
    let row = sqlx::query(concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db(OP))?;
    let current = read_run(&row.ok_or_else(|| not_found(id))?)?;
    fence::check(&mut tx, store.engine, OP, lease, &current.session).await?;
    if current.state.is_terminal() {
        return Err(StoreError::Conflict {
            entity: "run",
            id: id.to_string(),
            reason: format!("already {}", current.state),
        });
    }
    require_snapshot(&mut tx, OP, tenant.as_str(), update.end_snapshot.as_ref()).await?;
    let now = store.clock.now();
    let finished_at = update.state.is_terminal().then_some(now);
    // COALESCE in the statement rather than merged here: the row is not locked
    // between the read above and this write on Postgres.
    let row = sqlx::query(concat!(
        "UPDATE runs SET state = $1, error = $2, usage = COALESCE($3, usage), \
         end_reason = COALESCE($4, end_reason), review = COALESCE($5, review), \
         end_snapshot_id = COALESCE($6, end_snapshot_id), updated_at = $7, finished_at = $8 \
         WHERE tenant_id = $9 AND id = $10 RETURNING ",
        run_columns!()
    ))
    .bind(update.state.as_str())
    .bind(update.error.as_deref())
    .bind(usage)
    .bind(update.end_reason.map(EndReason::as_str))
    .bind(review)
    .bind(update.end_snapshot.as_ref().map(|s| s.as_str()))
    .bind(now.as_millis())
    .bind(finished_at.map(|t| t.as_millis()))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let run = read_run(&row)?;
    if let Some(other) = events.iter().find(|e| e.session != current.session) {
        return Err(StoreError::Invalid {
            field: "events",
            reason: format!(
                "an update of run {id} (session {}) holds an event of session {}",
                current.session, other.session
            ),
        });
    }
    let stored = events::sequence(&mut tx, OP, tenant, events, now).await?;
    events::insert_all(&mut tx, &stored).await.map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))?;
    Ok((run, stored))
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    id: &RunId,
) -> Result<Run, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_run"))?;
    read_run(&row.ok_or_else(|| not_found(id))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<Run>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs WHERE tenant_id = $1 AND session_id = $2 ORDER BY id"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_runs"))?;
    quarantine::read_rows(store, Table::Runs, &rows, read_run).await
}

pub(crate) async fn list_children(
    store: &SqlStore,
    tenant: &TenantId,
    parent: &RunId,
) -> Result<Vec<Run>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        run_columns!(),
        " FROM runs WHERE tenant_id = $1 AND parent_run_id = $2 ORDER BY id"
    ))
    .bind(tenant.as_str())
    .bind(parent.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_child_runs"))?;
    quarantine::read_rows(store, Table::Runs, &rows, read_run).await
}

pub(crate) async fn list_unfinished(store: &SqlStore) -> Result<Vec<Run>, StoreError> {
    let sql = format!(
        "SELECT {} FROM runs WHERE {UNFINISHED} ORDER BY id",
        run_columns!()
    );
    let rows = sqlx::query(&sql)
        .fetch_all(&store.pool)
        .await
        .map_err(db("list_unfinished_runs"))?;
    quarantine::read_rows(store, Table::Runs, &rows, read_run).await
}

fn read_run(row: &AnyRow) -> Result<Run, StoreError> {
    let r = Reader::new(row, "run", "id");
    Ok(Run {
        id: r.parsed("id", RunId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        parent_run: r.opt_parsed("parent_run_id", RunId::parse)?,
        resumed_from: r.opt_parsed("resumed_from", RunId::parse)?,
        state: r.parsed("state", known(RunState::parse))?,
        goal: r.text("goal")?,
        error: r.opt_text("error")?,
        mode: r.parsed("mode", known(RunMode::parse))?,
        driver: r.parsed("driver", known(DriverKind::parse))?,
        profile: r.opt_parsed("profile", known(SubagentProfile::parse))?,
        task_key: r.opt_text("task_key")?,
        budgets: r.json("budgets")?,
        usage: r.json("usage")?,
        end_reason: r.opt_parsed("end_reason", known(EndReason::parse))?,
        review: r.opt_json("review")?,
        end_snapshot: r.opt_parsed("end_snapshot_id", SnapshotId::parse)?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}
