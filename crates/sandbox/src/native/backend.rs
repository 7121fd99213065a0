//! Creating native sandboxes.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{
    BoxError, OrphanReport, Sandbox, SandboxBackend, SandboxError, SandboxId, SandboxSpec,
};
use paddock_egress::{Egress, EgressConfig};
use paddock_jail::{IdMapping, IdPool};
use tokio::process::{Child, Command};

use super::jail_spec::jail_spec;
use super::sandbox::{NativeSandbox, Teardown};
use crate::shared;
use crate::shared::egress::{EgressReceiver, fill_egress_log};
use crate::shared::start::Start;
use crate::shared::stderr;
use crate::{GuestClient, StreamLimits};

#[derive(Debug, Clone)]
pub struct NativeConfig {
    /// The `paddock-guest` binary (see [`crate::locate_guest_bin`]).
    pub guest_bin: PathBuf,
    /// Development only: run the guest with no jail at all
    /// (`paddock-guest serve`). Nothing is isolated in this mode.
    pub unconfined: bool,
    /// Parent cgroup name under each hierarchy.
    pub cgroup_parent: String,
    /// How sandbox uids map to host uids; None lets the jail choose.
    pub id_mapping: Option<IdMapping>,
    /// Where host root takes each sandbox's own block of host ids; None:
    /// the jail's default pool. Ignored when `id_mapping` is set.
    pub id_pool: Option<IdPool>,
    /// A root filesystem directory used instead of the host's system directories.
    pub rootfs: Option<PathBuf>,
    /// Where temporary workspaces are made; None: the system temp directory.
    pub temp_root: Option<PathBuf>,
    /// How long `create` waits for the guest's handshake.
    pub start_timeout: Duration,
    /// How long `destroy` waits for the guest to stop before killing it.
    pub stop_timeout: Duration,
    /// Host memory bounds of each guest connection and the slow-reader policy.
    pub stream_limits: StreamLimits,
    /// The egress proxy of sandboxes with network (resolver, private
    /// destinations the operator allows).
    pub egress: EgressConfig,
}

impl NativeConfig {
    pub fn new(guest_bin: PathBuf) -> Self {
        Self {
            guest_bin,
            unconfined: false,
            cgroup_parent: "paddock".to_owned(),
            id_mapping: None,
            id_pool: None,
            rootfs: None,
            temp_root: None,
            start_timeout: Duration::from_secs(10),
            stop_timeout: Duration::from_secs(2),
            stream_limits: StreamLimits::default(),
            egress: EgressConfig::default(),
        }
    }
}

/// Makes native sandboxes; cheap, holds only its configuration.
#[derive(Debug, Clone)]
pub struct NativeBackend {
    config: NativeConfig,
}

impl NativeBackend {
    pub fn new(config: NativeConfig) -> Self {
        if config.unconfined {
            tracing::warn!(
                "native backend in unconfined development mode: sandboxes are NOT isolated"
            );
        }
        Self { config }
    }

    pub fn config(&self) -> &NativeConfig {
        &self.config
    }

    /// [`SandboxBackend::create`] with the concrete handle type.
    pub async fn create_native(&self, spec: SandboxSpec) -> Result<NativeSandbox, SandboxError> {
        let start = Start::begin("native");
        if let Err(invalid) = spec.validate() {
            return Err(start.launch_error(Box::new(invalid)));
        }
        if self.config.unconfined {
            // no jail, no mount namespace to bind a volume in
            spec.refuse_volumes("native")?;
        }

        let net_marker = self.net_marker(&start.id, &spec)?;
        let (egress, decisions) = self.start_egress(&start.id, &spec).await?.unzip();
        let (egress_log, egress_log_task) = decisions.map(fill_egress_log).unzip();
        let teardown = Teardown {
            id: start.id.clone(),
            monitor: None,
            stderr_task: None,
            temp_workspace: None,
            cgroup_parent: None,
            stop_timeout: self.config.stop_timeout,
            egress,
            egress_log_task,
            net_marker,
        };
        let mut guard = start.guard(teardown);
        let workspace = match self.prepare_workspace(guard.id(), spec.workspace.as_deref()) {
            Ok((path, temporary)) => {
                guard.teardown_mut().temp_workspace = temporary;
                path
            }
            Err(err) => return Err(guard.abandon(err).await),
        };
        let egress = guard.teardown().egress.as_ref();
        let launched = self.launch(
            guard.id(),
            &workspace,
            guard.teardown().temp_workspace.is_some(),
            &spec,
            egress.and_then(Egress::netns_path),
            egress.and_then(Egress::ca_pem),
        );
        let (mut monitor, stream) = match launched {
            Ok(launched) => launched,
            Err(source) => {
                let err = guard.launch_error(source);
                return Err(guard.abandon(err).await);
            }
        };
        tracing::debug!(sandbox_id = %guard.id(), pid = monitor.id(), "guest launched");

        let stderr_task = monitor
            .stderr
            .take()
            .map(|err| stderr::forward(err, guard.id().clone(), guard.tail().clone()));
        let teardown = guard.teardown_mut();
        teardown.monitor = Some(monitor);
        teardown.stderr_task = stderr_task;
        teardown.cgroup_parent =
            (!self.config.unconfined).then(|| self.config.cgroup_parent.clone());
        let client = match self.handshake(stream).await {
            Ok(client) => client,
            Err(source) => return Err(guard.fail(source).await),
        };
        if let (Some(parent), Some(_)) = (
            &guard.teardown().cgroup_parent,
            spec.policy.limits.memory_bytes,
        ) {
            match paddock_jail::sandbox_oom_counter(parent, guard.id().as_str()) {
                Ok(Some(file)) => client.watch_oom(file),
                Ok(None) => {}
                Err(err) => {
                    tracing::debug!(sandbox_id = %guard.id(), error = %err, "no OOM-kill counter: OOM kills read as SIGKILL");
                }
            }
        }

        let tail = guard.tail().clone();
        let (info, teardown) = guard.commit(spec.policy, workspace, client.agent_version());
        tracing::debug!(sandbox_id = %info.id, "sandbox ready");
        Ok(NativeSandbox::new(info, client, teardown, tail, egress_log))
    }

