//! Creating container sandboxes.

use std::path::Path;

use async_trait::async_trait;
use bollard::Docker;
use bollard::query_parameters::{
    CreateContainerOptions, InspectContainerOptions, StartContainerOptions,
};
use paddock_core::sandbox::{
    BoxError, EgressLog, OrphanReport, Sandbox, SandboxBackend, SandboxError, SandboxId,
    SandboxSpec,
};
use tokio::io::AsyncWriteExt;

use super::config::{DockerConfig, Engine};
use super::container::{self, Request};
use super::guest_socket::GuestSocket;
use super::host_checks;
use super::network;
use super::sandbox::{DockerSandbox, Teardown};
use super::save::{self, HeldBlocks, Saving};
use super::stdio;
use crate::GuestClient;
use crate::shared::start::{Start, StartGuard};
use crate::shared::{volume_mounts, workspace};

/// Below this the gVisor sentry (a Go program whose host threads the pids
/// cgroup counts) cannot start.
const GVISOR_MIN_PIDS: u64 = 64;

/// Makes container sandboxes through one engine connection (cheap to clone).
#[derive(Debug, Clone)]
pub struct DockerBackend {
    pub(super) config: DockerConfig,
    pub(super) docker: Docker,
    /// The id blocks of the sandboxes this process saved.
    pub(super) held: HeldBlocks,
}

/// A created container not started yet, and what its start needs.
struct Created {
    /// The engine's id of the container.
    container: String,
    guest_spec: paddock_jail::ContainerSpec,
    spec_frame: Vec<u8>,
    guest_socket: Option<GuestSocket>,
    /// The sandbox's CA for its egress (intercepted secrets).
    ca: Option<paddock_egress::SandboxCa>,
}

fn unavailable(config: &DockerConfig, reason: String) -> SandboxError {
    SandboxError::Unavailable {
        backend: config.engine.backend_name(),
        reason,
    }
}

impl DockerBackend {
    /// Connects to the engine and negotiates the API version (dockerd 20.10
    /// speaks 1.41). Fails when the engine, the image or (for gVisor) the
    /// runsc runtime is not there.
    pub async fn connect(config: DockerConfig) -> Result<Self, SandboxError> {
        let socket = config.socket.to_string_lossy().into_owned();
        let docker = Docker::connect_with_unix(
            &socket,
            config.api_timeout.as_secs(),
            bollard::API_DEFAULT_VERSION,
        )
        .map_err(|e| unavailable(&config, format!("connecting to {socket}: {e}")))?;
        let docker = tokio::time::timeout(config.api_timeout, docker.negotiate_version())
            .await
            .map_err(|_| unavailable(&config, format!("{socket} did not answer")))?
            .map_err(|e| unavailable(&config, format!("negotiating the API version: {e}")))?;
        let backend = Self {
            config,
            docker,
            held: HeldBlocks::default(),
        };
        backend.check().await?;
        Ok(backend)
    }

    pub fn config(&self) -> &DockerConfig {
        &self.config
    }

