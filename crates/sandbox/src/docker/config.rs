//! Configuration of the docker backend.

use std::path::PathBuf;
use std::time::Duration;

/// Label naming the sandbox id of a container.
pub const LABEL_SANDBOX: &str = "org.paddock.sandbox";
/// Label naming the node (the paddock server) that owns a container.
pub const LABEL_NODE: &str = "org.paddock.node";
/// Label naming the backend ("docker" or "gvisor") that made a container.
pub const LABEL_BACKEND: &str = "org.paddock.backend";

/// Which OCI runtime the engine runs the container with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// runc: Linux namespaces on the host kernel.
    Docker,
    /// gVisor's runsc: a user-space kernel between the code and the host's.
    Gvisor,
}

impl Engine {
    pub fn backend_name(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Gvisor => "gvisor",
        }
    }

    /// The runtime name registered with dockerd (None: the engine's default, runc).
    pub fn runtime(self) -> Option<&'static str> {
        match self {
            Engine::Docker => None,
            Engine::Gvisor => Some("runsc"),
        }
    }

    /// The runtime of a sandbox with network (`egress`): gVisor's is
    /// registered with host networking (`runsc-net`, `--network=host`), so
    /// the sentry's sockets are the host kernel's in the namespace the host
    /// owns, where the egress rules apply; a sandbox without network keeps
    /// `runsc` (`--network=none`). See docs/security.md.
    pub fn runtime_for(self, egress: bool) -> Option<&'static str> {
        match (self, egress) {
            (Engine::Gvisor, true) => Some(GVISOR_NETWORK_RUNTIME),
            _ => self.runtime(),
        }
    }
}

/// gVisor with host networking, registered by scripts/container-setup.sh.
pub const GVISOR_NETWORK_RUNTIME: &str = "runsc-net";

#[derive(Debug, Clone)]
pub struct DockerConfig {
    pub engine: Engine,
    /// The static `paddock-guest` on the host, bound read-only into every container.
    pub guest_bin: PathBuf,
    /// The sandbox image (built by images/docker-image.sh).
    pub image: String,
    /// The engine's API socket.
    pub socket: PathBuf,
    /// Names this owner in the containers' labels, so orphan reaping only
    /// touches its own containers.
    pub node: String,
    /// Parent cgroup of the containers (cgroupfs driver).
    pub cgroup_parent: String,
    /// Where temporary workspaces are made; None: the system temp directory.
    pub temp_root: Option<PathBuf>,
    /// How long `create` waits for the guest's handshake.
    pub start_timeout: Duration,
    /// How long `destroy` waits for the guest to stop before the container is killed.
    pub stop_timeout: Duration,
    /// How long one engine API call may take.
    pub api_timeout: Duration,
    /// A requested workspace that belongs to root is given (recursively,
    /// symlinks untouched) to the sandbox uid instead of refused. For
    /// owners whose workspaces are their own directories (the server's and
    /// `paddock run`'s data dir), never for an operator's own tree.
    pub adopt_root_workspaces: bool,
    /// Where a sandbox with a temporary workspace takes its own host ids
    /// when this process is host root: the native tier's pool (one block of
    /// 65536 per sandbox, locked under /run/paddock/ids, so no native or
    /// container sandbox shares one); the container runs as the block's
    /// first id. None: the default pool.
    pub id_pool: Option<paddock_jail::IdPool>,
    /// The egress proxy of sandboxes with network (resolver, private
    /// destinations the operator allows), as native's.
    pub egress: paddock_egress::EgressConfig,
    /// This owner pauses sandboxes `full` (a server): a gVisor sandbox
    /// that can be saved is made without auto-remove, since its checkpoint
    /// ends its container. Otherwise (a one-shot command) every container
    /// goes with its guest, and none is saved.
    pub saves_sandboxes: bool,
}

/// The image the setup script builds.
pub const DEFAULT_IMAGE: &str = "paddock-sandbox:bookworm";

impl DockerConfig {
    pub fn new(engine: Engine, guest_bin: PathBuf) -> Self {
        Self {
            engine,
            guest_bin,
            image: DEFAULT_IMAGE.to_owned(),
            socket: PathBuf::from("/var/run/docker.sock"),
            node: "paddock".to_owned(),
            cgroup_parent: "/paddock-docker".to_owned(),
            temp_root: None,
            start_timeout: Duration::from_secs(20),
            stop_timeout: Duration::from_secs(2),
            api_timeout: Duration::from_secs(30),
            adopt_root_workspaces: false,
            id_pool: None,
            egress: paddock_egress::EgressConfig::default(),
            saves_sandboxes: false,
        }
    }
}
