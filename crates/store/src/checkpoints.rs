//! Checkpoint rows, the file blobs they stored first, and rewinds; all
//! written by the session's lease holder. The position of a checkpoint (last
//! message, event and plan version) is read from the session row inside the
//! insert, so it is where the session stood when the row was written.

use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{Checkpoint, CheckpointReason, Lease, Rewind, StoreError, StoredMessage};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, is_foreign_key_violation, to_i64};
use crate::fence;
use crate::open::SqlStore;
use crate::rows::{Reader, known};
use crate::{messages, sessions};

macro_rules! checkpoint_columns {
    () => {
        "id, tenant_id, session_id, run_id, workspace_id, reason, message_seq, event_seq, \
         plan_version, manifest_hash, file_count, bytes, new_blobs, new_bytes, created_at"
    };
}

fn not_found(id: &CheckpointId) -> StoreError {
    StoreError::NotFound {
        entity: "checkpoint",
        id: id.to_string(),
    }
}

/// A key the database refused: the run or workspace is not the tenant's.
fn reference_error(
    op: &'static str,
    what: &'static str,
    id: String,
) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| {
        if is_foreign_key_violation(&e) {
            StoreError::Invalid {
                field: what,
                reason: "names no run or workspace of the session's tenant".to_owned(),
            }
        } else {
            insert_error(op, "checkpoint", id)(e)
        }
    }
}

pub(crate) async fn create(
    store: &SqlStore,
    lease: &Lease,
    c: &Checkpoint,
    blobs: &[String],
) -> Result<Checkpoint, StoreError> {
    const OP: &str = "create_checkpoint";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &c.session).await?;
    let stored = insert(&mut tx, OP, c, blobs).await?;
    tx.commit().await.map_err(db(OP))?;
    Ok(stored)
}

/// Appends `message` and records `c` at the position that includes it, in
/// one transaction: the history never runs ahead of the checkpoint that
/// describes the workspace after it.
pub(crate) async fn create_with_message(
    store: &SqlStore,
    lease: &Lease,
    message: &StoredMessage,
    c: &Checkpoint,
    blobs: &[String],
) -> Result<(StoredMessage, Checkpoint), StoreError> {
    const OP: &str = "append_message_with_checkpoint";
    if message.session != c.session || message.tenant != c.tenant {
        return Err(StoreError::Invalid {
            field: "checkpoint.session",
            reason: "the message and the checkpoint are of different sessions".to_owned(),
        });
    }
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &c.session).await?;
    let appended = messages::insert(&mut tx, OP, message).await?;
    let stored = insert(&mut tx, OP, c, blobs).await?;
    tx.commit().await.map_err(db(OP))?;
    Ok((appended, stored))
}

/// The checkpoint row (at the session's position as of now) and its new
/// blobs, inside the caller's fenced write transaction.
async fn insert(
    conn: &mut AnyConnection,
    op: &'static str,
    c: &Checkpoint,
    blobs: &[String],
) -> Result<Checkpoint, StoreError> {
    let done = sqlx::query(concat!(
        "INSERT INTO checkpoints (",
        checkpoint_columns!(),
        ") SELECT $1, $2, $3, $4, $5, $6, last_message_seq, last_event_seq, last_plan_version, \
           $7, $8, $9, $10, $11, $12 FROM sessions WHERE tenant_id = $2 AND id = $3"
    ))
    .bind(c.id.as_str())
    .bind(c.tenant.as_str())
    .bind(c.session.as_str())
    .bind(c.run.as_str())
    .bind(c.workspace.as_str())
    .bind(c.reason.as_str())
    .bind(&c.manifest_hash)
    .bind(to_i64("file_count", c.file_count)?)
    .bind(to_i64("bytes", c.bytes)?)
    .bind(to_i64("new_blobs", c.new_blobs)?)
    .bind(to_i64("new_bytes", c.new_bytes)?)
    .bind(c.created_at.as_millis())
    .execute(&mut *conn)
    .await
    .map_err(reference_error(op, "checkpoint", c.id.to_string()))?;
    if done.rows_affected() == 0 {
        return Err(sessions::not_found(&c.session));
    }
    for hash in blobs {
        sqlx::query(
            "INSERT INTO checkpoint_blobs (tenant_id, blob_hash, checkpoint_id) \
             VALUES ($1, $2, $3) ON CONFLICT (tenant_id, blob_hash) DO NOTHING",
        )
        .bind(c.tenant.as_str())
        .bind(hash)
        .bind(c.id.as_str())
        .execute(&mut *conn)
        .await
        .map_err(db(op))?;
    }
    let row = sqlx::query(concat!(
        "SELECT ",
        checkpoint_columns!(),
        " FROM checkpoints WHERE id = $1"
    ))
    .bind(c.id.as_str())
    .fetch_one(&mut *conn)
    .await
    .map_err(db(op))?;
    read_checkpoint(&row)
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    id: &CheckpointId,
) -> Result<Checkpoint, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        checkpoint_columns!(),
        " FROM checkpoints WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_checkpoint"))?;
    read_checkpoint(&row.ok_or_else(|| not_found(id))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<Checkpoint>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        checkpoint_columns!(),
        " FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 ORDER BY id"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_checkpoints"))?;
    rows.iter().map(read_checkpoint).collect()
}

