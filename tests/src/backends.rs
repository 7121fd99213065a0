//! The sandbox backends the conformance suite runs against: native, docker
//! and gvisor. A backend this host cannot run is reported skipped with its
//! reason; with `PADDOCK_REQUIRE_BACKENDS` set (CI sets it to all three) a
//! missing one fails instead, so a run never looks green by skipping.

use std::path::Path;

use paddock_core::sandbox::{SandboxBackend, SandboxSpec};
use paddock_sandbox::{
    DockerBackend, DockerConfig, Engine, MicroVmBackend, MicroVmConfig, NativeBackend,
    NativeConfig, locate_guest_bin,
};

/// The node label the suite's containers carry (reaping touches only these).
pub const TEST_NODE: &str = "paddock-tests";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Native,
    Docker,
    Gvisor,
    Microvm,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Native => "native",
            Kind::Docker => "docker",
            Kind::Gvisor => "gvisor",
            Kind::Microvm => "microvm",
        }
    }

    /// docker or gvisor: sandboxes are the engine's containers.
    pub fn is_container(self) -> bool {
        matches!(self, Kind::Docker | Kind::Gvisor)
    }

    /// The sandbox runs as the workspace owner and refuses a root-owned
    /// workspace (containers and microVMs).
    pub fn runs_as_owner(self) -> bool {
        self != Kind::Native
    }
}

pub fn docker_config(engine: Engine) -> DockerConfig {
    let guest = locate_guest_bin(None).unwrap_or_else(|e| panic!("paddock-guest: {e}"));
    let mut config = DockerConfig::new(engine, guest);
    config.node = TEST_NODE.to_owned();
    if let Ok(image) = std::env::var("PADDOCK_DOCKER_IMAGE") {
        config.image = image;
    }
    config
}

/// The microvm backend's settings for the suite: its own cgroup parent, the
/// image from `PADDOCK_MICROVM_DIR` (or the default directory).
pub fn microvm_config() -> Result<MicroVmConfig, String> {
    let guest = locate_guest_bin(None).map_err(|e| e.to_string())?;
    let mut config = MicroVmConfig::new(guest, &MicroVmConfig::image_dir_from_env());
    config.cgroup_parent = "paddock-tests-microvm".to_owned();
    // TCG boots beside the other backends' parallel tests on 2 cores.
    config.start_timeout = std::time::Duration::from_secs(600);
    Ok(config)
}

/// The backend, or why this host cannot run it.
pub async fn connect(kind: Kind) -> Result<Box<dyn SandboxBackend>, String> {
    let backend: Box<dyn SandboxBackend> = match kind {
        Kind::Native => {
            let guest = locate_guest_bin(None).map_err(|e| e.to_string())?;
            Box::new(NativeBackend::new(NativeConfig::new(guest)))
        }
        Kind::Docker | Kind::Gvisor => {
            let engine = if kind == Kind::Docker {
                Engine::Docker
            } else {
                Engine::Gvisor
            };
            Box::new(
                DockerBackend::connect(docker_config(engine))
                    .await
                    .map_err(|e| e.to_string())?,
            )
        }
        Kind::Microvm => {
            Box::new(MicroVmBackend::new(microvm_config()?).map_err(|e| e.to_string())?)
        }
    };
    backend.check().await.map_err(|e| e.to_string())?;
    Ok(backend)
}

/// The backend with `egress` as its sandboxes' egress settings (resolver,
/// private addresses let through), on every backend.
pub async fn connect_with_egress(
    kind: Kind,
    egress: paddock_egress::EgressConfig,
) -> Result<Box<dyn SandboxBackend>, String> {
    let backend: Box<dyn SandboxBackend> = match kind {
        Kind::Native => {
            let guest = locate_guest_bin(None).map_err(|e| e.to_string())?;
            let mut config = NativeConfig::new(guest);
            config.egress = egress;
            Box::new(NativeBackend::new(config))
        }
        Kind::Docker | Kind::Gvisor => {
            let engine = if kind == Kind::Docker {
                Engine::Docker
            } else {
                Engine::Gvisor
            };
            let mut config = docker_config(engine);
            config.egress = egress;
            Box::new(
                DockerBackend::connect(config)
                    .await
                    .map_err(|e| e.to_string())?,
            )
        }
        Kind::Microvm => {
            let mut config = microvm_config()?;
            config.egress = egress;
            Box::new(MicroVmBackend::new(config).map_err(|e| e.to_string())?)
        }
    };
    backend.check().await.map_err(|e| e.to_string())?;
    Ok(backend)
}

/// The backend for a test, or None after printing why it is skipped.
/// Panics instead when the run requires this backend
/// (`paddock_test_support::require`).
pub async fn for_test(kind: Kind, test: &str) -> Option<Box<dyn SandboxBackend>> {
    match connect(kind).await {
        Ok(backend) => Some(backend),
        Err(reason) => {
            paddock_test_support::require::skip_or_panic(
                paddock_test_support::require::Need::Backend(kind.name()),
                &format!("{test} [{}]", kind.name()),
                &format!("backend unavailable: {reason}"),
            );
            None
        }
    }
}

/// A workspace directory for `kind`: container sandboxes run as the
/// workspace owner and refuse a root-owned one, so it is given to the
/// sandbox uid there.
pub fn workspace(kind: Kind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    if kind.runs_as_owner() {
        give_to_sandbox(dir.path());
    }
    dir
}

/// The uid container sandboxes of the suite run as.
pub const SANDBOX_UID: u32 = 100_000;

