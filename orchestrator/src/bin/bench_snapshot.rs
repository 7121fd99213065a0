//! Snapshot and restore through real sandboxes, beside the host's
//! `tar | zstd -T0 -3` and `zstd -dc | tar -x` on the same workspace, in one
//! run; and a fork of a 100 MiB snapshot into 5 sandboxes beside one restore
//! of it. The floors: snapshot and restore each at least 0.7x the
//! baseline's throughput, the fork under 3x one restore.
//!
//! The paddock side is the service the API calls (no HTTP: the archive
//! never crosses it): a snapshot is the guest packing /workspace and
//! streaming it over the sandbox connection into the blob store; a restore
//! makes a workspace and a sandbox and streams the blob into the guest,
//! which unpacks it with every safety check. Needs root, GNU tar, the zstd
//! CLI and a release `paddock-guest`:
//!
//!     cargo build --release -p paddock-guest
//!     cargo run --release -p paddock --bin paddock-bench-snapshot -- [--runs N] [--dir DIR]
//!
//! DIR (default /dev/shm, else the temp dir) holds the data directory and
//! the baseline's files: on tmpfs both sides measure CPU and syscalls rather
//! than the disk's metadata latency (see crates/snapshot/benches/throughput.rs).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_api::service::commands::{CreateSandbox, CreateWorkspace};
use paddock_api::service::{CreateSnapshot, RestoreSnapshot};
use paddock_api::{SandboxService, ServiceConfig};
use paddock_bench_support::figures::{median, mib, rate, timed};
use paddock_bench_support::workspace::{Shape, build as build_workspace};
use paddock_bench_support::{baseline, wants_help};
use paddock_core::ids::{SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::Store;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_store::SqlStore;
use tokio_util::sync::CancellationToken;

const FLOOR: f64 = 0.7;
const FORK_FLOOR: f64 = 3.0;
const FORKS: u32 = 5;

const USAGE: &str = "\
usage: paddock-bench-snapshot [--runs N] [--dir DIR]

Snapshot, restore and a fork into 5 through real sandboxes, beside the host's
tar | zstd -T0 -3 and zstd -dc | tar -x on the same workspace. Needs root, GNU
tar, the zstd CLI and a release paddock-guest (cargo build --release -p
paddock-guest).
  --runs N   timed runs (default 3; medians are reported)
  --dir DIR  where the data directory and the baseline's files go
             (default /dev/shm, else the temp dir)";

fn main() -> Result<()> {
    if wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    let (runs, dir) = parse_args()?;
    baseline::require_tools()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(runs, &dir))
}

fn parse_args() -> Result<(usize, PathBuf)> {
    let mut runs = 3;
    let shm = PathBuf::from("/dev/shm");
    let mut dir = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--runs", Some(n)) => runs = n.parse().context("--runs takes a number")?,
            ("--dir", Some(d)) => dir = PathBuf::from(d),
            _ => bail!("unknown argument {arg:?}\n{USAGE}"),
        }
    }
    ensure!(runs > 0, "--runs must be more than 0");
    Ok((runs, dir))
}

struct Bench {
    service: Arc<SandboxService>,
    store: Arc<dyn Store>,
    tenant: TenantId,
    workspaces: PathBuf,
    shutdown: CancellationToken,
}

