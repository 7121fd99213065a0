//! Goals with their success criteria, written by the session's lease holder.

use paddock_core::ids::{GoalId, RunId, SessionId, TenantId};
use paddock_core::store::{Goal, GoalStatus, Lease, StoreError};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_json};
use crate::fence;
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::records::{SESSION_EXISTS, require};
use crate::rows::{Reader, known};
use crate::runs::RUN_EXISTS;

macro_rules! goal_columns {
    () => {
        "id, tenant_id, session_id, run_id, description, success_criteria, status, created_at, \
         updated_at"
    };
}

fn not_found(id: &GoalId) -> StoreError {
    StoreError::NotFound {
        entity: "goal",
        id: id.to_string(),
    }
}

pub(crate) async fn create(store: &SqlStore, lease: &Lease, goal: &Goal) -> Result<(), StoreError> {
    const OP: &str = "create_goal";
    let criteria = to_json("success_criteria", &goal.success_criteria)?;
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &goal.session).await?;
    let tenant = goal.tenant.as_str();
    require(
        &mut tx,
        OP,
        "session",
        SESSION_EXISTS,
        tenant,
        goal.session.as_str(),
    )
    .await?;
    require(&mut tx, OP, "run", RUN_EXISTS, tenant, goal.run.as_str()).await?;
    sqlx::query(concat!(
        "INSERT INTO goals (",
        goal_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    ))
    .bind(goal.id.as_str())
    .bind(tenant)
    .bind(goal.session.as_str())
    .bind(goal.run.as_str())
    .bind(&goal.description)
    .bind(criteria)
    .bind(goal.status.as_str())
    .bind(goal.created_at.as_millis())
    .bind(goal.updated_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "goal", goal.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

/// Sets the status (any status may follow any other) and stamps `updated_at`.
pub(crate) async fn set_status(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    id: &GoalId,
    status: GoalStatus,
) -> Result<Goal, StoreError> {
    const OP: &str = "set_goal_status";
    let mut tx = store.begin_write(OP).await?;
    let session = sqlx::query("SELECT session_id FROM goals WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db(OP))?
        .ok_or_else(|| not_found(id))?;
    let session =
        Reader::new(&session, "goal", "session_id").parsed("session_id", SessionId::parse)?;
    fence::check(&mut tx, store.engine, OP, lease, &session).await?;
    let row = sqlx::query(concat!(
        "UPDATE goals SET status = $1, updated_at = $2 WHERE tenant_id = $3 AND id = $4 \
         RETURNING ",
        goal_columns!()
    ))
    .bind(status.as_str())
    .bind(store.clock.now().as_millis())
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let goal = read_goal(&row)?;
    tx.commit().await.map_err(db(OP))?;
    Ok(goal)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<Goal>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        goal_columns!(),
        " FROM goals WHERE tenant_id = $1 AND session_id = $2 ORDER BY id"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_goals"))?;
    quarantine::read_rows(store, Table::Goals, &rows, read_goal).await
}

fn read_goal(row: &AnyRow) -> Result<Goal, StoreError> {
    let r = Reader::new(row, "goal", "id");
    Ok(Goal {
        id: r.parsed("id", GoalId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        description: r.text("description")?,
        success_criteria: r.json("success_criteria")?,
        status: r.parsed("status", known(GoalStatus::parse))?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}