pub(crate) async fn record_rewind(
    store: &SqlStore,
    lease: &Lease,
    r: &Rewind,
) -> Result<Rewind, StoreError> {
    const OP: &str = "record_rewind";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &r.session).await?;
    let done = sqlx::query(
        "INSERT INTO rewinds (tenant_id, session_id, run_id, checkpoint_id, to_seq, to_event_seq, \
         through_seq, through_event_seq, created_at) SELECT $1, $2, $3, $4, $5, $6, \
         last_message_seq, last_event_seq, $7 FROM sessions WHERE tenant_id = $1 AND id = $2",
    )
    .bind(r.tenant.as_str())
    .bind(r.session.as_str())
    .bind(r.run.as_str())
    .bind(r.checkpoint.as_str())
    .bind(to_i64("to_seq", r.to_seq)?)
    .bind(to_i64("to_event_seq", r.to_event_seq)?)
    .bind(r.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(reference_error(OP, "rewind", r.checkpoint.to_string()))?;
    if done.rows_affected() == 0 {
        return Err(sessions::not_found(&r.session));
    }
    let row = sqlx::query(
        "SELECT last_message_seq AS n, last_event_seq AS e FROM sessions \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(r.tenant.as_str())
    .bind(r.session.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let read = Reader::new(&row, "session", "n");
    let (through_seq, through_event_seq) = (read.count("n")?, read.count("e")?);
    tx.commit().await.map_err(db(OP))?;
    Ok(Rewind {
        through_seq,
        through_event_seq,
        ..r.clone()
    })
}

pub(crate) async fn list_rewinds(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<Rewind>, StoreError> {
    let rows = sqlx::query(
        "SELECT tenant_id, session_id, run_id, checkpoint_id, to_seq, to_event_seq, through_seq, \
         through_event_seq, created_at FROM rewinds WHERE tenant_id = $1 AND session_id = $2 \
         ORDER BY through_event_seq, through_seq",
    )
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_rewinds"))?;
    rows.iter()
        .map(|row| {
            let r = Reader::new(row, "rewind", "checkpoint_id");
            Ok(Rewind {
                tenant: r.parsed("tenant_id", TenantId::parse)?,
                session: r.parsed("session_id", SessionId::parse)?,
                run: r.parsed("run_id", paddock_core::ids::RunId::parse)?,
                checkpoint: r.parsed("checkpoint_id", CheckpointId::parse)?,
                to_seq: r.count("to_seq")?,
                to_event_seq: r.count("to_event_seq")?,
                through_seq: r.count("through_seq")?,
                through_event_seq: r.count("through_event_seq")?,
                created_at: r.time("created_at")?,
            })
        })
        .collect()
}

/// The manifests of all the tenant's checkpoints (each once): what marks
/// the blobs of its part of the blob store as in use.
pub(crate) async fn manifests(
    store: &SqlStore,
    tenant: &TenantId,
) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query(
        "SELECT DISTINCT manifest_hash FROM checkpoints WHERE tenant_id = $1 ORDER BY manifest_hash",
    )
    .bind(tenant.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("checkpoint_manifests"))?;
    rows.iter()
        .map(|row| Reader::new(row, "checkpoint", "manifest_hash").text("manifest_hash"))
        .collect()
}

/// Deletes those of `ids` that may be pruned: tool-batch checkpoints of
/// the session that are not its latest and that no rewind went to (a run's
/// start, a rewind's safety checkpoint and the latest are always kept).
/// The blob rows they stored first move to the session's latest checkpoint,
/// so the blob collection keeps what later checkpoints reuse. Fenced by the
/// session's lease; returns the deleted rows.
pub(crate) async fn prune(
    store: &SqlStore,
    lease: &Lease,
    tenant: &TenantId,
    session: &SessionId,
    ids: &[CheckpointId],
) -> Result<Vec<Checkpoint>, StoreError> {
    const OP: &str = "prune_checkpoints";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, session).await?;
    let latest = sqlx::query(
        "SELECT id FROM checkpoints WHERE tenant_id = $1 AND session_id = $2          ORDER BY id DESC LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db(OP))?;
    let Some(latest) = latest else {
        return Ok(Vec::new());
    };
    let latest = Reader::new(&latest, "checkpoint", "id").text("id")?;
    let mut pruned = Vec::new();
    for id in ids {
        let row = sqlx::query(concat!(
            "SELECT ",
            checkpoint_columns!(),
            " FROM checkpoints c WHERE tenant_id = $1 AND session_id = $2 AND id = $3               AND id <> $4 AND reason = 'tool_batch'               AND NOT EXISTS (SELECT 1 FROM rewinds r WHERE r.checkpoint_id = c.id)"
        ))
        .bind(tenant.as_str())
        .bind(session.as_str())
        .bind(id.as_str())
        .bind(&latest)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db(OP))?;
        let Some(row) = row else { continue };
        let checkpoint = read_checkpoint(&row)?;
        sqlx::query("UPDATE checkpoint_blobs SET checkpoint_id = $1 WHERE checkpoint_id = $2")
            .bind(&latest)
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db(OP))?;
        sqlx::query("DELETE FROM checkpoints WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db(OP))?;
        pruned.push(checkpoint);
    }
    tx.commit().await.map_err(db(OP))?;
    Ok(pruned)
}

fn read_checkpoint(row: &AnyRow) -> Result<Checkpoint, StoreError> {
    let r = Reader::new(row, "checkpoint", "id");
    Ok(Checkpoint {
        id: r.parsed("id", CheckpointId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("run_id", paddock_core::ids::RunId::parse)?,
        workspace: r.parsed("workspace_id", paddock_core::ids::WorkspaceId::parse)?,
        reason: r.parsed("reason", known(CheckpointReason::parse))?,
        message_seq: r.count("message_seq")?,
        event_seq: r.count("event_seq")?,
        plan_version: r.count("plan_version")?,
        manifest_hash: r.text("manifest_hash")?,
        file_count: r.count("file_count")?,
        bytes: r.count("bytes")?,
        new_blobs: r.count("new_blobs")?,
        new_bytes: r.count("new_bytes")?,
        created_at: r.time("created_at")?,
    })
}