async fn bench(runs: usize, dir: &Path) -> Result<()> {
    let scratch = tempfile::Builder::new()
        .prefix("paddock-bench-snapshot-")
        .tempdir_in(dir)?;
    let data = scratch.path().join("data");
    fs::create_dir_all(data.join("tmp"))?;
    let node = format!("bench-{}", std::process::id());
    let guest_bin = locate_guest_bin(None).context("build paddock-guest first (--release)")?;
    let mut native = NativeConfig::new(guest_bin);
    native.cgroup_parent = format!("paddock/{node}");
    native.temp_root = Some(data.join("tmp"));
    let backend: Arc<dyn paddock_core::sandbox::SandboxBackend> =
        Arc::new(NativeBackend::new(native));
    let url = format!("sqlite://{}", data.join("paddock.db").display());
    let store: Arc<dyn Store> = Arc::new(SqlStore::open(&url).await?);
    let mut config = ServiceConfig::new(node, data.join("workspaces"));
    config.blobs = Some(Arc::new(paddock_snapshot::LocalBlobStore::open(
        data.join("blobs"),
    )?));
    let shutdown = CancellationToken::new();
    let service = SandboxService::new(store.clone(), backend, config, shutdown.child_token());
    let tenant = TenantId::parse("bench")?;
    service
        .register_tenants(std::slice::from_ref(&tenant))
        .await?;
    let bench = Bench {
        service,
        store,
        tenant,
        workspaces: data.join("workspaces"),
        shutdown,
    };
    let result = measure(&bench, runs, scratch.path()).await;
    bench.service.shutdown().await;
    bench.shutdown.cancel();
    bench.store.close().await;
    result
}

async fn measure(bench: &Bench, runs: usize, scratch: &Path) -> Result<()> {
    let (full_ws, full_dir) = bench.workspace("full").await?;
    let (files, bytes) = build_workspace(&full_dir, Shape::FULL)?;
    let (half_ws, half_dir) = bench.workspace("half").await?;
    let (half_files, half_bytes) = build_workspace(&half_dir, Shape::HALF)?;
    println!(
        "workspace: {files} files, {:.1} MiB; fork snapshot: {half_files} files, {:.1} MiB; cores: {}",
        mib(bytes),
        mib(half_bytes),
        std::thread::available_parallelism()?.get()
    );
    let full_sandbox = bench.sandbox(Some(full_ws)).await?;
    let half_sandbox = bench.sandbox(Some(half_ws)).await?;
    let half_snapshot = bench.snapshot(&half_sandbox).await?;
    let base_archive = scratch.join("baseline.tar.zst");

    let mut t = Times::default();
    for run in 0..runs {
        // Alternate who goes first, so neither always pays for the other's
        // dirty pages or a cold cache.
        let ours_first = run % 2 == 0;
        let mut snapshot = None;
        for ours in [ours_first, !ours_first] {
            if ours {
                let start = Instant::now();
                snapshot = Some(bench.snapshot(&full_sandbox).await?);
                t.snapshot.push(start.elapsed());
            } else {
                t.base_pack
                    .push(timed(|| baseline::pack(&full_dir, &base_archive))?);
            }
        }
        let snapshot = snapshot.context("no snapshot")?;
        for ours in [ours_first, !ours_first] {
            if ours {
                let start = Instant::now();
                let restored = bench.restore(&snapshot, 1).await?;
                t.restore.push(start.elapsed());
                bench.discard(&restored).await?;
            } else {
                let target = scratch.join(format!("baseline-restore-{run}"));
                t.base_unpack
                    .push(timed(|| baseline::unpack(&base_archive, &target))?);
                fs::remove_dir_all(&target)?;
            }
        }
        let start = Instant::now();
        let one = bench.restore(&half_snapshot, 1).await?;
        t.one_of_half.push(start.elapsed());
        bench.discard(&one).await?;
        let start = Instant::now();
        let forks = bench.restore(&half_snapshot, FORKS).await?;
        t.fork.push(start.elapsed());
        bench.discard(&forks).await?;
        let start = Instant::now();
        let empty = bench.sandbox(None).await?;
        t.sandbox_start.push(start.elapsed());
        bench.discard(&[empty]).await?;
        bench
            .service
            .delete_snapshot(&bench.tenant, &snapshot)
            .await?;
    }

    let archive = fs::metadata(&base_archive)?.len();
    println!(
        "baseline archive {:.1} MiB; median of {runs} runs (MB/s of workspace content):",
        mib(archive)
    );
    println!(
        "  {:<26} {:>22} {:>22} {:>8} {:>8}",
        "", "paddock (sandboxes)", "host tar | zstd", "ratio", "floor"
    );
    let snap_ratio = row("snapshot 200 MiB", bytes, &t.snapshot, &t.base_pack);
    let restore_ratio = row("restore 200 MiB", bytes, &t.restore, &t.base_unpack);
    let one = median(&t.one_of_half);
    let fork = median(&t.fork);
    let fork_ratio = fork.as_secs_f64() / one.as_secs_f64();
    println!(
        "  {:<26} {:>22} {:>22} {:>7.2}x {:>8}",
        format!("fork 100 MiB into {FORKS}"),
        format!("{:.2} s", fork.as_secs_f64()),
        format!("one restore {:.2} s", one.as_secs_f64()),
        fork_ratio,
        format!("< {FORK_FLOOR}x")
    );
    println!(
        "  (an empty sandbox starts in {:.0} ms; every restore includes one per sandbox)",
        median(&t.sandbox_start).as_secs_f64() * 1e3
    );
    let met = snap_ratio >= FLOOR && restore_ratio >= FLOOR && fork_ratio < FORK_FLOOR;
    println!("floors: {}", if met { "met" } else { "NOT met" });
    if !met {
        bail!("a floor was not met");
    }
    Ok(())
}

