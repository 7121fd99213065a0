//! `paddock-bench-agents`: how long `paddock run --driver claude-code`
//! takes from its start to the CLI's first model request, beside the same
//! Claude Code started bare on the host (native sandboxes see the host's
//! /usr, so it is the same image) with the environment the driver gives it.
//! Not a test: it prints a table (floor: paddock < 1.5x bare, medians).
//!
//! - bare: `claude -p ... --output-format stream-json --verbose
//!   --dangerously-skip-permissions` in a temporary workspace, stdin null,
//!   `IS_SANDBOX=1`, a fresh `CLAUDE_CONFIG_DIR`,
//!   `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, `DISABLE_AUTOUPDATER=1`,
//!   `ANTHROPIC_BASE_URL` the fake provider on loopback.
//! - paddock: `paddock run --driver claude-code --model
//!   anthropic:claude-sonnet-4-5 --base-url https://api.anthropic.test
//!   --json` as the scenario tests run it (the fake in a TLS test host
//!   behind the egress proxy, the key injected there), a fresh data dir and
//!   workspace per run.
//!
//! Each is timed from its spawn to the fake's first model call (both
//! stamped on the host's wall clock); the fake answers it with a final
//! text, so runs are short. The paddock runs are split at `sandbox.ready`
//! (the event's `created_at`, ms). One untimed run of each first (page
//! cache), then the timed runs alternate.
//!
//!   cargo build --release -p paddock -p paddock-guest -p paddock-tests
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-agents
//!
//! Needs root and the CLIs (scripts/agents-setup.sh). RUNS (default 7)
//! overrides the runs of each.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use paddock_bench_support::figures::{build_profile, percentile};
use paddock_bench_support::{env_or, wants_help};
use paddock_tests::bins::paddock;
use paddock_tests::fake_provider::{FakeProvider, Script, Turn};
use paddock_tests::nethost::{DocRange, TestDns};
use paddock_tests::tlshost::TestCa;
use serde_json::Value;

const CLAUDE: &str = "/usr/local/lib/paddock-agents/bin/claude";
const MODEL: &str = "claude-sonnet-4-5";
const HOST: &str = "api.anthropic.test";
const KEY: &str = "sk-ant-bench-key-0123456789";
const GOAL: &str = "Say done";
/// The floor: paddock's median over bare's.
const FLOOR_RATIO: f64 = 1.5;
/// A run that takes longer is stopped and the bench fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

const USAGE: &str = "\
paddock-bench-agents: `paddock run --driver claude-code` to the CLI's first model
request, beside the same Claude Code started bare on the host.

usage: cargo build --release -p paddock -p paddock-guest -p paddock-tests &&
       target/x86_64-unknown-linux-gnu/release/paddock-bench-agents
as root, with the CLIs installed (scripts/agents-setup.sh).
environment: RUNS (timed runs of each, default 7)";

/// A fake provider that stamps each model call's arrival (wall clock).
struct Fake {
    fake: FakeProvider,
    calls: Arc<Mutex<Vec<SystemTime>>>,
}

impl Fake {
    fn observe(fake: FakeProvider) -> Self {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        fake.on_request(move |request| {
            if request.model_call {
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(SystemTime::now());
            }
        });
        Self { fake, calls }
    }

