//! Tenants, workspaces and sandboxes.

use paddock_core::ids::{RunId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    MAX_PAGE, Page, SandboxPause, SandboxRecord, SandboxState, StoreError, Tenant, Workspace,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_json};
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::rows::{Reader, known};

/// Fails with `NotFound { entity, id }` unless `sql` (taking `$1` = tenant,
/// `$2` = id) finds a row.
pub(crate) async fn require(
    conn: &mut AnyConnection,
    operation: &'static str,
    entity: &'static str,
    sql: &'static str,
    tenant: &str,
    id: &str,
) -> Result<(), StoreError> {
    let found = sqlx::query(sql)
        .bind(tenant)
        .bind(id)
        .fetch_optional(conn)
        .await
        .map_err(db(operation))?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NotFound {
            entity,
            id: id.to_owned(),
        }),
    }
}

// Each takes `$1` = tenant and `$2` = id (the tenant check gets the tenant twice).
pub(crate) const TENANT_EXISTS: &str = "SELECT 1 FROM tenants WHERE id = $1 AND id = $2";
pub(crate) const WORKSPACE_EXISTS: &str =
    "SELECT 1 FROM workspaces WHERE tenant_id = $1 AND id = $2";
pub(crate) const SESSION_EXISTS: &str = "SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2";

/// `limit` clamped to 1..=MAX_PAGE, as bound in SQL.
pub(crate) fn page_limit(page: &Page) -> i64 {
    i64::from(page.limit.clamp(1, MAX_PAGE))
}

/// Ids are compared as text; every id sorts after "".
pub(crate) fn page_after(page: &Page) -> &str {
    page.after.as_deref().unwrap_or("")
}

// ---- tenants ----

pub(crate) async fn ensure_tenant(store: &SqlStore, tenant: &Tenant) -> Result<Tenant, StoreError> {
    const OP: &str = "ensure_tenant";
    let row = sqlx::query(
        "INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET name = excluded.name \
         RETURNING id, name, created_at",
    )
    .bind(tenant.id.as_str())
    .bind(&tenant.name)
    .bind(tenant.created_at.as_millis())
    .fetch_one(&store.pool)
    .await
    .map_err(db(OP))?;
    read_tenant(&row)
}

pub(crate) async fn get_tenant(store: &SqlStore, id: &TenantId) -> Result<Tenant, StoreError> {
    let row = sqlx::query("SELECT id, name, created_at FROM tenants WHERE id = $1")
        .bind(id.as_str())
        .fetch_optional(&store.pool)
        .await
        .map_err(db("get_tenant"))?;
    match row {
        Some(row) => read_tenant(&row),
        None => Err(StoreError::NotFound {
            entity: "tenant",
            id: id.to_string(),
        }),
    }
}

fn read_tenant(row: &AnyRow) -> Result<Tenant, StoreError> {
    let r = Reader::new(row, "tenant", "id");
    Ok(Tenant {
        id: r.parsed("id", TenantId::parse)?,
        name: r.text("name")?,
        created_at: r.time("created_at")?,
    })
}

// ---- workspaces ----

macro_rules! workspace_columns {
    () => {
        "id, tenant_id, name, root, created_at"
    };
}

