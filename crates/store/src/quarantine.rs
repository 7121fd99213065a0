//! Rows that fail validation when read are moved to `quarantined_rows` (the
//! table, the key, the reason and the row's columns as JSON) and skipped, so
//! that one bad row does not make a whole session unreadable.
//!
//! Rows that nothing else refers to are moved: a session's messages, events
//! and goals, project memory records and a session's memory. A run is
//! referred to by its session's other rows, so a corrupt one is copied to the
//! quarantine, left in place and skipped by the listings (a read of that one
//! run is still an error). A sandbox is referred to by its snapshots and by
//! the process that may still run: a corrupt one (a `spec` that does not
//! read) is treated as a run is, and a read of that one sandbox copies it
//! too before failing. A corrupt session or plan is an error.

use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, QuarantinedRow, StoreError};
use serde_json::{Map, Value};
use sqlx::any::AnyRow;
use sqlx::{Column, Row};

use crate::error::db;
use crate::open::SqlStore;
use crate::rows::Reader;

/// A table whose rows may be quarantined, and the columns that key a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Messages,
    RunEvents,
    Memories,
    SessionMemories,
    Goals,
    Runs,
    Sandboxes,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Messages => "messages",
            Table::RunEvents => "run_events",
            Table::Memories => "memories",
            Table::SessionMemories => "session_memories",
            Table::Goals => "goals",
            Table::Runs => "runs",
            Table::Sandboxes => "sandboxes",
        }
    }

    /// The key columns, each read as text or as an integer.
    fn key(self) -> &'static [(&'static str, KeyType)] {
        match self {
            Table::Messages | Table::RunEvents => {
                &[("session_id", KeyType::Text), ("seq", KeyType::Int)]
            }
            Table::Memories | Table::Goals | Table::Runs | Table::Sandboxes => {
                &[("id", KeyType::Text)]
            }
            Table::SessionMemories => &[("session_id", KeyType::Text)],
        }
    }

    /// How the row leaves its table; None: it stays (other rows refer to it).
    fn delete_sql(self) -> Option<&'static str> {
        Some(match self {
            Table::Messages => "DELETE FROM messages WHERE session_id = $1 AND seq = $2",
            Table::RunEvents => "DELETE FROM run_events WHERE session_id = $1 AND seq = $2",
            Table::Memories => "DELETE FROM memories WHERE id = $1",
            Table::SessionMemories => "DELETE FROM session_memories WHERE session_id = $1",
            Table::Goals => "DELETE FROM goals WHERE id = $1",
            Table::Runs | Table::Sandboxes => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Text,
    Int,
}

enum KeyValue {
    Text(String),
    Int(i64),
}

/// Reads every row with `read`; a row that is [`StoreError::Corrupt`] is
/// quarantined and left out, any other error is returned.
pub(crate) async fn read_rows<T>(
    store: &SqlStore,
    table: Table,
    rows: &[AnyRow],
    read: impl Fn(&AnyRow) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        match read(row) {
            Ok(value) => out.push(value),
            Err(StoreError::Corrupt { reason, .. }) => quarantine(store, table, row, &reason).await,
            Err(other) => return Err(other),
        }
    }
    Ok(out)
}

/// [`read_rows`] for at most one row.
pub(crate) async fn read_optional<T>(
    store: &SqlStore,
    table: Table,
    row: Option<AnyRow>,
    read: impl Fn(&AnyRow) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(read_rows(store, table, std::slice::from_ref(&row), read)
        .await?
        .pop())
}

/// Reads the one row a lookup found with `read`; a row that is
/// [`StoreError::Corrupt`] is quarantined (as [`read_rows`] does) and its
/// error returned: the caller asked for that row.
pub(crate) async fn read_one<T>(
    store: &SqlStore,
    table: Table,
    row: &AnyRow,
    read: impl Fn(&AnyRow) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let read = read(row);
    if let Err(StoreError::Corrupt { reason, .. }) = &read {
        quarantine(store, table, row, reason).await;
    }
    read
}

