//! A running microVM sandbox and its teardown.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{
    BoxError, EgressLog, GuestOps, NetworkSwap, Sandbox, SandboxError, SandboxId, SandboxInfo,
};
use tokio::process::Child;
use tokio::task::JoinHandle;

use super::save::{self, Saving};
use crate::GuestClient;
use crate::shared::start::StartTeardown;
use crate::shared::stderr::StderrTail;

/// A microVM sandbox: the QEMU process, the connection to its guest, its
/// cgroup, socket directory and temporary workspace. Dropping it without
/// [`MicroVmSandbox::destroy`] kills QEMU and removes the rest in the
/// background.
#[derive(Debug)]
pub struct MicroVmSandbox {
    info: SandboxInfo,
    client: GuestClient,
    pub(super) teardown: Teardown,
    host_pid: Option<u32>,
    egress_log: Option<EgressLog>,
    saving: Saving,
}

impl MicroVmSandbox {
    pub(super) fn new(
        info: SandboxInfo,
        client: GuestClient,
        teardown: Teardown,
        host_pid: Option<u32>,
        egress_log: Option<EgressLog>,
        saving: Saving,
    ) -> Self {
        Self {
            info,
            client,
            teardown,
            host_pid,
            egress_log,
            saving,
        }
    }

    pub fn info(&self) -> &SandboxInfo {
        &self.info
    }

    pub fn client(&self) -> &GuestClient {
        &self.client
    }

    /// The guest's console and QEMU's own messages, last lines, by "; ".
    pub fn console_tail(&self) -> String {
        self.teardown.tail.joined()
    }

    /// Asks the guest to stop (bounded), kills QEMU, and removes the
    /// cgroup, the socket directory and the temporary workspace.
    pub async fn destroy(self) -> Result<(), SandboxError> {
        let Self {
            info,
            client,
            mut teardown,
            ..
        } = self;
        let timeout = teardown.stop_timeout;
        client
            .shut_down_then(&info.id, timeout, teardown.remove())
            .await
    }
}

#[async_trait]
impl Sandbox for MicroVmSandbox {
    fn info(&self) -> &SandboxInfo {
        &self.info
    }

    fn guest(&self) -> Arc<dyn GuestOps> {
        Arc::new(self.client.clone())
    }

    fn host_pid(&self) -> Option<u32> {
        self.host_pid
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

    fn suspend_refusal(&self) -> Option<String> {
        self.saving.refusal.clone()
    }

    async fn suspend(&self, state: &Path) -> Result<(), SandboxError> {
        save::save(&self.saving, &self.client, self.host_pid, state)
            .await
            .map_err(|source| SandboxError::Suspend {
                id: self.info.id.clone(),
                source,
            })
    }

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        MicroVmSandbox::destroy(*self).await
    }
}

/// What a VM leaves until it is torn down.
#[derive(Debug)]
pub(super) struct Teardown {
    pub id: SandboxId,
    pub child: Option<Child>,
    /// Set once the VM's cgroup is being made.
    pub cgroup_parent: Option<String>,
    /// The socket directory, once made.
    pub vm_dir: Option<PathBuf>,
    pub temp_workspace: Option<tempfile::TempDir>,
    pub tasks: Vec<JoinHandle<()>>,
    pub tail: StderrTail,
    pub stop_timeout: Duration,
    /// The host-side egress (namespace, tap, proxy, NAT) of a VM with network.
    pub egress: Option<paddock_egress::Egress>,
    /// Fills the sandbox's `EgressLog`; ends once the proxy is stopped.
    pub egress_log_task: Option<JoinHandle<()>>,
}

/// How long the last decisions may take to reach the log at destroy.
const EGRESS_LOG_GRACE: Duration = Duration::from_secs(2);

