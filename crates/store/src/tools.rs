//! The tool-call log: every invocation when it starts, and its result.

use paddock_core::ids::{RunId, SessionId, TenantId, ToolInvocationId};
use paddock_core::store::{Lease, StoreError, ToolInvocation, ToolOutcome, ToolStatus};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, is_foreign_key_violation};
use crate::fence;
use crate::open::SqlStore;
use crate::rows::{Reader, known};
use crate::runs;

macro_rules! tool_columns {
    () => {
        "id, tenant_id, session_id, run_id, tool, input, status, output, started_at, finished_at"
    };
}

fn not_found(id: &ToolInvocationId) -> StoreError {
    StoreError::NotFound {
        entity: "tool invocation",
        id: id.to_string(),
    }
}

pub(crate) async fn record(
    store: &SqlStore,
    lease: &Lease,
    inv: &ToolInvocation,
) -> Result<(), StoreError> {
    const OP: &str = "record_tool_invocation";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &inv.session).await?;
    // The keys check that the session is the tenant's and the run one of the
    // session's (no query first: that is a round trip on every call).
    sqlx::query(concat!(
        "INSERT INTO tool_invocations (",
        tool_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(inv.id.as_str())
    .bind(inv.tenant.as_str())
    .bind(inv.session.as_str())
    .bind(inv.run.as_str())
    .bind(&inv.tool)
    .bind(&inv.input)
    .bind(inv.status.as_str())
    .bind(inv.output.as_deref())
    .bind(inv.started_at.as_millis())
    .bind(inv.finished_at.map(|t| t.as_millis()))
    .execute(&mut *tx)
    .await
    .map_err(|e| {
        if is_foreign_key_violation(&e) {
            runs::not_found(&inv.run)
        } else {
            insert_error(OP, "tool invocation", inv.id.to_string())(e)
        }
    })?;
    tx.commit().await.map_err(db(OP))
}

/// Records the result of a running invocation; a finished one is not rewritten.
pub(crate) async fn finish(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    id: &ToolInvocationId,
    outcome: &ToolOutcome,
) -> Result<ToolInvocation, StoreError> {
    const OP: &str = "finish_tool_invocation";
    if outcome.status == ToolStatus::Running {
        return Err(StoreError::Invalid {
            field: "outcome.status",
            reason: "a finished call is succeeded or failed".to_owned(),
        });
    }
    let mut tx = store.begin_write(OP).await?;
    let row = sqlx::query(concat!(
        "SELECT ",
        tool_columns!(),
        " FROM tool_invocations WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db(OP))?;
    let current = read_invocation(&row.ok_or_else(|| not_found(id))?)?;
    fence::check(&mut tx, store.engine, OP, lease, &current.session).await?;
    if current.status != ToolStatus::Running {
        return Err(StoreError::Conflict {
            entity: "tool invocation",
            id: id.to_string(),
            reason: format!("already {}", current.status),
        });
    }
    let row = sqlx::query(concat!(
        "UPDATE tool_invocations SET status = $1, output = $2, finished_at = $3 \
         WHERE tenant_id = $4 AND id = $5 RETURNING ",
        tool_columns!()
    ))
    .bind(outcome.status.as_str())
    .bind(&outcome.output)
    .bind(store.clock.now().as_millis())
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let finished = read_invocation(&row)?;
    tx.commit().await.map_err(db(OP))?;
    Ok(finished)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Vec<ToolInvocation>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        tool_columns!(),
        " FROM tool_invocations WHERE tenant_id = $1 AND run_id = $2 ORDER BY id"
    ))
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_tool_invocations"))?;
    rows.iter().map(read_invocation).collect()
}

fn read_invocation(row: &AnyRow) -> Result<ToolInvocation, StoreError> {
    let r = Reader::new(row, "tool invocation", "id");
    Ok(ToolInvocation {
        id: r.parsed("id", ToolInvocationId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        tool: r.text("tool")?,
        input: r.text("input")?,
        status: r.parsed("status", known(ToolStatus::parse))?,
        output: r.opt_text("output")?,
        started_at: r.time("started_at")?,
        finished_at: r.opt_time("finished_at")?,
    })
}
