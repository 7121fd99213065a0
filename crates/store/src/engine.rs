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

    /// Reads a run's row for a steering post and keeps its queue from
    /// closing until the post commits. On Postgres `FOR UPDATE` makes a
    /// concurrent close wait for the post (and the post wait for a close,
    /// then see the closed row), and two posts to one run take turns, so
    /// each takes the next of the run's ids (migration 0011); SQLite already
    /// holds the write lock.
    pub(crate) fn steering_post_sql(self) -> &'static str {
        match self {
            Engine::Sqlite => {
                "SELECT id, state, steering_closed_at FROM runs WHERE tenant_id = $1 AND id = $2"
            }
            Engine::Postgres => {
                "SELECT id, state, steering_closed_at FROM runs WHERE tenant_id = $1 AND id = $2 \
                 FOR UPDATE"
            }
        }
    }

    /// Reads a run's row to close its steering queue, keeping posts out
    /// until the close commits (`FOR UPDATE` on Postgres: a post in progress
    /// commits first and its message is seen).
    pub(crate) fn steering_close_sql(self) -> &'static str {
        match self {
            Engine::Sqlite => {
                "SELECT id, steering_closed_at FROM runs WHERE tenant_id = $1 AND id = $2"
            }
            Engine::Postgres => {
                "SELECT id, steering_closed_at FROM runs WHERE tenant_id = $1 AND id = $2 FOR UPDATE"
            }
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