impl Bench {
    async fn workspace(&self, name: &str) -> Result<(WorkspaceId, PathBuf)> {
        let view = self
            .service
            .create_workspace(
                &self.tenant,
                CreateWorkspace {
                    name: name.to_owned(),
                    quota_bytes: None,
                },
            )
            .await?;
        let dir = self.workspaces.join(view.id.as_str());
        Ok((view.id, dir))
    }

    async fn sandbox(&self, workspace: Option<WorkspaceId>) -> Result<SandboxId> {
        let view = self
            .service
            .create_sandbox(
                &self.tenant,
                CreateSandbox {
                    workspace,
                    ..CreateSandbox::default()
                },
            )
            .await?;
        Ok(view.id)
    }

    async fn snapshot(&self, sandbox: &SandboxId) -> Result<SnapshotId> {
        let command = CreateSnapshot {
            excludes: Vec::new(),
            max_files: Some(100_000),
            max_bytes: Some(1 << 30),
            session: None,
        };
        let view = self
            .service
            .create_snapshot(&self.tenant, sandbox, command)
            .await?;
        Ok(view.id)
    }

    async fn restore(&self, snapshot: &SnapshotId, count: u32) -> Result<Vec<SandboxId>> {
        let command = RestoreSnapshot {
            count,
            ..RestoreSnapshot::default()
        };
        let views = self
            .service
            .restore_snapshot(&self.tenant, snapshot, command)
            .await?;
        Ok(views.into_iter().map(|v| v.id).collect())
    }

    /// Destroys the sandboxes and removes their workspaces (not timed).
    async fn discard(&self, sandboxes: &[SandboxId]) -> Result<()> {
        for id in sandboxes {
            let view = self.service.delete_sandbox(&self.tenant, id).await?;
            if let Some(workspace) = view.workspace {
                fs::remove_dir_all(self.workspaces.join(workspace.as_str()))?;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Times {
    snapshot: Vec<Duration>,
    base_pack: Vec<Duration>,
    restore: Vec<Duration>,
    base_unpack: Vec<Duration>,
    one_of_half: Vec<Duration>,
    fork: Vec<Duration>,
    sandbox_start: Vec<Duration>,
}

fn row(what: &str, bytes: u64, ours: &[Duration], baseline: &[Duration]) -> f64 {
    let (ours, base) = (median(ours), median(baseline));
    let ratio = rate(bytes, ours) / rate(bytes, base);
    println!(
        "  {what:<26} {:>22} {:>22} {ratio:>7.2}x {:>8}",
        format!(
            "{:.1} MB/s ({:.2} s)",
            rate(bytes, ours),
            ours.as_secs_f64()
        ),
        format!(
            "{:.1} MB/s ({:.2} s)",
            rate(bytes, base),
            base.as_secs_f64()
        ),
        format!(">= {FLOOR}x")
    );
    ratio
}
