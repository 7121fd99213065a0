//! `paddock-bench-start`: start latency, from "create" to "first command
//! finished" for `true`, of Paddock and of the usual alternatives, measured
//! side by side in one run. Not a test: it prints a table.
//!
//! Build and run it in release mode, with the binaries it measures:
//!   cargo build --release -p paddock -p paddock-guest -p paddock-tests
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-start [--runs 50] [--microvm-runs 3]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use std::sync::Arc;

use paddock_core::sandbox::{DowngradeLayer, GuestOps, SandboxBackend, SandboxSpec};
use paddock_proto::ExecSpec;
use paddock_sandbox::{DockerBackend, DockerConfig, Engine, NativeBackend, NativeConfig, WarmPool};
use paddock_tests::bins::profile_dir;

#[path = "bench_start/microvm.rs"]
mod microvm;

#[derive(Debug, Parser)]
#[command(about = "Median start latency of paddock vs unshare, bwrap and docker")]
struct Args {
    /// Timed runs per line.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Untimed runs first, per line.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Docker image for the docker line (default: the first local one of
    /// busybox, alpine, debian).
    #[arg(long)]
    docker_image: Option<String>,
    /// Image of the docker and gvisor backend lines (and of their `docker
    /// run` baselines).
    #[arg(long, default_value = "paddock-sandbox:bookworm")]
    sandbox_image: String,
    /// Warm-pool size of the pooled backend lines.
    #[arg(long, default_value_t = 2)]
    pool_size: usize,
    /// Exec round trips timed per backend for the exec line.
    #[arg(long, default_value_t = 300)]
    execs: usize,
    /// Runs of each microvm line (a TCG boot takes seconds); 0 skips them.
    #[arg(long, default_value_t = 3)]
    microvm_runs: usize,
    /// The backends whose lines are measured (native also means the
    /// unshare and bwrap baselines; docker and gvisor their `docker run`).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Only::Native, Only::Docker, Only::Gvisor])]
    backends: Vec<Only>,
    /// Only the microvm lines.
    #[arg(long)]
    microvm_only: bool,
}

/// A backend of `--backends`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Only {
    Native,
    Docker,
    Gvisor,
}

impl Args {
    fn measures(&self, backend: Only) -> bool {
        self.backends.contains(&backend)
    }

    /// The container engines of `--backends`.
    fn engines(&self) -> Vec<Engine> {
        [
            (Engine::Docker, Only::Docker),
            (Engine::Gvisor, Only::Gvisor),
        ]
        .into_iter()
        .filter(|(_, only)| self.measures(*only))
        .map(|(engine, _)| engine)
        .collect()
    }
}

/// Timings of one line, sorted.
#[derive(Debug)]
struct Line {
    name: String,
    samples: Vec<Duration>,
}

impl Line {
    fn quantile(&self, q: f64) -> Duration {
        let idx = ((self.samples.len() - 1) as f64 * q).round() as usize;
        self.samples[idx]
    }

    fn median(&self) -> Duration {
        self.quantile(0.5)
    }
}

/// One way to start a sandbox and run `true`; returns the measured time.
type Sample = Box<dyn FnMut() -> anyhow::Result<Duration>>;

/// A named line of the table and how to take one sample of it.
struct Contender {
    name: String,
    sample: Sample,
}

impl Contender {
    fn new(name: impl Into<String>, sample: Sample) -> Self {
        Self {
            name: name.into(),
            sample,
        }
    }
}

/// Runs every contender once per round, round after round, so load from the
/// rest of the machine falls on all lines alike.
fn measure_interleaved(mut contenders: Vec<Contender>, args: &Args) -> anyhow::Result<Vec<Line>> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(args.runs); contenders.len()];
    for round in 0..args.warmup + args.runs {
        for (i, c) in contenders.iter_mut().enumerate() {
            let name = &c.name;
            let d = (c.sample)().with_context(|| format!("{name}: round {round}"))?;
            if round >= args.warmup {
                samples[i].push(d);
            }
        }
    }
    Ok(contenders
        .into_iter()
        .zip(samples)
        .map(|(c, mut samples)| {
            samples.sort();
            Line {
                name: c.name,
                samples,
            }
        })
        .collect())
}

