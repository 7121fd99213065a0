//! The native tier: what the jail's monitor needs besides the policy.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a sandbox with secrets finds its CA bundle.
pub const CA_BUNDLE_PATH: &str = "/etc/paddock-ca.pem";

/// The variables naming the CA bundle, for the usual TLS clients (OpenSSL,
/// curl, Python requests, Node, git).
pub const CA_BUNDLE_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];

/// What the native backend's jail needs besides the policy: host paths
/// and ids only the monitor, still in the host's namespaces, may see. The
/// policy's write scope is resolved on the host without following
/// symlinks; a missing path is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JailTier {
    /// Host directory bound at /workspace.
    pub workspace: PathBuf,
    /// A network namespace the host made (with its egress proxy listening
    /// inside), joined by the sandbox instead of a fresh loopback-only one.
    /// Required exactly when the policy's network has egress: the host owns it, so the
    /// sandbox cannot change its routes or filter rules.
    #[serde(default)]
    pub netns: Option<PathBuf>,
    /// Variables every command gets besides the proxy's: the placeholders
    /// of the sandbox's secrets (never a value) and the CA bundle's paths.
    #[serde(default)]
    pub egress_env: Vec<(String, String)>,
    /// The names and hosts of those secrets, for the enforcement report
    /// (never a value: the jail never holds one).
    #[serde(default)]
    pub secrets: Vec<paddock_proto::SecretNotice>,
    /// The sandbox's own CA (PEM), whose leaves the egress proxy shows for
    /// its secrets' hosts: the jail writes it with the system's roots as
    /// the bundle at [`CA_BUNDLE_PATH`].
    #[serde(default)]
    pub egress_ca: Option<String>,
    /// How sandbox uids map to host uids. None: the jail picks (a block of
    /// `id_pool` when the caller is host root, its own uid otherwise).
    #[serde(default)]
    pub id_mapping: Option<IdMapping>,
    /// Where host root takes each sandbox's own block of 65536 ids from
    /// (locked for the sandbox's life under /run/paddock/ids). None: the
    /// default pool ([`IdPool::default`]).
    #[serde(default)]
    pub id_pool: Option<IdPool>,
    /// The workspace is a temporary directory made for this sandbox alone
    /// (empty at start): a workspace quota is then enforced by a tmpfs at
    /// /workspace, and the monitor removes the directory once the sandbox
    /// has ended, so it goes even when the host process that made it was
    /// killed.
    #[serde(default)]
    pub temporary_workspace: bool,
    /// A root filesystem directory (built from images/) used instead of the
    /// host's read-only system directories.
    #[serde(default)]
    pub rootfs: Option<PathBuf>,
    /// The host directory of each of the policy's named volumes (name,
    /// directory): bound at the policy's path, read-only where it says. A
    /// read-write one's top directory is given to sandbox root's host ids.
    #[serde(default)]
    pub volume_dirs: Vec<(String, PathBuf)>,
    /// Parent cgroup name under each hierarchy.
    #[serde(default = "default_cgroup_parent")]
    pub cgroup_parent: String,
}

fn default_cgroup_parent() -> String {
    "paddock".to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdMapping {
    /// First host uid/gid that sandbox id 0 maps to.
    pub host_base: u32,
    /// How many ids are mapped.
    pub count: u32,
}

/// Host ids handed out in blocks of 65536, one block per sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdPool {
    /// First host id of the first block.
    pub base: u32,
    /// How many blocks; at most this many sandboxes run at once.
    pub blocks: u32,
}

impl Default for IdPool {
    /// 1024 blocks from host uid 100000 (up to 67,208,863).
    fn default() -> Self {
        Self {
            base: 100_000,
            blocks: 1024,
        }
    }
}
