//! Deleting a session: it and the sessions of the subagents its runs
//! spawned, with every row that names them or their runs, planned first
//! ([`plan`]) so the caller can find which of the blobs their checkpoints
//! stored first other checkpoints still name, then done in one transaction
//! that checks the plan still holds ([`delete`]).
//!
//! A session another session was forked from is not deleted: the fork reads
//! its history (and its copied goals and plan name its runs).

use std::collections::BTreeSet;

use paddock_core::ids::{CheckpointId, SessionId, TenantId};
use paddock_core::store::{SessionDeletion, StoreError};
use sqlx::AnyConnection;

use crate::error::db;
use crate::open::SqlStore;
use crate::rows::Reader;
use crate::sessions;

/// Most sessions named in a refusal.
const NAMED: usize = 10;

/// The states a run can still change from.
const UNFINISHED: &str = "state NOT IN ('completed', 'cancelled', 'failed', 'interrupted')";

pub(crate) async fn plan(
    store: &SqlStore,
    tenant: &TenantId,
    id: &SessionId,
) -> Result<SessionDeletion, StoreError> {
    const OP: &str = "plan_session_delete";
    let mut conn = store.pool.acquire().await.map_err(db(OP))?;
    plan_on(&mut conn, OP, tenant, id).await
}

async fn plan_on(
    conn: &mut AnyConnection,
    op: &'static str,
    tenant: &TenantId,
    id: &SessionId,
) -> Result<SessionDeletion, StoreError> {
    let t = tenant.as_str();
    let found = sqlx::query("SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2")
        .bind(t)
        .bind(id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db(op))?;
    if found.is_none() {
        return Err(sessions::not_found(id));
    }
    // the session, then its subagents' sessions, breadth first
    let mut order = vec![id.clone()];
    let mut next = 0;
    while let Some(session) = order.get(next).cloned() {
        next += 1;
        let children = texts(
            conn,
            op,
            "SELECT s.id AS id FROM sessions s JOIN runs r \
               ON r.tenant_id = s.tenant_id AND r.id = s.parent_run_id \
             WHERE r.tenant_id = $1 AND r.session_id = $2 ORDER BY s.id",
            t,
            session.as_str(),
        )
        .await?;
        for child in children {
            let child = SessionId::parse(&child).map_err(|e| corrupt("id", e))?;
            if !order.contains(&child) {
                order.push(child);
            }
        }
    }
    let members: BTreeSet<&SessionId> = order.iter().collect();
    let mut forks = Vec::new();
    let mut running = Vec::new();
    let mut checkpoints = Vec::new();
    let mut owned_blobs = Vec::new();
    for session in &order {
        let s = session.as_str();
        for fork in texts(
            conn,
            op,
            "SELECT id FROM sessions WHERE tenant_id = $1 AND forked_from = $2 ORDER BY id",
            t,
            s,
        )
        .await?
        {
            let fork = SessionId::parse(&fork).map_err(|e| corrupt("id", e))?;
            if !members.contains(&fork) {
                forks.push(fork.to_string());
            }
        }
        running.extend(
            texts(
                conn,
                op,
                &format!(
                    "SELECT id FROM runs WHERE tenant_id = $1 AND session_id = $2 AND {UNFINISHED} \
                     ORDER BY id"
                ),
                t,
                s,
            )
            .await?,
        );
        for checkpoint in texts(
            conn,
            op,
            "SELECT id FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 ORDER BY id",
            t,
            s,
        )
        .await?
        {
            checkpoints.push(CheckpointId::parse(&checkpoint).map_err(|e| corrupt("id", e))?);
        }
        owned_blobs.extend(
            texts(
                conn,
                op,
                "SELECT b.blob_hash AS id FROM checkpoint_blobs b JOIN checkpoints c \
                   ON c.id = b.checkpoint_id \
                 WHERE c.tenant_id = $1 AND c.session_id = $2 AND b.legacy = 0 \
                 ORDER BY b.blob_hash",
                t,
                s,
            )
            .await?,
        );
    }
    if !forks.is_empty() {
        return Err(refused(id, "forked into", &forks, "delete the forks first"));
    }
    if !running.is_empty() {
        return Err(refused(
            id,
            "has unfinished runs",
            &running,
            "cancel them first",
        ));
    }
    Ok(SessionDeletion {
        sessions: order,
        checkpoints,
        owned_blobs,
    })
}