pub(crate) async fn create_workspace(store: &SqlStore, ws: &Workspace) -> Result<(), StoreError> {
    const OP: &str = "create_workspace";
    let mut tx = store.begin_write(OP).await?;
    let tenant = ws.tenant.as_str();
    require(&mut tx, OP, "tenant", TENANT_EXISTS, tenant, tenant).await?;
    if let Some(root) = &ws.root {
        let taken = sqlx::query("SELECT id FROM workspaces WHERE tenant_id = $1 AND root = $2")
            .bind(tenant)
            .bind(root)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db(OP))?;
        if let Some(taken) = taken {
            return Err(StoreError::Conflict {
                entity: "workspace",
                id: ws.id.to_string(),
                reason: format!(
                    "root {root} is already workspace {}",
                    Reader::new(&taken, "workspace", "id").text("id")?
                ),
            });
        }
    }
    sqlx::query(concat!(
        "INSERT INTO workspaces (",
        workspace_columns!(),
        ") VALUES ($1, $2, $3, $4, $5)"
    ))
    .bind(ws.id.as_str())
    .bind(tenant)
    .bind(&ws.name)
    .bind(ws.root.as_deref())
    .bind(ws.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "workspace", ws.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get_workspace(
    store: &SqlStore,
    tenant: &TenantId,
    id: &WorkspaceId,
) -> Result<Workspace, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        workspace_columns!(),
        " FROM workspaces WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_workspace"))?;
    match row {
        Some(row) => read_workspace(&row),
        None => Err(StoreError::NotFound {
            entity: "workspace",
            id: id.to_string(),
        }),
    }
}

pub(crate) async fn list_workspaces(
    store: &SqlStore,
    tenant: &TenantId,
    page: &Page,
) -> Result<Vec<Workspace>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        workspace_columns!(),
        " FROM workspaces WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3"
    ))
    .bind(tenant.as_str())
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_workspaces"))?;
    rows.iter().map(read_workspace).collect()
}

pub(crate) async fn delete_workspace(
    store: &SqlStore,
    tenant: &TenantId,
    id: &WorkspaceId,
) -> Result<(), StoreError> {
    const OP: &str = "delete_workspace";
    let mut tx = store.begin_write(OP).await?;
    let (tenant, id_text) = (tenant.as_str(), id.as_str());
    for (sql, what) in [
        (
            "SELECT id FROM sessions WHERE tenant_id = $1 AND workspace_id = $2 \
             ORDER BY id LIMIT 1",
            "session",
        ),
        (
            "SELECT id FROM sandboxes WHERE tenant_id = $1 AND workspace_id = $2 \
             AND state = 'running' ORDER BY id LIMIT 1",
            "running sandbox",
        ),
    ] {
        let user = sqlx::query(sql)
            .bind(tenant)
            .bind(id_text)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db(OP))?;
        if let Some(user) = user {
            return Err(StoreError::Conflict {
                entity: "workspace",
                id: id.to_string(),
                reason: format!(
                    "{what} {} uses it",
                    Reader::new(&user, "workspace", "id").text("id")?
                ),
            });
        }
    }
    for sql in [
        "UPDATE sandboxes SET workspace_id = NULL WHERE tenant_id = $1 AND workspace_id = $2",
        "UPDATE snapshots SET workspace_id = NULL WHERE tenant_id = $1 AND workspace_id = $2",
    ] {
        sqlx::query(sql)
            .bind(tenant)
            .bind(id_text)
            .execute(&mut *tx)
            .await
            .map_err(db(OP))?;
    }
    let done = sqlx::query("DELETE FROM workspaces WHERE tenant_id = $1 AND id = $2")
        .bind(tenant)
        .bind(id_text)
        .execute(&mut *tx)
        .await
        .map_err(db(OP))?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound {
            entity: "workspace",
            id: id.to_string(),
        });
    }
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn find_workspace_by_root(
    store: &SqlStore,
    tenant: &TenantId,
    root: &str,
) -> Result<Option<Workspace>, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        workspace_columns!(),
        " FROM workspaces WHERE tenant_id = $1 AND root = $2"
    ))
    .bind(tenant.as_str())
    .bind(root)
    .fetch_optional(&store.pool)
    .await
    .map_err(db("find_workspace_by_root"))?;
    row.as_ref().map(read_workspace).transpose()
}