/// Moves `row` of `table` to `quarantined_rows` in one transaction (a run
/// is copied). A row
/// that cannot be moved is still skipped by the caller (and logged): a
/// reader must not fail on it either way.
async fn quarantine(store: &SqlStore, table: Table, row: &AnyRow, reason: &str) {
    match move_row(store, table, row, reason).await {
        Ok((key, true)) => tracing::warn!(
            table = table.name(),
            key = %key,
            reason,
            "a corrupt row was quarantined"
        ),
        // a run left in place, quarantined by an earlier read
        Ok((key, false)) => tracing::debug!(
            table = table.name(),
            key = %key,
            "a quarantined row was skipped again"
        ),
        Err(error) => tracing::error!(
            table = table.name(),
            reason,
            error = %error,
            "a corrupt row was skipped but could not be quarantined"
        ),
    }
}

async fn move_row(
    store: &SqlStore,
    table: Table,
    row: &AnyRow,
    reason: &str,
) -> Result<(String, bool), StoreError> {
    const OP: &str = "quarantine_row";
    let r = Reader::new(row, "row", "session_id");
    let mut key = Vec::new();
    let mut values = Vec::new();
    for (column, kind) in table.key() {
        let value = match kind {
            KeyType::Text => KeyValue::Text(r.text(column)?),
            KeyType::Int => KeyValue::Int(r.int(column)?),
        };
        key.push(match &value {
            KeyValue::Text(t) => format!("{column}={t}"),
            KeyValue::Int(n) => format!("{column}={n}"),
        });
        values.push(value);
    }
    let key = key.join(" ");
    let tenant: Option<String> = row.try_get("tenant_id").ok();
    let raw = raw_columns(row).to_string();
    let mut tx = store.begin_write(OP).await?;
    let inserted = sqlx::query(
        "INSERT INTO quarantined_rows (table_name, row_key, tenant_id, reason, raw, quarantined_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    )
    .bind(table.name())
    .bind(key.as_str())
    .bind(tenant)
    .bind(reason)
    .bind(raw)
    .bind(store.clock.now().as_millis())
    .execute(&mut *tx)
    .await
    .map_err(db(OP))?
    .rows_affected()
        > 0;
    if let Some(sql) = table.delete_sql() {
        let mut delete = sqlx::query(sql);
        for value in values {
            delete = match value {
                KeyValue::Text(t) => delete.bind(t),
                KeyValue::Int(n) => delete.bind(n),
            };
        }
        delete.execute(&mut *tx).await.map_err(db(OP))?;
    }
    tx.commit().await.map_err(db(OP))?;
    Ok((key, inserted))
}

/// Every column of `row` as JSON: text, integer, real or null, whatever it
/// decodes as (a value of another type is null).
fn raw_columns(row: &AnyRow) -> Value {
    let mut out = Map::new();
    for column in row.columns() {
        let i = column.ordinal();
        let value = if let Ok(v) = row.try_get::<Option<String>, _>(i) {
            v.map_or(Value::Null, Value::String)
        } else if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
            v.map_or(Value::Null, Value::from)
        } else if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
            v.map_or(Value::Null, Value::from)
        } else {
            Value::Null
        };
        out.insert(column.name().to_owned(), value);
    }
    Value::Object(out)
}

pub(crate) async fn list(
    store: &SqlStore,
    tenant: Option<&TenantId>,
    limit: u32,
) -> Result<Vec<QuarantinedRow>, StoreError> {
    const OP: &str = "list_quarantined";
    let rows = sqlx::query(
        "SELECT table_name, row_key, tenant_id, reason, raw, quarantined_at FROM quarantined_rows \
         WHERE (CAST($1 AS TEXT) IS NULL OR tenant_id = $1) \
         ORDER BY quarantined_at DESC, table_name, row_key LIMIT $2",
    )
    .bind(tenant.map(TenantId::as_str))
    .bind(i64::from(limit.clamp(1, MAX_PAGE)))
    .fetch_all(&store.pool)
    .await
    .map_err(db(OP))?;
    rows.iter()
        .map(|row| {
            let r = Reader::new(row, "quarantined row", "row_key");
            Ok(QuarantinedRow {
                tenant: r.opt_text("tenant_id")?,
                table: r.text("table_name")?,
                key: r.text("row_key")?,
                reason: r.text("reason")?,
                raw: r.text("raw")?,
                quarantined_at: r.time("quarantined_at")?,
            })
        })
        .collect()
}