pub(crate) async fn delete(
    store: &SqlStore,
    tenant: &TenantId,
    deletion: &SessionDeletion,
    keep: &[(String, CheckpointId)],
) -> Result<Vec<String>, StoreError> {
    const OP: &str = "delete_sessions";
    let Some(id) = deletion.sessions.first() else {
        return Ok(Vec::new());
    };
    let t = tenant.as_str();
    let mut tx = store.begin_write(OP).await?;
    let now = plan_on(&mut tx, OP, tenant, id).await?;
    if now != *deletion {
        return Err(StoreError::Conflict {
            entity: "session",
            id: id.to_string(),
            reason: "it changed while being deleted; try again".to_owned(),
        });
    }
    let deleted: BTreeSet<&str> = deletion.checkpoints.iter().map(|c| c.as_str()).collect();
    for (hash, owner) in keep {
        if deleted.contains(owner.as_str()) {
            return Err(StoreError::Invalid {
                field: "keep",
                reason: format!("blob {hash} is kept for checkpoint {owner}, which is deleted"),
            });
        }
        sqlx::query(
            "UPDATE checkpoint_blobs SET checkpoint_id = $3 WHERE tenant_id = $1 AND blob_hash = $2 \
             AND EXISTS (SELECT 1 FROM checkpoints WHERE tenant_id = $1 AND id = $3)",
        )
        .bind(t)
        .bind(hash)
        .bind(owner.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db(OP))?;
        // the row moves only to a checkpoint that exists; else nothing moved
        let moved = sqlx::query(
            "SELECT 1 FROM checkpoint_blobs WHERE tenant_id = $1 AND blob_hash = $2 \
             AND checkpoint_id = $3",
        )
        .bind(t)
        .bind(hash)
        .bind(owner.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db(OP))?;
        if moved.is_none() {
            return Err(StoreError::Conflict {
                entity: "session",
                id: id.to_string(),
                reason: format!("checkpoint {owner} changed while being deleted; try again"),
            });
        }
    }
    let kept: BTreeSet<&str> = keep.iter().map(|(hash, _)| hash.as_str()).collect();
    let mut freed: Vec<String> = deletion
        .owned_blobs
        .iter()
        .filter(|hash| !kept.contains(hash.as_str()))
        .cloned()
        .collect();
    let mut manifests = BTreeSet::new();
    for session in &deletion.sessions {
        let s = session.as_str();
        manifests.extend(
            texts(
                &mut tx,
                OP,
                "SELECT DISTINCT manifest_hash AS id FROM checkpoints \
                 WHERE tenant_id = $1 AND session_id = $2",
                t,
                s,
            )
            .await?,
        );
        for sql in [
            // rows from before 0013 may keep another tenant's copy: they stay
            "UPDATE checkpoint_blobs SET checkpoint_id = NULL WHERE legacy = 1 AND checkpoint_id IN \
             (SELECT id FROM checkpoints WHERE tenant_id = $1 AND session_id = $2)",
            "DELETE FROM checkpoint_blobs WHERE checkpoint_id IN \
             (SELECT id FROM checkpoints WHERE tenant_id = $1 AND session_id = $2)",
            "DELETE FROM rewinds WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM steering_messages WHERE tenant_id = $1 AND run_id IN \
             (SELECT id FROM runs WHERE tenant_id = $1 AND session_id = $2)",
            "DELETE FROM tool_invocations WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM run_events WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM messages WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM goals WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM tasks WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM plans WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM compactions WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM session_memories WHERE tenant_id = $1 AND session_id = $2",
            "DELETE FROM checkpoints WHERE tenant_id = $1 AND session_id = $2",
            // snapshots are the snapshot API's: they stay, without the session
            "UPDATE snapshots SET session_id = NULL WHERE tenant_id = $1 AND session_id = $2",
            // the links between the deleted sessions and runs, so each can go
            "UPDATE sessions SET parent_run_id = NULL, forked_at_run_id = NULL \
             WHERE tenant_id = $1 AND id = $2",
            "UPDATE runs SET parent_run_id = NULL, resumed_from = NULL \
             WHERE tenant_id = $1 AND session_id = $2",
        ] {
            exec(&mut tx, OP, sql, t, s).await?;
        }
    }
    for session in &deletion.sessions {
        exec(
            &mut tx,
            OP,
            "DELETE FROM runs WHERE tenant_id = $1 AND session_id = $2",
            t,
            session.as_str(),
        )
        .await?;
    }
    // subagents' sessions first: nothing names them any more
    for session in deletion.sessions.iter().rev() {
        exec(
            &mut tx,
            OP,
            "DELETE FROM sessions WHERE tenant_id = $1 AND id = $2",
            t,
            session.as_str(),
        )
        .await?;
    }
    for manifest in manifests {
        let named =
            sqlx::query("SELECT 1 FROM checkpoints WHERE tenant_id = $1 AND manifest_hash = $2")
                .bind(t)
                .bind(&manifest)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db(OP))?;
        if named.is_none() {
            freed.push(manifest);
        }
    }
    tx.commit().await.map_err(db(OP))?;
    Ok(freed)
}

