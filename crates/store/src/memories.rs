//! Project memory records and their full-text search: SQLite's FTS5 index
//! (`memories_fts`, kept by triggers) ranked by bm25, Postgres's generated
//! `tsvector` column with a GIN index ranked by `ts_rank`; both weigh the
//! relevance by recency (a record a month old counts half).

use paddock_core::ids::{MemoryId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    MEMORY_TEXT_MAX, MemoryApproval, MemoryFilter, MemoryKind, MemoryRecord, MemoryScope,
    MemoryStatus, StoreError,
};
use sqlx::any::AnyRow;

use crate::engine::Engine;
use crate::error::{db, insert_error};
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::records::{TENANT_EXISTS, require};
use crate::rows::{Reader, known};

macro_rules! memory_columns {
    ($p:literal) => {
        concat!(
            $p,
            "id, ",
            $p,
            "tenant_id, ",
            $p,
            "scope, ",
            $p,
            "workspace_id, ",
            $p,
            "project, ",
            $p,
            "kind, ",
            $p,
            "text, ",
            $p,
            "status, ",
            $p,
            "source_run_id, ",
            $p,
            "source_session_id, ",
            $p,
            "created_at, ",
            $p,
            "updated_at, ",
            $p,
            "superseded_by"
        )
    };
}

/// What a filter lets through; `$2`..`$6` are its parameters (see [`bind_filter`]).
macro_rules! filter_sql {
    () => {
        " AND ((CAST($2 AS TEXT) IS NULL AND CAST($3 AS TEXT) IS NULL) OR m.scope = 'tenant' \
         OR (m.scope = 'workspace' AND m.workspace_id = $2) \
         OR (m.scope = 'project' AND m.project = $3)) \
         AND (CAST($4 AS TEXT) IS NULL OR m.kind = $4) \
         AND ($5 = 1 OR m.status = 'active') \
         AND ($6 = 1 OR m.superseded_by IS NULL)"
    };
}

/// Relevance is divided by 1 + age in units of this (30 days, in ms).
const RECENCY_UNIT_MS: &str = "2592000000.0";

/// Most words of a query that are searched for.
const MAX_QUERY_WORDS: usize = 16;

fn not_found(id: &MemoryId) -> StoreError {
    StoreError::NotFound {
        entity: "memory",
        id: id.to_string(),
    }
}

fn check(record: &MemoryRecord) -> Result<(), StoreError> {
    let invalid = |field, reason: &str| StoreError::Invalid {
        field,
        reason: reason.to_owned(),
    };
    let text = record.text.trim();
    if text.is_empty() {
        return Err(invalid("memory.text", "empty"));
    }
    if text.chars().count() > MEMORY_TEXT_MAX {
        return Err(invalid("memory.text", "longer than 2000 characters"));
    }
    match (record.scope, &record.workspace, &record.project) {
        (MemoryScope::Tenant, None, None)
        | (MemoryScope::Workspace, Some(_), None)
        | (MemoryScope::Project, None, Some(_)) => Ok(()),
        _ => Err(invalid(
            "memory.scope",
            "workspace scope names a workspace, project scope a project, tenant scope neither",
        )),
    }
}