/// Spawns `cmd` and times it until it exits; it must succeed.
fn time_process(cmd: &mut Command) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("spawning {cmd:?}"))?;
    let elapsed = start.elapsed();
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(elapsed)
}

fn binary(name: &str) -> anyhow::Result<PathBuf> {
    let path = profile_dir().join(name);
    if !path.is_file() {
        bail!(
            "{} is missing: cargo build --release -p paddock -p paddock-guest -p paddock-tests",
            path.display()
        );
    }
    Ok(path)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(tool))
            .find(|p| p.is_file())
    })
}

/// Library path: create a sandbox, run `true`, get its result. The destroy
/// that follows is not part of the measured time (it is in the CLI line).
fn paddock_library() -> anyhow::Result<Sample> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let backend = NativeBackend::new(NativeConfig::new(binary("paddock-guest")?));
    Ok(Box::new(move || {
        runtime.block_on(async {
            let start = Instant::now();
            let sandbox = backend.create_native(SandboxSpec::default()).await?;
            let spec = ExecSpec {
                argv: vec!["true".into()],
                ..ExecSpec::default()
            };
            let result = sandbox.client().exec_output(spec, &[]).await;
            let elapsed = start.elapsed();
            sandbox.destroy().await?;
            let out = result?;
            if out.exit.code != Some(0) {
                bail!("true exited {:?}", out.exit);
            }
            Ok(elapsed)
        })
    }))
}

fn true_spec() -> ExecSpec {
    ExecSpec {
        argv: vec!["true".into()],
        ..ExecSpec::default()
    }
}

fn engine_name(engine: Engine) -> &'static str {
    engine.backend_name()
}

/// The spec of the container lines: gVisor has no landlock (reported
/// downgraded, see docs/security.md).
fn container_spec(engine: Engine) -> SandboxSpec {
    let mut spec = SandboxSpec::default();
    if engine == Engine::Gvisor {
        spec.policy.allow_downgrade.insert(DowngradeLayer::Landlock);
    }
    spec
}

async fn container_backend(engine: Engine, image: &str) -> anyhow::Result<Arc<dyn SandboxBackend>> {
    let mut config = DockerConfig::new(engine, binary("paddock-guest")?);
    config.image = image.to_owned();
    config.node = "paddock-bench".to_owned();
    Ok(Arc::new(DockerBackend::connect(config).await?))
}

/// What a container line times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timed {
    /// Create, then exec `true` to its end.
    CreateAndExec,
    /// The create alone (with a pool: the hand-out); the exec still runs,
    /// untimed.
    CreateOnly,
}

/// The docker or gvisor backend: create, exec `true`; with `pool`, the
/// sandbox comes from a warm pool that is full again before each sample
/// (the refill is not timed, the hand-out is).
fn container_library(
    engine: Engine,
    image: &str,
    pool: Option<usize>,
    timed: Timed,
) -> anyhow::Result<Sample> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let spec = container_spec(engine);
    let backend = runtime.block_on(container_backend(engine, image))?;
    let pool: Option<Arc<WarmPool>> = pool.map(|size| {
        let _guard = runtime.enter();
        Arc::new(WarmPool::start(backend.clone(), spec.clone(), size))
    });
    let backend: Arc<dyn SandboxBackend> = match &pool {
        Some(pool) => pool.clone(),
        None => backend,
    };
    Ok(Box::new(move || {
        runtime.block_on(async {
            if let Some(pool) = &pool
                && !pool.wait_full(Duration::from_secs(120)).await
            {
                bail!("the warm pool did not refill within 120 s");
            }
            let start = Instant::now();
            let sandbox = backend.create(spec.clone()).await?;
            let created = start.elapsed();
            let result = sandbox.guest().exec_output(true_spec(), &[]).await;
            let elapsed = match timed {
                Timed::CreateAndExec => start.elapsed(),
                Timed::CreateOnly => created,
            };
            sandbox.destroy().await?;
            let out = result?;
            if out.exit.code != Some(0) {
                bail!("true exited {:?}", out.exit);
            }
            Ok(elapsed)
        })
    }))
}

