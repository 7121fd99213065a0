//! Which accelerator the VMs get: KVM when the host's /dev/kvm really runs
//! the image's kernel (one probe boot to the init's marker, bounded by a
//! timeout), otherwise TCG. A /dev/kvm that exists but cannot run a stock
//! kernel (a PVM-backed one fails or hangs) is found by the probe, not
//! trusted.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::qemu::VmPlan;

/// What the image's init prints before it powers off on `paddock.marker`.
pub(super) const MARKER: &str = "PADDOCK-MARKER";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accelerator {
    Kvm,
    Tcg,
}

impl Accelerator {
    pub fn name(self) -> &'static str {
        match self {
            Accelerator::Kvm => "kvm",
            Accelerator::Tcg => "tcg",
        }
    }
}

/// The accelerator chosen and why.
#[derive(Debug, Clone)]
pub(super) struct Choice {
    pub accelerator: Accelerator,
    pub reason: String,
}

/// Boots `plan` (a marker-only plan) and waits for the marker on the
/// console, at most `timeout`. Ok(elapsed) when it came.
pub(super) async fn boot_to_marker(
    qemu: &std::path::Path,
    plan: &VmPlan,
    timeout: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut child = Command::new(qemu)
        .args(plan.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", qemu.display()))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let watch = async {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stdout.read(&mut buf).await {
                Ok(0) | Err(_) => return Err(seen),
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    if seen.windows(MARKER.len()).any(|w| w == MARKER.as_bytes()) {
                        return Ok(started.elapsed());
                    }
                    // Keep only a tail for the error message.
                    if seen.len() > 16 << 10 {
                        seen.drain(..seen.len() - (4 << 10));
                    }
                }
            }
        }
    };
    let outcome = tokio::time::timeout(timeout, watch).await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    match outcome {
        Ok(Ok(elapsed)) => Ok(elapsed),
        Ok(Err(_console)) => {
            let mut err = Vec::new();
            let _ = tokio::time::timeout(Duration::from_millis(500), stderr.read_to_end(&mut err))
                .await;
            let err = String::from_utf8_lossy(&err);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(format!("QEMU exited before the marker: {}", last.trim()))
        }
        Err(_) => Err(format!("no marker within {timeout:?} (the boot hangs)")),
    }
}

/// KVM when /dev/kvm exists and a probe boot of the real image reaches the
/// marker in time; TCG otherwise, with the reason.
pub(super) async fn choose(
    qemu: &std::path::Path,
    probe: VmPlan,
    try_kvm: bool,
    timeout: Duration,
) -> Choice {
    if !try_kvm {
        return Choice {
            accelerator: Accelerator::Tcg,
            reason: "KVM not tried (configured off)".to_owned(),
        };
    }
    if !std::path::Path::new("/dev/kvm").exists() {
        return Choice {
            accelerator: Accelerator::Tcg,
            reason: "the host has no /dev/kvm".to_owned(),
        };
    }
    let plan = VmPlan {
        accelerator: Accelerator::Kvm,
        marker_only: true,
        ..probe
    };
    match boot_to_marker(qemu, &plan, timeout).await {
        Ok(elapsed) => Choice {
            accelerator: Accelerator::Kvm,
            reason: format!("KVM probe booted the image in {} ms", elapsed.as_millis()),
        },
        Err(why) => {
            tracing::info!(reason = %why, "KVM cannot run the microvm image; using TCG");
            Choice {
                accelerator: Accelerator::Tcg,
                reason: format!("/dev/kvm cannot run the image: {why}"),
            }
        }
    }
}
