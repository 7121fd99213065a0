//! The Store contract on a real Postgres server, each test in its own schema.
//!
//! The server comes from `PADDOCK_TEST_POSTGRES_URL` (scripts/postgres-test.sh
//! starts a throwaway cluster and sets it). Unset, these tests fail where the run
//! requires Postgres (`PADDOCK_REQUIRE_POSTGRES=1`, which scripts/test.sh sets,
//! or CI) and are SKIPPED with the reason elsewhere.

use crate::contract;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::ids::RunId;
use paddock_core::store::{ManualClock, Store, StoreError};
use paddock_store::{Engine, SqlStore, StoreOptions};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Executor, PgConnection};

use contract::StoreFactory;
use contract::proxy::Proxy;

struct PgFactory {
    server_url: String,
    schema: String,
}

impl PgFactory {
    /// The server URL with this test's schema first on the search path.
    fn url_via(&self, server_url: &str) -> String {
        let separator = if server_url.contains('?') { '&' } else { '?' };
        format!(
            "{server_url}{separator}options[search_path]={}",
            self.schema
        )
    }

    async fn open_via(&self, server_url: &str, options: StoreOptions) -> anyhow::Result<SqlStore> {
        Ok(SqlStore::open_with(&self.url_via(server_url), options).await?)
    }

    async fn cleanup(&self) {
        if let Ok(mut conn) = PgConnection::connect(&self.server_url).await {
            let _ = conn
                .execute(format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema).as_str())
                .await;
            let _ = conn.close().await;
        }
    }
}

#[async_trait]
impl StoreFactory for PgFactory {
    async fn open(&self, clock: Arc<ManualClock>) -> anyhow::Result<Arc<dyn Store>> {
        let options = StoreOptions {
            clock,
            max_connections: 4,
            ..StoreOptions::default()
        };
        Ok(Arc::new(self.open_via(&self.server_url, options).await?))
    }

    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn url(&self) -> String {
        self.url_via(&self.server_url)
    }
}

/// A fresh schema on the test server, or None (skip, said) when no server is
/// configured and the run does not require one (`contract::require`).
async fn postgres() -> anyhow::Result<Option<PgFactory>> {
    let Some(server_url) = contract::require::postgres_url("a Postgres store test")? else {
        return Ok(None);
    };
    let schema = format!(
        "t_{}",
        &RunId::generate().as_str()[RunId::PREFIX.len() + 1..]
    );
    let mut conn = PgConnection::connect(&server_url).await?;
    conn.execute(format!("CREATE SCHEMA {schema}").as_str())
        .await?;
    conn.close().await?;
    Ok(Some(PgFactory { server_url, schema }))
}

contract_tests!(postgres());

#[tokio::test]
async fn an_unreachable_server_is_an_open_error_not_a_hang() -> anyhow::Result<()> {
    // nothing listens on port 1
    let url = "postgres://paddock:secret@127.0.0.1:1/paddock";
    let options = StoreOptions {
        acquire_timeout: Duration::from_secs(2),
        ..StoreOptions::default()
    };
    let opened =
        tokio::time::timeout(Duration::from_secs(20), SqlStore::open_with(url, options)).await?;
    match opened {
        Err(err @ StoreError::Open { .. }) => {
            let StoreError::Open { url: shown, .. } = &err else {
                unreachable!()
            };
            assert_eq!(shown, "postgres://paddock:***@127.0.0.1:1/paddock");
            // The cause, not the pool's "timed out".
            let mut chain = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                chain.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            assert!(chain.to_lowercase().contains("refused"), "{chain}");
        }
        other => panic!("expected an open error, got {other:?}"),
    }
    Ok(())
}

/// The server goes away under a store with open connections: every call fails
/// with `Unavailable` within the acquire timeout, none hangs or panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_gives_unavailable() -> anyhow::Result<()> {
    let Some(factory) = postgres().await? else {
        return Ok(());
    };
    let result = server_goes_away(&factory).await;
    factory.cleanup().await;
    result
}

