//! Recall over project memory: full-text search (SQLite FTS5, Postgres
//! tsvector + GIN) of N memory records (default 100 000) through the store,
//! beside a plain `LIKE` scan over the same rows and a bare round trip in the
//! same run, first idle, then with writers and other searchers on the same
//! store. The floor: recall p50 under 5 ms on each engine.
//!
//!     cargo run --release -p paddock --bin paddock-bench-recall -- [--records N] [--queries N] [--load N]
//!
//! SQLite is measured in a temporary file; Postgres too when
//! `PADDOCK_TEST_POSTGRES_URL` is set (scripts/postgres-test.sh sets it):
//!
//!     scripts/postgres-test.sh cargo run --release -p paddock --bin paddock-bench-recall

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_bench_support::figures::{median, percentile};
use paddock_bench_support::wants_help;
use paddock_core::ids::{MemoryId, TenantId, WorkspaceId};
use paddock_core::store::{
    MemoryFilter, MemoryKind, MemoryRecord, MemoryScope, MemoryStatus, Store, Tenant, Workspace,
};
use paddock_store::SqlStore;
use sqlx::{AnyPool, Row};

const FLOOR_MS: f64 = 5.0;
/// Distinct words of the generated texts: with 12 words a record, a word is
/// in ~0.06% of the records (60 of 100 000), a 3-word query matches ~180.
/// Printed with the figures, since the match count drives ranked search.
const VOCABULARY: usize = 20_000;
const WORDS_PER_RECORD: usize = 12;
const INSERT_BATCH: usize = 400;

struct Args {
    records: usize,
    queries: usize,
    /// Background tasks on the store during the loaded pass.
    load: usize,
}

fn args() -> Result<Args> {
    let mut out = Args {
        records: 100_000,
        queries: 300,
        load: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value = |it: &mut dyn Iterator<Item = String>| -> Result<usize> {
            it.next()
                .with_context(|| format!("{arg} needs a number"))?
                .parse()
                .with_context(|| arg.clone())
        };
        match arg.as_str() {
            "--records" => out.records = value(&mut it)?,
            "--queries" => out.queries = value(&mut it)?,
            "--load" => out.load = value(&mut it)?,
            other => anyhow::bail!("unknown argument {other} (see --help)"),
        }
    }
    ensure!(
        out.records > 0 && out.queries > 0,
        "--records and --queries must be positive"
    );
    Ok(out)
}

/// A deterministic generator, so both engines get the same rows and queries.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below
    }
}

fn word(n: usize) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ne", "su", "ta", "vo", "ri", "pe", "zu", "go", "ba", "di", "fe", "hu",
        "ja", "ko", "le", "mo", "ny",
    ];
    format!(
        "{}{}{}{}",
        SYLLABLES[n % 20],
        SYLLABLES[(n / 20) % 20],
        SYLLABLES[(n / 400) % 20],
        SYLLABLES[(n / 8_000) % 20]
    )
}

async fn seed(
    pool: &AnyPool,
    tenant: &TenantId,
    ws: &WorkspaceId,
    n: usize,
    now: i64,
) -> Result<()> {
    let mut rng = Lcg(7);
    let mut done = 0;
    while done < n {
        let rows = INSERT_BATCH.min(n - done);
        let mut sql = String::from(
            "INSERT INTO memories (id, tenant_id, scope, workspace_id, kind, text, status, \
             created_at, updated_at) VALUES ",
        );
        for r in 0..rows {
            let b = r * 9;
            if r > 0 {
                sql.push(',');
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5,
                b + 6,
                b + 7,
                b + 8,
                b + 9
            ));
        }
        let mut query = sqlx::query(&sql);
        for _ in 0..rows {
            let text: Vec<String> = (0..WORDS_PER_RECORD)
                .map(|_| word(rng.next(VOCABULARY)))
                .collect();
            let age = i64::try_from(rng.next(365 * 86_400)).unwrap_or(0) * 1_000;
            query = query
                .bind(MemoryId::generate().to_string())
                .bind(tenant.to_string())
                .bind("workspace")
                .bind(ws.to_string())
                .bind("fact")
                .bind(text.join(" "))
                .bind("active")
                .bind(now - age)
                .bind(now - age);
        }
        query.execute(pool).await.context("inserting records")?;
        done += rows;
    }
    Ok(())
}

struct Figures {
    p50: Duration,
    p95: Duration,
    hits: usize,
}

