//! Choosing the sandbox backend: `--backend native|docker|gvisor|microvm`
//! (or the server config's `backend`) and, for the container tier, `--image`
//! (for microvm: the directory images/microvm-image.sh built).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::ValueEnum;
use paddock_core::sandbox::SandboxBackend;
use paddock_jail::IdPool;
use paddock_sandbox::{
    DockerBackend, DockerConfig, Engine, MicroVmBackend, MicroVmConfig, NativeBackend,
    NativeConfig, StreamLimits, locate_guest_bin,
};
use serde::{Deserialize, Serialize};

use crate::cli::BackendArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Linux namespaces, landlock and seccomp on this host's kernel.
    Native,
    /// Containers of the local Docker Engine (runc).
    Docker,
    /// Containers of the local Docker Engine under gVisor's runsc.
    Gvisor,
    /// QEMU microVMs with their own kernel (KVM, or TCG where KVM cannot run).
    Microvm,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Native,
        BackendKind::Docker,
        BackendKind::Gvisor,
        BackendKind::Microvm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Native => "native",
            BackendKind::Docker => "docker",
            BackendKind::Gvisor => "gvisor",
            BackendKind::Microvm => "microvm",
        }
    }
}

/// What an owner of sandboxes keeps apart from other owners on the host.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Node label of containers and name of the native cgroup parent.
    pub node: String,
    pub cgroup_parent: String,
    pub temp_root: Option<PathBuf>,
    /// The workspaces are this owner's own directories (container
    /// sandboxes may take root-owned ones over, see DockerConfig).
    pub owns_workspaces: bool,
    /// Host memory bounds of each native sandbox's guest connection.
    pub stream_limits: StreamLimits,
    /// Where native sandboxes take their own block of host ids from.
    pub id_pool: Option<IdPool>,
    /// This owner pauses sandboxes `full` (the server; see DockerConfig).
    pub saves_sandboxes: bool,
}

impl Placement {
    pub fn standalone() -> Self {
        Self {
            node: "paddock-cli".to_owned(),
            cgroup_parent: "paddock".to_owned(),
            temp_root: None,
            owns_workspaces: false,
            stream_limits: StreamLimits::default(),
            id_pool: None,
            saves_sandboxes: false,
        }
    }
}

/// The backend `args` name (or `kind` when given), connected and checked.
pub async fn connect(
    args: &BackendArgs,
    egress: paddock_egress::EgressConfig,
    kind: Option<BackendKind>,
    image: Option<&str>,
    placement: &Placement,
) -> anyhow::Result<Arc<dyn SandboxBackend>> {
    let guest_bin =
        locate_guest_bin(args.guest_bin.as_deref()).context("locating the paddock-guest binary")?;
    let kind = kind.unwrap_or(args.kind());
    let backend: Arc<dyn SandboxBackend> = match kind {
        BackendKind::Native => {
            let mut config = NativeConfig::new(guest_bin);
            config.unconfined = args.unconfined;
            config.cgroup_parent = placement.cgroup_parent.clone();
            config.temp_root = placement.temp_root.clone();
            config.stream_limits = placement.stream_limits.clone();
            config.id_pool = placement.id_pool;
            config.egress = egress;
            Arc::new(NativeBackend::new(config))
        }
        BackendKind::Docker | BackendKind::Gvisor => {
            let engine = if kind == BackendKind::Docker {
                Engine::Docker
            } else {
                Engine::Gvisor
            };
            let mut config = DockerConfig::new(engine, guest_bin);
            config.node = placement.node.clone();
            config.temp_root = placement.temp_root.clone();
            config.adopt_root_workspaces = placement.owns_workspaces;
            config.id_pool = placement.id_pool;
            config.saves_sandboxes = placement.saves_sandboxes;
            config.egress = egress;
            if let Some(image) = image.or(args.image.as_deref()) {
                config.image = image.to_owned();
            }
            Arc::new(
                DockerBackend::connect(config)
                    .await
                    .with_context(|| format!("the {} backend", kind.name()))?,
            )
        }
        BackendKind::Microvm => {
            let image_dir = image
                .or(args.image.as_deref())
                .map_or_else(MicroVmConfig::image_dir_from_env, PathBuf::from);
            let mut config = MicroVmConfig::new(guest_bin, &image_dir);
            // Its own cgroup parent: the reaper of one tier never touches another's.
            config.cgroup_parent = format!("{}-microvm", placement.cgroup_parent);
            config.temp_root = placement.temp_root.clone();
            config.adopt_root_workspaces = placement.owns_workspaces;
            config.egress = egress;
            Arc::new(MicroVmBackend::new(config)?)
        }
    };
    Ok(backend)
}

/// Each backend and whether this host can run it (None) or why not.
pub async fn availability(args: &BackendArgs) -> Vec<(BackendKind, Option<String>)> {
    let mut rows = Vec::new();
    for kind in BackendKind::ALL {
        let checked = match connect(
            args,
            paddock_egress::EgressConfig::default(),
            Some(kind),
            None,
            &Placement::standalone(),
        )
        .await
        {
            Ok(backend) => backend.check().await.map_err(|e| format!("{e:#}")),
            Err(e) => Err(format!("{e:#}")),
        };
        rows.push((kind, checked.err()));
    }
    rows
}
