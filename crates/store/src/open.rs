//! Opening a store: pool, per-connection settings, migrations.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::store::{Clock, StoreError, SystemClock};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Connection, Executor};

use crate::engine::Engine;
use crate::migrations;

/// Settings of [`SqlStore::open_with`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The clock that stamps rows and decides lease expiry.
    pub clock: Arc<dyn Clock>,
    pub max_connections: u32,
    /// How long an operation waits for a connection (including reconnecting to
    /// a database that went away) before failing with `Unavailable`: 1 s by
    /// default, so that while the database is down a request answers 503 at
    /// once instead of queueing behind others that wait.
    pub acquire_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            max_connections: 8,
            acquire_timeout: Duration::from_secs(1),
        }
    }
}

/// A [`Store`](paddock_core::store::Store) on SQLite or Postgres.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pub(crate) pool: AnyPool,
    pub(crate) engine: Engine,
    pub(crate) clock: Arc<dyn Clock>,
    /// The SQLite database file (None for Postgres and in-memory SQLite):
    /// where the write probe looks for free space.
    pub(crate) sqlite_file: Option<PathBuf>,
}

impl SqlStore {
    /// Opens the database at `url` (`sqlite://PATH?mode=rwc` or
    /// `postgres://USER@HOST:PORT/DB`) with default options and applies pending
    /// migrations.
    pub async fn open(url: &str) -> Result<SqlStore, StoreError> {
        Self::open_with(url, StoreOptions::default()).await
    }

