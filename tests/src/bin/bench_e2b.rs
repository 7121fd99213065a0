//! `paddock-bench-e2b`: the E2B floors, measured through the real E2B
//! Python SDK against a real `paddock serve`, each beside Paddock's own
//! route for the same work, timed from the same Python process (httpx, one
//! kept-alive client) in the same run. Not a test: it prints a table.
//!
//! 1. `Sandbox.create()` served from a warm pool, on each `--backend`,
//!    beside `POST /v1/sandboxes`: p50 and p90 (floor: SDK p50 < 50 ms).
//!    Before each create the pool is full again (the server's
//!    `warm pool: a sandbox is ready` lines say so), and each create's
//!    sandbox is checked to be one the pool started. Also timed: E2B's
//!    `POST /v2/sandboxes` made raw (the route's share without the SDK's).
//! 2. `sandbox.commands.run("true")` (envd's `Process/Start`, which runs
//!    `/bin/bash -l -c true`) beside `POST /v1/sandboxes/{id}/exec` of the
//!    same argv: p50 and p90 (floor: SDK p50 < 5 ms and <= 1.5x the route).
//!    Also timed: the same `Process/Start` call made raw with httpx (the
//!    server's share), and the route running `bash -c true` (without the
//!    login profile) and `true` (without a shell).
//! 3. `files.write` then `files.read` of 10 MiB beside `PUT` and `GET
//!    /v1/sandboxes/{id}/files/{path}`: MiB/s of the median (floor: SDK >=
//!    0.5x the route). Also timed: envd's `/files` made raw.
//!
//! The server's network bound is `none`, so `Sandbox.create()` as E2B code
//! writes it (internet access unset) gets network none, the warm pool's
//! profile; on a server allowing `full`, E2B's default is full
//! (`network_of` in crates/api/src/http/e2b/sandboxes.rs), which no pool
//! serves. The timed half is bench_e2b/sdk.py, run by the venv's python
//! (scripts/e2b-setup.sh makes it).
//!
//!   cargo build --release --bin paddock --bin paddock-guest --bin paddock-bench-e2b
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-e2b [--backend native --backend docker]
//!
//! Needs root; docker needs dockerd and the image (scripts/container-setup.sh).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_bench_support::figures::{build_profile, median, mib, percentile};
use paddock_tests::serve;
use serde_json::{Value, json};

/// The timed half, run by the venv's python.
const SCRIPT: &str = include_str!("bench_e2b/sdk.py");
const DEFAULT_PYTHON: &str = "/var/lib/paddock/e2b-venv/bin/python";
const TENANT: &str = "bench";
const TOKEN: &str = "bench-e2b-tenant-token-4f1d9c";
/// The floors.
const CREATE_FLOOR: Duration = Duration::from_millis(50);
const EXEC_FLOOR: Duration = Duration::from_millis(5);
const EXEC_MAX_RATIO: f64 = 1.5;
const FILE_MIN_RATIO: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Backend {
    Native,
    Docker,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Native => "native",
            Backend::Docker => "docker",
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    about = "E2B floors through the real Python SDK against paddock serve, beside Paddock's own routes"
)]
struct Args {
    /// A backend whose warm-pool creates are timed (repeatable).
    #[arg(long = "backend", value_enum, default_values_t = [Backend::Native, Backend::Docker])]
    backends: Vec<Backend>,
    /// Timed creates per path (SDK, own route, raw E2B route) per backend.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Untimed creates per path per backend first.
    #[arg(long, default_value_t = 2)]
    create_warmup: usize,
    /// Sandboxes each backend's warm pool keeps started.
    #[arg(long, default_value_t = 2)]
    warm_pool: usize,
    /// Timed exec round trips per path.
    #[arg(long, default_value_t = 200)]
    execs: usize,
    /// Untimed exec round trips per path first.
    #[arg(long, default_value_t = 20)]
    exec_warmup: usize,
    /// The backend of the exec and file measures.
    #[arg(long, value_enum, default_value_t = Backend::Native)]
    io_backend: Backend,
    /// Size of the file written and read back.
    #[arg(long, default_value_t = 10)]
    file_mib: usize,
    /// Timed write+read rounds per path (after one untimed).
    #[arg(long, default_value_t = 5)]
    file_rounds: usize,
    /// The docker backend's image.
    #[arg(long, default_value = "paddock-sandbox:bookworm")]
    image: String,
    /// Python of the venv holding the pinned `e2b` SDK.
    #[arg(long, env = "PADDOCK_E2B_PYTHON", default_value = DEFAULT_PYTHON)]
    python: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    let mut measured: Vec<Backend> = Vec::new();
    for backend in &args.backends {
        if !measured.contains(backend) {
            measured.push(*backend);
        }
    }
    args.backends = measured;
    if args.rounds == 0 || args.execs == 0 || args.file_rounds == 0 || args.file_mib == 0 {
        bail!("--rounds, --execs, --file-rounds and --file-mib must be more than 0");
    }
    if args.warm_pool == 0 {
        bail!("--warm-pool must be more than 0: the create measure is of a warm pool");
    }
    if !args.python.is_file() {
        bail!(
            "{} is not a file: run scripts/e2b-setup.sh, or name the venv's python with --python",
            args.python.display()
        );
    }
    // the server's backends: the measured ones and the exec and file measures'
    let mut backends = args.backends.clone();
    if !backends.contains(&args.io_backend) {
        backends.push(args.io_backend);
    }
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, server_config(&backends, &args))?;
    let log = dir.path().join("server.log");
    let load_before = loadavg();
    let server = Server::start(dir.path(), &config, &log)?;
    let started = Instant::now();
    let figures = run_script(&args, &server.url, &log, dir.path());
    let elapsed = started.elapsed();
    server.stop();
    let figures = match figures {
        Ok(figures) => figures,
        Err(err) => {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            eprintln!("--- the server's log (last 40 lines):");
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
            return Err(err);
        }
    };
    let load_after = loadavg();
    report(&args, &figures, &[load_before, load_after], elapsed)
}

