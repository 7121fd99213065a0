//! A sandbox's network changes (`network.changed`), numbered per sandbox.

use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{MAX_PAGE, NetworkChangeRecord, StoreError};
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_i64, to_json};
use crate::open::SqlStore;
use crate::records::require;
use crate::rows::Reader;

const SANDBOX_EXISTS: &str = "SELECT 1 FROM sandboxes WHERE tenant_id = $1 AND id = $2";

pub(crate) async fn append(
    store: &SqlStore,
    change: &NetworkChangeRecord,
) -> Result<NetworkChangeRecord, StoreError> {
    const OP: &str = "append_network_change";
    let tenant = change.tenant.as_str();
    let sandbox = change.sandbox.as_str();
    let mut tx = store.begin_write(OP).await?;
    require(&mut tx, OP, "sandbox", SANDBOX_EXISTS, tenant, sandbox).await?;
    // The server changes one sandbox's network one request at a time (the
    // live sandbox's lock), so MAX + 1 is free; a racing writer elsewhere
    // fails on the primary key rather than overwriting.
    let row = sqlx::query(
        "SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM network_changes WHERE sandbox_id = $1",
    )
    .bind(sandbox)
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let seq = Reader::new(&row, "network change", "n").count("n")?;
    sqlx::query(
        "INSERT INTO network_changes (tenant_id, sandbox_id, seq, old_network, new_network, \
         changed_by, cut, changed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(tenant)
    .bind(sandbox)
    .bind(to_i64("seq", seq)?)
    .bind(to_json("old", &change.old)?)
    .bind(to_json("new", &change.new)?)
    .bind(&change.by)
    .bind(to_json("cut", &change.cut)?)
    .bind(change.at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(insert_error(
        OP,
        "network change",
        format!("{sandbox}/{seq}"),
    ))?;
    tx.commit().await.map_err(db(OP))?;
    Ok(NetworkChangeRecord {
        seq,
        ..change.clone()
    })
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    sandbox: &SandboxId,
    after_seq: u64,
    limit: u32,
) -> Result<Vec<NetworkChangeRecord>, StoreError> {
    let rows = sqlx::query(
        "SELECT tenant_id, sandbox_id, seq, old_network, new_network, changed_by, cut, \
         changed_at FROM network_changes \
         WHERE tenant_id = $1 AND sandbox_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
    )
    .bind(tenant.as_str())
    .bind(sandbox.as_str())
    // past any seq there is: nothing after it
    .bind(i64::try_from(after_seq).unwrap_or(i64::MAX))
    .bind(i64::from(limit.clamp(1, MAX_PAGE)))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_network_changes"))?;
    rows.iter().map(read_change).collect()
}

fn read_change(row: &AnyRow) -> Result<NetworkChangeRecord, StoreError> {
    let r = Reader::new(row, "network change", "sandbox_id");
    Ok(NetworkChangeRecord {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        sandbox: r.parsed("sandbox_id", SandboxId::parse)?,
        seq: r.count("seq")?,
        old: r.json("old_network")?,
        new: r.json("new_network")?,
        by: r.text("changed_by")?,
        cut: r.json("cut")?,
        at: r.time("changed_at")?,
    })
}
