//! A session's plan: a versioned log of saves (`plans`) and the task list of the
//! latest one (`tasks`), replaced whole on every save.

use std::collections::BTreeSet;

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Lease, Plan, StoreError, Task, TaskStatus};
use sqlx::any::AnyRow;

use crate::error::{db, to_i64};
use crate::fence;
use crate::open::SqlStore;
use crate::records::require;
use crate::rows::{Reader, known};
use crate::runs::RUN_EXISTS;
use crate::sessions::{self, Counter};

/// Refuses a plan whose task keys are empty or repeated (a key names one task).
fn check_keys(plan: &Plan) -> Result<(), StoreError> {
    let mut seen = BTreeSet::new();
    for task in &plan.tasks {
        if task.key.is_empty() {
            return Err(StoreError::Invalid {
                field: "tasks.key",
                reason: format!("task {:?} has an empty key", task.title),
            });
        }
        if !seen.insert(task.key.as_str()) {
            return Err(StoreError::Invalid {
                field: "tasks.key",
                reason: format!("key {:?} names more than one task", task.key),
            });
        }
    }
    Ok(())
}

/// Stores `plan` as the session's next version and makes its tasks, in order,
/// the session's task list. `version` is assigned here; everything else
/// (including each task's `run` and `updated_at`) is stored as given.
pub(crate) async fn save(store: &SqlStore, lease: &Lease, plan: &Plan) -> Result<Plan, StoreError> {
    const OP: &str = "save_plan";
    check_keys(plan)?;
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &plan.session).await?;
    let tenant = plan.tenant.as_str();
    let version = sessions::next(
        &mut tx,
        OP,
        Counter::PlanVersions,
        &plan.tenant,
        &plan.session,
    )
    .await?;
    let runs: BTreeSet<&str> = std::iter::once(plan.run.as_str())
        .chain(plan.tasks.iter().map(|t| t.run.as_str()))
        .collect();
    for run in runs {
        require(&mut tx, OP, "run", RUN_EXISTS, tenant, run).await?;
    }
    sqlx::query(
        "INSERT INTO plans (tenant_id, session_id, version, run_id, explanation, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant)
    .bind(plan.session.as_str())
    .bind(to_i64("version", version)?)
    .bind(plan.run.as_str())
    .bind(plan.explanation.as_deref())
    .bind(plan.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(db(OP))?;
    sqlx::query("DELETE FROM tasks WHERE tenant_id = $1 AND session_id = $2")
        .bind(tenant)
        .bind(plan.session.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db(OP))?;
    for (position, task) in plan.tasks.iter().enumerate() {
        sqlx::query(
            "INSERT INTO tasks (tenant_id, session_id, task_key, position, title, status, \
             run_id, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(tenant)
        .bind(plan.session.as_str())
        .bind(&task.key)
        .bind(to_i64("position", position as u64)?)
        .bind(&task.title)
        .bind(task.status.as_str())
        .bind(task.run.as_str())
        .bind(task.updated_at.as_millis())
        .execute(&mut *tx)
        .await
        .map_err(db(OP))?;
    }
    tx.commit().await.map_err(db(OP))?;
    Ok(Plan {
        version,
        ..plan.clone()
    })
}

/// The latest version with the current task list; None before the first save
/// (and for another tenant's session).
pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Option<Plan>, StoreError> {
    // One statement, so the plan row and the tasks are of the same save even
    // under Postgres' read committed. A plan without tasks is one row of NULLs.
    let rows = sqlx::query(
        "SELECT p.tenant_id, p.session_id, p.version, p.run_id AS plan_run_id, p.explanation, \
                p.created_at, t.task_key, t.title, t.status, t.run_id, t.updated_at \
         FROM (SELECT tenant_id, session_id, version, run_id, explanation, created_at \
               FROM plans WHERE tenant_id = $1 AND session_id = $2 \
               ORDER BY version DESC LIMIT 1) p \
         LEFT JOIN tasks t ON t.tenant_id = p.tenant_id AND t.session_id = p.session_id \
         ORDER BY t.position",
    )
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("get_plan"))?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let r = Reader::new(first, "plan", "session_id");
    let mut tasks = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(task) = read_task(row)? {
            tasks.push(task);
        }
    }
    Ok(Some(Plan {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("plan_run_id", RunId::parse)?,
        version: r.count("version")?,
        explanation: r.opt_text("explanation")?,
        tasks,
        created_at: r.time("created_at")?,
    }))
}

/// The task of a joined row, None for the row of a plan without tasks.
fn read_task(row: &AnyRow) -> Result<Option<Task>, StoreError> {
    let r = Reader::new(row, "task", "task_key");
    let Some(key) = r.opt_text("task_key")? else {
        return Ok(None);
    };
    Ok(Some(Task {
        key,
        title: r.text("title")?,
        status: r.parsed("status", known(TaskStatus::parse))?,
        run: r.parsed("run_id", RunId::parse)?,
        updated_at: r.time("updated_at")?,
    }))
}