    pub async fn open_with(url: &str, options: StoreOptions) -> Result<SqlStore, StoreError> {
        let open_error = |source| StoreError::Open {
            url: redact(url),
            source,
        };
        let engine = Engine::from_url(url)
            .ok_or_else(|| open_error("expected a sqlite: or postgres:// URL".into()))?;
        sqlx::any::install_default_drivers();
        let connect = AnyConnectOptions::from_str(&with_sqlite_create(engine, url))
            .map_err(|e| open_error(Box::new(e)))?;
        // One connection first: the pool would retry until its timeout and
        // then say only "timed out"; this says why (connection refused,
        // authentication failed, no such database).
        let first = tokio::time::timeout(
            options.acquire_timeout,
            sqlx::AnyConnection::connect_with(&connect),
        )
        .await
        .map_err(|_| {
            open_error(
                format!(
                    "no connection within {} ms",
                    options.acquire_timeout.as_millis()
                )
                .into(),
            )
        })?
        .map_err(|e| open_error(Box::new(e)))?;
        let _ = first.close().await;
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            // the ping is ours (below), not the pool's unconditional one
            .test_before_acquire(false)
            .before_acquire(move |conn, meta| {
                Box::pin(async move {
                    if left_in_transaction(conn) {
                        return Ok(false);
                    }
                    if needs_ping(engine, meta.idle_for) {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if engine == Engine::Sqlite {
                        conn.execute(SQLITE_PRAGMAS).await?;
                    }
                    Ok(())
                })
            })
            .connect_with(connect)
            .await
            .map_err(|e| open_error(Box::new(e)))?;
        migrations::run(&pool, engine).await?;
        tracing::info!(engine = engine.name(), url = %redact(url), "store opened");
        Ok(SqlStore {
            pool,
            engine,
            clock: options.clock,
            sqlite_file: sqlite_file(engine, url),
        })
    }

    pub fn engine_kind(&self) -> Engine {
        self.engine
    }

    /// Starts a transaction that will write (see [`Engine::begin_write_sql`]).
    pub(crate) async fn begin_write(
        &self,
        operation: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        self.pool
            .begin_with(self.engine.begin_write_sql())
            .await
            .map_err(crate::error::db(operation))
    }
}

/// Whether a connection came back to the pool still counted inside a
/// transaction; the pool then closes it and hands out (or opens) another.
///
/// This is what broke the store on a full disk. A write that fails with
/// `SQLITE_FULL` (or `SQLITE_IOERR`, `SQLITE_NOMEM`, `SQLITE_BUSY`) may make
/// SQLite roll the transaction back on its own. sqlx does not see that: the
/// dropped transaction queues its `ROLLBACK`, SQLite answers "no transaction
/// is active", and sqlx's depth counter stays at 1 for good. Every later
/// `begin_with` on that connection then failed with "begin_with at non-zero
/// transaction depth", even after space was freed, until a restart. One
/// check here covers every write path: the queued rollback ran before the
/// connection went idle (the pool's release ping goes through the same
/// worker after it), so the counter read here is final. On Postgres the
/// counter is kept by sqlx itself and a failed commit leaves it right; the
/// check costs an atomic load.
fn left_in_transaction(conn: &mut sqlx::AnyConnection) -> bool {
    let stuck = conn.is_in_transaction();
    if stuck {
        tracing::warn!(
            "a pooled store connection was left inside a transaction (its rollback failed); \
             closing it"
        );
    }
    stuck
}

/// The file of a `sqlite:` URL (`sqlite://PATH?..` or `sqlite:PATH`), unless
/// it is in memory.
fn sqlite_file(engine: Engine, url: &str) -> Option<PathBuf> {
    if engine != Engine::Sqlite {
        return None;
    }
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(PathBuf::from(path))
}

/// A Postgres connection idle for longer than this is pinged before it is
/// handed out.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Whether the pool pings a connection before handing it out. A ping is a
/// round trip of its own before the operation: on a loaded host each round
/// trip waits for the database process to be scheduled, and the bench saw the
/// ping take as long as the query (paddock-bench-recall, `round trip`). A
/// SQLite connection is a handle on a local file that cannot go stale, so it
/// is never pinged. A Postgres connection can be cut under the pool (server
/// restart, proxy or idle timeout); one that sat idle for more than
/// [`PING_AFTER_IDLE`] is pinged, so the pool opens a new one instead of
/// failing the caller's operation. One used within that second is handed out
/// as is: a cut in that window fails that one operation with `Unavailable`
/// (as a cut during the operation would), and the broken connection is dropped.
fn needs_ping(engine: Engine, idle_for: Duration) -> bool {
    engine == Engine::Postgres && idle_for > PING_AFTER_IDLE
}

/// Every SQLite connection: WAL (one file, readers beside the writer), foreign
/// keys enforced, and up to 5 s of waiting for another writer's lock.
const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;";

/// A SQLite URL without `mode=` gets `mode=rwc`, so the file is created.
fn with_sqlite_create(engine: Engine, url: &str) -> String {
    if engine != Engine::Sqlite || url.contains("mode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}

/// The URL with the password (if any) replaced, fit for logs and errors.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_postgres_connections_idle_past_a_second_are_pinged() {
        assert!(!needs_ping(Engine::Sqlite, Duration::from_secs(3600)));
        assert!(!needs_ping(Engine::Postgres, Duration::from_millis(10)));
        assert!(!needs_ping(Engine::Postgres, PING_AFTER_IDLE));
        assert!(needs_ping(Engine::Postgres, Duration::from_secs(2)));
    }

    #[test]
    fn the_sqlite_file_is_found_in_its_url() {
        assert_eq!(
            sqlite_file(Engine::Sqlite, "sqlite:///var/lib/p.db?mode=rwc"),
            Some(PathBuf::from("/var/lib/p.db"))
        );
        assert_eq!(
            sqlite_file(Engine::Sqlite, "sqlite:p.db"),
            Some(PathBuf::from("p.db"))
        );
        assert_eq!(sqlite_file(Engine::Sqlite, "sqlite::memory:"), None);
        assert_eq!(sqlite_file(Engine::Postgres, "postgres://h/db"), None);
    }

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(
            redact("postgres://paddock:s3cr3t@127.0.0.1:5432/db?x=1"),
            "postgres://paddock:***@127.0.0.1:5432/db?x=1"
        );
        assert_eq!(
            redact("postgres://paddock@127.0.0.1/db"),
            "postgres://paddock@127.0.0.1/db"
        );
        assert_eq!(redact("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
    }

    #[test]
    fn sqlite_files_are_created_unless_a_mode_is_given() {
        assert_eq!(
            with_sqlite_create(Engine::Sqlite, "sqlite:///a.db"),
            "sqlite:///a.db?mode=rwc"
        );
        assert_eq!(
            with_sqlite_create(Engine::Sqlite, "sqlite:///a.db?cache=shared"),
            "sqlite:///a.db?cache=shared&mode=rwc"
        );
        assert_eq!(
            with_sqlite_create(Engine::Sqlite, "sqlite:///a.db?mode=ro"),
            "sqlite:///a.db?mode=ro"
        );
        assert_eq!(
            with_sqlite_create(Engine::Postgres, "postgres://h/db"),
            "postgres://h/db"
        );
    }
}
