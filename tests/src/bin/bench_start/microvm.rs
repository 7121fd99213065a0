//! The microvm lines of `paddock-bench-start`: a VM boot is seconds under
//! TCG, so they are a section of their own with few runs. Boot to the
//! guest's Hello is timed beside a bare QEMU microvm boot of the same
//! kernel to a marker in the image's init, alternating, in the same run;
//! then create -> first exec from a warm pool, and QEMU's idle RSS.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use paddock_core::sandbox::{SandboxBackend, SandboxSpec};
use paddock_sandbox::{MicroVmBackend, MicroVmConfig, WarmPool};

use super::{binary, ms, true_spec};

const BOOT_TIMEOUT: Duration = Duration::from_secs(180);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")?;
    Ok(kib * 1024)
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
        let mut warm = Vec::new();
        for _ in 0..runs {
            if !pool.wait_full(BOOT_TIMEOUT).await {
                bail!("the microvm warm pool did not refill");
            }
            let start = Instant::now();
            let sandbox = pool.create(SandboxSpec::default()).await?;
            let out = sandbox.guest().exec_output(true_spec(), &[]).await?;
            warm.push(start.elapsed());
            sandbox.destroy().await?;
            if out.exit.code != Some(0) {
                bail!("true exited {:?}", out.exit);
            }
        }
        drop(pool);
        let warm = median(warm);
        println!(
            "  warm pool: create -> first exec of `true`     {} ms",
            ms(warm)
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
        tokio::time::sleep(Duration::from_secs(3)).await;
        let pid = paddock_core::sandbox::Sandbox::host_pid(&vm).context("QEMU pid")?;
        let rss = rss_bytes(pid)?;
        vm.destroy().await?;
        println!(
            "  idle QEMU RSS, 256 MiB guest (9p is in QEMU: no daemon)  {:.1} MiB",
            rss as f64 / f64::from(1 << 20)
        );
        println!(
            "floor: idle VMM RSS <= 64 MiB: {}",
            if rss <= 64 << 20 { "met" } else { "NOT met" }
        );
        Ok(())
    })
}