    /// Spawns the guest with one end of a fresh socketpair as its stdin and
    /// returns it with the other end.
    fn launch(
        &self,
        id: &SandboxId,
        workspace: &Path,
        temporary: bool,
        spec: &SandboxSpec,
        netns: Option<PathBuf>,
        egress_ca: Option<&str>,
    ) -> Result<(Child, tokio::net::UnixStream), BoxError> {
        let (host_end, guest_end) = std::os::unix::net::UnixStream::pair()?;
        if !self.config.unconfined {
            // The spec goes first on the connection, not in argv (see
            // paddock_jail::JailSpec); it is small, the socket buffer holds it.
            let jail = jail_spec(
                id,
                workspace.to_path_buf(),
                temporary,
                spec,
                &self.config,
                netns,
                egress_ca,
            );
            std::io::Write::write_all(&mut &host_end, &jail.to_frame()?)?;
        }
        host_end.set_nonblocking(true)?;
        let stream = tokio::net::UnixStream::from_std(host_end)?;
        let mut command = self.guest_command(id, workspace);
        command.stdin(Stdio::from(OwnedFd::from(guest_end)));
        let spawned = command.spawn();
        // The command holds our copy of the guest's end: drop it now, or the
        // connection would never see end-of-file when the guest dies.
        drop(command);
        Ok((spawned?, stream))
    }

    /// [`shared::egress::net_marker`]; none unconfined (no namespace).
    fn net_marker(
        &self,
        id: &SandboxId,
        spec: &SandboxSpec,
    ) -> Result<Option<tempfile::TempDir>, SandboxError> {
        if self.config.unconfined {
            return Ok(None);
        }
        shared::egress::net_marker(id, spec, self.config.temp_root.as_deref())
    }

    /// The egress proxy and namespace of a sandbox with network. Fails
    /// closed: a policy this backend cannot enforce is an error.
    async fn start_egress(
        &self,
        id: &SandboxId,
        spec: &SandboxSpec,
    ) -> Result<Option<(Egress, EgressReceiver)>, SandboxError> {
        if !spec.policy.network.has_egress() {
            return Ok(None);
        }
        if self.config.unconfined {
            return Err(SandboxError::Launch {
                id: id.clone(),
                source: format!(
                    "network {} cannot be enforced in unconfined mode (no namespaces)",
                    spec.policy.network.label()
                )
                .into(),
            });
        }
        Egress::start(
            id.as_str(),
            &crate::shared::host::owner_tag(&self.config.cgroup_parent),
            spec.policy.network.clone(),
            spec.secrets.clone(),
            self.config.egress.clone(),
        )
        .await
        .map(Some)
        .map_err(|e| SandboxError::Launch {
            id: id.clone(),
            source: Box::new(e),
        })
    }

    async fn handshake(&self, stream: tokio::net::UnixStream) -> Result<GuestClient, BoxError> {
        let timeout = self.config.start_timeout;
        match tokio::time::timeout(
            timeout,
            GuestClient::connect_unix_with(stream, self.config.stream_limits.clone()),
        )
        .await
        {
            Ok(connected) => Ok(connected?),
            Err(_) => {
                Err(format!("the guest did not answer the handshake within {timeout:?}").into())
            }
        }
    }

