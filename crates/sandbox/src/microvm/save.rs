//! Saving a microVM whole (memory, devices, processes) into a state file and
//! starting it again from there in a fresh QEMU.
//!
//! Save: the guest detaches from its connection (`Suspend`), QEMU stops the
//! VM, writes it to the file (a `fd:` migration of a descriptor the backend
//! opened) and quits: nothing of the VM runs or stays in memory. Restore: a
//! QEMU with the same devices starts with `-incoming defer`, loads the file
//! and continues; the guest greets its new connection.
//!
//! QEMU refuses to migrate while a 9p export is mounted in the guest, so a
//! VM is saved only when nothing of it is 9p: /usr is a disk image and the
//! guest is in the initramfs, but the workspace is a 9p share unless it is a
//! tmpfs in the VM (a temporary workspace under a quota).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use paddock_core::sandbox::{BoxError, SandboxSpec};
use serde_json::json;

use super::qmp::Qmp;
use crate::GuestClient;

const WORKSPACE_REFUSAL: &str = "its workspace is a host directory shared over virtio-9p, \
     which QEMU cannot save while the guest has it mounted; only a temporary workspace \
     with a quota (workspace_bytes or workspace_inodes: a tmpfs in the VM's memory) is \
     saved with the VM";
const VOLUME_REFUSAL: &str = "it mounts a volume, a host directory shared over virtio-9p, \
     which QEMU cannot save while the guest has it mounted";
/// The name the state file's descriptor has in QEMU.
const STATE_FD: &str = "state";
/// Migration speed cap (bytes/s): QEMU's default (128 MiB/s) is meant for
/// a live network migration; a stopped VM goes to a local file at once.
const SAVE_BANDWIDTH: u64 = 64 << 30;
/// How long QEMU may take to exit once it quit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a VM starts.
pub(super) enum Boot<'a> {
    /// Booted: the guest reads this spec first.
    Fresh(Box<paddock_jail::MicroVmSpec>),
    /// Loaded from a saved VM's state file.
    Restore {
        state: &'a Path,
        monitor: Option<&'a Path>,
        timeout: Duration,
    },
}

/// What a running VM needs to be saved.
#[derive(Debug)]
pub(crate) struct Saving {
    pub monitor: PathBuf,
    /// Why it cannot be, or None.
    pub refusal: Option<String>,
    pub timeout: Duration,
}

/// Why a VM of `spec` could not be saved whole, or None when it can.
pub(super) fn refusal(spec: &SandboxSpec, temporary_workspace: bool) -> Option<String> {
    if !spec.policy.volumes.is_empty() {
        return Some(VOLUME_REFUSAL.to_owned());
    }
    let in_memory = paddock_jail::workspace_in_sandbox_memory(
        &spec.policy.limits,
        temporary_workspace,
        spec.policy.read_only,
        !spec.policy.writable_paths.is_empty(),
    );
    (!in_memory).then(|| WORKSPACE_REFUSAL.to_owned())
}

/// Saves the VM into `state` and ends its QEMU (see the module doc). On an
/// error before QEMU quit, the VM runs on and its guest is greeted again.
pub(super) async fn save(
    saving: &Saving,
    client: &GuestClient,
    host_pid: Option<u32>,
    state: &Path,
) -> Result<(), BoxError> {
    if let Some(reason) = &saving.refusal {
        return Err(reason.clone().into());
    }
    let monitor = saving.monitor.clone();
    let timeout = saving.timeout;
    let qmp = blocking(move || Qmp::connect(&monitor, timeout)).await?;
    client.suspend().await?;
    let path = state.to_path_buf();
    let (mut qmp, saved) = tokio::task::spawn_blocking(move || {
        let mut qmp = qmp;
        let saved = write_state(&mut qmp, &path, timeout);
        (qmp, saved)
    })
    .await?;
    if let Err(err) = saved {
        let resumed = blocking(move || qmp.execute("cont", None).map(drop)).await;
        let greeted = client.greet().await;
        tracing::warn!(error = %err, resumed = resumed.is_ok(), greeted = greeted.is_ok(), "saving a VM failed; it runs on");
        return Err(err);
    }
    blocking(move || qmp.execute("quit", None).map(drop)).await?;
    if let Some(pid) = host_pid {
        wait_exit(pid).await?;
    }
    Ok(())
}

