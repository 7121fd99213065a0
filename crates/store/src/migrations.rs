//! The schema migrations, compiled in from `migrations/{sqlite,postgres}` and
//! applied with sqlx's migrator (which records them in `_sqlx_migrations`, refuses
//! an applied file whose text changed, and serialises concurrent nodes on Postgres).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use paddock_core::store::StoreError;
use sqlx::AnyPool;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

use crate::engine::Engine;

/// One migration file: `NNNN_description.sql`.
struct Embedded {
    file: &'static str,
    sql: &'static str,
}

macro_rules! embed {
    ($engine:literal, $($file:literal),+ $(,)?) => {
        &[$(Embedded {
            file: $file,
            sql: include_str!(concat!("../../../migrations/", $engine, "/", $file)),
        }),+]
    };
}

// Append-only: add new files at the end, never edit an applied one.
const SQLITE: &[Embedded] = embed!(
    "sqlite",
    "0001_control_plane.sql",
    "0002_agent_runtime.sql",
    "0003_sandbox_run.sql",
    "0004_memory.sql",
    "0005_checkpoints.sql",
    "0006_resumed_from.sql",
    "0007_steering.sql",
    "0008_quarantine.sql",
    "0009_steering_closed.sql",
    "0010_agent_memory_proposed.sql",
    "0011_steering_seq.sql",
    "0012_rewind_event_position.sql",
    "0013_shared_history.sql",
    "0014_queued_runs.sql",
    "0015_volumes.sql",
    "0016_sandbox_pause.sql",
    "0017_network_changes.sql",
    "0018_volume_snapshots.sql",
    "0019_run_driver.sql"
);
const POSTGRES: &[Embedded] = embed!(
    "postgres",
    "0001_control_plane.sql",
    "0002_agent_runtime.sql",
    "0003_sandbox_run.sql",
    "0004_memory.sql",
    "0005_checkpoints.sql",
    "0006_resumed_from.sql",
    "0007_steering.sql",
    "0008_quarantine.sql",
    "0009_steering_closed.sql",
    "0010_agent_memory_proposed.sql",
    "0011_steering_seq.sql",
    "0012_rewind_event_position.sql",
    "0013_shared_history.sql",
    "0014_queued_runs.sql",
    "0015_volumes.sql",
    "0016_sandbox_pause.sql",
    "0017_network_changes.sql",
    "0018_volume_snapshots.sql",
    "0019_run_driver.sql"
);

fn embedded(engine: Engine) -> &'static [Embedded] {
    match engine {
        Engine::Sqlite => SQLITE,
        Engine::Postgres => POSTGRES,
    }
}

/// `0001_control_plane.sql` -> (1, "control plane").
fn parse_file_name(file: &str) -> Option<(i64, String)> {
    let stem = file.strip_suffix(".sql")?;
    let (version, description) = stem.split_once('_')?;
    Some((version.parse().ok()?, description.replace('_', " ")))
}

#[derive(Debug)]
struct Source(Engine);

impl MigrationSource<'static> for Source {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        let migrations = embedded(self.0)
            .iter()
            .map(|m| {
                let (version, description) = parse_file_name(m.file).ok_or_else(|| {
                    format!("migration file name {} is not NNNN_name.sql", m.file)
                })?;
                Ok(Migration::new(
                    version,
                    Cow::Owned(description),
                    MigrationType::Simple,
                    Cow::Borrowed(m.sql),
                    false,
                ))
            })
            .collect::<Result<Vec<_>, BoxDynError>>();
        Box::pin(std::future::ready(migrations))
    }
}

pub(crate) async fn run(pool: &AnyPool, engine: Engine) -> Result<(), StoreError> {
    let error = |source| StoreError::Migrate {
        engine: engine.name(),
        source,
    };
    let migrator = Migrator::new(Source(engine))
        .await
        .map_err(|e| error(Box::new(e)))?;
    migrator.run(pool).await.map_err(|e| error(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file in the migrations directory is compiled in, in order.
    fn assert_embeds_directory(engine: Engine) -> anyhow::Result<()> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../migrations")
            .join(engine.name());
        let mut on_disk = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if name.ends_with(".sql") {
                on_disk.push(name);
            }
        }
        on_disk.sort();
        let listed: Vec<&str> = embedded(engine).iter().map(|m| m.file).collect();
        assert_eq!(on_disk, listed, "{} migrations", engine.name());
        for (i, file) in listed.iter().enumerate() {
            let version = parse_file_name(file).map(|(v, _)| v);
            assert_eq!(version, Some(i as i64 + 1), "{file} is out of sequence");
        }
        Ok(())
    }

    #[test]
    fn sqlite_migrations_are_all_embedded() -> anyhow::Result<()> {
        assert_embeds_directory(Engine::Sqlite)
    }

    #[test]
    fn postgres_migrations_are_all_embedded() -> anyhow::Result<()> {
        assert_embeds_directory(Engine::Postgres)
    }

    #[test]
    fn both_engines_create_the_same_tables() {
        // the tables each engine ends with, its files applied in order (a
        // table SQLite rebuilds is created twice and dropped once)
        let tables = |engine| {
            let mut names = std::collections::BTreeSet::new();
            let name = |rest: &str| {
                rest.split_whitespace()
                    .next()
                    .map(|n| n.trim_end_matches(';').to_owned())
            };
            for line in embedded(engine).iter().flat_map(|m| m.sql.lines()) {
                if let Some(created) = line.strip_prefix("CREATE TABLE ").and_then(name) {
                    names.insert(created);
                } else if let Some(dropped) = line.strip_prefix("DROP TABLE ").and_then(name) {
                    names.remove(&dropped);
                } else if let Some((from, to)) = line
                    .strip_prefix("ALTER TABLE ")
                    .and_then(|rest| rest.split_once(" RENAME TO "))
                    && let (Some(from), Some(to)) = (name(from), name(to))
                {
                    names.remove(&from);
                    names.insert(to);
                }
            }
            names.into_iter().collect::<Vec<String>>()
        };
        let sqlite = tables(Engine::Sqlite);
        assert_eq!(sqlite, tables(Engine::Postgres));
        for required in [
            "workspaces",
            "sandboxes",
            "sessions",
            "leases",
            "snapshots",
            "runs",
            "run_events",
            "tool_invocations",
            "goals",
            "plans",
            "tasks",
            "messages",
            "compactions",
            "session_memories",
            "memories",
            "quarantined_rows",
        ] {
            assert!(sqlite.iter().any(|t| t == required), "missing {required}");
        }
    }

    #[test]
    fn file_names_give_version_and_description() {
        assert_eq!(
            parse_file_name("0012_add_memory_records.sql"),
            Some((12, "add memory records".to_owned()))
        );
        assert_eq!(parse_file_name("notes.md"), None);
        assert_eq!(parse_file_name("x_y.sql"), None);
    }
}
