//! The host directory behind a container's /workspace, and its write scope.

use std::os::unix::fs::{MetadataExt, chown};
use std::path::{Component, Path, PathBuf};

use paddock_core::sandbox::{SandboxError, SandboxId};
use paddock_proto::{MissingScopePath, writable_path_parts};

/// Owner of the temporary workspaces this backend makes, and so the
/// container's user: an unprivileged id no host account uses (the native
/// jail's sandbox uid range starts here too).
pub(crate) const SANDBOX_UID: u32 = paddock_proto::VOLUME_OWNER_ID;

#[derive(Debug)]
pub(crate) struct Workspace {
    pub path: PathBuf,
    pub temporary: Option<tempfile::TempDir>,
    /// The container runs as the workspace's owner, never as root.
    pub uid: u32,
    pub gid: u32,
}

impl Workspace {
    /// The size-limited tmpfs the engine mounts at /workspace instead of
    /// binding the host directory: for a temporary workspace under a quota
    /// that is neither read-only nor write-scoped (the native jail's rule,
    /// `paddock_jail::workspace_tmpfs`). The guest checks it is there.
    pub(crate) fn tmpfs(
        &self,
        spec: &paddock_core::sandbox::SandboxSpec,
    ) -> Option<paddock_proto::WorkspaceQuotaEnforcement> {
        if self.temporary.is_none()
            || spec.policy.read_only
            || !spec.policy.writable_paths.is_empty()
        {
            return None;
        }
        paddock_jail::workspace_tmpfs(&spec.policy.limits)
    }
}

fn io_error(id: &SandboxId, path: &Path, source: std::io::Error) -> SandboxError {
    SandboxError::Workspace {
        id: id.clone(),
        path: path.to_path_buf(),
        source,
    }
}

/// `temp_owner`: who a temporary workspace is given to when this process
/// is host root (the sandbox's own ids, or [`SANDBOX_UID`]).
pub(crate) fn prepare(
    id: &SandboxId,
    requested: Option<&Path>,
    temp_root: Option<&Path>,
    adopt_root: bool,
    temp_owner: u32,
) -> Result<Workspace, SandboxError> {
    match requested {
        Some(dir) => {
            let path = std::fs::canonicalize(dir).map_err(|e| io_error(id, dir, e))?;
            let meta = std::fs::metadata(&path).map_err(|e| io_error(id, &path, e))?;
            if !meta.is_dir() {
                let err = std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    "workspace is not a directory",
                );
                return Err(io_error(id, &path, err));
            }
            if meta.uid() == 0 && adopt_root {
                adopt(&path).map_err(|e| io_error(id, &path, e))?;
                return Ok(Workspace {
                    path,
                    temporary: None,
                    uid: SANDBOX_UID,
                    gid: SANDBOX_UID,
                });
            }
            if meta.uid() == 0 {
                let err = std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the workspace belongs to root: a container sandbox runs as the workspace \
                     owner and never as root; give the workspace to an unprivileged user",
                );
                return Err(io_error(id, &path, err));
            }
            Ok(Workspace {
                path,
                temporary: None,
                uid: meta.uid(),
                gid: meta.gid(),
            })
        }
        None => {
            let root = temp_root.map_or_else(std::env::temp_dir, Path::to_path_buf);
            let temp = tempfile::Builder::new()
                .prefix(&format!("paddock-{id}-"))
                .tempdir_in(&root)
                .map_err(|e| io_error(id, &root, e))?;
            let path = temp.path().to_path_buf();
            let (uid, gid) = if nix::unistd::geteuid().is_root() {
                chown(&path, Some(temp_owner), Some(temp_owner))
                    .map_err(|e| io_error(id, &path, e))?;
                (temp_owner, temp_owner)
            } else {
                let meta = std::fs::metadata(&path).map_err(|e| io_error(id, &path, e))?;
                (meta.uid(), meta.gid())
            };
            Ok(Workspace {
                path,
                temporary: Some(temp),
                uid,
                gid,
            })
        }
    }
}

/// Gives `dir` and everything below it to the sandbox uid (lchown: a
/// symlink itself, never its target).
fn adopt(dir: &Path) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(SANDBOX_UID), Some(SANDBOX_UID))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            adopt(&entry.path())?;
        } else {
            std::os::unix::fs::lchown(entry.path(), Some(SANDBOX_UID), Some(SANDBOX_UID))?;
        }
    }
    Ok(())
}

/// The write scope's host paths, sorted so a parent is bound before what
/// is inside it. Each must be reached without a symlink and be a directory
/// or a regular file; a missing one is made as the workspace owner's: a
/// directory when the entry ends in `/`, else an empty file
/// ([`paddock_proto::MissingScopePath`], the native jail's rule). (The engine binds by path: a sandbox that could write
/// the workspace could swap a checked directory for a symlink before the
/// bind, so scopes are resolved before any container of this workspace
/// runs writable there, as the native jail does by descriptor.)
pub(crate) fn writable_binds(
    id: &SandboxId,
    workspace: &Workspace,
    paths: &[String],
) -> Result<Vec<(PathBuf, String)>, SandboxError> {
    let mut sorted: Vec<(&str, MissingScopePath)> =
        paths.iter().map(|p| writable_path_parts(p)).collect();
    // A directory entry before a file entry of the same path: it is kept.
    sorted.sort_by_key(|&(rel, missing)| (rel, missing == MissingScopePath::File));
    sorted.dedup_by_key(|&mut (rel, _)| rel);
    sorted
        .into_iter()
        .map(|(rel, missing)| {
            let host = resolve(id, workspace, rel, missing)?;
            Ok((host, format!("{}/{rel}", paddock_proto::WORKSPACE_MOUNT)))
        })
        .collect()
}

fn resolve(
    id: &SandboxId,
    workspace: &Workspace,
    rel: &str,
    missing: MissingScopePath,
) -> Result<PathBuf, SandboxError> {
    let mut path = workspace.path.clone();
    let refuse = |path: &Path, why: &str| {
        io_error(
            id,
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_owned()),
        )
    };
    let components: Vec<Component<'_>> = Path::new(rel).components().collect();
    for (i, component) in components.iter().enumerate() {
        let Component::Normal(name) = component else {
            return Err(refuse(&path, "writable path is not normalized"));
        };
        path.push(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refuse(&path, "writable path goes through a symlink"));
            }
            Ok(meta) if i + 1 < components.len() && !meta.is_dir() => {
                return Err(refuse(&path, "writable path goes through a non-directory"));
            }
            Ok(meta) if !meta.is_dir() && !meta.is_file() => {
                return Err(refuse(
                    &path,
                    "writable path is neither a directory nor a file",
                ));
            }
            Ok(meta) if meta.is_file() && missing == MissingScopePath::Directory => {
                return Err(refuse(
                    &path,
                    "writable path is a file, but the trailing '/' asks for a directory",
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if i + 1 == components.len() && missing == MissingScopePath::File {
                    // create_new: O_EXCL, so a symlink planted meanwhile is not followed.
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&path)
                        .map_err(|e| io_error(id, &path, e))?;
                } else {
                    std::fs::create_dir(&path).map_err(|e| io_error(id, &path, e))?;
                }
                chown(&path, Some(workspace.uid), Some(workspace.gid))
                    .map_err(|e| io_error(id, &path, e))?;
            }
            Err(e) => return Err(io_error(id, &path, e)),
        }
    }
    Ok(path)
}