pub(crate) async fn create(store: &SqlStore, record: &MemoryRecord) -> Result<(), StoreError> {
    const OP: &str = "create_memory";
    check(record)?;
    let mut conn = store.pool.acquire().await.map_err(db(OP))?;
    let tenant = record.tenant.as_str();
    require(&mut conn, OP, "tenant", TENANT_EXISTS, tenant, tenant).await?;
    sqlx::query(concat!(
        "INSERT INTO memories (",
        memory_columns!(""),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    ))
    .bind(record.id.as_str())
    .bind(tenant)
    .bind(record.scope.as_str())
    .bind(record.workspace.as_ref().map(WorkspaceId::as_str))
    .bind(record.project.as_deref())
    .bind(record.kind.as_str())
    .bind(record.text.trim())
    .bind(record.status.as_str())
    .bind(record.source_run.as_ref().map(RunId::as_str))
    .bind(record.source_session.as_ref().map(SessionId::as_str))
    .bind(record.created_at.as_millis())
    .bind(record.updated_at.as_millis())
    .bind(record.superseded_by.as_ref().map(MemoryId::as_str))
    .execute(&mut *conn)
    .await
    .map_err(insert_error(OP, "memory", record.id.to_string()))?;
    Ok(())
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    id: &MemoryId,
) -> Result<MemoryRecord, StoreError> {
    const OP: &str = "get_memory";
    let row = sqlx::query(concat!(
        "SELECT ",
        memory_columns!(""),
        " FROM memories WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db(OP))?
    .ok_or_else(|| not_found(id))?;
    read_memory(&row)
}

fn limit(filter: &MemoryFilter) -> i64 {
    i64::from(filter.limit.clamp(1, paddock_core::store::MAX_PAGE))
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    filter: &MemoryFilter,
) -> Result<Vec<MemoryRecord>, StoreError> {
    const OP: &str = "list_memories";
    let sql = concat!(
        "SELECT ",
        memory_columns!("m."),
        " FROM memories m WHERE m.tenant_id = $1",
        filter_sql!(),
        " ORDER BY m.updated_at DESC, m.id DESC LIMIT $7"
    );
    let rows = bind_filter(sqlx::query(sql), tenant, filter)
        .bind(limit(filter))
        .fetch_all(&store.pool)
        .await
        .map_err(db(OP))?;
    quarantine::read_rows(store, Table::Memories, &rows, read_memory).await
}

/// The words of `query` (letters and digits, lowercased), at most
/// [`MAX_QUERY_WORDS`]: only they reach the engine's query syntax.
fn words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().take(64).collect::<String>().to_lowercase())
        .take(MAX_QUERY_WORDS)
        .collect()
}

/// Any of the words matches; the ranking prefers records with more of them.
fn match_expression(engine: Engine, words: &[String]) -> String {
    match engine {
        Engine::Sqlite => words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR "),
        Engine::Postgres => words.join(" | "),
    }
}

pub(crate) async fn search(
    store: &SqlStore,
    tenant: &TenantId,
    query: &str,
    filter: &MemoryFilter,
) -> Result<Vec<MemoryRecord>, StoreError> {
    const OP: &str = "search_memories";
    let words = words(query);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let sql = match store.engine {
        Engine::Sqlite => format!(
            "SELECT {} FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid \
             WHERE memories_fts MATCH $8 AND m.tenant_id = $1{} \
             ORDER BY bm25(memories_fts) / (1.0 + (CAST($9 AS REAL) - m.updated_at) / {RECENCY_UNIT_MS}) \
             LIMIT $7",
            memory_columns!("m."),
            filter_sql!(),
        ),
        Engine::Postgres => format!(
            "SELECT {} FROM memories m, to_tsquery('english', $8) q \
             WHERE m.search @@ q AND m.tenant_id = $1{} \
             ORDER BY CAST(ts_rank(m.search, q) AS DOUBLE PRECISION) \
             / (1.0 + CAST($9 - m.updated_at AS DOUBLE PRECISION) / {RECENCY_UNIT_MS}) DESC \
             LIMIT $7",
            memory_columns!("m."),
            filter_sql!(),
        ),
    };
    let rows = bind_filter(sqlx::query(&sql), tenant, filter)
        .bind(limit(filter))
        .bind(match_expression(store.engine, &words))
        .bind(store.clock.now().as_millis())
        .fetch_all(&store.pool)
        .await
        .map_err(db(OP))?;
    quarantine::read_rows(store, Table::Memories, &rows, read_memory).await
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Binds `$1` (the tenant) and the filter's `$2`..`$6`.
fn bind_filter<'q>(query: Query<'q>, tenant: &'q TenantId, filter: &'q MemoryFilter) -> Query<'q> {
    query
        .bind(tenant.as_str())
        .bind(filter.workspace.as_ref().map(WorkspaceId::as_str))
        .bind(filter.project.as_deref())
        .bind(filter.kind.map(MemoryKind::as_str))
        .bind(i64::from(filter.include_proposed))
        .bind(i64::from(filter.include_superseded))
}

