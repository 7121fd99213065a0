//! Volume snapshot rows (the bytes are read-only snapshots in the volume
//! host, `paddock_core::volume`).

use paddock_core::ids::TenantId;
use paddock_core::store::{Page, StoreError};
use paddock_core::volume::{VolumeName, VolumeSnapshotRecord};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error};
use crate::open::SqlStore;
use crate::records::{page_after, page_limit, require};
use crate::rows::Reader;

const VOLUME_EXISTS: &str = "SELECT 1 FROM volumes WHERE tenant_id = $1 AND name = $2";
const COLUMNS: &str = "tenant_id, volume, name, created_at";

fn not_found(volume: &VolumeName, name: &VolumeName) -> StoreError {
    StoreError::NotFound {
        entity: "volume snapshot",
        id: format!("{volume}/{name}"),
    }
}

pub(crate) async fn create(store: &SqlStore, s: &VolumeSnapshotRecord) -> Result<(), StoreError> {
    const OP: &str = "create_volume_snapshot";
    let mut tx = store.begin_write(OP).await?;
    let tenant = s.tenant.as_str();
    require(
        &mut tx,
        OP,
        "volume",
        VOLUME_EXISTS,
        tenant,
        s.volume.as_str(),
    )
    .await?;
    sqlx::query(
        "INSERT INTO volume_snapshots (tenant_id, volume, name, created_at) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(tenant)
    .bind(s.volume.as_str())
    .bind(s.name.as_str())
    .bind(s.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(
        OP,
        "volume snapshot",
        format!("{}/{}", s.volume, s.name),
    ))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    volume: &VolumeName,
    name: &VolumeName,
) -> Result<VolumeSnapshotRecord, StoreError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM volume_snapshots \
         WHERE tenant_id = $1 AND volume = $2 AND name = $3"
    ))
    .bind(tenant.as_str())
    .bind(volume.as_str())
    .bind(name.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_volume_snapshot"))?;
    read(&row.ok_or_else(|| not_found(volume, name))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    volume: &VolumeName,
    page: &Page,
) -> Result<Vec<VolumeSnapshotRecord>, StoreError> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM volume_snapshots \
         WHERE tenant_id = $1 AND volume = $2 AND name > $3 ORDER BY name LIMIT $4"
    ))
    .bind(tenant.as_str())
    .bind(volume.as_str())
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_volume_snapshots"))?;
    rows.iter().map(read).collect()
}

pub(crate) async fn delete(
    store: &SqlStore,
    tenant: &TenantId,
    volume: &VolumeName,
    name: &VolumeName,
) -> Result<(), StoreError> {
    let done = sqlx::query(
        "DELETE FROM volume_snapshots WHERE tenant_id = $1 AND volume = $2 AND name = $3",
    )
    .bind(tenant.as_str())
    .bind(volume.as_str())
    .bind(name.as_str())
    .execute(&store.pool)
    .await
    .map_err(db("delete_volume_snapshot"))?;
    if done.rows_affected() == 0 {
        return Err(not_found(volume, name));
    }
    Ok(())
}

fn read(row: &AnyRow) -> Result<VolumeSnapshotRecord, StoreError> {
    let r = Reader::new(row, "volume snapshot", "name");
    Ok(VolumeSnapshotRecord {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        volume: r.parsed("volume", VolumeName::parse)?,
        name: r.parsed("name", VolumeName::parse)?,
        created_at: r.time("created_at")?,
    })
}