    /// [`SandboxBackend::create`] with the concrete handle type.
    pub async fn create_docker(&self, spec: SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let start = Start::begin(self.name());
        if let Err(source) = self.refuse_unenforceable(&spec) {
            return Err(start.launch_error(source));
        }
        if let Err(source) = self.check_network_runtime(&spec).await {
            return Err(start.launch_error(source));
        }
        // A temporary workspace is the sandbox's own: host root gives it
        // (and the container's user) a block of host ids of its own, so no
        // other sandbox shares what the kernel counts per user. A requested
        // workspace keeps its owner's ids (see docs/security.md).
        // A sandbox writing a volume runs as the volume owner instead
        // (shared::volume_mounts).
        let id_block = if spec.workspace.is_none()
            && nix::unistd::geteuid().is_root()
            && !volume_mounts::writes_a_volume(&spec)
        {
            Some(
                paddock_jail::allocate_block(self.config.id_pool)
                    .map_err(|e| start.launch_error(Box::new(e)))?,
            )
        } else {
            None
        };
        let mut workspace = workspace::prepare(
            &start.id,
            spec.workspace.as_deref(),
            self.config.temp_root.as_deref(),
            self.config.adopt_root_workspaces,
            id_block
                .as_ref()
                .map_or(workspace::SANDBOX_UID, |block| block.mapping.host_base),
        )?;
        let workspace_tmpfs = workspace.tmpfs(&spec);
        let planned = network::plan(&start.id, &spec, &self.config)?;
        let mut teardown = Teardown::new(
            start.id.clone(),
            self.docker.clone(),
            start.tail.clone(),
            self.config.stop_timeout,
            self.held.clone(),
        );
        teardown.temp_workspace = workspace.temporary.take();
        teardown.id_block = id_block;
        teardown.net_marker = planned.marker;
        let mut guard = start.guard(teardown);
        let created = match self
            .create_container(
                &spec,
                &workspace,
                workspace_tmpfs,
                (planned.ca, planned.bundle),
                &guard,
            )
            .await
        {
            Ok(created) => created,
            Err(err) => return Err(guard.abandon(err).await),
        };
        guard.teardown_mut().container = created.container.clone();
        match self.start(&spec, created, guard.teardown_mut()).await {
            Ok((client, host_pid, egress_log)) => {
                let container = guard.teardown().container.clone();
                let saving = self.saving(&spec);
                let (info, teardown) =
                    guard.commit(spec.policy, workspace.path, client.agent_version());
                tracing::debug!(sandbox_id = %info.id, container, "sandbox ready");
                Ok(DockerSandbox::new(
                    info, client, teardown, host_pid, egress_log, saving,
                ))
            }
            Err(source) => Err(guard.fail(source).await),
        }
    }

    /// Attaches to `container`'s stdio (before it starts, so nothing the
    /// guest writes is lost): the guest's stdout as a reader, and its
    /// stdin. The teardown holds the task splitting the stream (a former
    /// attach's task is ended).
    pub(super) async fn attach_guest(
        &self,
        container: &str,
        teardown: &mut Teardown,
    ) -> Result<(tokio::io::DuplexStream, stdio::Input), BoxError> {
        let attached = self
            .docker
            .attach_container(container, Some(stdio::attach_options()))
            .await?;
        let (reader, task) =
            stdio::split(teardown.id.clone(), attached.output, teardown.tail.clone());
        if let Some(old) = teardown.stream_task.replace(task) {
            old.abort();
        }
        Ok((reader, attached.input))
    }

    /// The host pid of `container`'s first process, which must run.
    pub(super) async fn container_pid(&self, container: &str) -> Result<i64, BoxError> {
        self.docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await?
            .state
            .and_then(|s| s.pid)
            .filter(|pid| *pid > 0)
            .ok_or_else(|| {
                format!("container {container} has no process (it exited at once)").into()
            })
    }

