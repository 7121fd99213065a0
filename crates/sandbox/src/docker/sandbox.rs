//! A running container sandbox and its teardown.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bollard::Docker;
use bollard::query_parameters::{
    InspectContainerOptions, KillContainerOptions, RemoveContainerOptions,
};
use paddock_core::sandbox::{
    BoxError, EgressLog, GuestOps, NetworkSwap, Sandbox, SandboxError, SandboxId, SandboxInfo,
};
use tokio::task::JoinHandle;

use super::save::HeldBlocks;
use crate::GuestClient;
use crate::shared::start::StartTeardown;
use crate::shared::stderr::StderrTail;

/// How long teardown waits for the last egress decisions (those the stop
/// of `full`'s log reads) to reach the sandbox's log.
const EGRESS_LOG_WAIT: Duration = Duration::from_secs(2);

/// How often `destroy` looks whether the engine has removed the container.
const GONE_POLL: Duration = Duration::from_millis(20);
/// How many times a removal the engine does not answer in time is asked.
const REMOVE_TRIES: u32 = 3;
/// How long past the stop grace a removal may take to show.
const REMOVE_SLACK: Duration = Duration::from_secs(30);

/// A container sandbox: the container, the connection to its guest and
/// the temporary workspace. Dropping it without [`DockerSandbox::destroy`]
/// removes the container in the background.
#[derive(Debug)]
pub struct DockerSandbox {
    info: SandboxInfo,
    client: GuestClient,
    pub(super) teardown: Teardown,
    host_pid: Option<u32>,
    egress_log: Option<EgressLog>,
    /// How it is saved whole (gVisor), or why not.
    pub(super) saving: super::save::Saving,
}

impl DockerSandbox {
    pub(super) fn new(
        info: SandboxInfo,
        client: GuestClient,
        teardown: Teardown,
        host_pid: Option<u32>,
        egress_log: Option<EgressLog>,
        saving: super::save::Saving,
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

    /// The engine's id of the container.
    pub fn container_id(&self) -> &str {
        &self.teardown.container
    }

    /// The last lines the guest wrote to its stderr, joined by "; ".
    pub fn stderr_tail(&self) -> String {
        self.teardown.tail.joined()
    }

    /// Asks the guest to stop (bounded), removes the container (killing it
    /// if it still runs), waits until the engine no longer knows it, and
    /// removes the temporary workspace.
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
impl Sandbox for DockerSandbox {
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
        self.saving.refusal.map(str::to_owned)
    }

    async fn suspend(&self, state: &Path) -> Result<(), SandboxError> {
        super::save::save(self, state)
            .await
            .map_err(|source| SandboxError::Suspend {
                id: self.info.id.clone(),
                source,
            })
    }

    async fn destroy(self: Box<Self>) -> Result<(), SandboxError> {
        DockerSandbox::destroy(*self).await
    }
}

/// What a container sandbox leaves until it is torn down.
#[derive(Debug)]
pub(super) struct Teardown {
    pub id: SandboxId,
    pub docker: Docker,
    /// The engine's container id; empty once removed.
    pub container: String,
    pub temp_workspace: Option<tempfile::TempDir>,
    /// The sandbox's own host ids, held until the container is gone.
    pub id_block: Option<paddock_jail::IdBlock>,
    pub stream_task: Option<JoinHandle<()>>,
    pub tail: StderrTail,
    pub stop_timeout: Duration,
    /// The egress proxy and the named namespace of a sandbox with network.
    pub egress: Option<paddock_egress::Egress>,
    /// Fills the sandbox's egress log; ends once the proxy stops.
    pub egress_log_task: Option<JoinHandle<()>>,
    /// Marks the namespace for the reaper and holds the CA bundle; after
    /// `egress`, dropped once the namespace is gone.
    pub net_marker: Option<tempfile::TempDir>,
    /// The temporary workspace of a restored sandbox (its `TempDir` went
    /// with the save), removed as `temp_workspace` is.
    pub adopted_workspace: Option<PathBuf>,
    /// The sandbox is saved in its container (or not restored yet): the
    /// teardown stops the container but keeps it, its temporary workspace
    /// and its id block (into `held`).
    pub saved: AtomicBool,
    pub held: HeldBlocks,
}

impl Teardown {
    /// What a teardown built before anything was set up holds.
    pub(super) fn new(
        id: SandboxId,
        docker: Docker,
        tail: StderrTail,
        stop_timeout: Duration,
        held: HeldBlocks,
    ) -> Self {
        Self {
            id,
            docker,
            container: String::new(),
            temp_workspace: None,
            id_block: None,
            stream_task: None,
            tail,
            stop_timeout,
            egress: None,
            egress_log_task: None,
            net_marker: None,
            adopted_workspace: None,
            saved: AtomicBool::new(false),
            held,
        }
    }

