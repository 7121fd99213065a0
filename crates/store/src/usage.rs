//! What a tenant's rows take in the database, approximately: the text of
//! its messages, events and tool invocations plus a fixed cost per row
//! (keys, timestamps, index entries) for those and its checkpoints. The
//! tenant disk quota counts it beside the files (docs/architecture.md,
//! "Storage"); it is an estimate, not the pages the engine holds.

use paddock_core::ids::TenantId;
use paddock_core::store::StoreError;

use crate::error::db;
use crate::open::SqlStore;
use crate::rows::Reader;

/// What each row is charged beyond its text: keys, timestamps and its
/// index entries.
pub(crate) const ROW_OVERHEAD: i64 = 64;
/// A checkpoint row with its keys, hash and counters.
pub(crate) const CHECKPOINT_ROW: i64 = 256;

pub(crate) async fn tenant_row_bytes(
    store: &SqlStore,
    tenant: &TenantId,
) -> Result<u64, StoreError> {
    // Events and messages are keyed by session: found through the
    // tenant's sessions, by their primary keys.
    let row = sqlx::query(
        "SELECT CAST(\
           COALESCE((SELECT SUM(LENGTH(m.content)) + COUNT(*) * $2 FROM messages m \
             WHERE m.session_id IN (SELECT id FROM sessions WHERE tenant_id = $1)), 0) \
         + COALESCE((SELECT SUM(LENGTH(e.payload)) + COUNT(*) * $2 FROM run_events e \
             WHERE e.session_id IN (SELECT id FROM sessions WHERE tenant_id = $1)), 0) \
         + COALESCE((SELECT SUM(LENGTH(t.input) + COALESCE(LENGTH(t.output), 0)) \
             + COUNT(*) * $2 FROM tool_invocations t WHERE t.tenant_id = $1), 0) \
         + COALESCE((SELECT COUNT(*) * $3 FROM checkpoints c WHERE c.tenant_id = $1), 0) \
         AS BIGINT) AS n",
    )
    .bind(tenant.as_str())
    .bind(ROW_OVERHEAD)
    .bind(CHECKPOINT_ROW)
    .fetch_one(&store.pool)
    .await
    .map_err(db("tenant_row_bytes"))?;
    Reader::new(&row, "tenant", "n").count("n")
}
