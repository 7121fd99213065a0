//! `paddock-bench-network`: egress proxy throughput and connection set-up,
//! each beside a baseline measured in the same run. Not a test: it prints a
//! table. Needs root (test hosts in their own network namespaces).
//!
//!   cargo build --release -p paddock -p paddock-guest -p paddock-tests
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-network [--mib 100] [--rounds 5] [--connects 200]
//!
//! - download: `--mib` MiB from a test host through the allowlist proxy,
//!   beside the same download with `full` (NAT through the host, no proxy)
//!   and straight from the host (no sandbox, no proxy); the floor is
//!   allowlist >= 0.8x full. A transfer takes about 0.1 s here, so one
//!   busy moment on a shared machine moves a block of them: the lines run
//!   in `--rounds` interleaved rounds (the order turning each round), the
//!   medians are over every download of a line, and the ratio of each
//!   round is shown beside them.
//! - set-up: curl's time to first byte of a tiny response from an allowed
//!   IP literal (no DNS), through the proxy (HTTP_PROXY, CONNECT, and a
//!   program ignoring the variables, redirected), beside the same request
//!   straight from the host; the floor is a p50 overhead under 1 ms.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use paddock_bench_support::figures::{build_profile, mib, percentile};
use paddock_tests::cli::SandboxRun;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};

#[derive(Debug, Parser)]
#[command(about = "Egress proxy throughput and connection set-up beside direct baselines")]
struct Args {
    /// Size of the download in MiB.
    #[arg(long, default_value_t = 100)]
    mib: usize,
    /// Downloads per line in each round.
    #[arg(long, default_value_t = 3)]
    downloads: usize,
    /// Interleaved rounds of the three download lines (the medians are
    /// over all of a line's downloads).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Timed connections per set-up line.
    #[arg(long, default_value_t = 200)]
    connects: usize,
}

/// One number per line of curl's `-w` output, in seconds.
fn seconds(out: &str) -> anyhow::Result<Vec<Duration>> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim()
                .parse::<f64>()
                .map(Duration::from_secs_f64)
                .with_context(|| format!("not a time: {l:?}"))
        })
        .collect()
}

fn in_sandbox(
    dns: &TestDns,
    allow: &[String],
    policy: &str,
    script: &str,
) -> anyhow::Result<String> {
    let mut run = SandboxRun::shell(script).option(&dns.option());
    for option in allow {
        run = run.option(option);
    }
    let (json, _) = run
        .network(policy)
        .timeout_secs(600)
        .deadline(Duration::from_secs(900))
        .run_json();
    if json.exit_code != Some(0) {
        bail!("{policy}: {script}: {}", json.stderr);
    }
    Ok(json.stdout)
}

