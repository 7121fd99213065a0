//! A running native sandbox and its teardown.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{
    BoxError, EgressLog, GuestError, GuestOps, NetworkSwap, Sandbox, SandboxError, SandboxId,
    SandboxInfo,
};
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::GuestClient;
use crate::shared::start::StartTeardown;
use crate::shared::stderr::StderrTail;

/// How long a failed start waits for the guest's stderr to end.
const STDERR_GRACE: Duration = Duration::from_millis(500);
/// How long destroy waits for the last egress decisions (those the stop
/// itself reports, such as a `full` sandbox's last connections) to reach
/// the log.
const EGRESS_LOG_GRACE: Duration = Duration::from_secs(1);

/// A native sandbox: the jail monitor process and the connection to its guest.
/// Dropping it without [`NativeSandbox::destroy`] kills the monitor (and so
/// the sandbox) and cleans up in the background.
#[derive(Debug)]
pub struct NativeSandbox {
    info: SandboxInfo,
    client: GuestClient,
    teardown: Teardown,
    stderr_tail: StderrTail,
    egress_log: Option<EgressLog>,
}

impl NativeSandbox {
    pub(super) fn new(
        info: SandboxInfo,
        client: GuestClient,
        teardown: Teardown,
        stderr_tail: StderrTail,
        egress_log: Option<EgressLog>,
    ) -> Self {
        Self {
            info,
            client,
            teardown,
            stderr_tail,
            egress_log,
        }
    }

    pub fn info(&self) -> &SandboxInfo {
        &self.info
    }

    /// The connection to the guest; every protocol operation is on [`GuestOps`].
    pub fn client(&self) -> &GuestClient {
        &self.client
    }

    /// Host pid of the jail monitor, until it has been reaped.
    pub fn monitor_pid(&self) -> Option<u32> {
        self.teardown.monitor.as_ref().and_then(Child::id)
    }

    /// The last lines the guest wrote to its stderr, joined by "; ".
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail.joined()
    }

    /// Asks the guest to stop (bounded wait), kills the monitor if it is still
    /// there, reaps it, and removes the sandbox's cgroups and temporary workspace.
    pub async fn destroy(mut self) -> Result<(), SandboxError> {
        let stop = self.teardown.stop_timeout;
        let grace = if self.client.is_closed() {
            Duration::ZERO
        } else {
            match tokio::time::timeout(stop, self.client.shutdown()).await {
                Ok(Ok(())) | Ok(Err(GuestError::Disconnected { .. })) => stop,
                Ok(Err(err)) => {
                    tracing::debug!(sandbox_id = %self.info.id, error = %err, "guest refused shutdown");
                    Duration::ZERO
                }
                Err(_) => Duration::ZERO,
            }
        };
        let status = self.teardown.wait_then_kill(grace).await;
        tracing::debug!(sandbox_id = %self.info.id, %status, "guest stopped");
        self.teardown
            .clean()
            .await
            .map_err(|source| SandboxError::Destroy {
                id: self.info.id.clone(),
                source,
            })
    }
}

#[async_trait]
impl Sandbox for NativeSandbox {
    fn info(&self) -> &SandboxInfo {
        &self.info
    }

    fn guest(&self) -> Arc<dyn GuestOps> {
        Arc::new(self.client.clone())
    }

    fn host_pid(&self) -> Option<u32> {
        self.monitor_pid()
    }

    fn egress_log(&self) -> Option<EgressLog> {
        self.egress_log.clone()
    }

    async fn set_network(
        &self,
        policy: paddock_proto::NetworkPolicy,
    ) -> Result<NetworkSwap, SandboxError> {
        crate::shared::network::set_network(&self.info.id, self.teardown.egress.as_ref(), policy)
    }

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        NativeSandbox::destroy(*self).await
    }
}

