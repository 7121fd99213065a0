//! A running microVM sandbox and its teardown.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{BoxError, GuestOps, Sandbox, SandboxError, SandboxId, SandboxInfo};
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::GuestClient;
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
}

impl MicroVmSandbox {
    pub(super) fn new(
        info: SandboxInfo,
        client: GuestClient,
        teardown: Teardown,
        host_pid: Option<u32>,
    ) -> Self {
        Self {
            info,
            client,
            teardown,
            host_pid,
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

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        MicroVmSandbox::destroy(*self).await
    }
}

/// What a VM leaves until it is torn down.
#[derive(Debug)]
pub(super) struct Teardown {
    pub id: SandboxId,
    pub child: Option<Child>,
    pub cgroup_parent: String,
    pub vm_dir: Option<PathBuf>,
    pub temp_workspace: Option<tempfile::TempDir>,
    pub tasks: Vec<JoinHandle<()>>,
    pub tail: StderrTail,
    pub stop_timeout: Duration,
}

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
        let leftover = self.leftover();
        tokio::task::spawn_blocking(move || leftover.remove())
            .await
            .map_err(|e| -> BoxError { e.into() })?
    }

    fn leftover(&mut self) -> Leftover {
        Leftover {
            id: self.id.clone(),
            cgroup_parent: self.cgroup_parent.clone(),
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
        if self.vm_dir.is_none() && self.temp_workspace.is_none() {
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

/// What is left on the host once QEMU is gone.
#[derive(Debug)]
pub(super) struct Leftover {
    pub id: SandboxId,
    pub cgroup_parent: String,
    pub vm_dir: Option<PathBuf>,
    pub temp_workspace: Option<tempfile::TempDir>,
}

impl Leftover {
    pub(super) fn remove(self) -> Result<(), BoxError> {
        let cgroup = paddock_jail::remove_sandbox_cgroups(&self.cgroup_parent, self.id.as_str())
            .map_err(|e| -> BoxError { e.into() });
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