pub fn give_to_sandbox(path: &Path) {
    std::os::unix::fs::chown(path, Some(SANDBOX_UID), Some(SANDBOX_UID))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
}

/// The downgrades a backend needs on this host: gVisor has no landlock.
pub fn spec_for(kind: Kind, mut spec: SandboxSpec) -> SandboxSpec {
    if kind == Kind::Gvisor {
        spec.policy
            .allow_downgrade
            .insert(paddock_core::sandbox::DowngradeLayer::Landlock);
    }
    spec
}

/// A backend that owns only what it makes (its own cgroup parent or node
/// label), the same in each call of one test process: a second one plays
/// the restarted owner that reaps what the first left.
pub async fn private_owner(kind: Kind) -> Box<dyn SandboxBackend> {
    let tag = format!("paddock-orphans-{}", std::process::id());
    let temp_root = std::env::temp_dir().join(format!("{tag}-{}", kind.name()));
    std::fs::create_dir_all(&temp_root)
        .unwrap_or_else(|e| panic!("creating {}: {e}", temp_root.display()));
    match kind {
        Kind::Native => {
            let guest = locate_guest_bin(None).unwrap_or_else(|e| panic!("paddock-guest: {e}"));
            let mut config = NativeConfig::new(guest);
            config.cgroup_parent = tag;
            config.temp_root = Some(temp_root);
            Box::new(NativeBackend::new(config))
        }
        Kind::Docker | Kind::Gvisor => {
            let engine = if kind == Kind::Docker {
                Engine::Docker
            } else {
                Engine::Gvisor
            };
            let mut config = docker_config(engine);
            config.node = tag;
            config.temp_root = Some(temp_root);
            Box::new(
                DockerBackend::connect(config)
                    .await
                    .unwrap_or_else(|e| panic!("connecting: {e}")),
            )
        }
        Kind::Microvm => {
            let mut config = microvm_config().unwrap_or_else(|e| panic!("microvm: {e}"));
            config.cgroup_parent = tag;
            config.temp_root = Some(temp_root);
            Box::new(MicroVmBackend::new(config).unwrap_or_else(|e| panic!("microvm: {e}")))
        }
    }
}

/// The docker CLI of Debian's docker.io (not whatever else is on PATH).
pub fn docker_cli() -> std::process::Command {
    let path = if Path::new("/usr/bin/docker").is_file() {
        "/usr/bin/docker"
    } else {
        "docker"
    };
    std::process::Command::new(path)
}

fn processes_naming(id: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            text.contains(id)
                .then(|| format!("process {}: {text}", e.file_name().to_string_lossy()))
        })
        .collect()
}

fn containers_labelled(id: &str) -> Vec<String> {
    let out = docker_cli()
        .args(["ps", "-aq", "--filter"])
        .arg(format!("label={}={id}", paddock_sandbox::LABEL_SANDBOX))
        .output();
    match out {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|c| format!("container {c}"))
            .collect(),
        Err(e) => vec![format!("docker ps failed: {e}")],
    }
}

/// Kills sandbox `id` from outside, as a crash or the OOM killer would:
/// SIGKILL to every process naming it (the native monitor, QEMU) and, for
/// containers, `docker kill` of its container. Waits (at most 15 s) until
/// nothing of it runs; says whether that happened.
pub async fn kill_from_outside(kind: Kind, id: &paddock_core::sandbox::SandboxId) -> bool {
    let pids = |id: &str| -> Vec<i32> {
        processes_naming(id)
            .iter()
            .filter_map(|p| p.strip_prefix("process ")?.split(':').next()?.parse().ok())
            .collect()
    };
    for pid in pids(id.as_str()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let containers = || -> Vec<String> {
        containers_labelled(id.as_str())
            .iter()
            .filter_map(|c| c.strip_prefix("container ").map(str::to_owned))
            .collect()
    };
    if kind.is_container() {
        for container in containers() {
            let _ = docker_cli().args(["kill", &container]).output();
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let running = if kind.is_container() {
            containers().iter().any(|c| {
                docker_cli()
                    .args(["inspect", "-f", "{{.State.Running}}", c])
                    .output()
                    .is_ok_and(|out| out.stdout.starts_with(b"true"))
            })
        } else {
            !pids(id.as_str()).is_empty()
        };
        if !running {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// What sandbox `id` still holds on the host (processes naming it, and for
/// containers the engine's containers labelled with it), after waiting
/// up to 15 s for it to go.
pub async fn leftovers(kind: Kind, id: &paddock_core::sandbox::SandboxId) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let mut left = processes_naming(id.as_str());
        if kind.is_container() {
            left.extend(containers_labelled(id.as_str()));
        }
        left.extend(crate::host::network_state(Some(id.as_str())));
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The engine's volumes (the container tier makes none).
pub fn docker_volumes() -> Vec<String> {
    match docker_cli().args(["volume", "ls", "-q"]).output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What a `paddock sandbox run` of `kind` over `workspace` holds: native
/// processes naming the workspace, or containers of the CLI's node label
/// and this backend bound to it.
pub fn owned_by_cli(kind: Kind, workspace: &str) -> Vec<String> {
    let mut held = processes_naming(workspace);
    if kind.is_container() {
        let out = docker_cli()
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label={}=paddock-cli", paddock_sandbox::LABEL_NODE))
            .arg("--filter")
            .arg(format!(
                "label={}={}",
                paddock_sandbox::LABEL_BACKEND,
                kind.name()
            ))
            .arg("--filter")
            .arg(format!("volume={workspace}"))
            .output();
        if let Ok(out) = out {
            held.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|c| format!("container {c}")),
            );
        }
    }
    held
}
