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

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_api::service::commands::{CreateSandbox, CreateWorkspace};
use paddock_api::service::{CreateSnapshot, RestoreSnapshot};
use paddock_api::{SandboxService, ServiceConfig};
use paddock_core::ids::{SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::Store;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_store::SqlStore;
use tokio_util::sync::CancellationToken;

const FLOOR: f64 = 0.7;
const FORK_FLOOR: f64 = 3.0;
const FORKS: u32 = 5;

fn main() -> Result<()> {
    let (runs, dir) = parse_args()?;
    for tool in ["tar", "zstd"] {
        let found = Command::new(tool).arg("--version").output().is_ok();
        ensure!(found, "`{tool}` is missing: apt-get install {tool}");
    }
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
            _ => bail!("usage: paddock-bench-snapshot [--runs N] [--dir DIR]"),
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
    let backend = Arc::new(NativeBackend::new(native));
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
                    .push(timed(|| baseline_pack(&full_dir, &base_archive))?);
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
                    .push(timed(|| baseline_unpack(&base_archive, &target))?);
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

fn baseline_pack(workspace: &Path, archive: &Path) -> Result<()> {
    shell(
        "tar -C \"$1\" -cf - . | zstd -q -T0 -3 -f -o \"$2\"",
        &[workspace, archive],
    )
}

fn baseline_unpack(archive: &Path, dir: &Path) -> Result<()> {
    fs::create_dir(dir)?;
    shell("zstd -q -dc \"$1\" | tar -xf - -C \"$2\"", &[archive, dir])
}

fn shell(script: &str, args: &[&Path]) -> Result<()> {
    let status = Command::new("bash")
        .args(["-o", "pipefail", "-c", script, "bench"])
        .args(args)
        .status()?;
    ensure!(status.success(), "`{script}` failed: {status}");
    Ok(())
}

fn timed(f: impl FnOnce() -> Result<()>) -> Result<Duration> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn rate(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// How many files of each kind a workspace gets.
#[derive(Clone, Copy)]
struct Shape {
    small: u64,
    medium: u64,
    large: u64,
}

impl Shape {
    /// ~200 MiB: the mix of the library benchmark.
    const FULL: Self = Self {
        small: 12_000,
        medium: 300,
        large: 16,
    };
    /// ~100 MiB.
    const HALF: Self = Self {
        small: 6_000,
        medium: 150,
        large: 8,
    };
}

/// Small source-like files (1-8 KiB) in many directories, medium files
/// (64-256 KiB, half compressible) and 6 MiB files (a third random, a third
/// text, a third partly random binary), as in crates/snapshot's benchmark.
fn build_workspace(root: &Path, shape: Shape) -> Result<(u64, u64)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut write = |path: PathBuf, data: &[u8]| -> Result<()> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        File::create(&path)?.write_all(data)?;
        files += 1;
        bytes += data.len() as u64;
        Ok(())
    };
    let words = [
        "fn ", "let ", "mut ", "self", "impl ", "pub ", "struct ", "match ", "=> ", "Result<",
        "Ok(", "Err(", "return ", "{\n", "}\n", "    ", "// ", "value", "index", "buffer",
    ];
    for i in 0..shape.small {
        let len = 1024 + (rng.next() % 7168) as usize;
        let mut text = String::with_capacity(len + 16);
        while text.len() < len {
            text.push_str(words[(rng.next() % words.len() as u64) as usize]);
            if rng.next().is_multiple_of(9) {
                text.push_str(&format!("{}", rng.next() % 100_000));
            }
        }
        let path = root.join(format!("src/m{:03}/d{}/f{i:05}.rs", i % 120, i % 5));
        write(path, text.as_bytes())?;
    }
    for i in 0..shape.medium {
        let len = 65_536 + (rng.next() % 196_608) as usize;
        let data = if i % 2 == 0 {
            rng.bytes(len)
        } else {
            (0..len).map(|j| (j / 64 % 26) as u8 + b'a').collect()
        };
        write(root.join(format!("assets/a{}/m{i:03}.bin", i % 10)), &data)?;
    }
    for i in 0..shape.large {
        let len = 6 << 20;
        let data = match i % 3 {
            0 => rng.bytes(len),
            1 => {
                let mut text = Vec::with_capacity(len);
                while text.len() < len {
                    text.extend_from_slice(
                        words[(rng.next() % words.len() as u64) as usize].as_bytes(),
                    );
                }
                text.truncate(len);
                text
            }
            _ => {
                let mut data = vec![0u8; len];
                for chunk in data.chunks_mut(4096).step_by(3) {
                    let noise = rng.bytes(chunk.len());
                    chunk.copy_from_slice(&noise);
                }
                data
            }
        };
        write(root.join(format!("data/big{i:02}.dat")), &data)?;
    }
    Ok((files, bytes))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}
