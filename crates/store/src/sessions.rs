//! Sessions: created by the API, renamed and archived, forked from another
//! session (optionally at one of its runs), or spawned for a subagent run.

use paddock_core::ids::{RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    HistoryPoint, Page, Session, SessionPatch, SessionStatus, SharedHistory, StoreError,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::error::{db, insert_error, to_i64};
use crate::messages::MAX_SHARED_DEPTH;
use crate::open::SqlStore;
use crate::records::{SESSION_EXISTS, WORKSPACE_EXISTS, page_after, page_limit, require};
use crate::rows::{Reader, known};
use crate::runs::{self, RUN_EXISTS};

macro_rules! session_columns {
    () => {
        "id, tenant_id, workspace_id, title, status, forked_from, forked_at_run_id, \
         parent_run_id, created_at, updated_at, history_upto_seq, history_at_message_seq, \
         history_at_event_seq"
    };
}

pub(crate) fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound {
        entity: "session",
        id: id.to_string(),
    }
}

pub(crate) async fn create(store: &SqlStore, s: &Session) -> Result<(), StoreError> {
    const OP: &str = "create_session";
    if s.forked_at_run.is_some() && s.forked_from.is_none() {
        return Err(StoreError::Invalid {
            field: "forked_at_run",
            reason: "only a fork starts at a run (forked_from is unset)".to_owned(),
        });
    }
    let mut tx = store.begin_write(OP).await?;
    let tenant = s.tenant.as_str();
    require(
        &mut tx,
        OP,
        "workspace",
        WORKSPACE_EXISTS,
        tenant,
        s.workspace.as_str(),
    )
    .await?;
    if let Some(parent) = &s.forked_from {
        require(
            &mut tx,
            OP,
            "session",
            SESSION_EXISTS,
            tenant,
            parent.as_str(),
        )
        .await?;
        if let Some(run) = &s.forked_at_run {
            // the fork point must be a run of the session forked from
            let found = sqlx::query(
                "SELECT 1 FROM runs WHERE tenant_id = $1 AND id = $2 AND session_id = $3",
            )
            .bind(tenant)
            .bind(run.as_str())
            .bind(parent.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db(OP))?;
            if found.is_none() {
                return Err(runs::not_found(run));
            }
        }
    }
    if let Some(run) = &s.parent_run {
        require(&mut tx, OP, "run", RUN_EXISTS, tenant, run.as_str()).await?;
    }
    let shared = match (&s.shared_history, &s.forked_from) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(StoreError::Invalid {
                field: "shared_history",
                reason: "only a fork shares a history (forked_from is unset)".to_owned(),
            });
        }
        (Some(history), Some(parent)) => {
            Some(resolve_shared(&mut tx, OP, s.tenant.as_str(), parent, *history).await?)
        }
    };
    // a fork sharing its parent's history numbers its own messages after
    // the parent's last one at the fork
    let first_message_seq = shared.map_or(0, |(_, parent_last)| parent_last);
    let shared = shared.map(|(history, _)| history);
    sqlx::query(concat!(
        "INSERT INTO sessions (",
        session_columns!(),
        ", last_message_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    ))
    .bind(s.id.as_str())
    .bind(tenant)
    .bind(s.workspace.as_str())
    .bind(&s.title)
    .bind(s.status.as_str())
    .bind(s.forked_from.as_ref().map(|p| p.as_str()))
    .bind(s.forked_at_run.as_ref().map(|r| r.as_str()))
    .bind(s.parent_run.as_ref().map(|r| r.as_str()))
    .bind(s.created_at.as_millis())
    .bind(s.updated_at.as_millis())
    .bind(
        shared
            .map(|h| to_i64("history_upto_seq", h.upto_seq))
            .transpose()?,
    )
    .bind(
        shared
            .map(|h| to_i64("history_at_message_seq", h.at.message_seq))
            .transpose()?,
    )
    .bind(
        shared
            .map(|h| to_i64("history_at_event_seq", h.at.event_seq))
            .transpose()?,
    )
    .bind(to_i64("last_message_seq", first_message_seq)?)
    .execute(&mut *tx)
    .await
    .map_err(insert_error(OP, "session", s.id.to_string()))?;
    tx.commit().await.map_err(db(OP))
}

/// The fork's share of `parent`'s history as stored: a point of NOW (in
/// either part) becomes where the parent stands, and the share ends there
/// at the latest; with the parent's last message number.
async fn resolve_shared(
    conn: &mut AnyConnection,
    op: &'static str,
    tenant: &str,
    parent: &SessionId,
    asked: SharedHistory,
) -> Result<(SharedHistory, u64), StoreError> {
    let row = sqlx::query(
        "SELECT id, last_message_seq, last_event_seq FROM sessions WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant)
    .bind(parent.as_str())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db(op))?
    .ok_or_else(|| not_found(parent))?;
    let r = Reader::new(&row, "session", "id");
    let (last_message, last_event) = (r.count("last_message_seq")?, r.count("last_event_seq")?);
    // how many sessions a read of the fork's history goes through
    let mut depth = 1;
    let mut above = Some(parent.clone());
    while let Some(id) = above {
        depth += 1;
        if depth > MAX_SHARED_DEPTH {
            return Err(StoreError::Invalid {
                field: "forked_from",
                reason: format!(
                    "a fork shares the history of at most {MAX_SHARED_DEPTH} sessions above it"
                ),
            });
        }
        let row = sqlx::query(
            "SELECT forked_from, history_upto_seq FROM sessions WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant)
        .bind(id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db(op))?;
        above = match row {
            Some(row) => {
                let r = Reader::new(&row, "session", "forked_from");
                match r.opt_count("history_upto_seq")? {
                    Some(_) => r.opt_parsed("forked_from", SessionId::parse)?,
                    None => None,
                }
            }
            None => None,
        };
    }
    let at = HistoryPoint {
        message_seq: asked.at.message_seq.min(last_message),
        event_seq: asked.at.event_seq.min(last_event),
    };
    let history = SharedHistory {
        upto_seq: asked.upto_seq.min(at.message_seq),
        at,
    };
    Ok((history, last_message))
}

pub(crate) async fn get(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SessionId,
) -> Result<Session, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("get_session"))?;
    read_session(&row.ok_or_else(|| not_found(id))?)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: &TenantId,
    workspace: Option<&WorkspaceId>,
    page: &Page,
) -> Result<Vec<Session>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE tenant_id = $1 AND ($2 = '' OR workspace_id = $2) AND id > $3 \
          ORDER BY id LIMIT $4"
    ))
    .bind(tenant.as_str())
    .bind(workspace.map_or("", |w| w.as_str()))
    .bind(page_after(page))
    .bind(page_limit(page))
    .fetch_all(&store.pool)
    .await
    .map_err(db("list_sessions"))?;
    rows.iter().map(read_session).collect()
}