    fn prepare_workspace(
        &self,
        id: &SandboxId,
        requested: Option<&Path>,
    ) -> Result<(PathBuf, Option<tempfile::TempDir>), SandboxError> {
        let workspace_error = |path: &Path, source| SandboxError::Workspace {
            id: id.clone(),
            path: path.to_path_buf(),
            source,
        };
        match requested {
            Some(dir) => {
                let path = std::fs::canonicalize(dir).map_err(|e| workspace_error(dir, e))?;
                if !path.is_dir() {
                    let err = std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "workspace is not a directory",
                    );
                    return Err(workspace_error(&path, err));
                }
                Ok((path, None))
            }
            None => {
                let root = self
                    .config
                    .temp_root
                    .clone()
                    .unwrap_or_else(std::env::temp_dir);
                let temp = tempfile::Builder::new()
                    .prefix(&format!("paddock-{id}-"))
                    .tempdir_in(&root)
                    .map_err(|e| workspace_error(&root, e))?;
                Ok((temp.path().to_path_buf(), Some(temp)))
            }
        }
    }

    /// The guest's command line. It names no host path in jail mode: the
    /// sandbox's PID 1 shares it (the spec travels on fd 0).
    fn guest_command(&self, id: &SandboxId, workspace: &Path) -> Command {
        let mut command = Command::new(&self.config.guest_bin);
        if self.config.unconfined {
            command.arg("serve").arg("--workspace").arg(workspace);
        } else {
            command
                // Not the binary's host path: PID 1's /proc/1/cmdline shows argv.
                .arg0("paddock-guest")
                .arg("jail")
                .arg("--sandbox")
                .arg(id.as_str())
                .arg("--owner")
                .arg(crate::shared::host::owner_tag(&self.config.cgroup_parent));
        }
        command
            // Nothing of the host's environment reaches the sandbox.
            .env_clear()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Own process group: a terminal's Ctrl-C reaches paddock, which
            // tears the sandbox down in order, not the monitor directly.
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

#[async_trait]
impl SandboxBackend for NativeBackend {
    fn name(&self) -> &'static str {
        "native"
    }

    async fn create(&self, spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError> {
        Ok(Box::new(self.create_native(spec).await?))
    }

    /// The jail binds them; an unconfined sandbox (no jail) cannot.
    fn mounts_volumes(&self) -> bool {
        !self.config.unconfined
    }

    async fn check(&self) -> Result<(), SandboxError> {
        if self.config.guest_bin.is_file() {
            Ok(())
        } else {
            Err(SandboxError::Unavailable {
                backend: "native",
                reason: format!(
                    "guest binary {} is missing",
                    self.config.guest_bin.display()
                ),
            })
        }
    }

    /// Kills the `paddock-guest jail` processes whose spec names this
    /// backend's cgroup parent, removes the sandbox cgroups under that parent,
    /// and the temporary workspaces under `temp_root` (when one is set).
    async fn reap_orphans(&self, keep: &[SandboxId]) -> Result<OrphanReport, SandboxError> {
        let config = self.config.clone();
        let keep = keep.to_vec();
        let keep_ids: Vec<String> = keep.iter().map(|id| id.as_str().to_owned()).collect();
        let reaped = tokio::task::spawn_blocking(move || super::orphans::reap(&config, &keep))
            .await
            .map_err(|e| -> BoxError { e.into() })
            .and_then(|r| r);
        let mut report = reaped.map_err(|source| SandboxError::ReapOrphans {
            backend: "native",
            source,
        })?;
        if !self.config.unconfined {
            // A `full` sandbox's host-side NAT (veth, rules) and namespace,
            // found by the owner tag in its rules' comments.
            let keep_refs: Vec<&str> = keep_ids.iter().map(String::as_str).collect();
            let owner = crate::shared::host::owner_tag(&self.config.cgroup_parent);
            let nat_ids = paddock_egress::nat::reap(&owner, &keep_refs)
                .await
                .map_err(|e| SandboxError::ReapOrphans {
                    backend: "native",
                    source: Box::new(e),
                })?;
            // Namespaces of the sandboxes reaped above (allowlist or full).
            for id in report.sandboxes_removed.iter().map(SandboxId::as_str) {
                paddock_egress::Netns::remove_stale(id).await;
            }
            for id in nat_ids {
                if let Ok(id) = SandboxId::parse(&id)
                    && !report.sandboxes_removed.contains(&id)
                {
                    report.sandboxes_removed.push(id);
                }
            }
            report.sandboxes_removed.sort();
        }
        Ok(report)
    }
}