    /// Why a sandbox of `spec` could not be saved whole here, or None.
    pub(super) fn save_refusal(&self, spec: &SandboxSpec) -> Option<&'static str> {
        save::refusal(self.config.engine, spec, self.config.saves_sandboxes)
    }

    pub(super) fn saving(&self, spec: &SandboxSpec) -> Saving {
        Saving {
            refusal: self.save_refusal(spec),
            socket: self.config.socket.clone(),
            timeout: self.config.api_timeout,
        }
    }

    /// A policy this backend cannot enforce is refused (fail closed).
    fn refuse_unenforceable(&self, spec: &SandboxSpec) -> Result<(), BoxError> {
        spec.validate()?;
        if self.config.engine == Engine::Gvisor
            && spec.policy.limits.pids.is_some_and(|p| p < GVISOR_MIN_PIDS)
        {
            return Err(format!(
                "a gVisor sandbox needs a pids limit of at least {GVISOR_MIN_PIDS}: the \
                 limit holds the sentry's host threads, not each sandboxed process"
            )
            .into());
        }
        Ok(())
    }

    /// A gVisor sandbox with network needs the runtime with host networking
    /// (fail closed: never `runsc`'s own netstack, which the namespace's
    /// redirect to the proxy would not see).
    async fn check_network_runtime(&self, spec: &SandboxSpec) -> Result<(), BoxError> {
        if !spec.policy.network.has_egress() {
            return Ok(());
        }
        let Some(runtime) = self.config.engine.runtime_for(true) else {
            return Ok(());
        };
        let info = self.docker.info().await?;
        if info
            .runtimes
            .as_ref()
            .is_some_and(|runtimes| runtimes.contains_key(runtime))
        {
            Ok(())
        } else {
            Err(format!(
                "the {} backend cannot enforce network {}: the engine has no `{runtime}` \
                 runtime (runsc with host networking); register it with \
                 scripts/container-setup.sh",
                self.name(),
                spec.policy.network.label()
            )
            .into())
        }
    }

    /// Checks the write scope on the host, plans the guest's spec and its
    /// connection, and creates the container (not started yet).
    /// `workspace_tmpfs`: [`workspace::Workspace::tmpfs`], read before the
    /// temporary workspace went into the guard's teardown.
    async fn create_container(
        &self,
        spec: &SandboxSpec,
        workspace: &workspace::Workspace,
        workspace_tmpfs: Option<paddock_proto::WorkspaceQuotaEnforcement>,
        (ca, ca_bundle): (
            Option<paddock_egress::SandboxCa>,
            Option<std::path::PathBuf>,
        ),
        guard: &StartGuard<Teardown>,
    ) -> Result<Created, SandboxError> {
        let id = guard.id();
        let writable = workspace::writable_binds(id, workspace, &spec.policy.writable_paths)?;
        let volumes = spec.volume_binds(self.name())?;
        volume_mounts::give_to_owner(self.name(), id, &volumes, workspace.uid)?;
        let scope: Vec<String> = {
            let mut paths = spec.policy.writable_paths.clone();
            paths.sort();
            paths.dedup();
            paths
        };
        let guest_spec = container::guest_spec(
            id,
            &self.config,
            spec,
            scope,
            guard.teardown().temp_workspace.is_some(),
            ca.is_some(),
        );
        // Written on the attached stdin once the container runs: never in
        // its argv or environment, which `ps` inside would show.
        let spec_frame = guest_spec
            .to_frame()
            .map_err(|e| guard.launch_error(Box::new(e)))?;
        let guest_socket = match self.config.engine {
            Engine::Docker => GuestSocket::bind(
                id,
                self.config.temp_root.as_deref(),
                workspace.uid,
                workspace.gid,
            )
            .map_err(|e| guard.launch_error(e))?,
            Engine::Gvisor => None,
        };
        let body = container::body(&Request {
            id,
            config: &self.config,
            spec,
            workspace,
            writable: &writable,
            volumes: &volumes,
            guest_socket: guest_socket.as_ref().map(GuestSocket::bind_spec),
            workspace_tmpfs,
            ca_bundle,
            keep_exited: self.save_refusal(spec).is_none(),
        });
        let options = CreateContainerOptions {
            name: Some(format!("paddock-{id}")),
            ..CreateContainerOptions::default()
        };
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| guard.launch_error(Box::new(e)))?;
        Ok(Created {
            container: created.id,
            guest_spec,
            spec_frame,
            guest_socket,
            ca,
        })
    }

    /// Attaches to the created container, starts it, checks its namespaces
    /// and cgroup on the host, gives it its network (with egress), and
    /// completes the guest's handshake: over the guest socket when there
    /// is one, else over the attached stdio.
    async fn start(
        &self,
        spec: &SandboxSpec,
        created: Created,
        teardown: &mut Teardown,
    ) -> Result<(GuestClient, Option<u32>, Option<EgressLog>), BoxError> {
        let Created {
            container,
            guest_spec,
            spec_frame,
            guest_socket,
            ca,
        } = created;
        let container = container.as_str();
        let (reader, mut input) = self.attach_guest(container, teardown).await?;
        self.docker
            .start_container(container, None::<StartContainerOptions>)
            .await?;
        let pid = self.container_pid(container).await?;
        host_checks::check_namespaces(
            pid,
            &container::host_checked(self.config.engine, &guest_spec.tier.namespaces),
        )?;
        if let Some(asked) = &guest_spec.tier.cgroup {
            host_checks::check_cgroup(&self.config.cgroup_parent, container, asked)?;
        }
        // runc: the container's init runs as the block's ids on the host.
        // (gVisor's sentry runs as its own host user; see docker/container.rs.)
        if let (Engine::Docker, Some(block)) = (self.config.engine, &teardown.id_block) {
            host_checks::check_ids(pid, block.mapping.host_base)?;
        }
        // The network is in place before the guest takes its spec, so
        // before any command runs.
        let mut egress_log = None;
        if spec.policy.network.has_egress() {
            let pid = u32::try_from(pid).map_err(|_| "the container's pid is out of range")?;
            let (egress, log, task) =
                network::start(&teardown.id, spec, &self.config, pid, ca).await?;
            teardown.egress = Some(egress);
            teardown.egress_log_task = Some(task);
            egress_log = Some(log);
        }
        let timeout = self.config.start_timeout;
        tokio::time::timeout(timeout, async {
            input.write_all(&spec_frame).await?;
            input.flush().await
        })
        .await
        .map_err(|_| format!("the guest did not take its spec within {timeout:?}"))??;
        let handshake = async {
            match guest_socket {
                // The guest's stdout is then silent and its stdin unread; the
                // stream task goes on with its stderr.
                Some(socket) => {
                    drop(reader);
                    let stream = socket.accept(pid, timeout).await?;
                    Ok::<_, BoxError>(GuestClient::connect_unix(stream).await?)
                }
                None => Ok(GuestClient::connect(reader, input).await?),
            }
        };
        let client = tokio::time::timeout(timeout, handshake)
            .await
            .map_err(|_| format!("the guest did not answer the handshake within {timeout:?}"))??;
        if guest_spec
            .tier
            .cgroup
            .as_ref()
            .is_some_and(|asked| asked.memory_bytes.is_some())
        {
            client.watch_oom(host_checks::oom_counter(
                &self.config.cgroup_parent,
                container,
            ));
        }
        Ok((client, u32::try_from(pid).ok(), egress_log))
    }
}