pub(crate) async fn supersede(
    store: &SqlStore,
    tenant: &TenantId,
    old: &MemoryId,
    new: &MemoryId,
) -> Result<MemoryRecord, StoreError> {
    const OP: &str = "supersede_memory";
    if old == new {
        return Err(StoreError::Invalid {
            field: "superseded_by",
            reason: "a record cannot supersede itself".to_owned(),
        });
    }
    get(store, tenant, new).await?;
    let now = store.clock.now().as_millis();
    let done = sqlx::query(
        "UPDATE memories SET superseded_by = $3, updated_at = $4 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(old.as_str())
    .bind(new.as_str())
    .bind(now)
    .execute(&store.pool)
    .await
    .map_err(db(OP))?;
    if done.rows_affected() == 0 {
        return Err(not_found(old));
    }
    get(store, tenant, old).await
}

/// Makes the record active; with [`MemoryApproval::WidenToTenant`] its
/// scope becomes the tenant's (workspace and project dropped) in the same
/// statement, so no moment shows it active at the narrower scope.
pub(crate) async fn approve(
    store: &SqlStore,
    tenant: &TenantId,
    id: &MemoryId,
    approval: MemoryApproval,
) -> Result<MemoryRecord, StoreError> {
    const OP: &str = "approve_memory";
    let widen = i64::from(approval == MemoryApproval::WidenToTenant);
    let done = sqlx::query(
        "UPDATE memories SET status = 'active', updated_at = $3, \
         scope = CASE WHEN $4 = 1 THEN 'tenant' ELSE scope END, \
         workspace_id = CASE WHEN $4 = 1 THEN NULL ELSE workspace_id END, \
         project = CASE WHEN $4 = 1 THEN NULL ELSE project END \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id.as_str())
    .bind(store.clock.now().as_millis())
    .bind(widen)
    .execute(&store.pool)
    .await
    .map_err(db(OP))?;
    if done.rows_affected() == 0 {
        return Err(not_found(id));
    }
    get(store, tenant, id).await
}

pub(crate) async fn delete(
    store: &SqlStore,
    tenant: &TenantId,
    id: &MemoryId,
) -> Result<(), StoreError> {
    const OP: &str = "delete_memory";
    let done = sqlx::query("DELETE FROM memories WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id.as_str())
        .execute(&store.pool)
        .await
        .map_err(db(OP))?;
    if done.rows_affected() == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

fn read_memory(row: &AnyRow) -> Result<MemoryRecord, StoreError> {
    let r = Reader::new(row, "memory", "id");
    Ok(MemoryRecord {
        id: r.parsed("id", MemoryId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        scope: r.parsed("scope", known(MemoryScope::parse))?,
        workspace: r.opt_parsed("workspace_id", WorkspaceId::parse)?,
        project: r.opt_text("project")?,
        kind: r.parsed("kind", known(MemoryKind::parse))?,
        text: r.text("text")?,
        status: r.parsed("status", known(MemoryStatus::parse))?,
        source_run: r.opt_parsed("source_run_id", RunId::parse)?,
        source_session: r.opt_parsed("source_session_id", SessionId::parse)?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
        superseded_by: r.opt_parsed("superseded_by", MemoryId::parse)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_reach_the_query_syntax() {
        let w = words("cargo \"test\" -- NEAR(x) * OR 'build:fast'");
        assert_eq!(w, ["cargo", "test", "near", "x", "or", "build", "fast"]);
        assert_eq!(
            match_expression(Engine::Sqlite, &w[..2]),
            "\"cargo\" OR \"test\""
        );
        assert_eq!(match_expression(Engine::Postgres, &w[..2]), "cargo | test");
        assert!(words("  --- !!! ").is_empty());
        assert_eq!(words(&"a ".repeat(40)).len(), MAX_QUERY_WORDS);
    }
}
