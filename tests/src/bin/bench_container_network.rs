//! `paddock-bench-container-network`: a download through the egress proxy
//! (`allowlist`) beside the same download with `full` (NAT, no proxy),
//! from inside a docker and a gVisor sandbox. Not a test: it prints a
//! table. Needs root and dockerd with `runsc-net` registered
//! (scripts/container-setup.sh).
//!
//!   cargo build --release -p paddock -p paddock-guest -p paddock-tests
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-container-network [--mib 64] [--rounds 3]
//!
//! The file comes from a test host in a network namespace of its own on
//! this machine; the sandbox runs `paddock-test-probe download` (its image
//! has no curl). The lines alternate round by round, so a busy moment of a
//! shared machine falls on both; the medians are over every download of a
//! line. Floor: allowlist >= 0.8x full on each backend (the ratio of the
//! medians). Beside it, the median of each round's own ratio (a proxied
//! download over the routed one next to it), which a host whose load
//! changes from round to round moves less.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use paddock_bench_support::figures::{build_profile, median, mib};
use paddock_core::sandbox::{Sandbox, SandboxPolicy, SandboxSpec};
use paddock_egress::EgressConfig;
use paddock_proto::{ExecSpec, NetworkPolicy};
use paddock_tests::backends::{self, Kind};
use paddock_tests::nethost::{DocRange, TestHost};

const FLOOR: f64 = 0.8;

#[derive(Debug, Parser)]
#[command(about = "Allowlist (proxy) vs full (NAT) download throughput in docker and gVisor")]
struct Args {
    /// Size of the download in MiB.
    #[arg(long, default_value_t = 64)]
    mib: usize,
    /// Rounds; each downloads once per line.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Backends to measure.
    #[arg(long, value_delimiter = ',', default_value = "docker,gvisor")]
    backends: Vec<String>,
}

/// One download inside `sb`: its seconds, as the probe timed it.
async fn download(
    sb: &dyn Sandbox,
    probe: &str,
    url: &str,
    bytes: usize,
) -> anyhow::Result<Duration> {
    let out = sb
        .guest()
        .exec_output(
            ExecSpec {
                argv: vec![probe.to_owned(), "download".into(), url.to_owned()],
                ..ExecSpec::default()
            },
            &[],
        )
        .await?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut words = text.split_whitespace();
    let (Some("downloaded"), Some(got), Some("in"), Some(secs)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        bail!(
            "the probe said {text:?} {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if got.parse::<usize>()? != bytes {
        bail!("downloaded {got} bytes, not {bytes}");
    }
    Ok(Duration::from_secs_f64(secs.parse().context("seconds")?))
}

/// The median over rounds of one round's proxied rate over its routed rate.
fn paired_ratio(proxied: &[Duration], routed: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = proxied
        .iter()
        .zip(routed)
        .map(|(a, f)| f.as_secs_f64() / a.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(0.0)
}

async fn sandbox(
    kind: Kind,
    config: &EgressConfig,
    network: NetworkPolicy,
) -> anyhow::Result<(Box<dyn Sandbox>, String, tempfile::TempDir)> {
    let backend = backends::connect_with_egress(kind, config.clone())
        .await
        .map_err(anyhow::Error::msg)?;
    let ws = backends::workspace(kind);
    let probe = paddock_tests::bins::stage_in_workspace(ws.path(), "paddock-test-probe");
    let spec = SandboxSpec {
        workspace: Some(ws.path().to_path_buf()),
        policy: SandboxPolicy {
            network,
            ..SandboxPolicy::default()
        },
        ..SandboxSpec::default()
    };
    let sb = backend.create(backends::spec_for(kind, spec)).await?;
    Ok((sb, probe, ws))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = args.mib << 20;
    let host = TestHost::start("bench", DocRange::Net2, 8080, Some(bytes))?;
    let url = format!("http://{}/", host.addr());
    let config = EgressConfig {
        allowed_private: vec![host.ip.into()],
        ..EgressConfig::default()
    };
    println!(
        "download of {} MiB from a test host, {} rounds ({} build)",
        args.mib,
        args.rounds,
        build_profile()
    );
    println!(
        "{:<8} {:>16} {:>16} {:>8} {:>8}  floor",
        "backend", "allowlist MiB/s", "full MiB/s", "ratio", "paired"
    );
    let mut failed = false;
    for name in &args.backends {
        let kind = match name.as_str() {
            "docker" => Kind::Docker,
            "gvisor" => Kind::Gvisor,
            "native" => Kind::Native,
            other => bail!("unknown backend {other}"),
        };
        let allow: NetworkPolicy = format!("allow:{}", host.addr()).parse()?;
        let (proxied, probe_a, _ws_a) = sandbox(kind, &config, allow).await?;
        let (routed, probe_f, _ws_f) = sandbox(kind, &config, NetworkPolicy::Full).await?;
        // one unmeasured download each: page cache, connections, caches
        download(&*proxied, &probe_a, &url, bytes).await?;
        download(&*routed, &probe_f, &url, bytes).await?;
        let (mut a, mut f) = (Vec::new(), Vec::new());
        for round in 0..args.rounds {
            if round % 2 == 0 {
                a.push(download(&*proxied, &probe_a, &url, bytes).await?);
                f.push(download(&*routed, &probe_f, &url, bytes).await?);
            } else {
                f.push(download(&*routed, &probe_f, &url, bytes).await?);
                a.push(download(&*proxied, &probe_a, &url, bytes).await?);
            }
        }
        let rate = |d: Duration| mib(bytes as u64) / d.as_secs_f64();
        let (ra, rf) = (rate(median(&a)), rate(median(&f)));
        let ratio = ra / rf;
        let ok = ratio >= FLOOR;
        failed |= !ok;
        println!(
            "{:<8} {:>16.1} {:>16.1} {:>7.2}x {:>7.2}x  >= {FLOOR}x {}",
            kind.name(),
            ra,
            rf,
            ratio,
            paired_ratio(&a, &f),
            if ok { "ok" } else { "MISSED" }
        );
        proxied.destroy().await?;
        routed.destroy().await?;
    }
    if failed {
        bail!("a backend missed the floor");
    }
    Ok(())
}
