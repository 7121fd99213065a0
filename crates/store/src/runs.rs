//! Runs: created and moved through their states by the session's lease holder.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Lease, Run, RunState, RunUpdate, StoreError};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error};
use crate::fence;
use crate::open::SqlStore;
use crate::records::{SESSION_EXISTS, require};
use crate::rows::{Reader, known};

macro_rules! run_columns {
    () => {
        "id, tenant_id, session_id, parent_run_id, state, goal, error, created_at, updated_at, \
         finished_at"
    };
}

pub(crate) const RUN_EXISTS: &str = "SELECT 1 FROM runs WHERE tenant_id = $1 AND id = $2";

pub(crate) fn not_found(id: &RunId) -> StoreError {
    StoreError::NotFound {
        entity: "run",
        id: id.to_string(),
    }
}

pub(crate) async fn create(store: &SqlStore, lease: &Lease, run: &Run) -> Result<(), StoreError> {
    const OP: &str = "create_run";
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
    if let Some(parent) = &run.parent_run {
        require(&mut tx, OP, "run", RUN_EXISTS, tenant, parent.as_str()).await?;
    }
    sqlx::query(concat!(
        "INSERT INTO runs (",
        run_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(run.id.as_str())
    .bind(tenant)
    .bind(run.session.as_str())
    .bind(run.parent_run.as_ref().map(|p| p.as_str()))
    .bind(run.state.as_str())
    .bind(&run.goal)
    .bind(run.error.as_deref())
    .bind(run.created_at.as_millis())
    .bind(run.updated_at.as_millis())
    .bind(run.finished_at.map(|t| t.as_millis()))
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "run", run.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

/// Moves a run to `update.state`. A run in a terminal state stays there
/// ([`StoreError::Conflict`]).
pub(crate) async fn update(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    id: &RunId,
    update: &RunUpdate,
) -> Result<Run, StoreError> {
    const OP: &str = "update_run";
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
    let now = store.clock.now();
    let finished_at = update.state.is_terminal().then_some(now);
    let row = sqlx::query(concat!(
        "UPDATE runs SET state = $1, error = $2, updated_at = $3, finished_at = $4 \
         WHERE tenant_id = $5 AND id = $6 RETURNING ",
        run_columns!()
    ))
    .bind(update.state.as_str())
    .bind(update.error.as_deref())
    .bind(now.as_millis())
    .bind(finished_at.map(|t| t.as_millis()))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let run = read_run(&row)?;
    tx.commit().await.map_err(db(OP))?;
    Ok(run)
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
    rows.iter().map(read_run).collect()
}

fn read_run(row: &AnyRow) -> Result<Run, StoreError> {
    let r = Reader::new(row, "run", "id");
    Ok(Run {
        id: r.parsed("id", RunId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        parent_run: r.opt_parsed("parent_run_id", RunId::parse)?,
        state: r.parsed("state", known(RunState::parse))?,
        goal: r.text("goal")?,
        error: r.opt_text("error")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}