/// Exec round trips of `true` through one sandbox's guest, per backend:
/// the first one in the fresh sandbox (what a warm pool's warm-up takes off
/// a tenant's first command) and the median of the rest.
fn exec_round_trips(args: &Args) -> anyhow::Result<Vec<(String, Duration, Duration)>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut backends: Vec<(String, Arc<dyn SandboxBackend>, SandboxSpec)> = Vec::new();
        if args.measures(Only::Native) {
            backends.push((
                "native".to_owned(),
                Arc::new(NativeBackend::new(NativeConfig::new(binary(
                    "paddock-guest",
                )?))),
                SandboxSpec::default(),
            ));
        }
        for engine in args.engines() {
            match container_backend(engine, &args.sandbox_image).await {
                Ok(b) => backends.push((engine_name(engine).to_owned(), b, container_spec(engine))),
                Err(e) => println!("exec round trip: {} skipped: {e:#}", engine_name(engine)),
            }
        }
        let mut medians = Vec::new();
        for (name, backend, spec) in backends {
            let sandbox = backend.create(spec).await?;
            let guest = sandbox.guest();
            let mut samples = Vec::with_capacity(args.execs);
            let mut first = Duration::ZERO;
            for i in 0..args.execs + args.warmup.max(1) {
                let start = Instant::now();
                let out = guest.exec_output(true_spec(), &[]).await?;
                if i == 0 {
                    first = start.elapsed();
                } else if i >= args.warmup.max(1) {
                    samples.push(start.elapsed());
                }
                if out.exit.code != Some(0) {
                    bail!("{name}: true exited {:?}", out.exit);
                }
            }
            sandbox.destroy().await?;
            samples.sort();
            medians.push((name, first, samples[samples.len() / 2]));
        }
        Ok(medians)
    })
}

fn process(program: PathBuf, args: Vec<String>) -> Sample {
    Box::new(move || time_process(Command::new(&program).args(&args)))
}