fn figures(mut times: Vec<Duration>, hits: usize) -> Figures {
    times.sort();
    Figures {
        p50: median(&times),
        p95: percentile(&times, 0.95),
        hits,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

/// One pass over `queries`: ranked recall through the store, the `LIKE`
/// scan, and a bare round trip (`SELECT 1` through the same kind of pool:
/// what any call costs before the query does anything). True when recall
/// met the floor.
async fn measure(
    engine: &str,
    label: &str,
    store: &SqlStore,
    pool: &AnyPool,
    tenant: &TenantId,
    filter: &MemoryFilter,
    queries: &[Vec<String>],
) -> Result<bool> {
    let (mut fts, mut fts_hits) = (Vec::new(), 0);
    for q in queries {
        let t = Instant::now();
        let found = store.search_memories(tenant, &q.join(" "), filter).await?;
        fts.push(t.elapsed());
        fts_hits += found.len();
    }
    let like_sql = "SELECT id, text FROM memories WHERE tenant_id = $1 AND superseded_by IS NULL \
                    AND status = 'active' AND (text LIKE $2 OR text LIKE $3 OR text LIKE $4) \
                    ORDER BY updated_at DESC LIMIT 10";
    let (mut like, mut like_hits) = (Vec::new(), 0);
    for q in queries {
        let t = Instant::now();
        let rows = sqlx::query(like_sql)
            .bind(tenant.to_string())
            .bind(format!("%{}%", q[0]))
            .bind(format!("%{}%", q[1]))
            .bind(format!("%{}%", q[2]))
            .fetch_all(pool)
            .await?;
        like.push(t.elapsed());
        like_hits += rows
            .iter()
            .filter(|r| r.try_get::<String, _>("id").is_ok())
            .count();
    }
    let mut trip = Vec::new();
    for _ in queries {
        let t = Instant::now();
        sqlx::query("SELECT 1").fetch_one(pool).await?;
        trip.push(t.elapsed());
    }
    let fts = figures(fts, fts_hits);
    let like = figures(like, like_hits);
    let trip = figures(trip, 0);
    println!("{engine}, {label}:");
    println!(
        "  recall (full text, ranked)  p50 {:>7.3} ms  p95 {:>7.3} ms  {} hits",
        ms(fts.p50),
        ms(fts.p95),
        fts.hits
    );
    println!(
        "  LIKE scan (newest first)    p50 {:>7.3} ms  p95 {:>7.3} ms  {} hits",
        ms(like.p50),
        ms(like.p95),
        like.hits
    );
    println!(
        "  round trip (SELECT 1)       p50 {:>7.3} ms  p95 {:>7.3} ms",
        ms(trip.p50),
        ms(trip.p95)
    );
    let ok = ms(fts.p50) < FLOOR_MS;
    println!(
        "  floor: recall p50 < {FLOOR_MS} ms: {}  ({:.1}x faster than LIKE)",
        if ok { "met" } else { "MISSED" },
        ms(like.p50) / ms(fts.p50).max(1e-6)
    );
    Ok(ok)
}

/// Background work on the same store while the loaded pass runs: writers
/// adding records one by one through the store (each a transaction), and
/// searchers recalling as other runs would.
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Result<(bool, u64)>>>,
}

impl Load {
    fn start(
        store: &SqlStore,
        tenant: &TenantId,
        ws: &WorkspaceId,
        queries: &[Vec<String>],
        tasks: usize,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..tasks)
            .map(|n| {
                let (store, tenant, ws, stop) =
                    (store.clone(), tenant.clone(), ws.clone(), stop.clone());
                let queries = queries.to_vec();
                tokio::spawn(async move {
                    let writer = n % 2 == 0;
                    let mut done = 0u64;
                    let filter = MemoryFilter {
                        workspace: Some(ws.clone()),
                        limit: 10,
                        ..MemoryFilter::default()
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let q = &queries[(done as usize + n) % queries.len()];
                        if writer {
                            let now = store.now();
                            store
                                .create_memory(&MemoryRecord {
                                    id: MemoryId::generate(),
                                    tenant: tenant.clone(),
                                    scope: MemoryScope::Workspace,
                                    workspace: Some(ws.clone()),
                                    project: None,
                                    kind: MemoryKind::Fact,
                                    // words of the vocabulary, not of the queries: the
                                    // newest rows must not short-cut the LIKE scan
                                    text: (0..WORDS_PER_RECORD)
                                        .map(|i| {
                                            word((done as usize * 31 + n * 7 + i) % VOCABULARY)
                                        })
                                        .collect::<Vec<_>>()
                                        .join(" "),
                                    status: MemoryStatus::Active,
                                    source_run: None,
                                    source_session: None,
                                    created_at: now,
                                    updated_at: now,
                                    superseded_by: None,
                                })
                                .await?;
                        } else {
                            store.search_memories(&tenant, &q[0], &filter).await?;
                        }
                        done += 1;
                    }
                    Ok((writer, done))
                })
            })
            .collect();
        Load {
            stop,
            tasks: handles,
        }
    }

    /// Stops the tasks; answers (inserts, searches) they made.
    async fn stop(self) -> Result<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        let (mut writes, mut searches) = (0, 0);
        for task in self.tasks {
            let (writer, done) = tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .context("a load task did not stop")???;
            if writer {
                writes += done;
            } else {
                searches += done;
            }
        }
        Ok((writes, searches))
    }
}