fn on_host(script: &str) -> anyhow::Result<String> {
    let out = Command::new("sh").args(["-c", script]).output()?;
    if !out.status.success() {
        bail!("{script}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One download line of a round.
#[derive(Debug, Clone, Copy)]
enum Line {
    Allow,
    Full,
    Direct,
}

fn sorted(mut times: Vec<Duration>) -> Vec<Duration> {
    times.sort();
    times
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if !nix::unistd::Uid::effective().is_root() {
        bail!("paddock-bench-network needs root (test hosts in network namespaces)");
    }
    let bytes = args.mib * 1024 * 1024;
    let big = TestHost::start("big", DocRange::Net2, 8080, Some(bytes))?;
    let small = TestHost::start("small", DocRange::Net3, 8080, None)?;
    let dns = TestDns::start()?;
    dns.set("big.test", &[big.ip]);
    // the test hosts' documentation addresses, let through as an operator would
    let guard_allow = [big.allow_option(), small.allow_option()];

    // Download: the time curl takes for the body, in interleaved rounds.
    let download = format!(
        "for i in $(seq {n}); do curl -sS -o /dev/null -w '%{{time_total}}\\n' http://big.test:8080/; done",
        n = args.downloads
    );
    let direct_download = format!(
        "for i in $(seq {n}); do curl -sS --noproxy '*' -o /dev/null -w '%{{time_total}}\\n' http://{addr}/; done",
        n = args.downloads,
        addr = big.addr()
    );
    let (mut allow, mut full, mut direct) = (Vec::new(), Vec::new(), Vec::new());
    let mut round_ratios = Vec::new();
    for round in 0..args.rounds.max(1) {
        let mut lines = [Line::Allow, Line::Full, Line::Direct];
        lines.rotate_left(round % 3);
        let (mut round_allow, mut round_full) = (Vec::new(), Vec::new());
        for line in lines {
            match line {
                Line::Allow => {
                    round_allow = seconds(&in_sandbox(
                        &dns,
                        &guard_allow,
                        "allow:big.test:8080",
                        &download,
                    )?)?;
                    allow.extend_from_slice(&round_allow);
                }
                Line::Full => {
                    round_full = seconds(&in_sandbox(&dns, &guard_allow, "full", &download)?)?;
                    full.extend_from_slice(&round_full);
                }
                Line::Direct => direct.extend(seconds(&on_host(&direct_download)?)?),
            }
        }
        let (round_allow, round_full) = (sorted(round_allow), sorted(round_full));
        round_ratios.push(
            percentile(&round_full, 0.5).as_secs_f64()
                / percentile(&round_allow, 0.5).as_secs_f64(),
        );
    }
    let (allow, full, direct) = (sorted(allow), sorted(full), sorted(direct));
    let rate = |times: &[Duration]| mib(bytes as u64) / percentile(times, 0.5).as_secs_f64();
    println!(
        "download of {} MiB (median of {} rounds x {} downloads, interleaved; {} build)",
        args.mib,
        args.rounds.max(1),
        args.downloads,
        build_profile()
    );
    println!("  {:<34} {:>10.1} MiB/s", "allowlist proxy", rate(&allow));
    println!(
        "  {:<34} {:>10.1} MiB/s",
        "full (NAT, guarded)",
        rate(&full)
    );
    println!(
        "  {:<34} {:>10.1} MiB/s",
        "direct from the host (baseline)",
        rate(&direct)
    );
    println!(
        "  allowlist / full = {:.2}x (floor >= 0.8x); allowlist / direct = {:.2}x",
        rate(&allow) / rate(&full),
        rate(&allow) / rate(&direct)
    );
    let each: Vec<String> = round_ratios.iter().map(|r| format!("{r:.2}")).collect();
    println!("  allowlist / full per round: {}", each.join(" "));

    // Set-up: time to the first byte of a tiny response, no DNS (an IP literal).
    let addr = small.addr();
    let policy = format!("allow:{addr}");
    let loop_of = |flags: &str| {
        format!(
            "for i in $(seq {n}); do curl -sS {flags} -o /dev/null -w '%{{time_starttransfer}}\\n' http://{addr}/; done",
            n = args.connects
        )
    };
    let lines = [
        (
            "proxy, plain HTTP (HTTP_PROXY)",
            in_sandbox(&dns, &guard_allow, &policy, &loop_of(""))?,
        ),
        (
            "proxy, CONNECT tunnel",
            in_sandbox(&dns, &guard_allow, &policy, &loop_of("-p"))?,
        ),
        (
            "redirected (ignores the variables)",
            in_sandbox(&dns, &guard_allow, &policy, &loop_of("--noproxy '*'"))?,
        ),
    ];
    let baseline = sorted(seconds(&on_host(&loop_of("--noproxy '*'"))?)?);
    let base50 = percentile(&baseline, 0.5);
    println!(
        "\nconnection set-up to first byte, {} connections, IP literal (no DNS)",
        args.connects
    );
    println!(
        "  {:<34} {:>8} {:>8} {:>14}",
        "", "p50 ms", "p99 ms", "p50 overhead"
    );
    println!(
        "  {:<34} {:>8.3} {:>8.3} {:>14}",
        "direct from the host (baseline)",
        ms(base50),
        ms(percentile(&baseline, 0.99)),
        "-"
    );
    for (name, out) in lines {
        let times = sorted(seconds(&out)?);
        let p50 = percentile(&times, 0.5);
        println!(
            "  {:<34} {:>8.3} {:>8.3} {:>11.3} ms",
            name,
            ms(p50),
            ms(percentile(&times, 0.99)),
            ms(p50) - ms(base50)
        );
    }
    println!("  (floor: p50 overhead < 1 ms for an allowed host)");
    Ok(())
}