/// bwrap over the host's /usr, with the merged-/usr symlinks (or binds) a
/// command needs, its own /proc, /dev and /tmp.
fn bwrap_args() -> Vec<String> {
    let mut a: Vec<String> = [
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    .map(String::from)
    .to_vec();
    for dir in ["/bin", "/sbin", "/lib", "/lib64"] {
        let p = Path::new(dir);
        match std::fs::read_link(p) {
            Ok(target) => a.extend(["--symlink".into(), target.display().to_string(), dir.into()]),
            Err(_) if p.is_dir() => a.extend(["--ro-bind".into(), dir.into(), dir.into()]),
            Err(_) => {}
        }
    }
    a.extend(
        [
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true",
        ]
        .map(String::from),
    );
    a
}

/// The docker image to run, or why there is no docker line.
fn docker_image(tool: &Path, args: &Args) -> Result<String, String> {
    let engine = Command::new(tool)
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    if !engine.is_ok_and(|o| o.status.success()) {
        return Err("no docker engine answers".into());
    }
    if let Some(i) = &args.docker_image {
        return Ok(i.clone());
    }
    ["busybox", "alpine", "debian"]
        .into_iter()
        .find_map(|i| {
            let out = Command::new(tool).args(["images", "-q", i]).output().ok()?;
            (!out.stdout.is_empty()).then(|| i.to_owned())
        })
        .ok_or_else(|| "no local image (busybox, alpine, debian); pass --docker-image".into())
}

/// Every line this machine can measure, and notes on those it cannot.
fn contenders(args: &Args) -> anyhow::Result<(Vec<Contender>, Vec<String>)> {
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    if args.measures(Only::Native) {
        native_contenders(&mut lines, &mut notes)?;
    }
    container_contenders(args, &mut lines, &mut notes);
    Ok((lines, notes))
}

/// The native backend's lines and their baselines (unshare, bwrap).
fn native_contenders(lines: &mut Vec<Contender>, notes: &mut Vec<String>) -> anyhow::Result<()> {
    lines.push(Contender::new(NATIVE_LIBRARY, paddock_library()?));
    lines.push(Contender::new(
        "paddock sandbox run -- true",
        process(
            binary("paddock")?,
            ["sandbox", "run", "--", "true"].map(String::from).to_vec(),
        ),
    ));
    match which("unshare") {
        Some(tool) => lines.push(Contender::new(
            "unshare -m -p -f -n -i -u true",
            process(
                tool,
                [
                    "--mount", "--pid", "--fork", "--net", "--ipc", "--uts", "true",
                ]
                .map(String::from)
                .to_vec(),
            ),
        )),
        None => notes.push("unshare: not installed".to_owned()),
    }
    match which("bwrap") {
        Some(tool) => lines.push(Contender::new(BWRAP, process(tool, bwrap_args()))),
        None => notes.push("bwrap: not installed (Debian package bubblewrap)".to_owned()),
    }
    Ok(())
}

/// The docker and gvisor backends' lines and their `docker run` baselines.
fn container_contenders(args: &Args, lines: &mut Vec<Contender>, notes: &mut Vec<String>) {
    let docker_cli = Path::new("/usr/bin/docker")
        .is_file()
        .then(|| PathBuf::from("/usr/bin/docker"))
        .or_else(|| which("docker"));
    let image = &args.sandbox_image;
    for engine in args.engines() {
        let name = engine_name(engine);
        match container_library(engine, image, None, Timed::CreateAndExec) {
            Ok(sample) => lines.push(Contender::new(
                format!("{name} backend: create + exec true"),
                sample,
            )),
            Err(e) => {
                notes.push(format!("{name} backend: skipped, {e:#}"));
                continue;
            }
        }
        if let Some(tool) = &docker_cli {
            let mut run = vec!["run".to_owned(), "--rm".to_owned()];
            if engine == Engine::Gvisor {
                run.push("--runtime=runsc".to_owned());
            }
            run.extend([image.clone(), "true".to_owned()]);
            lines.push(Contender::new(
                format!(
                    "docker run --rm{} IMAGE true",
                    if engine == Engine::Gvisor {
                        " --runtime=runsc"
                    } else {
                        ""
                    }
                ),
                process(tool.clone(), run),
            ));
        }
        match container_library(engine, image, Some(args.pool_size), Timed::CreateAndExec) {
            Ok(sample) => lines.push(Contender::new(
                format!("{name} backend, warm pool: create + exec"),
                sample,
            )),
            Err(e) => notes.push(format!("{name} warm pool: skipped, {e:#}")),
        }
        // The breakdown of the line above: the hand-out alone (no engine
        // call, no store write); the rest of it is the first exec.
        match container_library(engine, image, Some(args.pool_size), Timed::CreateOnly) {
            Ok(sample) => lines.push(Contender::new(
                format!("{name} backend, warm pool: hand-out"),
                sample,
            )),
            Err(e) => notes.push(format!("{name} warm pool hand-out: skipped, {e:#}")),
        }
    }
    if !args.measures(Only::Docker) {
        return;
    }
    match which("docker") {
        None => notes.push("docker: skipped, not installed".to_owned()),
        Some(tool) => match docker_image(&tool, args) {
            Ok(image) => lines.push(Contender::new(
                format!("docker run --rm {image} true"),
                process(
                    tool,
                    ["run", "--rm", &image, "true"].map(String::from).to_vec(),
                ),
            )),
            Err(why) => notes.push(format!("docker: skipped, {why}")),
        },
    }
}

const BWRAP: &str = "bwrap --unshare-all ... true";
const NATIVE_LIBRARY: &str = "paddock library: create + exec true";

fn ms(d: Duration) -> String {
    format!("{:8.2}", d.as_secs_f64() * 1000.0)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if args.microvm_only {
        return microvm::run(args.microvm_runs.max(1));
    }
    let profile = paddock_bench_support::figures::build_profile();
    println!(
        "start latency of `true`: {} runs per line after {} warm-up runs ({profile} build)",
        args.runs, args.warmup
    );
    if profile == "debug" {
        println!("note: a debug build; measure with the release binaries");
    }
    let (contenders, notes) = contenders(&args)?;
    let lines = measure_interleaved(contenders, &args)?;
    let bwrap_median = lines.iter().find(|l| l.name == BWRAP).map(Line::median);
    println!();
    println!(
        "{:<40} {:>8} {:>8} {:>8} {:>9}",
        "line", "median", "p90", "min", "vs bwrap"
    );
    for l in &lines {
        let ratio = bwrap_median
            .map(|b| format!("{:8.2}x", l.median().as_secs_f64() / b.as_secs_f64()))
            .unwrap_or_else(|| "      n/a".into());
        println!(
            "{:<40} {} {} {} {ratio}",
            l.name,
            ms(l.median()),
            ms(l.quantile(0.9)),
            ms(l.samples[0])
        );
    }
    println!(
        "(milliseconds; the library line excludes destroy, the CLI line is the whole process)"
    );
    for n in &notes {
        println!("{n}");
    }
    println!();
    if let Some(paddock) = lines
        .iter()
        .find(|l| l.name == NATIVE_LIBRARY)
        .map(Line::median)
    {
        native_floors(paddock, bwrap_median);
    }
    container_floors(&lines);
    let round_trips = exec_round_trips(&args)?;
    println!();
    println!(
        "exec round trip of `true` through the guest ({} runs each):",
        args.execs
    );
    for (name, first, median) in &round_trips {
        println!(
            "  {name:<8} p50 {} ms (the first in a fresh sandbox {} ms)",
            ms(*median).trim(),
            ms(*first).trim()
        );
    }
    let native = round_trips
        .iter()
        .find(|(n, _, _)| n == "native")
        .map(|(_, _, d)| *d);
    let docker = round_trips
        .iter()
        .find(|(n, _, _)| n == "docker")
        .map(|(_, _, d)| *d);
    if let (Some(native), Some(docker)) = (native, docker) {
        let gap = docker.saturating_sub(native);
        println!(
            "floor: docker exec p50 within 0.5 ms of native: {} (+{} ms)",
            if gap <= Duration::from_micros(500) {
                "met"
            } else {
                "NOT met"
            },
            ms(gap).trim()
        );
    }
    if args.microvm_runs > 0 {
        microvm::run(args.microvm_runs)?;
    }
    Ok(())
}

/// The native backend's floors, from the lines of the same run.
fn native_floors(paddock: Duration, bwrap_median: Option<Duration>) {
    println!(
        "floor: paddock median under 15 ms: {} ({} ms)",
        if paddock < Duration::from_millis(15) {
            "met"
        } else {
            "NOT met"
        },
        ms(paddock).trim()
    );
    if let Some(b) = bwrap_median {
        println!(
            "floor: paddock median at most 2x bwrap: {} ({:.2}x)",
            if paddock <= b * 2 { "met" } else { "NOT met" },
            paddock.as_secs_f64() / b.as_secs_f64()
        );
    }
}

/// The container tier's floors, from the lines of the same run.
fn container_floors(lines: &[Line]) {
    let median = |name: &str| lines.iter().find(|l| l.name == name).map(Line::median);
    for (engine, run_line) in [
        ("docker", "docker run --rm IMAGE true"),
        ("gvisor", "docker run --rm --runtime=runsc IMAGE true"),
    ] {
        let cold = median(&format!("{engine} backend: create + exec true"));
        let warm = median(&format!("{engine} backend, warm pool: create + exec"));
        let run = median(run_line);
        if let (Some(cold), Some(run)) = (cold, run) {
            let ratio = cold.as_secs_f64() / run.as_secs_f64();
            println!(
                "floor: {engine} cold at most 1.0x `{run_line}`: {} ({ratio:.2}x)",
                if ratio <= 1.0 { "met" } else { "NOT met" }
            );
        }
        if let Some(warm) = warm {
            println!(
                "floor: {engine} warm pool under 15 ms: {} ({} ms{})",
                if warm < Duration::from_millis(15) {
                    "met"
                } else {
                    "NOT met"
                },
                ms(warm).trim(),
                run.map(|r| format!(
                    ", {:.1}x faster than docker run",
                    r.as_secs_f64() / warm.as_secs_f64()
                ))
                .unwrap_or_default()
            );
        }
    }
}
