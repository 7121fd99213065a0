//! What the host asks of a sandbox. Serialized by the host, passed to
//! `paddock-guest jail --spec JSON`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use paddock_proto::{DowngradeLayer, NetworkMode, SandboxLimits};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JailSpec {
    /// Names the sandbox's cgroup, hostname and log fields.
    pub sandbox_id: String,
    /// Host directory bound at /workspace.
    pub workspace: PathBuf,
    /// Mount /workspace read-only and make landlock read-only there too.
    #[serde(default)]
    pub read_only: bool,
    /// A write scope: when not empty, /workspace is read-only except these
    /// paths (relative to the workspace root, normalized, directories or
    /// regular files), each bound read-write on top. They are resolved on
    /// the host without following symlinks; a missing one is created as a
    /// directory. Contradicts `read_only`.
    #[serde(default)]
    pub writable_paths: Vec<String>,
    #[serde(default)]
    pub network: NetworkMode,
    #[serde(default)]
    pub limits: SandboxLimits,
    /// How sandbox uids map to host uids. None: the jail picks (a block of
    /// `id_pool` when the caller is host root, its own uid otherwise).
    #[serde(default)]
    pub id_mapping: Option<IdMapping>,
    /// Where host root takes each sandbox's own block of 65536 ids from
    /// (locked for the sandbox's life under /run/paddock/ids). None: the
    /// default pool ([`IdPool::default`]).
    #[serde(default)]
    pub id_pool: Option<IdPool>,
    /// The workspace was made for this sandbox (empty, removed with it): a
    /// workspace quota is then enforced by a tmpfs at /workspace.
    #[serde(default)]
    pub temporary_workspace: bool,
    /// A root filesystem directory (built from images/) used instead of the
    /// host's read-only system directories.
    #[serde(default)]
    pub rootfs: Option<PathBuf>,
    /// Layers the operator allows to be missing. Anything else that cannot be
    /// applied fails the sandbox.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
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