async fn bench(engine: &str, url: &str, args: &Args) -> Result<bool> {
    let store = SqlStore::open(url).await.context("opening the store")?;
    // no ping before each use: a baseline query is one round trip, as the
    // store's recall is (it pings only a connection idle for over a second)
    let pool = sqlx::any::AnyPoolOptions::new()
        .test_before_acquire(false)
        .connect(url)
        .await
        .context("connecting for the baseline")?;
    let suffix = MemoryId::generate().to_string();
    let tenant = TenantId::parse(&format!("bench-{}", &suffix[suffix.len() - 12..]))?;
    store
        .ensure_tenant(&Tenant {
            id: tenant.clone(),
            name: "bench".into(),
            created_at: store.now(),
        })
        .await?;
    let ws = Workspace::new(tenant.clone(), "bench", store.now());
    store.create_workspace(&ws).await?;
    let started = Instant::now();
    seed(
        &pool,
        &tenant,
        &ws.id,
        args.records,
        store.now().as_millis(),
    )
    .await?;
    if engine == "postgres" {
        sqlx::query("ANALYZE memories").execute(&pool).await?;
    }
    println!(
        "{engine}: {} records of {WORDS_PER_RECORD} words from {VOCABULARY} stored in {:.1} s; \
         {} queries of 3 words, 10 results each",
        args.records,
        started.elapsed().as_secs_f64(),
        args.queries
    );
    let mut rng = Lcg(99);
    let queries: Vec<Vec<String>> = (0..args.queries)
        .map(|_| (0..3).map(|_| word(rng.next(VOCABULARY))).collect())
        .collect();
    let filter = MemoryFilter {
        workspace: Some(ws.id.clone()),
        limit: 10,
        ..MemoryFilter::default()
    };
    // warm both paths
    for q in queries.iter().take(10) {
        store
            .search_memories(&tenant, &q.join(" "), &filter)
            .await?;
    }
    let ok = measure(engine, "idle", &store, &pool, &tenant, &filter, &queries).await?;
    let load = Load::start(&store, &tenant, &ws.id, &queries, args.load);
    let loaded = measure(engine, "loaded", &store, &pool, &tenant, &filter, &queries).await;
    let (writes, searches) = load.stop().await?;
    println!(
        "  (load: {} writers and {} searchers on the same store did {writes} inserts and \
         {searches} searches meanwhile)",
        args.load.div_ceil(2),
        args.load / 2
    );
    let ok = ok & loaded?;
    sqlx::query("DELETE FROM memories WHERE tenant_id = $1")
        .bind(tenant.to_string())
        .execute(&pool)
        .await?;
    pool.close().await;
    store.close().await;
    Ok(ok)
}

#[tokio::main]
async fn main() -> Result<()> {
    if wants_help() {
        println!(
            "paddock-bench-recall [--records N] [--queries N] [--load N]: recall over N memory \
             records (default 100000; SQLite, and Postgres when PADDOCK_TEST_POSTGRES_URL is set) \
             beside a LIKE scan and a bare round trip, --queries searches of 3 words each \
             (default 300), idle and then with --load tasks (default 4: half inserting records, \
             half searching) on the same store"
        );
        return Ok(());
    }
    let args = args()?;
    let dir = tempfile::tempdir()?;
    let sqlite = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("bench.db").display()
    );
    let mut ok = bench("sqlite", &sqlite, &args).await?;
    match std::env::var("PADDOCK_TEST_POSTGRES_URL") {
        Ok(url) => ok &= bench("postgres", &url, &args).await?,
        Err(_) => println!("postgres: skipped (PADDOCK_TEST_POSTGRES_URL is not set)"),
    }
    ensure!(ok, "a recall floor was missed");
    Ok(())
}