/// The server's config: the backends, each with its warm pool, and a
/// network bound of none (see the module doc).
fn server_config(backends: &[Backend], args: &Args) -> String {
    let mut toml = String::from("[network]\nmax = \"none\"\n");
    for backend in backends {
        toml.push_str(&format!(
            "\n[[backends]]\nkind = \"{}\"\nwarm_pool = {}\n",
            backend.name(),
            args.warm_pool
        ));
        if *backend == Backend::Docker {
            toml.push_str(&format!("image = \"{}\"\n", args.image));
        }
    }
    toml
}

/// `paddock serve` of this profile on a free port, its log in a file (the
/// warm pools' lines at info, the rest at warn); stopped with SIGTERM (its
/// sandboxes go with it), killed if it does not stop.
struct Server {
    child: Option<Child>,
    url: String,
}

impl Server {
    fn start(dir: &Path, config: &Path, log: &Path) -> anyhow::Result<Self> {
        let node = format!("bench-e2b-{}", std::process::id());
        let mut command = serve::command(&node, &dir.join("data"), &format!("{TENANT}:{TOKEN}"));
        command
            .arg("--config")
            .arg(config)
            .env("RUST_LOG", "warn,paddock_sandbox::pool=info")
            .stderr(std::fs::File::create(log)?);
        let (child, url) = serve::spawn(command)?;
        Ok(Self {
            child: Some(child),
            url: url.trim_end_matches('/').to_owned(),
        })
    }

    fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Runs bench_e2b/sdk.py against the server: its JSON figures.
fn run_script(args: &Args, url: &str, log: &Path, dir: &Path) -> anyhow::Result<Value> {
    let script = dir.join("bench_e2b_sdk.py");
    std::fs::write(&script, SCRIPT)?;
    let create_backends: Vec<&str> = args.backends.iter().map(|b| b.name()).collect();
    let config = json!({
        "url": url,
        "token": TOKEN,
        "backends": create_backends,
        "pool_size": args.warm_pool,
        "server_log": log,
        "creates": args.rounds,
        "create_warmup": args.create_warmup,
        "execs": args.execs,
        "exec_warmup": args.exec_warmup,
        "io_backend": args.io_backend.name(),
        "file_bytes": args.file_mib << 20,
        "file_rounds": args.file_rounds,
    });
    let output = Command::new(&args.python)
        .arg(&script)
        .arg(config.to_string())
        .env("E2B_API_URL", url)
        .env("E2B_SANDBOX_URL", url)
        .env("E2B_API_KEY", TOKEN)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("E2B_DEBUG")
        .env_remove("E2B_DOMAIN")
        .env_remove("E2B_ACCESS_TOKEN")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", args.python.display()))?;
    if !output.status.success() {
        bail!(
            "{} {} failed ({})",
            args.python.display(),
            script.display(),
            output.status
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).with_context(|| format!("the script's figures: {stdout:?}"))
}

/// The samples (seconds) at `path` of the script's figures, sorted.
fn samples(figures: &Value, path: &[&str]) -> anyhow::Result<Vec<Duration>> {
    let mut at = figures;
    for key in path {
        at = at
            .get(key)
            .with_context(|| format!("no {} in the figures", path.join(".")))?;
    }
    let mut times = at
        .as_array()
        .with_context(|| format!("{} is not a list", path.join(".")))?
        .iter()
        .map(|v| v.as_f64().map(Duration::from_secs_f64))
        .collect::<Option<Vec<_>>>()
        .with_context(|| format!("{} holds a non-number", path.join(".")))?;
    times.sort();
    Ok(times)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

/// One line of the table.
struct Row {
    measure: String,
    sdk: String,
    own: String,
    ratio: String,
    floor: String,
    verdict: &'static str,
}

impl Row {
    fn info(measure: String, sdk: String, own: String, ratio: f64) -> Self {
        Self {
            measure,
            sdk,
            own,
            ratio: format!("{ratio:.2}x"),
            floor: String::new(),
            verdict: "",
        }
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn report(
    args: &Args,
    figures: &Value,
    load: &[String; 2],
    elapsed: Duration,
) -> anyhow::Result<()> {
    let versions = &figures["versions"];
    let io = args.io_backend.name();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for backend in &args.backends {
        let name = backend.name();
        let sdk = samples(figures, &["create", name, "sdk"])?;
        let own = samples(figures, &["create", name, "own"])?;
        let (sdk50, own50) = (median(&sdk), median(&own));
        rows.push(Row {
            measure: format!("Sandbox.create() p50 [{name}]"),
            sdk: ms(sdk50),
            own: ms(own50),
            ratio: format!("{:.2}x", ratio(sdk50, own50)),
            floor: format!("SDK p50 < {} ms", CREATE_FLOOR.as_millis()),
            verdict: verdict(sdk50 < CREATE_FLOOR),
        });
        let (sdk90, own90) = (percentile(&sdk, 0.9), percentile(&own, 0.9));
        rows.push(Row::info(
            format!("Sandbox.create() p90 [{name}]"),
            ms(sdk90),
            ms(own90),
            ratio(sdk90, own90),
        ));
        let raw = samples(figures, &["create", name, "e2b_raw"])?;
        let hits = |key: &str| figures["create"][name][key].as_u64().unwrap_or(0);
        notes.push(format!(
            "{name}: POST /v2/sandboxes raw (httpx, E2B's body): p50 {}, p90 {}; \
             served by the warm pool: SDK {}/{}, own route {}/{}, raw {}/{}",
            ms(median(&raw)),
            ms(percentile(&raw, 0.9)),
            hits("sdk_pool_hits"),
            sdk.len(),
            hits("own_pool_hits"),
            own.len(),
            hits("e2b_raw_pool_hits"),
            raw.len()
        ));
    }

    let sdk = samples(figures, &["exec", "sdk"])?;
    let own = samples(figures, &["exec", "own_bash"])?;
    let raw = samples(figures, &["exec", "connect_raw"])?;
    let own_true = samples(figures, &["exec", "own_true"])?;
    let own_no_login = samples(figures, &["exec", "own_bash_no_login"])?;
    let (sdk50, own50) = (median(&sdk), median(&own));
    let exec_ratio = ratio(sdk50, own50);
    rows.push(Row {
        measure: format!("commands.run(\"true\") p50 [{io}]"),
        sdk: ms(sdk50),
        own: ms(own50),
        ratio: format!("{exec_ratio:.2}x"),
        floor: format!(
            "SDK p50 < {} ms, <= {EXEC_MAX_RATIO}x",
            EXEC_FLOOR.as_millis()
        ),
        verdict: verdict(sdk50 < EXEC_FLOOR && exec_ratio <= EXEC_MAX_RATIO),
    });
    let (sdk90, own90) = (percentile(&sdk, 0.9), percentile(&own, 0.9));
    rows.push(Row::info(
        format!("commands.run(\"true\") p90 [{io}]"),
        ms(sdk90),
        ms(own90),
        ratio(sdk90, own90),
    ));

    let bytes = u64::try_from(args.file_mib << 20)?;
    let rate = |key: &str| -> anyhow::Result<f64> {
        let time = median(&samples(figures, &["files", key])?);
        Ok(mib(bytes) / time.as_secs_f64().max(1e-9))
    };
    for what in ["write", "read"] {
        let (sdk_rate, own_rate) = (rate(&format!("sdk_{what}"))?, rate(&format!("own_{what}"))?);
        let r = sdk_rate / own_rate;
        rows.push(Row {
            measure: format!("files.{what} {} MiB [{io}]", args.file_mib),
            sdk: format!("{sdk_rate:.0} MiB/s"),
            own: format!("{own_rate:.0} MiB/s"),
            ratio: format!("{r:.2}x"),
            floor: format!("SDK >= {FILE_MIN_RATIO}x"),
            verdict: verdict(r >= FILE_MIN_RATIO),
        });
    }

    println!(
        "paddock-bench-e2b ({} build): e2b {} on python {} beside Paddock's own routes \
         (httpx {}, one kept-alive client) from the same process, against paddock serve \
         (same build) on 127.0.0.1; one run, {:.0} s",
        build_profile(),
        versions["e2b"].as_str().unwrap_or("?"),
        versions["python"].as_str().unwrap_or("?"),
        versions["httpx"].as_str().unwrap_or("?"),
        elapsed.as_secs_f64(),
    );
    println!(
        "creates: {} per path per backend (after {}), warm pool {} refilled before each; \
         execs: {} per path (after {}); files: {} MiB, median of {} rounds",
        args.rounds,
        args.create_warmup,
        args.warm_pool,
        args.execs,
        args.exec_warmup,
        args.file_mib,
        args.file_rounds
    );
    println!(
        "load average (1/5/15 min): {} before, {} after; {} CPUs",
        load[0],
        load[1],
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    let header = Row {
        measure: "measure".into(),
        sdk: "E2B SDK".into(),
        own: "Paddock's own route".into(),
        ratio: "ratio".into(),
        floor: "floor".into(),
        verdict: "verdict",
    };
    let mut out = std::io::stdout().lock();
    for row in std::iter::once(&header).chain(&rows) {
        writeln!(
            out,
            "{:<38} {:>12} {:>20} {:>7}  {:<28} {}",
            row.measure, row.sdk, row.own, row.ratio, row.floor, row.verdict
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "own routes: POST /v1/sandboxes {{\"backend\"}}; POST /v1/sandboxes/{{id}}/exec \
         {{\"argv\": [\"/bin/bash\", \"-l\", \"-c\", \"true\"]}} (what commands.run(\"true\") starts); \
         PUT / GET /v1/sandboxes/{{id}}/files/{{path}}; ratio = SDK / own (time, or MiB/s for files)"
    )?;
    writeln!(out, "where the time goes:")?;
    writeln!(
        out,
        "  envd Process/Start raw (httpx, connect+json, same argv): p50 {}, p90 {}  (the server's share of commands.run)",
        ms(median(&raw)),
        ms(percentile(&raw, 0.9))
    )?;
    writeln!(
        out,
        "  POST /exec {{\"argv\": [\"/bin/bash\", \"-c\", \"true\"]}} (no login profile): p50 {}, p90 {}",
        ms(median(&own_no_login)),
        ms(percentile(&own_no_login, 0.9))
    )?;
    writeln!(
        out,
        "  POST /exec {{\"argv\": [\"true\"]}} (no shell): p50 {}, p90 {}",
        ms(median(&own_true)),
        ms(percentile(&own_true, 0.9))
    )?;
    writeln!(
        out,
        "  commands.run - raw Process/Start at p50: {} (the SDK's client side); raw Process/Start - /exec at p50: {} (the route's)",
        signed_ms(sdk50, median(&raw)),
        signed_ms(median(&raw), own50)
    )?;
    writeln!(
        out,
        "  envd /files raw (httpx, multipart up as the SDK sends it): write {:.0} MiB/s, read {:.0} MiB/s",
        rate("envd_raw_write")?,
        rate("envd_raw_read")?
    )?;
    for note in notes {
        writeln!(out, "  {note}")?;
    }
    Ok(())
}

fn signed_ms(a: Duration, b: Duration) -> String {
    format!("{:+.2} ms", (a.as_secs_f64() - b.as_secs_f64()) * 1000.0)
}