fn read_workspace(row: &AnyRow) -> Result<Workspace, StoreError> {
    let r = Reader::new(row, "workspace", "id");
    Ok(Workspace {
        id: r.parsed("id", WorkspaceId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        name: r.text("name")?,
        root: r.opt_text("root")?,
        created_at: r.time("created_at")?,
    })
}

// ---- sandboxes ----

macro_rules! sandbox_columns {
    () => {
        "id, tenant_id, workspace_id, backend, node, state, spec, pid, created_at, updated_at, \
         last_active_at, expires_at, run_id, pause"
    };
}

pub(crate) async fn create_sandbox(store: &SqlStore, sb: &SandboxRecord) -> Result<(), StoreError> {
    const OP: &str = "create_sandbox";
    let spec = to_json("spec", &sb.spec)?;
    let pause = sb.pause.as_ref().map(|p| to_json("pause", p)).transpose()?;
    let mut tx = store.begin_write(OP).await?;
    let tenant = sb.tenant.as_str();
    require(&mut tx, OP, "tenant", TENANT_EXISTS, tenant, tenant).await?;
    if let Some(ws) = &sb.workspace {
        require(
            &mut tx,
            OP,
            "workspace",
            WORKSPACE_EXISTS,
            tenant,
            ws.as_str(),
        )
        .await?;
    }
    sqlx::query(concat!(
        "INSERT INTO sandboxes (",
        sandbox_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    ))
    .bind(sb.id.as_str())
    .bind(tenant)
    .bind(sb.workspace.as_ref().map(|w| w.as_str()))
    .bind(&sb.backend)
    .bind(&sb.node)
    .bind(sb.state.as_str())
    .bind(spec)
    .bind(sb.pid.map(i64::from))
    .bind(sb.created_at.as_millis())
    .bind(sb.updated_at.as_millis())
    .bind(sb.last_active_at.as_millis())
    .bind(sb.expires_at.map(|t| t.as_millis()))
    .bind(sb.run.as_ref().map(|r| r.as_str()))
    .bind(pause)
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "sandbox", sb.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get_sandbox(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
) -> Result<SandboxRecord, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        sandbox_columns!(),
        " FROM sandboxes WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_sandbox"))?;
    match row {
        Some(row) => quarantine::read_one(store, Table::Sandboxes, &row, read_sandbox).await,
        None => Err(sandbox_not_found(id)),
    }
}

fn sandbox_not_found(id: &SandboxId) -> StoreError {
    StoreError::NotFound {
        entity: "sandbox",
        id: id.to_string(),
    }
}

pub(crate) async fn list_sandboxes(
    store: &SqlStore,
    tenant: &TenantId,
    state: Option<SandboxState>,
    page: &Page,
) -> Result<Vec<SandboxRecord>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        sandbox_columns!(),
        " FROM sandboxes WHERE tenant_id = $1 AND ($2 = '' OR state = $2) AND id > $3 \
          ORDER BY id LIMIT $4"
    ))
    .bind(tenant.as_str())
    .bind(state.map_or("", SandboxState::as_str))
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_sandboxes"))?;
    quarantine::read_rows(store, Table::Sandboxes, &rows, read_sandbox).await
}

pub(crate) async fn set_sandbox_state(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
    state: SandboxState,
) -> Result<SandboxRecord, StoreError> {
    // Only a running sandbox has a process.
    let sql = if state == SandboxState::Running {
        concat!(
            "UPDATE sandboxes SET state = $1, updated_at = $2, pause = NULL \
             WHERE tenant_id = $3 AND id = $4 \
             RETURNING ",
            sandbox_columns!()
        )
    } else {
        concat!(
            "UPDATE sandboxes SET state = $1, updated_at = $2, pid = NULL, pause = NULL \
             WHERE tenant_id = $3 AND id = $4 RETURNING ",
            sandbox_columns!()
        )
    };
    let row = sqlx::query(sql)
        .bind(state.as_str())
        .bind(store.clock.now().as_millis())
        .bind(tenant.as_str())
        .bind(id.as_str())
        .fetch_optional(&store.pool)
        .await
        .map_err(db("set_sandbox_state"))?;
    match row {
        Some(row) => quarantine::read_one(store, Table::Sandboxes, &row, read_sandbox).await,
        None => Err(sandbox_not_found(id)),
    }
}

