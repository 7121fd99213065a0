//! The sandbox-spec vocabulary the host and the jail share: one
//! [`SandboxPolicy`] (what a sandbox may do and hold), its resource limits,
//! the hardening layers an operator may allow to be missing, and the check of
//! a write scope. The host's `SandboxSpec` (core) carries the policy, and so
//! does the one spec frame every backend sends its guest (`paddock_jail::GuestSpec`);
//! both sides run [`SandboxPolicy::validate`]'s checks: the host to refuse a
//! request early, the jail because it trusts no caller.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::NetworkPolicy;

/// What a sandbox may do and hold, declared once: the caller asks it in a
/// `SandboxSpec`, every backend hands it to its guest unchanged inside the
/// spec frame, and the guest (or the native jail) enforces it. A new policy
/// field is added here and nowhere else; whichever backend cannot enforce it
/// refuses the sandbox (fail closed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// The workspace is read-only inside the sandbox (mounts and landlock).
    #[serde(default)]
    pub read_only: bool,
    /// A write scope. Empty: `read_only` alone decides. Otherwise the
    /// workspace is read-only except these paths (directories or files,
    /// relative to the workspace root, normalized: see
    /// [`check_writable_paths`]), which stay writable, enforced by mounts
    /// and landlock. Each must be a real directory or regular file reached
    /// without any symlink, or missing: then a path ending in `/` or whose
    /// last name has no extension is created as a directory, one with an
    /// extension as an empty file (owned by the workspace owner;
    /// [`MissingScopePath`]). Otherwise the sandbox does not start.
    /// Contradicts `read_only`.
    #[serde(default)]
    pub writable_paths: Vec<String>,
    /// Where the sandbox may connect (none by default).
    #[serde(default)]
    pub network: NetworkPolicy,
    #[serde(default)]
    pub limits: SandboxLimits,
    /// Hardening layers the operator allows to be missing; any other layer
    /// that cannot be applied fails the sandbox.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Named volumes bound into the sandbox (the host resolves their
    /// directories): each at its path, read-only where asked, reachable
    /// through landlock as the mount allows. Checked by
    /// [`crate::check_volume_mounts`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<crate::VolumeMount>,
}

impl SandboxPolicy {
    /// Checks what can be checked without the workspace
    /// ([`check_writable_paths`]: each writable path is relative to the
    /// workspace root and normalized, there are at most
    /// [`MAX_WRITABLE_PATHS`], and `read_only` is not asked together with
    /// them; the network policy is well formed). Whether the paths are safe
    /// on disk is the backend's check when it starts the sandbox.
    pub fn validate(&self) -> Result<(), InvalidSandboxSpec> {
        check_writable_paths(&self.writable_paths, self.read_only)?;
        crate::check_volume_mounts(&self.volumes).map_err(InvalidSandboxSpec::Volumes)?;
        self.network.validate().map_err(InvalidSandboxSpec::Network)
    }

    /// May `layer` be missing?
    pub fn allows_downgrade(&self, layer: DowngradeLayer) -> bool {
        self.allow_downgrade.contains(&layer)
    }
}

/// Resource limits of one sandbox. `None` means no limit of that kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct SandboxLimits {
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// CPU quota in millicpus (1000 = one core).
    pub cpu_millis: Option<u64>,
    /// Size of the sandbox's /tmp tmpfs.
    pub tmp_bytes: u64,
    /// Most open files per process (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Most bytes the workspace may hold (a kernel-enforced quota).
    pub workspace_bytes: Option<u64>,
    /// Most files, directories and links the workspace may hold.
    pub workspace_inodes: Option<u64>,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: Some(1 << 30),
            pids: Some(512),
            cpu_millis: None,
            tmp_bytes: 256 << 20,
            open_files: 4096,
            workspace_bytes: None,
            workspace_inodes: None,
        }
    }
}

/// A hardening layer an operator may explicitly allow to be missing; any
/// other layer that cannot be applied fails the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DowngradeLayer {
    Cgroups,
    Landlock,
    Seccomp,
    /// The idmapped bind of the workspace (needed when host root runs
    /// sandboxes with a uid range).
    IdmappedWorkspace,
    /// The workspace quota (bytes and inodes), where the kernel cannot
    /// enforce it for this workspace: it is then not enforced at all.
    WorkspaceQuota,
}

impl DowngradeLayer {
    pub const ALL: [DowngradeLayer; 5] = [
        DowngradeLayer::Cgroups,
        DowngradeLayer::Landlock,
        DowngradeLayer::Seccomp,
        DowngradeLayer::IdmappedWorkspace,
        DowngradeLayer::WorkspaceQuota,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DowngradeLayer::Cgroups => "cgroups",
            DowngradeLayer::Landlock => "landlock",
            DowngradeLayer::Seccomp => "seccomp",
            DowngradeLayer::IdmappedWorkspace => "idmapped_workspace",
            DowngradeLayer::WorkspaceQuota => "workspace_quota",
        }
    }
}

