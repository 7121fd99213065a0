//! A session's conversation history, sequenced per session like its events.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::model::{Message, Role};
use paddock_core::store::{Lease, StoreError, StoredMessage};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, is_foreign_key_violation, to_i64, to_json};
use crate::fence;
use crate::open::SqlStore;
use crate::quarantine::{self, Table};
use crate::records::require;
use crate::rows::Reader;
use crate::runs::{self, RUN_EXISTS};
use crate::sessions::{self, Counter};

macro_rules! message_columns {
    () => {
        "tenant_id, session_id, seq, run_id, role, content, created_at"
    };
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn parse_role(text: &str) -> Result<Role, String> {
    match text {
        "system" => Ok(Role::System),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "tool" => Ok(Role::Tool),
        other => Err(format!("unknown role {other:?}")),
    }
}

/// Appends with the session's next sequence number; `seq` of the argument is
/// ignored, everything else is stored as given.
pub(crate) async fn append(
    store: &SqlStore,
    lease: &Lease,
    message: &StoredMessage,
) -> Result<StoredMessage, StoreError> {
    const OP: &str = "append_message";
    let mut tx = store.begin_write(OP).await?;
    fence::check(&mut tx, store.engine, OP, lease, &message.session).await?;
    let stored = insert(&mut tx, OP, message).await?;
    tx.commit().await.map_err(db(OP))?;
    Ok(stored)
}

/// [`append`] inside the caller's fenced write transaction.
pub(crate) async fn insert(
    conn: &mut AnyConnection,
    op: &'static str,
    message: &StoredMessage,
) -> Result<StoredMessage, StoreError> {
    let content = to_json("message.content", &message.message.content)?;
    let seq = sessions::next(
        &mut *conn,
        op,
        Counter::Messages,
        &message.tenant,
        &message.session,
    )
    .await?;
    sqlx::query(concat!(
        "INSERT INTO messages (",
        message_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
    ))
    .bind(message.tenant.as_str())
    .bind(message.session.as_str())
    .bind(to_i64("seq", seq)?)
    .bind(message.run.as_str())
    .bind(role_text(message.message.role))
    .bind(content)
    .bind(message.created_at.as_millis())
    .execute(&mut *conn)
    .await
    .map_err(|e| {
        // the session was found above, so the run is what the key refused:
        // no run of this tenant (checked by the key, not by a query first, to
        // save a round trip on every append)
        if is_foreign_key_violation(&e) {
            runs::not_found(&message.run)
        } else {
            db(op)(e)
        }
    })?;
    Ok(StoredMessage {
        seq,
        ..message.clone()
    })
}

/// The history in order. With `through_run`, the messages of that run and of the
/// runs before it: run ids sort by creation time and a session's runs follow one
/// another, so that is every message whose run id sorts at or before it. A fork
/// keeps its copied messages' original (older) runs, so the rule holds there too.
pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
    through_run: Option<&RunId>,
) -> Result<Vec<StoredMessage>, StoreError> {
    const OP: &str = "list_messages";
    let rows = match through_run {
        None => {
            sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages WHERE tenant_id = $1 AND session_id = $2 ORDER BY seq"
            ))
            .bind(tenant.as_str())
            .bind(session.as_str())
            .fetch_all(&store.pool)
            .await
        }
        Some(run) => {
            let mut conn = store.pool.acquire().await.map_err(db(OP))?;
            require(
                &mut conn,
                OP,
                "run",
                RUN_EXISTS,
                tenant.as_str(),
                run.as_str(),
            )
            .await?;
            sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages WHERE tenant_id = $1 AND session_id = $2 AND run_id <= $3 \
                 ORDER BY seq"
            ))
            .bind(tenant.as_str())
            .bind(session.as_str())
            .bind(run.as_str())
            .fetch_all(&mut *conn)
            .await
        }
    }
    .map_err(db(OP))?;
    quarantine::read_rows(store, Table::Messages, &rows, read_message).await
}

/// The messages with `seq > after_seq`, in order.
pub(crate) async fn list_after(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
    after_seq: u64,
) -> Result<Vec<StoredMessage>, StoreError> {
    const OP: &str = "list_messages_after";
    let rows = sqlx::query(concat!(
        "SELECT ",
        message_columns!(),
        " FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .bind(to_i64("after_seq", after_seq)?)
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    quarantine::read_rows(store, Table::Messages, &rows, read_message).await
}

fn read_message(row: &AnyRow) -> Result<StoredMessage, StoreError> {
    let r = Reader::new(row, "message", "session_id");
    Ok(StoredMessage {
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        session: r.parsed("session_id", SessionId::parse)?,
        run: r.parsed("run_id", RunId::parse)?,
        seq: r.count("seq")?,
        message: Message {
            role: r.parsed("role", parse_role)?,
            content: r.json("content")?,
        },
        created_at: r.time("created_at")?,
    })
}