/// What a sandbox leaves on the host until it is torn down.
#[derive(Debug)]
pub(super) struct Teardown {
    pub(super) id: SandboxId,
    /// The jail monitor; None once reaped.
    pub(super) monitor: Option<Child>,
    pub(super) stderr_task: Option<JoinHandle<()>>,
    pub(super) temp_workspace: Option<tempfile::TempDir>,
    /// Set when the sandbox has cgroups to remove (not in unconfined mode).
    pub(super) cgroup_parent: Option<String>,
    pub(super) stop_timeout: Duration,
    /// The egress proxy and network namespace of a sandbox with network.
    pub(super) egress: Option<paddock_egress::Egress>,
    /// Fills the sandbox's `EgressLog`; ends once the proxy is stopped.
    pub(super) egress_log_task: Option<JoinHandle<()>>,
    /// Marks the namespace for crash reaping; removed after it.
    pub(super) net_marker: Option<tempfile::TempDir>,
}

impl Teardown {
    /// Gives the monitor `grace` to exit by itself, then kills it; reaps it
    /// either way. Says how it ended.
    pub(super) async fn wait_then_kill(&mut self, grace: Duration) -> String {
        let Some(mut monitor) = self.monitor.take() else {
            return "already reaped".to_owned();
        };
        if !grace.is_zero()
            && let Ok(Ok(status)) = tokio::time::timeout(grace, monitor.wait()).await
        {
            return status.to_string();
        }
        // SIGKILL of the monitor kills the sandbox init (parent-death signal).
        let _ = monitor.start_kill();
        match monitor.wait().await {
            Ok(status) => format!("killed, {status}"),
            Err(err) => format!("killed, not reaped: {err}"),
        }
    }

    pub(super) async fn wait_briefly_then_kill(&mut self) -> String {
        let grace = self.stop_timeout;
        self.wait_then_kill(grace).await
    }

    /// Waits (bounded) until the guest's stderr is read to its end.
    pub(super) async fn finish_stderr(&mut self) {
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(STDERR_GRACE, task).await;
        }
    }

    /// Removes the cgroups and the temporary workspace. The monitor must be
    /// reaped first, so no process of the sandbox is left in them.
    pub(super) async fn clean(&mut self) -> Result<(), BoxError> {
        if let Some(egress) = self.egress.take() {
            egress.stop().await;
        }
        drop(self.net_marker.take());
        // Every decision in the log before destroy returns (a caller reads it then).
        if let Some(task) = self.egress_log_task.take() {
            let _ = tokio::time::timeout(EGRESS_LOG_GRACE, task).await;
        }
        let id = self.id.clone();
        let cgroup_parent = self.cgroup_parent.take();
        let temp_workspace = self.temp_workspace.take();
        let cleaned =
            tokio::task::spawn_blocking(move || clean_blocking(&id, cgroup_parent, temp_workspace))
                .await;
        match cleaned {
            Ok(result) => result,
            Err(join) => Err(join.into()),
        }
    }
}

#[async_trait]
impl StartTeardown for Teardown {
    /// Kills the guest (after the stop timeout) and waits for its stderr's end.
    async fn settle(&mut self) -> String {
        let status = self.wait_briefly_then_kill().await;
        self.finish_stderr().await;
        status
    }

    async fn tear_down(&mut self) -> Result<(), BoxError> {
        self.clean().await
    }

    fn temporary_workspace(&self) -> bool {
        self.temp_workspace.is_some()
    }
}