/// Most writable paths of one sandbox (each is a mount and a landlock rule).
pub const MAX_WRITABLE_PATHS: usize = 64;
/// Longest writable path, in bytes: all of them must fit in the one argv
/// string (at most 128 KiB) that carries a native sandbox's spec to the guest.
pub const MAX_WRITABLE_PATH_LEN: usize = 1024;

/// A write scope no sandbox may start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSandboxSpec {
    #[error("writable path {path:?} {problem}")]
    WritablePath { path: String, problem: &'static str },
    #[error("{count} writable paths, at most {MAX_WRITABLE_PATHS} are allowed")]
    TooManyWritablePaths { count: usize },
    #[error("a read-only workspace has no writable paths: ask for read_only or for writable_paths")]
    ReadOnlyWithWritablePaths,
    #[error("invalid network policy")]
    Network(#[source] crate::InvalidNetworkPolicy),
    #[error("invalid volume mounts")]
    Volumes(#[source] crate::InvalidVolumeMount),
}

/// What a write-scope path that does not exist yet is made as when the
/// sandbox starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingScopePath {
    /// The path ends in `/` (`build/`), or its last name has no extension
    /// (`bin`, `out`): a directory, writable throughout.
    Directory,
    /// The last name has an extension (`src/new.rs`, `docs/USAGE.md`): an
    /// empty regular file, the only thing the sandbox may then write there.
    File,
}

/// One write-scope path split into the path relative to the workspace (no
/// trailing `/`) and what it is made as if missing: a trailing `/` asks for
/// a directory; otherwise a last name with an extension (a `.` after its
/// first character) is a file and any other a directory, which is what
/// people and models mean by `bin` or `src/new.rs`. A path that exists is
/// bound as what it is; a trailing `/` on an existing file is refused by the
/// backend.
pub fn writable_path_parts(path: &str) -> (&str, MissingScopePath) {
    if let Some(rel) = path.strip_suffix('/') {
        return (rel, MissingScopePath::Directory);
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let has_extension = name.char_indices().any(|(i, c)| c == '.' && i > 0);
    if has_extension {
        (path, MissingScopePath::File)
    } else {
        (path, MissingScopePath::Directory)
    }
}

/// Checks what can be checked of a write scope without the workspace: each
/// path is relative to the workspace root and normalized (non-empty
/// components, none `.` or `..`, no leading or doubled `/`, at most one
/// trailing `/` marking a directory (see [`MissingScopePath`]), no NUL,
/// at most [`MAX_WRITABLE_PATH_LEN`] bytes), there are at most
/// [`MAX_WRITABLE_PATHS`], and `read_only` is not asked together with them.
/// Whether the paths are safe on disk is the jail's check when it prepares
/// the sandbox.
pub fn check_writable_paths(paths: &[String], read_only: bool) -> Result<(), InvalidSandboxSpec> {
    if paths.is_empty() {
        return Ok(());
    }
    if read_only {
        return Err(InvalidSandboxSpec::ReadOnlyWithWritablePaths);
    }
    if paths.len() > MAX_WRITABLE_PATHS {
        return Err(InvalidSandboxSpec::TooManyWritablePaths { count: paths.len() });
    }
    paths
        .iter()
        .try_for_each(|path| match writable_path_problem(path) {
            Some(problem) => Err(InvalidSandboxSpec::WritablePath {
                path: path.clone(),
                problem,
            }),
            None => Ok(()),
        })
}

/// Why `path` is not a normalized path relative to the workspace root.
fn writable_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("is empty");
    }
    if path.len() > MAX_WRITABLE_PATH_LEN {
        return Some("is longer than the 1024 bytes allowed");
    }
    if path.contains('\0') {
        return Some("contains a NUL byte");
    }
    if path.starts_with('/') {
        return Some("is absolute; give it relative to the workspace root");
    }
    let (path, _) = writable_path_parts(path);
    path.split('/').find_map(|component| match component {
        "" => Some("has an empty component (a doubled '/')"),
        "." => Some("has a '.' component; give it normalized"),
        ".." => Some("has a '..' component; writable paths stay inside the workspace"),
        _ => None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_path_message_names_the_limit() {
        let long = "x".repeat(MAX_WRITABLE_PATH_LEN + 1);
        assert_eq!(
            writable_path_problem(&long),
            Some("is longer than the 1024 bytes allowed")
        );
        assert_eq!(MAX_WRITABLE_PATH_LEN, 1024);
    }

    #[test]
    fn layer_names_are_their_json_names() {
        for layer in DowngradeLayer::ALL {
            assert_eq!(
                serde_json::to_value(layer).unwrap(),
                serde_json::Value::String(layer.as_str().to_owned())
            );
        }
    }

    #[test]
    fn missing_limits_take_the_defaults() {
        let limits: SandboxLimits = serde_json::from_str(r#"{"pids": 7}"#).unwrap();
        assert_eq!(
            limits,
            SandboxLimits {
                pids: Some(7),
                ..SandboxLimits::default()
            }
        );
    }
}