impl Teardown {
    pub(super) async fn remove(&mut self) -> Result<(), BoxError> {
        if let Some(mut child) = self.child.take() {
            // The guest's exit powers the VM off; QEMU gets a moment, then SIGKILL.
            if tokio::time::timeout(self.stop_timeout, child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
                tokio::time::timeout(Duration::from_secs(10), child.wait())
                    .await
                    .map_err(|_| "QEMU did not die after SIGKILL")??;
            }
        }
        for task in self.tasks.drain(..) {
            task.abort();
        }
        // QEMU is gone: its tap and namespace can go.
        if let Some(egress) = self.egress.take() {
            egress.stop().await;
        }
        // Every decision in the log before destroy returns (a caller reads it then).
        if let Some(task) = self.egress_log_task.take() {
            let _ = tokio::time::timeout(EGRESS_LOG_GRACE, task).await;
        }
        let leftover = self.leftover();
        tokio::task::spawn_blocking(move || leftover.remove())
            .await
            .map_err(|e| -> BoxError { e.into() })?
    }

    fn leftover(&mut self) -> Leftover {
        Leftover {
            id: self.id.clone(),
            cgroup_parent: self.cgroup_parent.take(),
            vm_dir: self.vm_dir.take(),
            temp_workspace: self.temp_workspace.take(),
        }
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
        }
        if self.cgroup_parent.is_none() && self.vm_dir.is_none() && self.temp_workspace.is_none() {
            return;
        }
        tracing::debug!(sandbox_id = %self.id, "sandbox dropped without destroy: removing it");
        let leftover = self.leftover();
        // QEMU is killed above; its cgroup can only go once it is gone, so
        // removal waits on a blocking thread (reaping catches the rest).
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || {
                    std::thread::sleep(Duration::from_millis(200));
                    if let Err(err) = leftover.remove() {
                        tracing::warn!(error = %err, "removing a dropped microvm sandbox");
                    }
                });
            }
            Err(_) => drop(leftover),
        }
    }
}

#[async_trait]
impl StartTeardown for Teardown {
    async fn settle(&mut self) -> String {
        // Let the console's last lines arrive before QEMU goes.
        tokio::time::sleep(Duration::from_millis(100)).await;
        "VM stopped".to_owned()
    }

    async fn tear_down(&mut self) -> Result<(), BoxError> {
        self.remove().await
    }

    fn temporary_workspace(&self) -> bool {
        self.temp_workspace.is_some()
    }
}

/// What is left on the host once QEMU is gone.
#[derive(Debug)]
pub(super) struct Leftover {
    pub id: SandboxId,
    pub cgroup_parent: Option<String>,
    pub vm_dir: Option<PathBuf>,
    pub temp_workspace: Option<tempfile::TempDir>,
}

impl Leftover {
    pub(super) fn remove(self) -> Result<(), BoxError> {
        let cgroup = match &self.cgroup_parent {
            Some(parent) => paddock_jail::remove_sandbox_cgroups(parent, self.id.as_str())
                .map_err(|e| -> BoxError { e.into() }),
            None => Ok(()),
        };
        let dir = match &self.vm_dir {
            Some(dir) => match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("removing {}: {e}", dir.display()).into())
                }
                _ => Ok(()),
            },
            None => Ok(()),
        };
        let workspace = match self.temp_workspace {
            Some(temp) => temp.close().map_err(|e| -> BoxError { e.into() }),
            None => Ok(()),
        };
        cgroup.and(dir).and(workspace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::start::Start;

    #[tokio::test]
    async fn a_start_abandoned_before_its_vm_removes_what_it_made_and_only_that() {
        let root = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir_in(root.path()).unwrap();
        let workspace_path = workspace.path().to_path_buf();
        let vm_dir = root.path().join("vm");
        let other = root.path().join("other");
        std::fs::create_dir(&vm_dir).unwrap();
        std::fs::create_dir(&other).unwrap();
        let start = Start::begin("microvm");
        let teardown = Teardown {
            id: start.id.clone(),
            child: None,
            // no cgroup was made: none is removed
            cgroup_parent: None,
            vm_dir: Some(vm_dir.clone()),
            temp_workspace: Some(workspace),
            tasks: Vec::new(),
            tail: start.tail.clone(),
            stop_timeout: Duration::from_secs(1),
            egress: None,
            egress_log_task: None,
        };
        let guard = start.guard(teardown);
        let err = guard.launch_error("no QEMU".into());
        let err = guard.abandon(err).await;
        assert!(matches!(err, SandboxError::Launch { .. }), "{err:?}");
        assert!(!vm_dir.exists());
        assert!(!workspace_path.exists());
        assert!(other.is_dir());
    }
}