/// Applies the patch's set fields and stamps `updated_at`, even when nothing else changes.
pub(crate) async fn update(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SessionId,
    patch: &SessionPatch,
) -> Result<Session, StoreError> {
    let row = sqlx::query(concat!(
        "UPDATE sessions SET title = COALESCE($1, title), status = COALESCE($2, status), \
         updated_at = $3 WHERE tenant_id = $4 AND id = $5 RETURNING ",
        session_columns!()
    ))
    .bind(patch.title.as_deref())
    .bind(patch.status.map(SessionStatus::as_str))
    .bind(store.clock.now().as_millis())
    .bind(tenant.as_str())
    .bind(id.as_str())
    .fetch_optional(&store.pool)
    .await
    .map_err(db("update_session"))?;
    read_session(&row.ok_or_else(|| not_found(id))?)
}

/// A per-session sequence kept on the session row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counter {
    Events,
    Messages,
    PlanVersions,
}

impl Counter {
    fn bump_sql(self) -> &'static str {
        match self {
            Counter::Events => {
                "UPDATE sessions SET last_event_seq = last_event_seq + $3 \
                 WHERE tenant_id = $1 AND id = $2 RETURNING last_event_seq AS n"
            }
            Counter::Messages => {
                "UPDATE sessions SET last_message_seq = last_message_seq + $3 \
                 WHERE tenant_id = $1 AND id = $2 RETURNING last_message_seq AS n"
            }
            Counter::PlanVersions => {
                "UPDATE sessions SET last_plan_version = last_plan_version + $3 \
                 WHERE tenant_id = $1 AND id = $2 RETURNING last_plan_version AS n"
            }
        }
    }
}

/// Takes the session's next number of `counter` inside the caller's write
/// transaction: concurrent appenders serialise on the session row (Postgres) or
/// the write lock (SQLite), and a rolled-back append leaves no gap.
pub(crate) async fn next(
    conn: &mut AnyConnection,
    operation: &'static str,
    counter: Counter,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<u64, StoreError> {
    advance(conn, operation, counter, tenant, session, 1).await
}

/// Takes the session's next `count` numbers of `counter` (like [`next`]) and
/// returns the last of them; the first is `last - count + 1`.
pub(crate) async fn advance(
    conn: &mut AnyConnection,
    operation: &'static str,
    counter: Counter,
    tenant: &TenantId,
    session: &SessionId,
    count: u64,
) -> Result<u64, StoreError> {
    let row = sqlx::query(counter.bump_sql())
        .bind(tenant.as_str())
        .bind(session.as_str())
        .bind(to_i64("count", count)?)
        .fetch_optional(conn)
        .await
        .map_err(db(operation))?;
    let row = row.ok_or_else(|| not_found(session))?;
    Reader::new(&row, "session", "id").count("n")
}

fn read_session(row: &AnyRow) -> Result<Session, StoreError> {
    let r = Reader::new(row, "session", "id");
    Ok(Session {
        id: r.parsed("id", SessionId::parse)?,
        tenant: r.parsed("tenant_id", TenantId::parse)?,
        workspace: r.parsed("workspace_id", WorkspaceId::parse)?,
        title: r.text("title")?,
        status: r.parsed("status", known(SessionStatus::parse))?,
        forked_from: r.opt_parsed("forked_from", SessionId::parse)?,
        forked_at_run: r.opt_parsed("forked_at_run_id", RunId::parse)?,
        parent_run: r.opt_parsed("parent_run_id", RunId::parse)?,
        shared_history: read_shared(&r)?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// The fork's share of its parent's history, if it has one (all three
/// columns are set together).
fn read_shared(r: &Reader<'_>) -> Result<Option<SharedHistory>, StoreError> {
    let (Some(upto_seq), Some(message_seq), Some(event_seq)) = (
        r.opt_count("history_upto_seq")?,
        r.opt_count("history_at_message_seq")?,
        r.opt_count("history_at_event_seq")?,
    ) else {
        return Ok(None);
    };
    Ok(Some(SharedHistory {
        upto_seq,
        at: HistoryPoint {
            message_seq,
            event_seq,
        },
    }))
}
