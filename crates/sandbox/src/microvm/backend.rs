//! Creating microVM sandboxes.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{
    BoxError, EgressLog, OrphanReport, Sandbox, SandboxBackend, SandboxError, SandboxId,
    SandboxSpec,
};
use paddock_egress::Egress;
use paddock_proto::{SandboxLimits, VmEnforcement};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixListener;
use tokio::process::Command;
use tokio::sync::OnceCell;

use super::accel::{self, Accelerator, Choice};
use super::config::MicroVmConfig;
use super::qemu::{NAME_PREFIX, VmPlan};
use super::sandbox::{MicroVmSandbox, Teardown};
use super::save::{self, Boot};
use crate::GuestClient;
use crate::shared::egress::fill_egress_log;
use crate::shared::host::owner_tag;
use crate::shared::start::{Start, StartGuard};
use crate::shared::stderr::forward as forward_stderr;
use crate::shared::workspace;

const BACKEND: &str = "microvm";
/// The smallest guest the image's kernel boots in with room for commands.
const MIN_GUEST_MIB: u64 = 128;

/// Makes microVM sandboxes (cheap to clone; the accelerator probe runs once).
#[derive(Debug, Clone)]
pub struct MicroVmBackend {
    config: Arc<MicroVmConfig>,
    owner: String,
    accel: Arc<OnceCell<Choice>>,
    /// The image's initramfs with the guest appended (`initrd::stage`).
    initrd: PathBuf,
}

/// A planned VM whose socket directory exists, and what its start needs.
struct Planned {
    plan: VmPlan,
    socket: PathBuf,
    guest_spec: paddock_jail::MicroVmSpec,
    vm_limits: SandboxLimits,
    /// Why the VM cannot be saved whole, or None.
    suspend_refusal: Option<String>,
}

fn unavailable(reason: String) -> SandboxError {
    SandboxError::Unavailable {
        backend: BACKEND,
        reason,
    }
}

impl MicroVmBackend {
    /// Checks QEMU, the image and the guest binary, and appends the guest
    /// to the image's initramfs for the VMs to boot. The accelerator is
    /// probed at the first sandbox (or [`MicroVmBackend::accelerator`]).
    pub fn new(config: MicroVmConfig) -> Result<Self, SandboxError> {
        let owner = owner_tag(&config.cgroup_parent);
        let mut backend = Self {
            config: Arc::new(config),
            owner,
            accel: Arc::new(OnceCell::new()),
            initrd: PathBuf::new(),
        };
        backend.check_files()?;
        backend.initrd = backend
            .stage_initrd()
            .map_err(|e| unavailable(format!("staging the guest binary: {e}")))?;
        Ok(backend)
    }

    pub fn config(&self) -> &MicroVmConfig {
        &self.config
    }

