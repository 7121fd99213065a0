//! The microvm lines of `paddock-bench-start`: a VM boot is seconds under
//! TCG, so they are a section of their own with few runs. Boot to the
//! guest's Hello is timed beside a bare QEMU microvm boot of the same
//! kernel to a marker in the image's init, alternating, in the same run;
//! then create -> first exec from a warm pool, and QEMU's idle RSS.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_core::sandbox::{GuestOps, SandboxBackend, SandboxSpec};
use paddock_proto::ExecSpec;
use paddock_sandbox::{MicroVmBackend, MicroVmConfig, WarmPool};

use super::{binary, ms, true_spec};

const BOOT_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a VM is left alone before its idle memory is read (the balloon
/// reports freed pages to the host in the background).
const IDLE_SETTLE: Duration = Duration::from_secs(5);
const WORKLOAD_MIB: u32 = 160;
/// Writes and removes a file of WORKLOAD_MIB in the guest's /tmp (tmpfs:
/// guest RAM).
const WORKLOAD: &str = "dd if=/dev/zero of=/tmp/fill bs=1M count=160 2>/dev/null && rm /tmp/fill";

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One value in KiB from a /proc file of `key: N kB` lines, in bytes.
fn proc_kib(path: &str, key: &str) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(path)?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {key} in {path}"))?;
    Ok(kib * 1024)
}

/// QEMU's resident and proportional set sizes, in MiB.
fn memory_mib(pid: u32) -> anyhow::Result<(f64, f64)> {
    let rss = proc_kib(&format!("/proc/{pid}/status"), "VmRSS:")?;
    let pss = proc_kib(&format!("/proc/{pid}/smaps_rollup"), "Pss:")?;
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    Ok((mib(rss), mib(pss)))
}

fn shell(script: &str) -> ExecSpec {
    ExecSpec {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        ..ExecSpec::default()
    }
}

pub(super) fn run(runs: usize) -> anyhow::Result<()> {
    println!();
    let mut config = MicroVmConfig::new(
        binary("paddock-guest")?,
        &MicroVmConfig::image_dir_from_env(),
    );
    config.cgroup_parent = "paddock-bench-microvm".to_owned();
    let backend = match MicroVmBackend::new(config) {
        Ok(b) => b,
        Err(e) => {
            println!("microvm: skipped, {e}");
            return Ok(());
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (accel, reason) = backend.accelerator().await;
        println!(
            "microvm ({} runs, accelerator {}: {reason}):",
            runs,
            accel.name()
        );
        let mut bare = Vec::new();
        let mut hello = Vec::new();
        for _ in 0..runs {
            bare.push(
                backend
                    .bare_boot(BOOT_TIMEOUT)
                    .await
                    .map_err(anyhow::Error::msg)?,
            );
            let start = Instant::now();
            let vm = backend.create_vm(SandboxSpec::default()).await?;
            hello.push(start.elapsed());
            vm.destroy().await?;
        }
        let (bare, hello) = (median(bare), median(hello));
        println!(
            "  bare QEMU microvm boot to the init's marker   {} ms",
            ms(bare)
        );
        println!(
            "  create -> guest Hello (boot, 9p, layers)      {} ms",
            ms(hello)
        );
        let ratio = hello.as_secs_f64() / bare.as_secs_f64();
        println!(
            "floor: boot to Hello <= 1.2x the bare boot: {} ({ratio:.2}x)",
            if ratio <= 1.2 { "met" } else { "NOT met" }
        );

        let shared: Arc<dyn SandboxBackend> = Arc::new(backend.clone());
        let pool = WarmPool::start(shared, SandboxSpec::default(), 1);
        let (mut warm, mut handout, mut first) = (Vec::new(), Vec::new(), Vec::new());
        let mut kept = None;
        for _ in 0..runs {
            if !pool.wait_full(BOOT_TIMEOUT).await {
                bail!("the microvm warm pool did not refill");
            }
            let start = Instant::now();
            let sandbox = pool.create(SandboxSpec::default()).await?;
            let handed = start.elapsed();
            let out = sandbox.guest().exec_output(true_spec(), &[]).await?;
            let elapsed = start.elapsed();
            warm.push(elapsed);
            handout.push(handed);
            first.push(elapsed - handed);
            if out.exit.code != Some(0) {
                bail!("true exited {:?}", out.exit);
            }
            if let Some(old) = kept.replace(sandbox) {
                old.destroy().await?;
            }
        }
        drop(pool);
        let sandbox = kept.context("no warm sandbox")?;
        let guest = sandbox.guest();
        let (mut info, mut execs) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            let start = Instant::now();
            guest.info().await?;
            info.push(start.elapsed());
            let start = Instant::now();
            guest.exec_output(true_spec(), &[]).await?;
            execs.push(start.elapsed());
        }
        sandbox.destroy().await?;
        let warm = median(warm);
        println!(
            "  warm pool: create -> first exec of `true`     {} ms",
            ms(warm)
        );
        println!(
            "    of which the hand-out {} ms, the first exec {} ms; later: info round trip {} ms, exec {} ms (p50 of 20)",
            ms(median(handout)).trim(),
            ms(median(first)).trim(),
            ms(median(info)).trim(),
            ms(median(execs)).trim(),
        );
        println!(
            "floor: warm create -> first exec < 20 ms: {}",
            if warm < Duration::from_millis(20) {
                "met"
            } else {
                "NOT met"
            }
        );

        let vm = backend.create_vm(SandboxSpec::default()).await?;
        let pid = paddock_core::sandbox::Sandbox::host_pid(&vm).context("QEMU pid")?;
        tokio::time::sleep(IDLE_SETTLE).await;
        let (idle_rss, idle_pss) = memory_mib(pid)?;
        // A workload that touches most of the guest's RAM and frees it:
        // what stays resident afterwards is what the host does not get back.
        let out = vm
            .client()
            .exec_output(shell(WORKLOAD), &[])
            .await?;
        if out.exit.code != Some(0) {
            bail!("the workload exited {:?}", out.exit);
        }
        let (busy_rss, _) = memory_mib(pid)?;
        tokio::time::sleep(IDLE_SETTLE).await;
        let (after_rss, after_pss) = memory_mib(pid)?;
        vm.destroy().await?;
        println!(
            "  QEMU memory, 256 MiB guest (9p is in QEMU: no daemon), MiB: idle after boot Rss {idle_rss:.1} Pss {idle_pss:.1}; right after a {WORKLOAD_MIB} MiB workload Rss {busy_rss:.1}; idle again Rss {after_rss:.1} Pss {after_pss:.1}"
        );
        let worst = idle_rss.max(after_rss);
        println!(
            "floor: idle VMM RSS <= 64 MiB: {} ({worst:.1} MiB, the larger idle figure)",
            if worst <= 64.0 { "met" } else { "NOT met" }
        );
        Ok(())
    })
}
