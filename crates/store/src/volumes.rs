//! Volume rows (the bytes live in the volume host, `paddock_core::volume`).

use paddock_core::ids::TenantId;
use paddock_core::store::{Page, StoreError};
use paddock_core::volume::{VolumeName, VolumeRecord};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_i64};
use crate::open::SqlStore;
use crate::records::{TENANT_EXISTS, page_after, page_limit, require};
use crate::rows::Reader;

fn not_found(name: &VolumeName) -> StoreError {
    StoreError::NotFound {
        entity: "volume",
        id: name.to_string(),
    }
}

pub(crate) async fn create(store: &SqlStore, v: &VolumeRecord) -> Result<(), StoreError> {
    const OP: &str = "create_volume";
    let mut tx = store.begin_write(OP).await?;
    let tenant = v.tenant.as_str();
    require(&mut tx, OP, "tenant", TENANT_EXISTS, tenant, tenant).await?;
    sqlx::query(
        "INSERT INTO volumes (tenant_id, name, quota_bytes, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(tenant)
    .bind(v.name.as_str())
    .bind(to_i64("quota_bytes", v.quota_bytes)?)
    .bind(v.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "volume", v.name.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    name: &VolumeName,
) -> Result<VolumeRecord, StoreError> {
    let row = sqlx::query(
        "SELECT tenant_id, name, quota_bytes, created_at FROM volumes \
         WHERE tenant_id = $1 AND name = $2",
    )
    .bind(tenant.as_str())
    .bind(name.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_volume"))?;
    read_volume(&row.ok_or_else(|| not_found(name))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    page: &Page,
) -> Result<Vec<VolumeRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT tenant_id, name, quota_bytes, created_at FROM volumes \
         WHERE tenant_id = $1 AND name > $2 ORDER BY name LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_volumes"))?;
    rows.iter().map(read_volume).collect()
}

pub(crate) async fn delete(
    store: &SqlStore,
    tenant: &TenantId,
    name: &VolumeName,
) -> Result<(), StoreError> {
    let done = sqlx::query("DELETE FROM volumes WHERE tenant_id = $1 AND name = $2")
        .bind(tenant.as_str())
        .bind(name.as_str())
        .execute(&store.pool)
        .await
        .map_err(db("delete_volume"))?;
    if done.rows_affected() == 0 {
        return Err(not_found(name));
    }
    Ok(())
}

fn read_volume(row: &AnyRow) -> Result<VolumeRecord, StoreError> {
    let r = Reader::new(row, "volume", "name");
    Ok(VolumeRecord {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        name: r.parsed("name", VolumeName::parse)?,
        quota_bytes: r.count("quota_bytes")?,
        created_at: r.time("created_at")?,
    })
}