    fn check_files(&self) -> Result<(), SandboxError> {
        let c = &self.config;
        for (what, path, hint) in [
            ("QEMU", &c.qemu, "install Debian's qemu-system-x86"),
            (
                "the kernel",
                &c.kernel,
                "build it with images/microvm-image.sh",
            ),
            (
                "the initrd",
                &c.initrd,
                "build it with images/microvm-image.sh",
            ),
            (
                "the /usr disk image",
                &c.system_image,
                "build it with images/microvm-image.sh",
            ),
            ("the guest binary", &c.guest_bin, "build paddock-guest"),
        ] {
            if !path.is_file() {
                return Err(unavailable(format!(
                    "{what} {} is missing ({hint})",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// `<run_dir>/<owner>`: the socket directories of this owner's VMs.
    fn owner_dir(&self) -> PathBuf {
        self.config.run_dir.join(&self.owner)
    }

    /// One staged initramfs for every owner on the host (kept current by
    /// size and time), so owners that come and go leave no copies behind.
    fn guest_dir(&self) -> PathBuf {
        self.config.run_dir.join("guest")
    }

    /// Makes the run directories (searchable: QEMU opens the initramfs
    /// after dropping to the workspace owner) and stages the initramfs.
    fn stage_initrd(&self) -> std::io::Result<PathBuf> {
        let dir = self.guest_dir();
        for d in [&dir, &self.owner_dir()] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(d)?;
        }
        for d in [&self.config.run_dir, &self.owner_dir(), &dir] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))?;
        }
        super::initrd::stage(&self.config.initrd, &self.config.guest_bin, &dir)
    }

    fn plan(&self, name: String, accelerator: Accelerator, vcpus: u32, memory_mib: u64) -> VmPlan {
        VmPlan {
            name,
            accelerator,
            vcpus,
            memory_mib,
            kernel: self.config.kernel.clone(),
            initrd: self.config.initrd.clone(),
            socket: PathBuf::new(),
            system_disk: self.config.system_image.clone(),
            shares: Vec::new(),
            monitor: None,
            incoming: false,
            run_as: None,
            marker_only: true,
            net: None,
        }
    }

    /// The accelerator the VMs get, probing KVM on the first call.
    pub async fn accelerator(&self) -> (Accelerator, String) {
        let choice = self
            .accel
            .get_or_init(|| async {
                let probe = self.plan(
                    format!("{NAME_PREFIX}{}:probe", self.owner),
                    Accelerator::Kvm,
                    1,
                    MIN_GUEST_MIB,
                );
                accel::choose(
                    &self.config.qemu,
                    probe,
                    self.config.try_kvm,
                    self.config.probe_timeout,
                )
                .await
            })
            .await;
        (choice.accelerator, choice.reason.clone())
    }

    /// Boots the image's kernel to the marker in its init and powers off:
    /// the bare boot the benchmark compares a guest's Hello with.
    pub async fn bare_boot(&self, timeout: Duration) -> Result<Duration, String> {
        let (accelerator, _) = self.accelerator().await;
        let plan = self.plan(
            format!("{NAME_PREFIX}{}:bare", self.owner),
            accelerator,
            1,
            self.config.default_memory_bytes >> 20,
        );
        accel::boot_to_marker(&self.config.qemu, &plan, timeout).await
    }

    /// [`SandboxBackend::create`] with the concrete handle type.
    pub async fn create_vm(&self, spec: SandboxSpec) -> Result<MicroVmSandbox, SandboxError> {
        self.launch(spec, None).await
    }

    /// [`SandboxBackend::restore`] with the concrete handle type.
    pub async fn restore_vm(
        &self,
        spec: SandboxSpec,
        state: &Path,
    ) -> Result<MicroVmSandbox, SandboxError> {
        self.launch(spec, Some(state)).await
    }

    /// A fresh VM, or (`restore`) one loaded from a saved VM's state file.
    async fn launch(
        &self,
        spec: SandboxSpec,
        restore: Option<&Path>,
    ) -> Result<MicroVmSandbox, SandboxError> {
        let start = Start::begin(BACKEND);
        if let Err(invalid) = spec.validate() {
            return Err(start.launch_error(Box::new(invalid)));
        }
        let mut ws = workspace::prepare(
            &start.id,
            spec.workspace.as_deref(),
            self.config.temp_root.as_deref(),
            self.config.adopt_root_workspaces,
            workspace::SANDBOX_UID,
        )?;
        let teardown = Teardown {
            id: start.id.clone(),
            child: None,
            cgroup_parent: None,
            vm_dir: None,
            temp_workspace: ws.temporary.take(),
            tasks: Vec::new(),
            tail: start.tail.clone(),
            stop_timeout: self.config.stop_timeout,
            egress: None,
            egress_log_task: None,
        };
        let mut guard = start.guard(teardown);
        let mut planned = match self.plan_vm(&spec, &ws, &mut guard).await {
            Ok(planned) => planned,
            Err(err) => return Err(guard.abandon(err).await),
        };
        planned.plan.incoming = restore.is_some();
        // After the socket directory: a namespace of a VM whose server dies
        // is found by it when the next one reaps (as its id).
        let egress_log = match self.start_egress(&spec, &mut planned, &mut guard).await {
            Ok(log) => log,
            Err(err) => return Err(guard.abandon(err).await),
        };
        let boot = match restore {
            Some(state) => Boot::Restore {
                state,
                monitor: planned.plan.monitor.as_deref(),
                timeout: self.config.save_timeout,
            },
            None => Boot::Fresh(Box::new(planned.guest_spec)),
        };
        match self
            .start(
                &planned.plan,
                &planned.socket,
                boot,
                &planned.vm_limits,
                guard.teardown_mut(),
            )
            .await
        {
            Ok((client, host_pid)) => {
                let (info, teardown) = guard.commit(spec.policy, ws.path, client.agent_version());
                tracing::debug!(sandbox_id = %info.id, accelerator = planned.plan.accelerator.name(), restored = restore.is_some(), "sandbox ready");
                let saving = save::Saving {
                    monitor: planned.plan.monitor.clone().unwrap_or_default(),
                    refusal: planned.suspend_refusal,
                    timeout: self.config.save_timeout,
                };
                Ok(MicroVmSandbox::new(
                    info, client, teardown, host_pid, egress_log, saving,
                ))
            }
            Err(source) => Err(guard.fail(source).await),
        }
    }

    /// The host-side egress and the VM's tap of a sandbox with network
    /// (none: no device at all); what the VM and its guest get of it goes
    /// into the plan. Fails closed: an egress that cannot be made is an error.
    async fn start_egress(
        &self,
        spec: &SandboxSpec,
        planned: &mut Planned,
        guard: &mut StartGuard<Teardown>,
    ) -> Result<Option<EgressLog>, SandboxError> {
        if !spec.policy.network.has_egress() {
            return Ok(None);
        }
        let id = guard.id().clone();
        let started = super::network::start(&id, &self.owner, spec, &self.config.egress)
            .await
            .map_err(|e| guard.launch_error(Box::new(e)))?;
        let (log, task) = fill_egress_log(started.decisions);
        let teardown = guard.teardown_mut();
        teardown.egress = Some(started.egress);
        teardown.egress_log_task = Some(task);
        planned.plan.net = Some(started.net);
        planned.guest_spec.tier.network = Some(started.guest);
        Ok(Some(log))
    }

    /// Checks the write scope on the host, sizes the VM, makes its socket
    /// directory and plans QEMU's command line and the guest's spec.
    async fn plan_vm(
        &self,
        spec: &SandboxSpec,
        ws: &workspace::Workspace,
        guard: &mut StartGuard<Teardown>,
    ) -> Result<Planned, SandboxError> {
        let id = guard.id().clone();
        // Checked on the host (no symlink, made if missing) before the VM
        // can touch the workspace; the guest binds them inside.
        workspace::writable_binds(&id, ws, &spec.policy.writable_paths)?;
        // The VM's commands and QEMU run as the workspace owner.
        let volumes = spec.volume_binds(BACKEND)?;
        crate::shared::volume_mounts::give_to_owner(BACKEND, &id, &volumes, ws.uid)?;
        let (accelerator, accel_reason) = self.accelerator().await;

        let memory_bytes = spec
            .policy
            .limits
            .memory_bytes
            .unwrap_or(self.config.default_memory_bytes);
        let memory_mib = (memory_bytes >> 20).max(MIN_GUEST_MIB);
        let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        let vcpus = spec
            .policy
            .limits
            .cpu_millis
            .map_or(1, |m| m.div_ceil(1000))
            .clamp(1, host_cpus);
        let vm_limits = SandboxLimits {
            memory_bytes: Some((memory_mib << 20) + self.config.vmm_overhead_bytes),
            pids: Some(self.config.vmm_pids),
            cpu_millis: spec.policy.limits.cpu_millis,
            ..spec.policy.limits.clone()
        };

        let vm_dir = self.owner_dir().join(id.as_str());
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&vm_dir)
            .map_err(|e| {
                guard.launch_error(format!("creating {}: {e}", vm_dir.display()).into())
            })?;
        guard.teardown_mut().vm_dir = Some(vm_dir.clone());
        let socket = vm_dir.join("guest.sock");
        let mut plan = self.plan(
            format!("{NAME_PREFIX}{}:{id}", self.owner),
            accelerator,
            u32::try_from(vcpus).unwrap_or(1),
            memory_mib,
        );
        plan.marker_only = false;
        plan.socket = socket.clone();
        plan.initrd = self.initrd.clone();
        plan.monitor = Some(vm_dir.join("qmp.sock"));
        plan.run_as = Some((ws.uid, ws.gid));
        plan.shares = vec![(
            paddock_jail::WORKSPACE_TAG.to_owned(),
            ws.path.clone(),
            spec.policy.read_only,
        )];
        // One share per volume, tagged by its place in the policy's list
        // (the guest mounts `volume_tag(i)` at the i-th volume's path);
        // QEMU itself opens a read-only one read-only.
        plan.shares.extend(
            volumes
                .iter()
                .enumerate()
                .map(|(i, v)| (paddock_jail::volume_tag(i), v.host.clone(), v.read_only)),
        );
        let suspend_refusal = save::refusal(spec, guard.teardown().temp_workspace.is_some());
        let guest_spec = paddock_jail::MicroVmSpec {
            sandbox_id: id.as_str().to_owned(),
            policy: spec.policy.clone(),
            workspace_quota: spec.workspace_quota.clone(),
            tier: paddock_jail::MicroVmTier {
                uid: ws.uid,
                gid: ws.gid,
                cgroup: None,
                vm: VmEnforcement {
                    accelerator: accelerator.name().to_owned(),
                    accelerator_reason: accel_reason,
                    vcpus: plan.vcpus,
                    memory_bytes: memory_mib << 20,
                    kernel: String::new(),
                    workspace_transport: "virtio-9p".to_owned(),
                },
                temporary_workspace: guard.teardown().temp_workspace.is_some(),
                network: None,
                clock_unix_ms: None,
            },
        };
        Ok(Planned {
            plan,
            socket,
            guest_spec,
            vm_limits,
            suspend_refusal,
        })
    }

    /// Starts QEMU in its cgroup, takes its connection to the guest's port,
    /// sends the spec (or loads the saved VM) and completes the guest's
    /// handshake, all bounded by the start timeout and failing at once when
    /// QEMU exits.
    async fn start(
        &self,
        plan: &VmPlan,
        socket: &Path,
        boot: Boot<'_>,
        vm_limits: &SandboxLimits,
        teardown: &mut Teardown,
    ) -> Result<(GuestClient, Option<u32>), BoxError> {
        let listener = UnixListener::bind(socket)?;
        teardown.cgroup_parent = Some(self.config.cgroup_parent.clone());
        let cgroup = paddock_jail::HostCgroup::create(
            &self.config.cgroup_parent,
            teardown.id.as_str(),
            vm_limits,
        )?;
        let cgroup_report = cgroup.report(vm_limits);
        let mut command = Command::new(&self.config.qemu);
        command
            .args(plan.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // With network QEMU starts in the sandbox's namespace, where its tap is.
        let spawned = match teardown.egress.as_ref().and_then(Egress::netns_path) {
            Some(netns) => super::network::spawn_in(netns, command).await,
            None => command.spawn(),
        };
        let mut child =
            spawned.map_err(|e| format!("starting {}: {e}", self.config.qemu.display()))?;
        let pid = child.id();
        if let Some(pid) = pid {
            // Before QEMU maps the guest's memory: it spends its first
            // milliseconds parsing options and opening devices.
            cgroup.add_process(pid)?;
        }
        if let Some(out) = child.stdout.take() {
            let tail = teardown.tail.clone();
            teardown
                .tasks
                .push(forward_stderr(out, teardown.id.clone(), tail));
        }
        if let Some(err) = child.stderr.take() {
            let tail = teardown.tail.clone();
            teardown
                .tasks
                .push(forward_stderr(err, teardown.id.clone(), tail));
        }
        teardown.child = Some(child);
        let handshake = async {
            match boot {
                Boot::Fresh(mut guest_spec) => {
                    let (mut stream, _) = listener.accept().await?;
                    guest_spec.tier.cgroup = Some(cgroup_report);
                    // Now, not at spawn: the VM (no RTC) takes the host's clock
                    // from it, and a TCG boot takes seconds.
                    guest_spec.tier.clock_unix_ms = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .and_then(|d| u64::try_from(d.as_millis()).ok());
                    let frame = guest_spec.to_frame()?;
                    stream.write_all(&frame).await?;
                    let (reader, writer) = stream.into_split();
                    Ok::<_, BoxError>(GuestClient::connect(reader, writer).await?)
                }
                Boot::Restore {
                    state,
                    monitor,
                    timeout,
                } => {
                    // QEMU connects to the port's socket as it starts; the
                    // suspended guest greets its new host once it runs again.
                    save::load(monitor, state, timeout).await?;
                    let (stream, _) = listener.accept().await?;
                    let (reader, writer) = stream.into_split();
                    Ok(GuestClient::connect(reader, writer).await?)
                }
            }
        };
        let timeout = self.config.start_timeout;
        let child = teardown.child.as_mut().ok_or("QEMU is gone")?;
        let client = tokio::select! {
            res = tokio::time::timeout(timeout, handshake) => res
                .map_err(|_| format!("the guest did not answer the handshake within {timeout:?}"))??,
            status = child.wait() => {
                return Err(format!("QEMU exited before the guest answered ({})", status?).into());
            }
        };
        Ok((client, pid))
    }
}

#[async_trait]
impl SandboxBackend for MicroVmBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    async fn create(&self, spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError> {
        Ok(Box::new(self.create_vm(spec).await?))
    }

    async fn restore(
        &self,
        spec: SandboxSpec,
        state: &Path,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        Ok(Box::new(self.restore_vm(spec, state).await?))
    }

    /// Each volume is a 9p share of its own.
    fn mounts_volumes(&self) -> bool {
        true
    }

    /// QEMU, the kernel, the initrd and the guest binary are there.
    async fn check(&self) -> Result<(), SandboxError> {
        self.check_files()
    }

    /// Kills every QEMU of this owner whose sandbox is not in `keep` and
    /// removes their cgroups, socket directories and temporary workspaces.
    async fn reap_orphans(&self, keep: &[SandboxId]) -> Result<OrphanReport, SandboxError> {
        let config = self.config.clone();
        let owner = self.owner.clone();
        let owner_dir = self.owner_dir();
        let keep = keep.to_vec();
        let keep_ids: Vec<String> = keep.iter().map(|id| id.as_str().to_owned()).collect();
        let mut report = tokio::task::spawn_blocking(move || {
            super::orphans::reap(&config, &owner, &owner_dir, &keep)
        })
        .await
        .map_err(|e| SandboxError::ReapOrphans {
            backend: BACKEND,
            source: e.into(),
        })?
        .map_err(|source| SandboxError::ReapOrphans {
            backend: BACKEND,
            source,
        })?;
        let keep_refs: Vec<&str> = keep_ids.iter().map(String::as_str).collect();
        super::orphans::reap_network(&self.owner, &keep_refs, &mut report)
            .await
            .map_err(|e| SandboxError::ReapOrphans {
                backend: BACKEND,
                source: Box::new(e),
            })?;
        Ok(report)
    }
}