async fn server_goes_away(factory: &PgFactory) -> anyhow::Result<()> {
    let server = PgConnectOptions::from_str(&factory.server_url)?;
    let target: SocketAddr = format!("{}:{}", server.get_host(), server.get_port()).parse()?;
    let proxy = Proxy::start(target).await?;
    let proxied_url = factory.server_url.replacen(
        &format!("{}:{}", server.get_host(), server.get_port()),
        &proxy.addr.to_string(),
        1,
    );
    let options = StoreOptions {
        clock: contract::clock(),
        acquire_timeout: Duration::from_secs(2),
        ..StoreOptions::default()
    };
    let store = factory.open_via(&proxied_url, options).await?;
    let fx = contract::fixture(&store, "acme").await?;
    let lease = contract::lease_session(&store, &fx.session, "node-a").await?;
    store.ping().await?;

    proxy.kill();
    let deadline = Duration::from_secs(20);
    let ping = tokio::time::timeout(deadline, store.ping()).await?;
    assert!(
        matches!(
            ping,
            Err(StoreError::Unavailable {
                operation: "ping",
                ..
            })
        ),
        "{ping:?}"
    );
    let event = paddock_core::store::NewEvent {
        session: fx.session.id.clone(),
        run: None,
        kind: "note".into(),
        payload: "{}".into(),
    };
    let append =
        tokio::time::timeout(deadline, store.append_event(&lease, &fx.tenant, &event)).await?;
    assert!(
        matches!(
            append,
            Err(StoreError::Unavailable {
                operation: "append_event",
                ..
            })
        ),
        "{append:?}"
    );
    let read =
        tokio::time::timeout(deadline, store.get_session(&fx.tenant, &fx.session.id)).await?;
    assert!(
        matches!(read, Err(StoreError::Unavailable { .. })),
        "{read:?}"
    );
    Ok(())
}

/// While the database is down, a call with the default options fails with
/// `Unavailable` about a second after it started (the acquire timeout), not
/// after five: a server answers 503 at once instead of piling up requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_database_fails_calls_fast_by_default() -> anyhow::Result<()> {
    let Some(factory) = postgres().await? else {
        return Ok(());
    };
    let result = fails_fast(&factory).await;
    factory.cleanup().await;
    result
}

async fn fails_fast(factory: &PgFactory) -> anyhow::Result<()> {
    let server = PgConnectOptions::from_str(&factory.server_url)?;
    let target: SocketAddr = format!("{}:{}", server.get_host(), server.get_port()).parse()?;
    let proxy = Proxy::start(target).await?;
    let proxied_url = factory.server_url.replacen(
        &format!("{}:{}", server.get_host(), server.get_port()),
        &proxy.addr.to_string(),
        1,
    );
    let options = StoreOptions {
        clock: contract::clock(),
        ..StoreOptions::default()
    };
    let store = factory.open_via(&proxied_url, options).await?;
    store.ping().await?;
    proxy.kill();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let ping = tokio::time::timeout(Duration::from_secs(20), store.ping()).await?;
        let waited = started.elapsed();
        assert!(
            matches!(ping, Err(StoreError::Unavailable { .. })),
            "{ping:?}"
        );
        // 1 s of acquire timeout plus slack for a loaded machine; the old
        // default waited 5 s.
        assert!(waited < Duration::from_millis(2500), "waited {waited:?}");
    }
    Ok(())
}

/// The fencing check and the write are one atomic step: a holder's write that is
/// already past its lease check when another node takes over either lands before
/// the takeover completes (and the new holder sees it), or is refused. Holding the
/// session row from outside parks the write right after its lease check, which
/// makes the window wide open instead of microseconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_parked_after_its_lease_check_cannot_land_after_a_takeover() -> anyhow::Result<()> {
    let Some(factory) = postgres().await? else {
        return Ok(());
    };
    let result = parked_write(&factory).await;
    factory.cleanup().await;
    result
}