/// Stops the VM and migrates it into a new file at `path` (owner-only).
fn write_state(qmp: &mut Qmp, path: &Path, timeout: Duration) -> Result<(), BoxError> {
    qmp.execute("stop", None)?;
    qmp.execute(
        "migrate-set-parameters",
        Some(json!({ "max-bandwidth": SAVE_BANDWIDTH })),
    )?;
    let file = crate::shared::saved_state::create(path)?;
    qmp.send_fd(STATE_FD, file.as_fd())?;
    qmp.execute("migrate", Some(json!({ "uri": format!("fd:{STATE_FD}") })))?;
    qmp.wait_migration(timeout)?;
    file.sync_all()
        .map_err(|e| format!("syncing {}: {e}", path.display()))?;
    Ok(())
}

/// Loads the saved VM in `state` into the QEMU behind `monitor` (started
/// with `-incoming defer`) and lets it run.
pub(super) async fn load(
    monitor: Option<&Path>,
    state: &Path,
    timeout: Duration,
) -> Result<(), BoxError> {
    let monitor = monitor.ok_or("the VM has no monitor")?.to_path_buf();
    let state = state.to_path_buf();
    blocking(move || {
        let file =
            std::fs::File::open(&state).map_err(|e| format!("opening {}: {e}", state.display()))?;
        let mut qmp = Qmp::connect(&monitor, timeout)?;
        qmp.send_fd(STATE_FD, file.as_fd())?;
        qmp.execute(
            "migrate-incoming",
            Some(json!({ "uri": format!("fd:{STATE_FD}") })),
        )?;
        qmp.wait_migration(timeout)?;
        // The VM was saved stopped: it stays so until told.
        qmp.execute("cont", None)?;
        Ok::<_, BoxError>(())
    })
    .await
}

async fn blocking<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, BoxError>
where
    T: Send + 'static,
    E: Into<BoxError> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await?.map_err(Into::into)
}

/// Waits until QEMU `pid` exited (a zombie holds no memory; its parent
/// reaps it at destroy).
async fn wait_exit(pid: u32) -> Result<(), BoxError> {
    let deadline = tokio::time::Instant::now() + EXIT_TIMEOUT;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next());
        if matches!(state, None | Some("Z" | "X")) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("QEMU {pid} still runs {EXIT_TIMEOUT:?} after it quit").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use paddock_proto::{NetworkPolicy, SandboxLimits, SandboxPolicy};

    use super::*;

    fn spec(change: impl FnOnce(&mut SandboxPolicy)) -> SandboxSpec {
        SandboxSpec::with_policy(SandboxPolicy {
            limits: SandboxLimits {
                workspace_bytes: Some(64 << 20),
                ..SandboxLimits::default()
            },
            ..SandboxPolicy::default()
        })
        .map_policy(change)
    }

    #[test]
    fn only_a_vm_whose_workspace_is_in_its_memory_and_without_volumes_is_saved() {
        assert_eq!(refusal(&spec(|_| {}), true), None);
        // the host's directory (a workspace row), or no quota: a 9p share
        assert_eq!(
            refusal(&spec(|_| {}), false).as_deref(),
            Some(WORKSPACE_REFUSAL)
        );
        let no_quota = spec(|p| p.limits.workspace_bytes = None);
        assert_eq!(refusal(&no_quota, true).as_deref(), Some(WORKSPACE_REFUSAL));
        let read_only = spec(|p| p.read_only = true);
        assert_eq!(
            refusal(&read_only, true).as_deref(),
            Some(WORKSPACE_REFUSAL)
        );
        let scoped = spec(|p| p.writable_paths = vec!["out".to_owned()]);
        assert_eq!(refusal(&scoped, true).as_deref(), Some(WORKSPACE_REFUSAL));
        // A restore makes its namespace, tap (same addresses, same MAC)
        // and proxy again; connections open at the pause are cut.
        let networked = spec(|p| p.network = NetworkPolicy::Full);
        assert_eq!(refusal(&networked, true), None);
        let with_volume = spec(|p| {
            p.volumes = vec![paddock_proto::VolumeMount {
                name: "data".to_owned(),
                path: "/data".to_owned(),
                read_only: true,
            }]
        });
        assert_eq!(refusal(&with_volume, true).as_deref(), Some(VOLUME_REFUSAL));
    }
}
