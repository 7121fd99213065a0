//! Starting a saved gVisor sandbox again from its container's checkpoint,
//! and removing one that will not be (see save.rs).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bollard::query_parameters::InspectContainerOptions;
use paddock_core::sandbox::{BoxError, SandboxBackend, SandboxError, SandboxId, SandboxSpec};

use super::backend::DockerBackend;
use super::checkpoint::Checkpoints;
use super::container;
use super::host_checks;
use super::sandbox::{DockerSandbox, Teardown, remove_container, remove_dir};
use super::save::{self, SavedContainer, Saving};
use crate::GuestClient;
use crate::shared::start::Start;

/// How many times, and how far apart, a start from a checkpoint is tried
/// while the engine refuses it for its own upload race (see
/// [`CheckpointError::is_upload_race`](super::checkpoint::CheckpointError)).
const START_TRIES: u32 = 20;
const START_RETRY: Duration = Duration::from_millis(100);

impl DockerBackend {
    /// [`SandboxBackend::restore`] with the concrete handle type: the
    /// sandbox keeps its id, and is not saved again (runsc leaves a
    /// restored container's state behind at its checkpoint). When it cannot be restored, the container
    /// (stopped again), its checkpoint, workspace and id block stay for
    /// another try.
    pub async fn restore_docker(
        &self,
        spec: SandboxSpec,
        state: &Path,
    ) -> Result<DockerSandbox, SandboxError> {
        let restore_error = |source: BoxError| SandboxError::Restore {
            state: state.to_path_buf(),
            source,
        };
        if let Some(reason) = self.save_refusal(&spec) {
            return Err(restore_error(reason.into()));
        }
        let saved = read(state).await.map_err(restore_error)?;
        let id = SandboxId::parse(&saved.sandbox).map_err(|e| restore_error(Box::new(e)))?;
        let mut teardown = Teardown::new(
            id.clone(),
            self.docker.clone(),
            Default::default(),
            self.config.stop_timeout,
            self.held.clone(),
        );
        teardown.saved.store(true, Ordering::SeqCst);
        teardown.container = saved.container.clone();
        teardown.adopted_workspace = saved.temp_workspace.clone();
        if let Some(base) = saved.id_block {
            let block = self
                .held
                .take(self.config.id_pool, base)
                .map_err(|e| restore_error(Box::new(e)))?;
            teardown.id_block = Some(block);
        }
        let mut start = Start::again(self.name(), id);
        start.tail = teardown.tail.clone();
        let mut guard = start.guard(teardown);
        match self.start_saved(&spec, &saved, guard.teardown_mut()).await {
            Ok((client, host_pid)) => {
                guard.teardown().saved.store(false, Ordering::SeqCst);
                let workspace = spec
                    .workspace
                    .clone()
                    .or_else(|| saved.temp_workspace.clone())
                    .unwrap_or_default();
                let saving = Saving {
                    refusal: Some(save::RESTORED_REFUSAL),
                    ..self.saving(&spec)
                };
                let (info, teardown) = guard.commit(spec.policy, workspace, client.agent_version());
                tracing::debug!(sandbox_id = %info.id, container = saved.container, "sandbox restored");
                Ok(DockerSandbox::new(
                    info, client, teardown, host_pid, None, saving,
                ))
            }
            Err(source) => Err(guard.fail(source).await),
        }
    }

    /// Attaches to the exited container, starts it from its checkpoint and
    /// greets its guest; then drops the checkpoint.
    async fn start_saved(
        &self,
        spec: &SandboxSpec,
        saved: &SavedContainer,
        teardown: &mut Teardown,
    ) -> Result<(GuestClient, Option<u32>), BoxError> {
        let container = saved.container.as_str();
        let inspected = self
            .docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await?;
        if inspected.state.and_then(|s| s.running).unwrap_or_default() {
            return Err(format!("container {container} runs already").into());
        }
        let checkpoints = self.checkpoints();
        let mut tries = 1;
        // A failed start ends the attached streams: each try attaches anew.
        let (reader, input) = loop {
            let (reader, input) = self.attach_guest(container, teardown).await?;
            match checkpoints.start_from(container, &saved.checkpoint).await {
                Ok(()) => break (reader, input),
                Err(err) if err.is_upload_race() && tries < START_TRIES => {
                    tracing::debug!(sandbox_id = %teardown.id, container, tries, error = %err, "starting from a checkpoint again");
                    tries += 1;
                    tokio::time::sleep(START_RETRY).await;
                }
                Err(err) => return Err(err.into()),
            }
        };
        let pid = self.container_pid(container).await?;
        let timeout = self.config.start_timeout;
        let client = tokio::time::timeout(timeout, GuestClient::connect(reader, input))
            .await
            .map_err(|_| format!("the restored guest did not answer within {timeout:?}"))??;
        if container::cgroup_asked(spec, &self.config.cgroup_parent)
            .is_some_and(|asked| asked.memory_bytes.is_some())
        {
            client.watch_oom(host_checks::oom_counter(
                &self.config.cgroup_parent,
                container,
            ));
        }
        if let Err(err) = checkpoints.remove(container, &saved.checkpoint).await {
            tracing::warn!(sandbox_id = %teardown.id, container, error = %err, "removing a restored container's checkpoint");
        }
        Ok((client, u32::try_from(pid).ok()))
    }

    /// Removes what a saved sandbox kept on the host: its container with
    /// the checkpoint, its temporary workspace, its id block. A state file
    /// already gone leaves nothing to remove.
    pub(super) async fn discard_docker(&self, state: &Path) -> Result<(), BoxError> {
        if !tokio::fs::try_exists(state).await? {
            return Ok(());
        }
        let saved = read(state).await?;
        remove_container(&self.docker, &saved.container, self.config.stop_timeout).await?;
        if let Some(dir) = saved.temp_workspace {
            tokio::task::spawn_blocking(move || remove_dir(&dir)).await??;
        }
        if let Some(base) = saved.id_block {
            self.held.release(base);
        }
        Ok(())
    }

    pub(super) fn checkpoints(&self) -> Checkpoints<'_> {
        Checkpoints {
            socket: &self.config.socket,
            docker: &self.docker,
            timeout: self.config.api_timeout,
        }
    }
}

pub(super) async fn read(state: &Path) -> Result<SavedContainer, BoxError> {
    let path = state.to_path_buf();
    tokio::task::spawn_blocking(move || SavedContainer::read(&path)).await?
}
