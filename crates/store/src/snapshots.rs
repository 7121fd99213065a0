//! Snapshot rows (the blobs themselves live in the blob store).

use paddock_core::ids::{SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{Page, SnapshotFilter, SnapshotRecord, StoreError};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, is_foreign_key_violation, to_i64};
use crate::open::SqlStore;
use crate::records::{
    SESSION_EXISTS, TENANT_EXISTS, WORKSPACE_EXISTS, page_after, page_limit, require,
};
use crate::rows::Reader;

macro_rules! snapshot_columns {
    () => {
        "id, tenant_id, workspace_id, source_sandbox_id, session_id, parent_id, file_count, \
         bytes_raw, bytes_compressed, excludes, blob_hash, created_at"
    };
}

const SANDBOX_EXISTS: &str = "SELECT 1 FROM sandboxes WHERE tenant_id = $1 AND id = $2";
pub(crate) const SNAPSHOT_EXISTS: &str = "SELECT 1 FROM snapshots WHERE tenant_id = $1 AND id = $2";

pub(crate) fn not_found(id: &SnapshotId) -> StoreError {
    StoreError::NotFound {
        entity: "snapshot",
        id: id.to_string(),
    }
}

pub(crate) async fn create(store: &SqlStore, s: &SnapshotRecord) -> Result<(), StoreError> {
    const OP: &str = "create_snapshot";
    let excludes = serde_json::to_string(&s.excludes).map_err(|e| StoreError::Invalid {
        field: "excludes",
        reason: e.to_string(),
    })?;
    let mut tx = store.begin_write(OP).await?;
    let tenant = s.tenant.as_str();
    require(&mut tx, OP, "tenant", TENANT_EXISTS, tenant, tenant).await?;
    let references: [(&'static str, &'static str, Option<&str>); 4] = [
        (
            "workspace",
            WORKSPACE_EXISTS,
            s.workspace.as_ref().map(|w| w.as_str()),
        ),
        (
            "sandbox",
            SANDBOX_EXISTS,
            s.source_sandbox.as_ref().map(|b| b.as_str()),
        ),
        (
            "session",
            SESSION_EXISTS,
            s.session.as_ref().map(|x| x.as_str()),
        ),
        (
            "snapshot",
            SNAPSHOT_EXISTS,
            s.parent.as_ref().map(|p| p.as_str()),
        ),
    ];
    for (entity, sql, id) in references {
        if let Some(id) = id {
            require(&mut tx, OP, entity, sql, tenant, id).await?;
        }
    }
    sqlx::query(concat!(
        "INSERT INTO snapshots (",
        snapshot_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    ))
    .bind(s.id.as_str())
    .bind(tenant)
    .bind(s.workspace.as_ref().map(|w| w.as_str()))
    .bind(s.source_sandbox.as_ref().map(|b| b.as_str()))
    .bind(s.session.as_ref().map(|x| x.as_str()))
    .bind(s.parent.as_ref().map(|p| p.as_str()))
    .bind(to_i64("file_count", s.file_count)?)
    .bind(to_i64("bytes_raw", s.bytes_raw)?)
    .bind(to_i64("bytes_compressed", s.bytes_compressed)?)
    .bind(excludes)
    .bind(&s.blob_hash)
    .bind(s.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "snapshot", s.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SnapshotId,
) -> Result<SnapshotRecord, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        snapshot_columns!(),
        " FROM snapshots WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_snapshot"))?;
    read_snapshot(&row.ok_or_else(|| not_found(id))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    filter: &SnapshotFilter,
    page: &Page,
) -> Result<Vec<SnapshotRecord>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        snapshot_columns!(),
        " FROM snapshots WHERE tenant_id = $1 AND ($2 = '' OR workspace_id = $2) \
          AND ($3 = '' OR session_id = $3) AND id > $4 ORDER BY id LIMIT $5"
    ))
    .bind(tenant.as_str())
    .bind(filter.workspace.as_ref().map_or("", |w| w.as_str()))
    .bind(filter.session.as_ref().map_or("", |s| s.as_str()))
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_snapshots"))?;
    rows.iter().map(read_snapshot).collect()
}

pub(crate) async fn delete(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SnapshotId,
) -> Result<(), StoreError> {
    const OP: &str = "delete_snapshot";
    let done = sqlx::query("DELETE FROM snapshots WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id.as_str())
        .execute(&store.pool)
        .await
        .map_err(|e| {
            if is_foreign_key_violation(&e) {
                StoreError::Conflict {
                    entity: "snapshot",
                    id: id.to_string(),
                    reason: "other snapshots were taken from it".to_owned(),
                }
            } else {
                db(OP)(e)
            }
        })?;
    if done.rows_affected() == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

pub(crate) async fn blob_referenced(store: &SqlStore, blob_hash: &str) -> Result<bool, StoreError> {
    // a snapshot's archive, a checkpoint's manifest, or a file a checkpoint stored
    let row = sqlx::query(
        "SELECT 1 FROM snapshots WHERE blob_hash = $1 \
         UNION ALL SELECT 1 FROM checkpoints WHERE manifest_hash = $1 \
         UNION ALL SELECT 1 FROM checkpoint_blobs WHERE blob_hash = $1 LIMIT 1",
    )
    .bind(blob_hash)
    .fetch_optional(&store.pool)
    .await
    .map_err(db("snapshot_blob_referenced"))?;
    Ok(row.is_some())
}

fn read_snapshot(row: &AnyRow) -> Result<SnapshotRecord, StoreError> {
    let r = Reader::new(row, "snapshot", "id");
    Ok(SnapshotRecord {
        id: r.parsed("id", SnapshotId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        workspace: r.opt_parsed("workspace_id", WorkspaceId::parse)?,
        source_sandbox: r.opt_parsed("source_sandbox_id", SandboxId::parse)?,
        session: r.opt_parsed("session_id", SessionId::parse)?,
        parent: r.opt_parsed("parent_id", SnapshotId::parse)?,
        file_count: r.count("file_count")?,
        bytes_raw: r.count("bytes_raw")?,
        bytes_compressed: r.count("bytes_compressed")?,
        excludes: r.parsed("excludes", |s| serde_json::from_str::<Vec<String>>(s))?,
        blob_hash: r.text("blob_hash")?,
        created_at: r.time("created_at")?,
    })
}
