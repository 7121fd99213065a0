//! Flag groups more than one command takes: where the server is, how
//! sandboxes are made here, their egress, their limits, the data dir, and
//! the parsers of values several commands read.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use paddock_api::service::commands::LimitsRequest;
use paddock_core::sandbox::DowngradeLayer;
use paddock_proto::NetworkPolicy;

use crate::backend::BackendKind;
use crate::size::{parse_bytes, parse_cpus_millis};

/// Where a running `paddock serve` is; only the commands that talk to one
/// take these (sandbox create|ls|info ID|exec|rm, files, snapshot, workspace,
/// process, session, runs, memory, doctor, run).
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Base URL of a running `paddock serve` (http://127.0.0.1:7878).
    #[arg(long, global = true, env = "PADDOCK_SERVER", value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for the server (prefer PADDOCK_TOKEN: arguments are visible to other users).
    #[arg(
        long,
        global = true,
        env = "PADDOCK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

/// How sandboxes are made on this host; only the commands that make or
/// check sandboxes here take these (serve, sandbox run|shell|info, run).
#[derive(Debug, Clone, Default, Args)]
pub struct BackendArgs {
    /// The paddock-guest binary (default: next to this executable).
    #[arg(long, env = "PADDOCK_GUEST_BIN", value_name = "PATH")]
    pub guest_bin: Option<PathBuf>,
    /// DEVELOPMENT ONLY: run the guest with no isolation at all.
    #[arg(
        long,
        hide = true,
        env = "PADDOCK_UNCONFINED",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub unconfined: bool,
    /// Which sandbox backend makes the sandboxes (`paddock sandbox info`
    /// lists what this host supports; default native). With --server, one
    /// the server enabled (default: the server's).
    #[arg(long, env = "PADDOCK_BACKEND", value_enum)]
    pub backend: Option<BackendKind>,
    /// The image of docker and gvisor sandboxes (default paddock-sandbox:bookworm,
    /// built by images/docker-image.sh); for microvm the directory of its
    /// kernel and initrd (default /var/lib/paddock/microvm, images/microvm-image.sh).
    #[arg(long, env = "PADDOCK_IMAGE", value_name = "IMAGE")]
    pub image: Option<String>,
}

impl BackendArgs {
    /// The backend of `--backend`, native when not given.
    pub fn kind(&self) -> BackendKind {
        self.backend.unwrap_or(BackendKind::Native)
    }
}

/// The egress of sandboxes with network made on this host; only the
/// commands whose sandboxes may have network here take these (serve,
/// sandbox run, run).
#[derive(Debug, Clone, Default, Args)]
pub struct EgressArgs {
    /// The DNS server (IP:PORT) the egress proxy resolves names with, for
    /// sandboxes with network (default: the host's resolver).
    #[arg(long, env = "PADDOCK_EGRESS_RESOLVER", value_name = "ADDR")]
    pub egress_resolver: Option<std::net::SocketAddr>,
    /// A private address the egress guard lets through when a policy
    /// allows it (an internal registry). Repeatable.
    #[arg(long = "egress-allow-private", value_name = "IP")]
    pub egress_allow_private: Vec<std::net::IpAddr>,
    /// A PEM file of CAs the egress proxy trusts, besides the system's,
    /// when it forwards a secret's request over TLS (an internal host).
    #[arg(long = "egress-ca", value_name = "FILE")]
    pub egress_ca: Vec<PathBuf>,
    /// The private IPv4 range (default 10.217.0.0/16) whose /30s sandboxes
    /// with network full are routed (NAT) through; it must not overlap a
    /// route of this host.
    #[arg(
        long = "egress-nat-pool",
        env = "PADDOCK_EGRESS_NAT_POOL",
        value_name = "CIDR"
    )]
    pub egress_nat_pool: Option<paddock_egress::NatPool>,
}

impl EgressArgs {
    /// The operator's egress settings these flags give.
    pub fn config(&self) -> paddock_egress::EgressConfig {
        paddock_egress::EgressConfig {
            resolver: self.egress_resolver.map_or(
                paddock_egress::Resolver::System,
                paddock_egress::Resolver::Nameserver,
            ),
            allowed_private: self.egress_allow_private.clone(),
            extra_roots: self.egress_ca.clone(),
            nat_pool: self.egress_nat_pool.unwrap_or_default(),
            ..paddock_egress::EgressConfig::default()
        }
    }
}

/// The network of a sandbox a command makes, here (`sandbox run`) or on a
/// server (`sandbox create`, `snapshot restore|fork`).
#[derive(Debug, Clone, Args)]
pub struct NetworkArgs {
    /// none: loopback only; `allow:HOST[:PORT],...` (`*.suffix` allowed):
    /// only those, through the egress proxy; full: any host through the
    /// same proxy (never the host's own network or services).
    #[arg(
        long = "network",
        id = "network",
        value_name = "POLICY",
        default_value = "none",
        value_parser = parse_network
    )]
    pub policy: NetworkPolicy,
}