pub(crate) async fn checkpoint_manifests(
    store: &SqlStore,
    tenant: &TenantId,
) -> Result<Vec<(CheckpointId, SessionId, String)>, StoreError> {
    const OP: &str = "list_checkpoint_manifests";
    let rows = sqlx::query(
        "SELECT id, session_id, manifest_hash FROM checkpoints WHERE tenant_id = $1 ORDER BY id",
    )
    .bind(tenant.as_str())
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    rows.iter()
        .map(|row| {
            let r = Reader::new(row, "checkpoint", "id");
            Ok((
                r.parsed("id", CheckpointId::parse)?,
                r.parsed("session_id", SessionId::parse)?,
                r.text("manifest_hash")?,
            ))
        })
        .collect()
}

/// The `id` column of what `sql` (`$1` = tenant, `$2` = a session) finds.
async fn texts(
    conn: &mut AnyConnection,
    op: &'static str,
    sql: &str,
    tenant: &str,
    session: &str,
) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query(sql)
        .bind(tenant)
        .bind(session)
        .fetch_all(&mut *conn)
        .await
        .map_err(db(op))?;
    rows.iter()
        .map(|row| Reader::new(row, "session", "id").text("id"))
        .collect()
}

async fn exec(
    conn: &mut AnyConnection,
    op: &'static str,
    sql: &'static str,
    tenant: &str,
    session: &str,
) -> Result<(), StoreError> {
    sqlx::query(sql)
        .bind(tenant)
        .bind(session)
        .execute(&mut *conn)
        .await
        .map(drop)
        .map_err(db(op))
}

fn corrupt(column: &'static str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        entity: "session",
        id: column.to_owned(),
        reason: reason.to_string(),
    }
}

/// A refusal naming the first few sessions or runs in the way.
fn refused(id: &SessionId, what: &str, named: &[String], then: &str) -> StoreError {
    let mut list = named
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if named.len() > NAMED {
        list.push_str(&format!(" and {} more", named.len() - NAMED));
    }
    StoreError::Conflict {
        entity: "session",
        id: id.to_string(),
        reason: format!("{what} {list}: {then}"),
    }
}
