//! Options of packing and unpacking, with the product's defaults.

/// Names excluded wherever they appear in the tree, unless the caller
/// replaces [`PackOptions::excludes`]: what a tool makes again from the
/// sources (dependencies, build output, virtualenvs, tool caches). `.git`
/// is kept on purpose: a fork or a subagent's copy must have the history
/// and the uncommitted state the agent works on, and `git diff` inside it
/// must mean what it meant in the original.
pub const DEFAULT_EXCLUDES: [&str; 14] = [
    "node_modules",
    "target",
    "dist",
    "coverage",
    ".cache",
    "__pycache__",
    // Python virtualenvs (`python -m venv .venv`, `virtualenv venv`) and
    // the caches of its test, type and lint tools.
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    // Gradle's per-project cache.
    ".gradle",
];

/// zstd level: `zstd -3`, the CLI's default.
pub const DEFAULT_LEVEL: i32 = 3;
pub const DEFAULT_MAX_FILES: u64 = 10_000;
pub const DEFAULT_MAX_BYTES: u64 = 100 * 1024 * 1024;
/// Highest `max_files` a request over the API may ask for (a sandbox
/// snapshot, an import, a run's snapshot limits).
pub const MAX_REQUEST_FILES: u64 = 1_000_000;
/// Highest `max_bytes` a request over the API may ask for; an import
/// unpacks into a scratch directory on the host.
pub const MAX_REQUEST_BYTES: u64 = 8 << 30;

/// Size limits shared by packing and unpacking; a key left out of a
/// config's `max_files`/`max_bytes` keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Entries of every kind (files, directories, symlinks, hardlinks);
    /// packing also counts the sockets, fifos and devices it skips.
    pub max_files: u64,
    /// File content before compression, all files together.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: DEFAULT_MAX_FILES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// How [`crate::pack`] builds an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackOptions {
    /// zstd compression level (1..=22).
    pub level: i32,
    /// zstd compression worker threads; `None` picks the number of cores,
    /// `Some(0)` compresses on the calling thread.
    pub workers: Option<u32>,
    /// Exclude patterns, gitignore-like: a pattern without `/` matches a name
    /// anywhere in the tree (`node_modules`, `*.log`); a pattern with `/` (or
    /// a leading `/`) matches the path from the root (`build/out`, `/tmp`,
    /// `docs/**/*.pdf`). `*` and `?` stay within one name, `**` spans
    /// directories, `[a-z]` and `[!a-z]` are classes, `\` escapes. An
    /// excluded directory is left out with everything under it.
    pub excludes: Vec<String>,
    pub limits: Limits,
}

impl Default for PackOptions {
    fn default() -> Self {
        Self {
            level: DEFAULT_LEVEL,
            workers: None,
            excludes: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect(),
            limits: Limits::default(),
        }
    }
}

impl PackOptions {
    /// Adds caller patterns (per workspace, per call) to the current ones.
    pub fn with_excludes<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.excludes.extend(patterns.into_iter().map(Into::into));
        self
    }
}

/// Owner given to everything a restore creates (e.g. a sandbox's mapped
/// uid/gid when the host restores as root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

/// How [`crate::unpack`] restores an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackOptions {
    pub limits: Limits,
    /// Largest single file.
    pub max_file_bytes: u64,
    /// `None` keeps the restoring process's uid/gid (the archive's owners are ignored).
    pub owner: Option<Owner>,
    /// Most disk the restored tree may take, as [`crate::disk::estimate`]
    /// charges each entry (blocks and an inode) before it is written: an
    /// archive of many tiny files is refused by what it costs, not by its
    /// declared bytes ([`crate::Limit::Disk`]).
    pub max_disk_bytes: u64,
}

impl Default for UnpackOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            max_file_bytes: DEFAULT_MAX_BYTES,
            owner: None,
            max_disk_bytes: u64::MAX,
        }
    }
}
