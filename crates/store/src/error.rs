//! Turning sqlx errors into [`StoreError`]s that name the operation.

use paddock_core::store::StoreError;
use sqlx::error::ErrorKind;

/// Maps a sqlx error of `operation`: no room to write -> `Full`,
/// unreachable database -> `Unavailable`, anything else -> `Database`.
pub(crate) fn db(operation: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| {
        if is_full(&e) {
            crate::probe::saw_full();
            tracing::warn!(operation, error = %e, "the store has no space left to write");
            StoreError::Full {
                operation,
                source: Box::new(e),
            }
        } else if is_unavailable(&e) {
            StoreError::Unavailable {
                operation,
                source: Box::new(e),
            }
        } else {
            StoreError::Database {
                operation,
                source: Box::new(e),
            }
        }
    }
}

/// SQLite's primary result code for "database or disk is full".
const SQLITE_FULL: i64 = 13;
/// Postgres' `disk_full` (class 53, insufficient resources).
const PG_DISK_FULL: &str = "53100";

/// Whether `e` says the file system under the database is full: SQLite's
/// `SQLITE_FULL` (its extended codes keep the primary one in the low byte),
/// Postgres' `disk_full`, or an I/O error `ENOSPC`.
pub(crate) fn is_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::StorageFull,
        sqlx::Error::Database(d) => {
            let code = d.code();
            let code = code.as_deref();
            if d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                code.and_then(|c| c.parse::<i64>().ok())
                    .is_some_and(|extended| extended & 0xff == SQLITE_FULL)
            } else {
                code == Some(PG_DISK_FULL)
            }
        }
        _ => false,
    }
}

fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolClosed
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        // Postgres class 08 (connection exception) and 57P (server shutting down).
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
        _ => false,
    }
}

/// Maps an INSERT's error: a duplicate key is `Conflict` ("already exists"),
/// anything else goes through [`db`].
pub(crate) fn insert_error(
    operation: &'static str,
    entity: &'static str,
    id: String,
) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| {
        if is_unique_violation(&e) {
            StoreError::Conflict {
                entity,
                id,
                reason: "already exists".to_owned(),
            }
        } else {
            db(operation)(e)
        }
    }
}

pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.kind() == ErrorKind::UniqueViolation)
}

pub(crate) fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.kind() == ErrorKind::ForeignKeyViolation)
}

/// A u64 as the database's signed 64-bit integer.
pub(crate) fn to_i64(field: &'static str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Invalid {
        field,
        reason: format!("{value} is larger than {}", i64::MAX),
    })
}

/// A value as the JSON text stored in a column.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(
    field: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid {
        field,
        reason: e.to_string(),
    })
}