async fn parked_write(factory: &PgFactory) -> anyhow::Result<()> {
    let clock = contract::clock();
    let a_store = factory.open(clock.clone()).await?;
    let b_store = factory.open(clock.clone()).await?;
    let fx = contract::fixture(&*a_store, "acme").await?;
    let a_lease = contract::lease_session(&*a_store, &fx.session, "node-a").await?;

    let mut blocker = PgConnection::connect(&factory.url_via(&factory.server_url)).await?;
    let blocker_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut blocker)
        .await?;
    blocker.execute("BEGIN").await?;
    sqlx::query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE")
        .bind(fx.session.id.as_str())
        .execute(&mut blocker)
        .await?;

    let event = paddock_core::store::NewEvent {
        session: fx.session.id.clone(),
        run: None,
        kind: "note".into(),
        payload: "{}".into(),
    };
    let a_write = {
        let (store, lease, tenant, event) = (
            a_store.clone(),
            a_lease.clone(),
            fx.tenant.clone(),
            event.clone(),
        );
        tokio::spawn(async move { store.append_event(&lease, &tenant, &event).await })
    };
    // wait until node-a's append is parked behind the blocker
    let mut monitor = PgConnection::connect(&factory.server_url).await?;
    let parked = async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
            )
            .bind(blocker_pid)
            .fetch_one(&mut monitor)
            .await?;
            if waiting > 0 {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), parked).await??;

    // node-a's lease runs out; node-b takes over and reads the log at once
    clock.advance(contract::TTL + Duration::from_secs(1));
    let b_takeover = {
        let (store, session, tenant) = (b_store.clone(), fx.session.clone(), fx.tenant.clone());
        tokio::spawn(async move {
            let lease = contract::lease_session(&*store, &session, "node-b").await?;
            let seen = store.list_events(&tenant, &session.id, 0, 100).await?;
            anyhow::Ok((lease, seen))
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    blocker.execute("COMMIT").await?;

    let a_result = tokio::time::timeout(Duration::from_secs(10), a_write).await??;
    let (b_lease, b_seen) = tokio::time::timeout(Duration::from_secs(10), b_takeover).await???;
    assert!(b_lease.token > a_lease.token);
    match a_result {
        Ok(written) => assert!(
            b_seen.contains(&written),
            "node-a's event {} landed after node-b took over without seeing it",
            written.seq
        ),
        Err(StoreError::StaleLease { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// A Postgres cluster of its own whose data directory is on a loop-mounted
/// file system (initdb and pg_ctl as the `postgres` user, found as
/// scripts/postgres-test.sh finds them), stopped on drop.
struct ClusterOnLoop {
    bin: std::path::PathBuf,
    fs: contract::loop_fs::LoopFs,
    /// The socket directory and the server log, off the loop file system.
    side: tempfile::TempDir,
    port: u16,
}

impl ClusterOnLoop {
    /// None (after saying SKIPPED why) without loop devices or Postgres.
    fn start() -> anyhow::Result<Option<ClusterOnLoop>> {
        let what = "the Postgres full-disk test";
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|b| b.join("initdb").exists())
            .max_by_key(|b| {
                b.parent()
                    .and_then(|v| v.file_name())
                    .and_then(|v| v.to_str())
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0)
            });
        let Some(bin) = bin else {
            contract::require::skip_or_fail(
                contract::require::Need::Postgres,
                what,
                "no Postgres under /usr/lib/postgresql (scripts/postgres-test.sh installs it)",
            )?;
            return Ok(None);
        };
        let Some(fs) = contract::loop_fs::LoopFs::mount_or_skip(what, 160)? else {
            return Ok(None);
        };
        let side = tempfile::Builder::new()
            .prefix("paddock-pg-loop")
            .tempdir()?;
        for dir in [fs.path(), side.path()] {
            run(std::process::Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir))?;
        }
        let data = fs.path().join("data");
        run(std::process::Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--wal-segsize=1",
            ]))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c shared_buffers=16MB \
             -c max_wal_size=8MB -c min_wal_size=2MB",
            side.path().display()
        );
        run(std::process::Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(side.path().join("server.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"]))?;
        Ok(Some(ClusterOnLoop {
            bin,
            fs,
            side,
            port,
        }))
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.side.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ClusterOnLoop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.fs.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn run(command: &mut std::process::Command) -> anyhow::Result<()> {
    let out = command.output()?;
    if !out.status.success() {
        anyhow::bail!(
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The database of a cluster on a small loop-mounted file system that
/// fills mid-use (root, loop devices and Postgres binaries; reported
/// SKIPPED otherwise, a failure with `PADDOCK_REQUIRE_LOOP=1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_then_they_work_again() -> anyhow::Result<()> {
    let Some(cluster) = ClusterOnLoop::start()? else {
        return Ok(());
    };
    let store = Arc::new(
        SqlStore::open_with(
            &cluster.url(),
            StoreOptions {
                max_connections: 4,
                ..StoreOptions::default()
            },
        )
        .await?,
    );
    let result = contract::full_disk::a_full_disk_fails_writes_then_they_work_again(
        store.clone(),
        &cluster.fs,
        true,
    )
    .await;
    store.close().await;
    if result.is_err() {
        eprintln!("server log:\n{}", cluster.log_tail());
    }
    result
}
