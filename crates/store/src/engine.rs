//! What differs between the two engines.

/// The database behind a store, chosen from the URL scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// `sqlite:` URLs (e.g. `sqlite:///var/lib/paddock/paddock.db?mode=rwc`) and
    /// `postgres://` / `postgresql://` URLs.
    pub fn from_url(url: &str) -> Option<Engine> {
        if url.starts_with("sqlite:") {
            Some(Engine::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Engine::Postgres)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }

    /// How a read-then-write transaction starts. SQLite must take the write lock
    /// up front: a deferred transaction that reads and then writes fails with
    /// SQLITE_BUSY instead of waiting when another connection wrote meanwhile.
    pub(crate) fn begin_write_sql(self) -> &'static str {
        match self {
            Engine::Sqlite => "BEGIN IMMEDIATE",
            Engine::Postgres => "BEGIN",
        }
    }

    /// Reads a lease row for a fenced write and keeps it from changing until the
    /// write commits. On Postgres `FOR SHARE` makes a concurrent acquire or
    /// release wait for the writer; SQLite already holds the database write lock.
    pub(crate) fn fence_sql(self) -> &'static str {
        match self {
            Engine::Sqlite => "SELECT owner, token FROM leases WHERE resource = $1",
            Engine::Postgres => "SELECT owner, token FROM leases WHERE resource = $1 FOR SHARE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_scheme_picks_the_engine() {
        assert_eq!(
            Engine::from_url("sqlite:///tmp/p.db?mode=rwc"),
            Some(Engine::Sqlite)
        );
        assert_eq!(Engine::from_url("sqlite://p.db"), Some(Engine::Sqlite));
        assert_eq!(
            Engine::from_url("postgres://u@127.0.0.1:5432/db"),
            Some(Engine::Postgres)
        );
        assert_eq!(
            Engine::from_url("postgresql://u@h/db"),
            Some(Engine::Postgres)
        );
        assert_eq!(Engine::from_url("mysql://u@h/db"), None);
        assert_eq!(Engine::from_url("/var/lib/p.db"), None);
    }
}