    fn seen(&self) -> usize {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The first model call after the first `skip`, from `spawned`; also
    /// checked against the fake's own record (ms).
    fn first_after(&self, skip: usize, spawned: SystemTime) -> anyhow::Result<Duration> {
        let at = *self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(skip)
            .context("the CLI made no model call")?;
        let recorded = self
            .fake
            .model_calls()
            .get(skip)
            .map(|r| r.unix_ms)
            .context("the fake recorded no model call")?;
        let stamped = at.duration_since(UNIX_EPOCH)?.as_millis();
        anyhow::ensure!(
            stamped.abs_diff(recorded) <= 5,
            "the fake's record ({recorded} ms) and the stamp ({stamped} ms) disagree"
        );
        Ok(at.duration_since(spawned).unwrap_or(Duration::ZERO))
    }
}

fn script() -> Script {
    Script::new(vec![Turn::text("Done.")])
}

/// Waits for `child` (stopping it after [`RUN_TIMEOUT`]); its stdout.
fn finish(mut child: Child, what: &str) -> anyhow::Result<String> {
    let started = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{what} took over {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // `paddock run` exits 1 for a completed run the review is unsure of
    // (the fake's answer names no evidence): the run's state is what counts
    let completed = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| e["type"] == "result" && e["run"]["state"] == "completed");
    if !out.status.success() && !completed {
        bail!(
            "{what} failed ({}): {stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(stdout)
}

/// One bare run: spawn to the first model call.
fn bare(fake: &Fake) -> anyhow::Result<Duration> {
    let ws = tempfile::tempdir()?;
    let config = tempfile::tempdir()?;
    let skip = fake.seen();
    let mut command = Command::new(CLAUDE);
    command
        .args([
            "-p",
            GOAL,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--model",
            MODEL,
        ])
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("HOME", ws.path())
        .env("IS_SANDBOX", "1")
        .env("CLAUDE_CONFIG_DIR", config.path())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("ANTHROPIC_BASE_URL", fake.fake.base_url())
        .env("ANTHROPIC_API_KEY", "x")
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = SystemTime::now();
    let child = command.spawn().context("starting claude")?;
    finish(child, "bare claude")?;
    fake.first_after(skip, spawned)
}

/// The fake in a TLS test host named [`HOST`], and the options a run
/// needs to reach it (as tests/tests/scenarios/agent_clis.rs does).
struct Provider {
    fake: Fake,
    options: Vec<String>,
    _dns: TestDns,
    _dir: tempfile::TempDir,
}

impl Provider {
    fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let ca = TestCa::new()?;
        let ca_file = dir.path().join("test-ca.pem");
        ca.write_pem(&ca_file)?;
        let fake = FakeProvider::start_in_host(
            HOST,
            DocRange::Net2,
            443,
            Some(ca.server(HOST)?),
            script(),
        )?;
        let host = fake.host().context("a test host")?;
        let dns = TestDns::start()?;
        dns.set(HOST, &[host.ip]);
        let options = vec![
            dns.option(),
            host.allow_option(),
            format!("--egress-ca={}", ca_file.display()),
        ];
        Ok(Self {
            fake: Fake::observe(fake),
            options,
            _dns: dns,
            _dir: dir,
        })
    }
}

/// One paddock run: spawn to the first model call, and spawn to
/// `sandbox.ready` (ms resolution).
fn paddock_run(provider: &Provider, bin: &Path) -> anyhow::Result<(Duration, Option<Duration>)> {
    let ws = tempfile::tempdir()?;
    let data = tempfile::tempdir()?;
    let skip = provider.fake.seen();
    let mut command = Command::new(bin);
    command
        .args([
            "run",
            GOAL,
            "--driver",
            "claude-code",
            "--model",
            &format!("anthropic:{MODEL}"),
            "--base-url",
            &format!("https://{HOST}"),
            "--json",
            "--workspace",
        ])
        .arg(ws.path())
        .arg("--data-dir")
        .arg(data.path())
        .args(&provider.options)
        .env("ANTHROPIC_API_KEY", KEY)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawned = SystemTime::now();
    let child = command.spawn().context("starting paddock")?;
    let stdout = finish(child, "paddock run")?;
    let first = provider.fake.first_after(skip, spawned)?;
    let spawned_ms = i64::try_from(spawned.duration_since(UNIX_EPOCH)?.as_millis())?;
    let ready = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["kind"] == "sandbox.ready")
        .and_then(|e| created_ms(&e["created_at"]))
        .map(|ms| Duration::from_millis(u64::try_from(ms - spawned_ms).unwrap_or(0)));
    Ok((first, ready))
}

/// An event's `created_at`: milliseconds, or `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn created_ms(value: &Value) -> Option<i64> {
    if let Some(ms) = value.as_i64() {
        return Some(ms);
    }
    let text = value.as_str()?;
    let (date, time) = text.trim_end_matches('Z').split_once('T')?;
    let mut ymd = date.split('-').map(str::parse::<i64>);
    let (y, m, d) = (ymd.next()?.ok()?, ymd.next()?.ok()?, ymd.next()?.ok()?);
    let (hms, millis) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.split(':').map(str::parse::<i64>);
    let (h, min, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    let millis: i64 = format!("{millis:0<3}").get(..3)?.parse().ok()?;
    Some((days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60 + s) * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median and p90 of `samples`, in ms.
fn figures(samples: &[Duration]) -> (f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    (ms(percentile(&sorted, 0.5)), ms(percentile(&sorted, 0.9)))
}

fn row(name: &str, samples: &[Duration]) -> f64 {
    let (median, p90) = figures(samples);
    println!(
        "{name:<52} n={:<3} median {median:>9.1} ms   p90 {p90:>9.1} ms",
        samples.len()
    );
    median
}

fn main() -> anyhow::Result<()> {
    if wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    if !nix::unistd::geteuid().is_root() {
        bail!("run as root (paddock's sandboxes, the provider's test host)");
    }
    if !PathBuf::from(CLAUDE).exists() {
        bail!("{CLAUDE} is missing: run scripts/agents-setup.sh");
    }
    let runs: usize = env_or("RUNS", 7)?;
    let bin = paddock();
    let local = Fake::observe(FakeProvider::start(script())?);
    let provider = Provider::start()?;

    // untimed: the CLI's and paddock's pages into the cache
    bare(&local)?;
    paddock_run(&provider, &bin)?;

    let mut bare_times = Vec::new();
    let mut paddock_times = Vec::new();
    let mut ready_times = Vec::new();
    let mut after_ready = Vec::new();
    for _ in 0..runs {
        bare_times.push(bare(&local)?);
        let (first, ready) = paddock_run(&provider, &bin)?;
        paddock_times.push(first);
        if let Some(ready) = ready {
            ready_times.push(ready);
            after_ready.push(first.saturating_sub(ready));
        }
    }

    println!(
        "paddock-bench-agents ({} build): spawn to Claude Code's first model request, {runs} runs each \
         (alternating, after one untimed run each)",
        build_profile()
    );
    let bare_median = row("bare claude on the host (fake on loopback)", &bare_times);
    let paddock_median = row(
        "paddock run --driver claude-code (TLS fake, proxy)",
        &paddock_times,
    );
    if !ready_times.is_empty() {
        row("  of which: spawn to sandbox.ready", &ready_times);
        row(
            "  of which: sandbox.ready to first model call",
            &after_ready,
        );
    }
    let ratio = paddock_median / bare_median;
    println!(
        "ratio paddock/bare (medians): {ratio:.2}x (floor < {FLOOR_RATIO}x): {}; paddock adds {:.1} ms",
        if ratio < FLOOR_RATIO { "PASS" } else { "MISS" },
        paddock_median - bare_median
    );
    Ok(())
}
