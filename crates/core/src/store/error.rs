//! Errors of the store port.

use super::Timestamp;

/// A database-specific cause carried as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("opening the store at {url}")]
    Open {
        /// The database URL with any password removed.
        url: String,
        #[source]
        source: BoxError,
    },
    #[error("applying migrations to the {engine} store")]
    Migrate {
        engine: &'static str,
        #[source]
        source: BoxError,
    },
    /// No such row for this tenant (rows of other tenants are not found either).
    #[error("{entity} {id} not found")]
    NotFound { entity: &'static str, id: String },
    /// The write contradicts what is stored: a duplicate id, a row still referenced.
    #[error("{entity} {id}: {reason}")]
    Conflict {
        entity: &'static str,
        id: String,
        reason: String,
    },
    #[error("lease on {resource} is held by {owner} until {expires_at}")]
    LeaseHeld {
        resource: String,
        owner: String,
        expires_at: Timestamp,
    },
    /// The lease was released, or taken over by a newer holder: its writes are refused.
    #[error("lease token {token} on {resource} is stale")]
    StaleLease { resource: String, token: u64 },
    /// A write carried a lease on another resource than the one it writes to.
    #[error("lease on {resource} does not cover {expected}")]
    WrongLease { resource: String, expected: String },
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The write would take `id` past one of its caps; `reason` names it.
    #[error("{entity} {id}: {reason}")]
    Limit {
        entity: &'static str,
        id: String,
        reason: String,
    },
    /// A stored row could not be read back (unknown enum text, bad id, ...).
    #[error("stored {entity} {id} is corrupt: {reason}")]
    Corrupt {
        entity: &'static str,
        id: String,
        reason: String,
    },
    /// The database cannot be reached (closed pool, refused or dropped connection,
    /// timed out waiting for a connection).
    #[error("store unavailable during {operation}")]
    Unavailable {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    /// The database has no room to write: the file system holding it is
    /// full (SQLite `SQLITE_FULL`, Postgres `53100 disk_full`, `ENOSPC`).
    /// Nothing of the failed write was kept; the same write succeeds once
    /// space is freed, without a restart.
    #[error("no space left to write during {operation}")]
    Full {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    #[error("database error during {operation}")]
    Database {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
}