    /// Leaves the temporary workspace on disk and holds the id block for
    /// the restore of a saved sandbox.
    fn keep_for_restore(&mut self) {
        if let Some(dir) = self.temp_workspace.take() {
            let _ = dir.keep();
        }
        if let Some(block) = self.id_block.take() {
            self.held.hold(block);
        }
    }

    /// A saved sandbox's container stopped (if it runs) and left with its
    /// checkpoint; its workspace and id block stay for the restore.
    async fn keep_saved(&mut self) -> Result<(), BoxError> {
        let container = std::mem::take(&mut self.container);
        if let Some(task) = self.stream_task.take() {
            task.abort();
        }
        self.keep_for_restore();
        self.adopted_workspace = None;
        if container.is_empty() {
            return Ok(());
        }
        match self
            .docker
            .kill_container(&container, None::<KillContainerOptions>)
            .await
        {
            Ok(()) => Ok(()),
            Err(err) if is_gone(&err) => Ok(()),
            // not running: the save ended it already
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    pub(super) async fn remove(&mut self) -> Result<(), BoxError> {
        if self.saved.load(Ordering::SeqCst) {
            return self.keep_saved().await;
        }
        let container = std::mem::take(&mut self.container);
        let removed = if container.is_empty() {
            Ok(())
        } else {
            remove_container(&self.docker, &container, self.stop_timeout).await
        };
        if let Some(task) = self.stream_task.take() {
            task.abort();
        }
        // After the container: its namespace name, rules and proxy.
        if let Some(egress) = self.egress.take() {
            egress.stop().await;
        }
        if let Some(task) = self.egress_log_task.take() {
            let _ = tokio::time::timeout(EGRESS_LOG_WAIT, task).await;
        }
        self.net_marker = None;
        if removed.is_ok() {
            // No process of the container is left to run as these ids.
            self.id_block = None;
        }
        let temp = self.temp_workspace.take();
        let adopted = self.adopted_workspace.take();
        let workspace = tokio::task::spawn_blocking(move || {
            if let Some(dir) = temp {
                dir.close()?;
            }
            match adopted {
                Some(dir) => remove_dir(&dir),
                None => Ok(()),
            }
        })
        .await
        .map_err(|e| -> BoxError { e.into() })
        .and_then(|r| r.map_err(|e| -> BoxError { e.into() }));
        removed.and(workspace)
    }
}

#[async_trait]
impl StartTeardown for Teardown {
    async fn settle(&mut self) -> String {
        // Let the guest's last words arrive before the container goes.
        tokio::time::sleep(Duration::from_millis(50)).await;
        "container removed".to_owned()
    }

    async fn tear_down(&mut self) -> Result<(), BoxError> {
        self.remove().await
    }

    fn temporary_workspace(&self) -> bool {
        self.temp_workspace.is_some() || self.adopted_workspace.is_some()
    }
}

/// Removes a directory tree (gone already is fine).
pub(super) fn remove_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn is_gone(err: &bollard::errors::Error) -> bool {
    matches!(
        err,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

/// Force-removes the container with its anonymous volumes, then waits
/// (bounded by `grace` plus [`REMOVE_SLACK`]) until the engine no longer
/// lists it: with auto-remove the engine may be removing it already (409).
/// A busy host can make runsc slow to kill a sandbox (dockerd logs "get
/// state ... context deadline exceeded"), so an engine that does not answer
/// in time is asked again, and waited for, rather than the removal failed.
pub(super) async fn remove_container(
    docker: &Docker,
    container: &str,
    grace: Duration,
) -> Result<(), BoxError> {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        link: false,
    };
    let mut tries = 1;
    loop {
        match docker
            .remove_container(container, Some(options.clone()))
            .await
        {
            Ok(()) => break,
            Err(err) if is_gone(&err) => return Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => break,
            Err(bollard::errors::Error::RequestTimeoutError) if tries < REMOVE_TRIES => {
                tracing::warn!(
                    container,
                    tries,
                    "the engine did not answer a removal in time; asking again"
                );
                tries += 1;
            }
            Err(err) => return Err(err.into()),
        }
    }
    let deadline = tokio::time::Instant::now() + grace + REMOVE_SLACK;
    loop {
        match docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await
        {
            Err(err) if is_gone(&err) => return Ok(()),
            Err(bollard::errors::Error::RequestTimeoutError)
                if tokio::time::Instant::now() < deadline => {}
            Err(err) => return Err(err.into()),
            Ok(_) if tokio::time::Instant::now() >= deadline => {
                return Err(format!("container {container} is still there after removal").into());
            }
            Ok(_) => tokio::time::sleep(GONE_POLL).await,
        }
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Some(task) = self.stream_task.take() {
            task.abort();
        }
        if let Some(task) = self.egress_log_task.take() {
            task.abort();
        }
        if self.saved.load(Ordering::SeqCst) {
            // The save (or the restore that did not finish) keeps them.
            self.keep_for_restore();
            return;
        }
        if self.container.is_empty()
            && self.temp_workspace.is_none()
            && self.adopted_workspace.is_none()
            && self.id_block.is_none()
            && self.egress.is_none()
        {
            return;
        }
        tracing::debug!(sandbox_id = %self.id, "sandbox dropped without destroy: removing it");
        let leftover = Leftover {
            id: self.id.clone(),
            docker: self.docker.clone(),
            container: std::mem::take(&mut self.container),
            temp_workspace: self.temp_workspace.take(),
            id_block: self.id_block.take(),
            stop_timeout: self.stop_timeout,
            egress: self.egress.take(),
            net_marker: self.net_marker.take(),
            adopted_workspace: self.adopted_workspace.take(),
        };
        // Without a runtime the temporary workspace goes with `leftover`; the
        // container exits when its stdin closes and the engine removes it
        // (auto-remove); reaping at the next start catches anything else.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(leftover.remove());
        }
    }
}

/// What a dropped sandbox still holds. No Drop of its own: a task cancelled
/// at runtime shutdown just lets the temporary workspace go.
#[derive(Debug)]
struct Leftover {
    id: SandboxId,
    docker: Docker,
    container: String,
    temp_workspace: Option<tempfile::TempDir>,
    id_block: Option<paddock_jail::IdBlock>,
    stop_timeout: Duration,
    egress: Option<paddock_egress::Egress>,
    net_marker: Option<tempfile::TempDir>,
    adopted_workspace: Option<PathBuf>,
}

impl Leftover {
    async fn remove(self) {
        // Empty when the start was dropped before its container was made.
        if !self.container.is_empty()
            && let Err(err) =
                remove_container(&self.docker, &self.container, self.stop_timeout).await
        {
            tracing::warn!(sandbox_id = %self.id, error = %err, "removing a dropped sandbox");
        }
        if let Some(egress) = self.egress {
            egress.stop().await;
        }
        drop(self.net_marker);
        drop(self.temp_workspace);
        if let Some(dir) = self.adopted_workspace {
            let _ = tokio::task::spawn_blocking(move || remove_dir(&dir)).await;
        }
        drop(self.id_block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::start::Start;

    #[tokio::test]
    async fn a_start_abandoned_before_its_container_removes_its_workspace_and_only_that() {
        let root = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir_in(root.path()).unwrap();
        let workspace_path = workspace.path().to_path_buf();
        let other = root.path().join("other");
        std::fs::create_dir(&other).unwrap();
        // Never asked (there is no container to remove): no engine listens.
        let socket = root.path().join("no-engine.sock");
        std::fs::write(&socket, b"").unwrap();
        let docker =
            Docker::connect_with_unix(&socket.to_string_lossy(), 1, bollard::API_DEFAULT_VERSION)
                .unwrap();
        let start = Start::begin("docker");
        let mut teardown = Teardown::new(
            start.id.clone(),
            docker,
            start.tail.clone(),
            Duration::from_secs(1),
            HeldBlocks::default(),
        );
        teardown.temp_workspace = Some(workspace);
        let guard = start.guard(teardown);
        let err = guard.launch_error("no image".into());
        let err = guard.abandon(err).await;
        assert!(matches!(err, SandboxError::Launch { .. }), "{err:?}");
        assert!(!workspace_path.exists());
        assert!(other.is_dir());
    }
}
