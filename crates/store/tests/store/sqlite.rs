//! The Store contract on SQLite (a fresh file per test), plus SQLite specifics.

use crate::contract;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::store::{ManualClock, Store, StoreError};
use paddock_store::{Engine, SqlStore, StoreOptions};
use sqlx::Connection;

use contract::StoreFactory;

struct SqliteFactory {
    dir: tempfile::TempDir,
}

impl SqliteFactory {
    fn url(&self) -> String {
        format!("sqlite://{}/paddock.db?mode=rwc", self.dir.path().display())
    }

    async fn cleanup(&self) {}
}

#[async_trait]
impl StoreFactory for SqliteFactory {
    async fn open(&self, clock: Arc<ManualClock>) -> anyhow::Result<Arc<dyn Store>> {
        let options = StoreOptions {
            clock,
            ..StoreOptions::default()
        };
        Ok(Arc::new(SqlStore::open_with(&self.url(), options).await?))
    }

    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    fn url(&self) -> String {
        SqliteFactory::url(self)
    }
}

async fn sqlite() -> anyhow::Result<Option<SqliteFactory>> {
    Ok(Some(SqliteFactory {
        dir: tempfile::tempdir()?,
    }))
}

contract_tests!(sqlite());

#[tokio::test]
async fn the_file_is_in_wal_mode_and_survives_reopening() -> anyhow::Result<()> {
    let factory = sqlite()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no factory"))?;
    let store = factory.open(contract::clock()).await?;
    assert_eq!(store.engine(), "sqlite");
    let fx = contract::fixture(&*store, "acme").await?;
    store.close().await;

    let mut raw = sqlx::SqliteConnection::connect(&factory.url()).await?;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut raw)
        .await?;
    assert_eq!(mode, "wal");
    raw.close().await?;

    let reopened = factory.open(contract::clock()).await?;
    assert_eq!(
        reopened.get_session(&fx.tenant, &fx.session.id).await?,
        fx.session
    );
    Ok(())
}

#[tokio::test]
async fn bad_locations_are_open_errors() -> anyhow::Result<()> {
    for url in [
        "sqlite:///proc/no/such/dir/paddock.db",
        "mysql://localhost/db",
        "paddock.db",
    ] {
        match SqlStore::open(url).await {
            Err(StoreError::Open { url: shown, .. }) => assert_eq!(shown, url),
            other => panic!("{url} gave {other:?}"),
        }
    }
    assert_eq!(Engine::from_url("sqlite://x.db"), Some(Engine::Sqlite));
    Ok(())
}

#[tokio::test]
async fn a_read_only_file_fails_writes_without_hanging() -> anyhow::Result<()> {
    let factory = sqlite()
        .await?
        .ok_or_else(|| anyhow::anyhow!("no factory"))?;
    let store = factory.open(contract::clock()).await?;
    contract::fixture(&*store, "acme").await?;
    store.close().await;
    let url = factory.url().replace("mode=rwc", "mode=ro");
    let read_only = SqlStore::open_with(&url, StoreOptions::default()).await?;
    let write = tokio::time::timeout(
        Duration::from_secs(10),
        read_only.acquire_lease("session:x", "node-a", contract::TTL),
    )
    .await?;
    assert!(
        matches!(
            write,
            Err(StoreError::Database {
                operation: "acquire_lease",
                ..
            })
        ),
        "{write:?}"
    );
    Ok(())
}

/// The database on a small loop-mounted file system that fills mid-use
/// (root and loop devices; reported SKIPPED otherwise, a failure with
/// `PADDOCK_REQUIRE_LOOP=1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_then_they_work_again() -> anyhow::Result<()> {
    let Some(fs) = contract::loop_fs::LoopFs::mount_or_skip("the SQLite full-disk test", 32)?
    else {
        return Ok(());
    };
    let url = format!("sqlite://{}/paddock.db?mode=rwc", fs.path().display());
    let store = Arc::new(SqlStore::open(&url).await?);
    let result = contract::full_disk::a_full_disk_fails_writes_then_they_work_again(
        store.clone(),
        &fs,
        false,
    )
    .await;
    store.close().await;
    result
}