pub(crate) async fn pause_sandbox(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
    pause: &SandboxPause,
) -> Result<SandboxRecord, StoreError> {
    let json = to_json("pause", pause)?;
    let row = sqlx::query(concat!(
        "UPDATE sandboxes SET state = 'paused', updated_at = $1, pid = NULL, pause = $2 \
         WHERE tenant_id = $3 AND id = $4 AND state = 'running' RETURNING ",
        sandbox_columns!()
    ))
    .bind(store.clock.now().as_millis())
    .bind(json)
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("pause_sandbox"))?;
    match row {
        Some(row) => quarantine::read_one(store, Table::Sandboxes, &row, read_sandbox).await,
        None => Err(not_in_state(store, tenant, id, "running").await),
    }
}

pub(crate) async fn resume_sandbox(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
    pid: Option<u32>,
) -> Result<SandboxRecord, StoreError> {
    let now = store.clock.now().as_millis();
    let row = sqlx::query(concat!(
        "UPDATE sandboxes SET state = 'running', updated_at = $1, last_active_at = $1, \
         pid = $2, pause = NULL WHERE tenant_id = $3 AND id = $4 AND state = 'paused' RETURNING ",
        sandbox_columns!()
    ))
    .bind(now)
    .bind(pid.map(i64::from))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("resume_sandbox"))?;
    match row {
        Some(row) => quarantine::read_one(store, Table::Sandboxes, &row, read_sandbox).await,
        None => Err(not_in_state(store, tenant, id, "paused").await),
    }
}

/// Why a conditional state change found no row: the sandbox is missing,
/// or it is not `expected`.
async fn not_in_state(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
    expected: &str,
) -> StoreError {
    match get_sandbox(store, tenant, id).await {
        Ok(record) => StoreError::Conflict {
            entity: "sandbox",
            id: id.to_string(),
            reason: format!("it is {}, not {expected}", record.state),
        },
        Err(err) => err,
    }
}

pub(crate) async fn touch_sandbox(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SandboxId,
) -> Result<(), StoreError> {
    let done =
        sqlx::query("UPDATE sandboxes SET last_active_at = $1 WHERE tenant_id = $2 AND id = $3")
            .bind(store.clock.now().as_millis())
            .bind(tenant.as_str())
            .bind(id.as_str())
            .execute(&store.pool)
            .await
            .map_err(db("touch_sandbox"))?;
    if done.rows_affected() == 0 {
        return Err(sandbox_not_found(id));
    }
    Ok(())
}

pub(crate) async fn list_node_sandboxes(
    store: &SqlStore,
    node: &str,
    state: SandboxState,
) -> Result<Vec<SandboxRecord>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        sandbox_columns!(),
        " FROM sandboxes WHERE node = $1 AND state = $2 ORDER BY id"
    ))
    .bind(node)
    .bind(state.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_node_sandboxes"))?;
    quarantine::read_rows(store, Table::Sandboxes, &rows, read_sandbox).await
}

fn read_sandbox(row: &AnyRow) -> Result<SandboxRecord, StoreError> {
    let r = Reader::new(row, "sandbox", "id");
    let pid = match r.opt_int("pid")? {
        Some(pid) => Some(u32::try_from(pid).map_err(|_| StoreError::Corrupt {
            entity: "sandbox",
            id: r.text("id").unwrap_or_default(),
            reason: format!("column pid: {pid} is not a pid"),
        })?),
        None => None,
    };
    Ok(SandboxRecord {
        id: r.parsed("id", SandboxId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        workspace: r.opt_parsed("workspace_id", WorkspaceId::parse)?,
        backend: r.text("backend")?,
        node: r.text("node")?,
        state: r.parsed("state", known(SandboxState::parse))?,
        spec: r.json("spec")?,
        pid,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        last_active_at: r.time("last_active_at")?,
        expires_at: r.opt_time("expires_at")?,
        run: r.opt_parsed("run_id", RunId::parse)?,
        pause: r.opt_json("pause")?,
    })
}