fn clean_blocking(
    id: &SandboxId,
    cgroup_parent: Option<String>,
    temp_workspace: Option<tempfile::TempDir>,
) -> Result<(), BoxError> {
    let cgroups = match cgroup_parent {
        Some(parent) => paddock_jail::remove_sandbox_cgroups(&parent, id.as_str())
            .map_err(|e| -> BoxError { e.into() }),
        None => Ok(()),
    };
    let workspace = match temp_workspace {
        // The jail's monitor removes a temporary workspace itself once the
        // sandbox has ended (so it goes even if this process is killed).
        Some(dir) => match dir.close() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other.map_err(|e| -> BoxError { e.into() }),
        },
        None => Ok(()),
    };
    cgroups.and(workspace)
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if self.monitor.is_none()
            && self.cgroup_parent.is_none()
            && self.temp_workspace.is_none()
            && self.egress.is_none()
            && self.net_marker.is_none()
        {
            return;
        }
        tracing::debug!(sandbox_id = %self.id, "sandbox dropped without destroy: killing it");
        let mut leftovers = Leftovers {
            id: self.id.clone(),
            egress: self.egress.take(),
            monitor: self.monitor.take(),
            temp_workspace: self.temp_workspace.take(),
            cgroup_parent: self.cgroup_parent.take(),
            net_marker: self.net_marker.take(),
        };
        if let Some(monitor) = leftovers.monitor.as_mut() {
            // SIGKILL of the monitor kills the sandbox init (parent-death signal).
            let _ = monitor.start_kill();
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(leftovers.clean());
            }
            Err(_) => drop(leftovers),
        }
    }
}

/// What a dropped sandbox still holds. Cleaned on a task when a runtime is
/// there; otherwise (or when that task never runs because the runtime is
/// shutting down) its own drop cleans up synchronously, best effort.
#[derive(Debug)]
struct Leftovers {
    id: SandboxId,
    /// Its drop (when not stopped here) removes the namespace synchronously.
    egress: Option<paddock_egress::Egress>,
    monitor: Option<Child>,
    temp_workspace: Option<tempfile::TempDir>,
    cgroup_parent: Option<String>,
    /// After `egress`: dropped once the namespace is gone.
    net_marker: Option<tempfile::TempDir>,
}

impl Leftovers {
    async fn clean(mut self) {
        if let Some(mut monitor) = self.monitor.take() {
            let _ = monitor.wait().await;
        }
        if let Some(egress) = self.egress.take() {
            egress.stop().await;
        }
        drop(self.net_marker.take());
        let id = self.id.clone();
        let cgroup_parent = self.cgroup_parent.take();
        let temp_workspace = self.temp_workspace.take();
        let cleaned =
            tokio::task::spawn_blocking(move || clean_blocking(&id, cgroup_parent, temp_workspace))
                .await;
        match cleaned {
            Ok(Ok(())) => {}
            Ok(Err(err)) => warn_unclean(&self.id, &*err),
            Err(err) => warn_unclean(&self.id, &err),
        }
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if self.cgroup_parent.is_none() && self.temp_workspace.is_none() {
            return;
        }
        if let Err(err) = clean_blocking(
            &self.id,
            self.cgroup_parent.take(),
            self.temp_workspace.take(),
        ) {
            warn_unclean(&self.id, &*err);
        }
    }
}

fn warn_unclean(id: &SandboxId, err: &dyn std::error::Error) {
    tracing::warn!(sandbox_id = %id, error = %err, "cleaning up a dropped sandbox");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::start::Start;

    #[tokio::test]
    async fn a_start_abandoned_before_its_monitor_removes_what_it_made_and_only_that() {
        let root = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir_in(root.path()).unwrap();
        let marker = tempfile::tempdir_in(root.path()).unwrap();
        let (workspace_path, marker_path) =
            (workspace.path().to_path_buf(), marker.path().to_path_buf());
        let other = root.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let start = Start::begin("native");
        let teardown = Teardown {
            id: start.id.clone(),
            monitor: None,
            stderr_task: None,
            temp_workspace: Some(workspace),
            // no monitor ran: no cgroup is removed
            cgroup_parent: None,
            stop_timeout: Duration::from_secs(1),
            egress: None,
            egress_log_task: None,
            net_marker: Some(marker),
        };
        let guard = start.guard(teardown);
        let err = guard.launch_error("no guest binary".into());
        let err = guard.abandon(err).await;
        assert!(matches!(err, SandboxError::Launch { .. }), "{err:?}");
        assert!(!workspace_path.exists());
        assert!(!marker_path.exists());
        assert!(other.is_dir());
    }
}