#[async_trait]
impl SandboxBackend for DockerBackend {
    fn name(&self) -> &'static str {
        self.config.engine.backend_name()
    }

    async fn create(&self, spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError> {
        Ok(Box::new(self.create_docker(spec).await?))
    }

    fn mounts_volumes(&self) -> bool {
        true
    }

    /// The engine answers, the image is there, the runtime is registered,
    /// and the guest binary exists.
    async fn check(&self) -> Result<(), SandboxError> {
        let config = &self.config;
        if !config.guest_bin.is_file() {
            return Err(unavailable(
                config,
                format!("guest binary {} is missing", config.guest_bin.display()),
            ));
        }
        let info = self
            .docker
            .info()
            .await
            .map_err(|e| unavailable(config, format!("the engine does not answer: {e}")))?;
        if let Some(runtime) = config.engine.runtime() {
            let registered = info
                .runtimes
                .as_ref()
                .is_some_and(|runtimes| runtimes.contains_key(runtime));
            if !registered {
                return Err(unavailable(
                    config,
                    format!("the engine has no `{runtime}` runtime registered"),
                ));
            }
        }
        self.docker
            .inspect_image(&config.image)
            .await
            .map_err(|e| {
                unavailable(
                    config,
                    format!(
                        "image {} is missing (build it with images/docker-image.sh): {e}",
                        config.image
                    ),
                )
            })?;
        Ok(())
    }

    async fn restore(
        &self,
        spec: SandboxSpec,
        state: &Path,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        Ok(Box::new(self.restore_docker(spec, state).await?))
    }

    async fn saved_instance(&self, state: &Path) -> Option<SandboxId> {
        let saved = super::restore::read(state).await.ok()?;
        SandboxId::parse(&saved.sandbox).ok()
    }

    async fn discard_saved(&self, state: &Path) -> Result<(), SandboxError> {
        self.discard_docker(state)
            .await
            .map_err(|source| SandboxError::Restore {
                state: state.to_path_buf(),
                source,
            })
    }

    /// Removes every container labelled with this node and backend whose
    /// sandbox is not in `keep`, and the network namespaces and NAT state
    /// its sandboxes with egress left.
    async fn reap_orphans(&self, keep: &[SandboxId]) -> Result<OrphanReport, SandboxError> {
        super::orphans::reap(&self.docker, &self.config, keep)
            .await
            .map_err(|source| SandboxError::ReapOrphans {
                backend: self.name(),
                source,
            })
    }
}