/// The resource limits of a sandbox a command makes, here (`sandbox run`)
/// or on a server (`sandbox create`, `snapshot restore|fork`). Left out:
/// the defaults named, or on a server the server's.
#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Memory limit: bytes, or with a suffix (512M, 1G). Here 0 = no limit,
    /// default 1G; on a server, default the server's.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Most processes at once. Here 0 = no limit, default 512; on a
    /// server, default the server's.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU quota in CPUs (fractions allowed: 0.5). Here default no limit;
    /// on a server, default the server's.
    #[arg(long, value_name = "N", value_parser = parse_cpus_millis)]
    pub cpus: Option<u64>,
    /// Size of the sandbox's /tmp (bytes or with a suffix). Here default
    /// 256M; on a server, default the server's.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub tmp_size: Option<u64>,
}

impl LimitArgs {
    /// The limits given, as a server request's `limits`.
    pub fn request(&self) -> LimitsRequest {
        LimitsRequest {
            memory_bytes: self.memory,
            pids: self.pids,
            cpu_millis: self.cpus,
            tmp_bytes: self.tmp_size,
            ..LimitsRequest::default()
        }
    }
}

/// Which of a server's enabled backends makes the sandboxes of a request.
#[derive(Debug, Clone, Args)]
pub struct ServerBackendArgs {
    /// The server's sandbox backend (native, docker, gvisor, microvm), one
    /// it enabled (`GET /v1/health` lists them). Default: the server's.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<BackendKind>,
    /// The container image, one the server enabled for that backend.
    /// Default: the backend's first.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
}

/// Where the embedded store and workspaces live (as for `paddock serve`).
/// Where the local state lives unless --data-dir says otherwise.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/paddock";

#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// State directory: paddock.db, workspaces/, blobs/, tmp/.
    #[arg(
        long,
        env = "PADDOCK_DATA_DIR",
        default_value = DEFAULT_DATA_DIR,
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// The ids to remove.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--secret` of `paddock run` and `paddock sandbox create`: a server's
/// secret by name, or one of this environment's.
#[derive(Debug, Clone)]
pub enum SecretArg {
    /// `NAME`: defined by the server's config.
    Server(String),
    /// `NAME@HOSTS[=HEADER]`: the value from this environment's NAME.
    Local(paddock_proto::SecretSpec),
}

pub(super) fn parse_secret_arg(raw: &str) -> Result<SecretArg, String> {
    if raw.contains('@') {
        return parse_secret(raw).map(SecretArg::Local);
    }
    let name = raw.trim();
    let valid = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err(format!(
            "secret {raw:?}: expected NAME (a server's secret, [A-Z_][A-Z0-9_]*) or \
             NAME@HOST[,HOST...][=HEADER]"
        ));
    }
    Ok(SecretArg::Server(name.to_owned()))
}

/// `NAME:PATH[:ro]` of `--volume` (the path rule is the server's, checked
/// before asking it).
pub(super) fn parse_volume_arg(raw: &str) -> Result<paddock_proto::VolumeMount, String> {
    let (rest, read_only) = match raw.strip_suffix(":ro") {
        Some(rest) => (rest, true),
        None => (raw.strip_suffix(":rw").unwrap_or(raw), false),
    };
    let Some((name, path)) = rest.split_once(':') else {
        return Err(format!("volume {raw:?}: expected NAME:PATH[:ro]"));
    };
    paddock_proto::check_mount_path(path).map_err(|e| format!("volume {raw:?}: {e}"))?;
    Ok(paddock_proto::VolumeMount {
        name: name.to_owned(),
        path: path.to_owned(),
        read_only,
    })
}

/// `NAME@HOSTS[=HEADER]`, the value from this process's environment.
pub(super) fn parse_secret(raw: &str) -> Result<paddock_proto::SecretSpec, String> {
    let request: paddock_proto::SecretRequest = raw.parse().map_err(|e| format!("{e}"))?;
    let value = std::env::var(&request.name)
        .map_err(|_| format!("secret {}: ${} is not set here", request.name, request.name))?;
    request
        .with_value(paddock_proto::SecretValue::new(value))
        .map_err(|e| e.to_string())
}

pub(super) fn parse_network(raw: &str) -> Result<NetworkPolicy, String> {
    raw.parse()
        .map_err(|e: paddock_proto::InvalidNetworkPolicy| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Layer {
    Cgroups,
    Landlock,
    Seccomp,
    IdmappedWorkspace,
    WorkspaceQuota,
}

impl From<Layer> for DowngradeLayer {
    fn from(layer: Layer) -> Self {
        match layer {
            Layer::Cgroups => DowngradeLayer::Cgroups,
            Layer::Landlock => DowngradeLayer::Landlock,
            Layer::Seccomp => DowngradeLayer::Seccomp,
            Layer::IdmappedWorkspace => DowngradeLayer::IdmappedWorkspace,
            Layer::WorkspaceQuota => DowngradeLayer::WorkspaceQuota,
        }
    }
}

pub(super) fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{s:?}: expected KEY=VALUE")),
    }
}
