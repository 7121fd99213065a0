//! A session's conversation history, sequenced per session like its events.

use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::model::{Message, Role};
use paddock_core::store::{Lease, SharedHistory, StoreError, StoredMessage, visible_messages};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::checkpoints;
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

/// Most sessions one history reads through: a fork of a fork of ... of a
/// session. A fork deeper than this is refused when it is made.
pub(crate) const MAX_SHARED_DEPTH: usize = 32;

/// The history in order. With `through_run`, the messages of that run and of the
/// runs before it: run ids sort by creation time and a session's runs follow one
/// another, so that is every message whose run id sorts at or before it. A fork
/// keeps its parent's messages' original (older) runs, so the rule holds there too.
pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
    through_run: Option<&RunId>,
) -> Result<Vec<StoredMessage>, StoreError> {
    const OP: &str = "list_messages";
    if let Some(run) = through_run {
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
    }
    let mut history = history(store, tenant, session).await?;
    if let Some(run) = through_run {
        history.retain(|m| m.run.as_str() <= run.as_str());
    }
    Ok(history)
}

/// The messages with `seq > after_seq`, in order.
pub(crate) async fn list_after(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
    after_seq: u64,
) -> Result<Vec<StoredMessage>, StoreError> {
    let mut history = history(store, tenant, session).await?;
    history.retain(|m| m.seq > after_seq);
    Ok(history)
}

/// The session's whole history: for a fork that shares its parent's, the
/// part of the parent's history it shares ([`SharedHistory`], read the same
/// way, so through every fork above it) followed by its own messages; the
/// parent's messages are given as the fork's. Otherwise its own messages.
pub(crate) async fn history(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<StoredMessage>, StoreError> {
    // the session, then each parent whose history the one before shares
    let mut chain: Vec<(SessionId, Option<SharedHistory>)> = Vec::new();
    let mut current = session.clone();
    loop {
        let row = match sessions::get(store, tenant, &current).await {
            Ok(row) => row,
            // no such session of this tenant: no history, as for one without messages
            Err(StoreError::NotFound { .. }) if chain.is_empty() => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let share = row.shared_history.zip(row.forked_from);
        chain.push((current, share.as_ref().map(|(h, _)| *h)));
        let Some((_, parent)) = share else { break };
        if chain.len() > MAX_SHARED_DEPTH {
            return Err(StoreError::Invalid {
                field: "forked_from",
                reason: format!("more than {MAX_SHARED_DEPTH} forks deep"),
            });
        }
        current = parent;
    }
    let mut view: Vec<StoredMessage> = Vec::new();
    let mut below: Option<&SessionId> = None;
    for (id, share) in chain.iter().rev() {
        if let (Some(share), Some(parent)) = (share, below) {
            let rewinds = checkpoints::list_rewinds(store, tenant, parent).await?;
            view.retain(|m| m.seq <= share.upto_seq && visible_messages(&rewinds, share.at, m.seq));
        }
        view.extend(own(store, tenant, id).await?);
        below = Some(id);
    }
    for message in &mut view {
        message.session = session.clone();
    }
    Ok(view)
}

/// The messages stored under the session itself, in order.
async fn own(
    store: &SqlStore,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<Vec<StoredMessage>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        message_columns!(),
        " FROM messages WHERE tenant_id = $1 AND session_id = $2 ORDER BY seq"
    ))
    .bind(tenant.as_str())
    .bind(session.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_messages"))?;
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
