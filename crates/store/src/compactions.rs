//! Compactions of a session's history and the session's memory, both written
//! by the session's lease holder.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{Compaction, Lease, StoreError, StoredSessionMemory};
use sqlx::any::AnyRow;

use crate::error::{db, to_i64, to_json};
use crate::fence;
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::records::{SESSION_EXISTS, require};
use crate::rows::Reader;
use crate::runs::RUN_EXISTS;

macro_rules! compaction_columns {
    () => {
        "tenant_id, session_id, seq, run_id, through_seq, replaced_messages, summary, fallback, \
         tokens_before, tokens_after, created_at"
    };
}

pub(crate) async fn record(
    store: &SqlStore,
    lease: &Lease,
    c: &Compaction,
) -> Result<Compaction, StoreError> {
    const OP: &str = "record_compaction";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &c.session).await?;
    let tenant = c.tenant.as_str();
    require(
        &mut tx,
        OP,
        "session",
        SESSION_EXISTS,
        tenant,
        c.session.as_str(),
    )
    .await?;
    require(&mut tx, OP, "run", RUN_EXISTS, tenant, c.run.as_str()).await?;
    // the lease holder is the only writer of the session, so MAX + 1 is free
    let row = sqlx::query(
        "SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM compactions \
         WHERE tenant_id = $1 AND session_id = $2",
    )
    .bind(tenant)
    .bind(c.session.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db(OP))?;
    let seq = Reader::new(&row, "compaction", "n").count("n")?;
    sqlx::query(concat!(
        "INSERT INTO compactions (",
        compaction_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(tenant)
    .bind(c.session.as_str())
    .bind(to_i64("seq", seq)?)
    .bind(c.run.as_str())
    .bind(to_i64("through_seq", c.through_seq)?)
    .bind(to_i64("replaced_messages", c.replaced_messages)?)
    .bind(&c.summary)
    .bind(i64::from(c.fallback))
    .bind(to_i64("tokens_before", c.tokens_before)?)
    .bind(to_i64("tokens_after", c.tokens_after)?)
    .bind(c.created_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))?;
    Ok(Compaction { seq, ..c.clone() })
}

pub(crate) async fn latest(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Option<Compaction>, StoreError> {
    const OP: &str = "latest_compaction";
    let row = sqlx::query(concat!(
        "SELECT ",
        compaction_columns!(),
        " FROM compactions WHERE tenant_id = $1 AND session_id = $2 ORDER BY seq DESC LIMIT 1"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db(OP))?;
    row.as_ref().map(read_compaction).transpose()
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<Compaction>, StoreError> {
    const OP: &str = "list_compactions";
    let rows = sqlx::query(concat!(
        "SELECT ",
        compaction_columns!(),
        " FROM compactions WHERE tenant_id = $1 AND session_id = $2 ORDER BY seq"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    rows.iter().map(read_compaction).collect()
}

fn read_compaction(row: &AnyRow) -> Result<Compaction, StoreError> {
    let r = Reader::new(row, "compaction", "session_id");
    Ok(Compaction {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        seq: r.count("seq")?,
        through_seq: r.count("through_seq")?,
        replaced_messages: r.count("replaced_messages")?,
        summary: r.text("summary")?,
        fallback: r.int("fallback")? != 0,
        tokens_before: r.count("tokens_before")?,
        tokens_after: r.count("tokens_after")?,
        created_at: r.time("created_at")?,
    })
}

pub(crate) async fn put_session_memory(
    store: &SqlStore,
    lease: &Lease,
    m: &StoredSessionMemory,
) -> Result<(), StoreError> {
    const OP: &str = "put_session_memory";
    let memory = to_json("session memory", &m.memory)?;
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &m.session).await?;
    let tenant = m.tenant.as_str();
    require(
        &mut tx,
        OP,
        "session",
        SESSION_EXISTS,
        tenant,
        m.session.as_str(),
    )
    .await?;
    require(&mut tx, OP, "run", RUN_EXISTS, tenant, m.run.as_str()).await?;
    sqlx::query(
        "INSERT INTO session_memories (tenant_id, session_id, run_id, memory, updated_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (session_id) DO UPDATE SET run_id = excluded.run_id, \
         memory = excluded.memory, updated_at = excluded.updated_at",
    )
    .bind(tenant)
    .bind(m.session.as_str())
    .bind(m.run.as_str())
    .bind(memory)
    .bind(m.updated_at.as_millis())
    .execute(&mut *tx)
    .await
    .map_err(db(OP))?;
    tx.commit().await.map_err(db(OP))
}

pub(crate) async fn get_session_memory(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Option<StoredSessionMemory>, StoreError> {
    const OP: &str = "get_session_memory";
    let row = sqlx::query(
        "SELECT tenant_id, session_id, run_id, memory, updated_at FROM session_memories \
         WHERE tenant_id = $1 AND session_id = $2",
    )
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db(OP))?;
    quarantine::read_optional(store, Table::SessionMemories, row, |row| {
        let r = Reader::new(row, "session memory", "session_id");
        Ok(StoredSessionMemory {
            tenant: r.parsed("tenant_id", TenantId::parse)?,
            session: r.parsed("session_id", SessionId::parse)?,
            run: r.parsed("run_id", RunId::parse)?,
            memory: r.json("memory")?,
            updated_at: r.time("updated_at")?,
        })
    })
    .await
}
