//! The write scope: paths of a read-only workspace that stay writable, each
//! its own read-write bind on top of the read-only workspace mount.
//!
//! The workspace is hostile: it may hold `src -> /etc` or `src -> ..`. So a
//! path is never looked up as a whole. The monitor walks it from a
//! descriptor of the workspace directory one component at a time with
//! `openat2(O_PATH | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_XDEV)`: every component must be a real directory on the
//! workspace's own mount, the last one a directory or a regular file (a
//! missing last one is made: a directory for an entry ending in `/`, else
//! an empty file, so a scope can name a file the sandbox is to create). A
//! symlink anywhere is refused, not followed. The bind is then made from the
//! descriptor that was checked (`open_tree` on the O_PATH fd), so nothing can
//! be swapped between check and mount; the mount point inside the sandbox
//! is found the same careful way and must be the same inode.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, open, openat, openat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, mkdirat};
use nix::unistd::{Gid, Uid, fchownat};

use paddock_proto::MissingScopePath;

use crate::host::ids::Owner;
use crate::validate::ScopeEntry;
use crate::{JailError, sys};

/// Mode of the directories made for missing writable paths (before umask).
const CREATED_DIR_MODE: u32 = 0o755;
/// Mode of the empty files made for missing writable file paths (before
/// umask): what a file the sandbox made itself would get.
const CREATED_FILE_MODE: u32 = 0o644;
/// How often one lookup is retried when the kernel reports EAGAIN (a
/// concurrent rename raced it).
const EAGAIN_RETRIES: usize = 8;

/// The on-disk object a path resolved to, as the init checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    fn of(stat: &FileStat) -> Self {
        Self {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }
}

/// One writable path, resolved on the host.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub rel: String,
    /// O_PATH descriptor of the directory or file itself.
    pub fd: OwnedFd,
    pub identity: Identity,
}

/// One writable path as the sandbox init receives it.
#[derive(Debug)]
pub(crate) struct WritableMount {
    pub rel: String,
    pub identity: Identity,
    /// The idmapped tree the monitor made from the resolved descriptor;
    /// None when the workspace is not idmapped: the init binds it itself.
    pub tree: Option<OwnedFd>,
}

/// What walking a path found.
enum Walk {
    Found {
        fd: OwnedFd,
        stat: FileStat,
    },
    /// Component `first_missing` does not exist; `parent` is the directory
    /// that should hold it.
    Missing {
        parent: OwnedFd,
        first_missing: usize,
    },
}

fn refused(rel: &str, reason: String) -> JailError {
    JailError::WritablePathRefused {
        path: rel.to_owned(),
        reason,
    }
}

/// Opens one name below `dir` without following anything and without
/// leaving the mount.
fn open_component(dir: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Errno> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS
                | ResolveFlag::RESOLVE_NO_XDEV,
        );
    let mut attempt = 0;
    loop {
        match openat2(dir, name, how) {
            Err(Errno::EAGAIN) if attempt < EAGAIN_RETRIES => attempt += 1,
            other => return other,
        }
    }
}

fn file_type(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits())
}

/// Walks `rel` (validated: normal components only) from `root`.
fn walk(root: BorrowedFd<'_>, rel: &str) -> Result<Walk, JailError> {
    let names: Vec<&str> = rel.split('/').collect();
    let io_error = |source: io::Error| JailError::ResolveWritablePath {
        path: rel.to_owned(),
        source,
    };
    let mut dir = root.try_clone_to_owned().map_err(io_error)?;
    for (i, name) in names.iter().enumerate() {
        let prefix = names[..=i].join("/");
        let fd = match open_component(dir.as_fd(), name) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                return Ok(Walk::Missing {
                    parent: dir,
                    first_missing: i,
                });
            }
            Err(Errno::EXDEV) => {
                return Err(refused(
                    rel,
                    format!("{prefix} is on another mount than the workspace"),
                ));
            }
            Err(e) => return Err(io_error(e.into())),
        };
        let stat = fstat(&fd).map_err(|e| io_error(e.into()))?;
        let last = i + 1 == names.len();
        match file_type(&stat) {
            SFlag::S_IFDIR => {}
            SFlag::S_IFREG if last => {}
            SFlag::S_IFLNK => {
                return Err(refused(
                    rel,
                    format!("{prefix} is a symbolic link; writable paths never follow symlinks"),
                ));
            }
            _ if last => {
                return Err(refused(
                    rel,
                    format!("{prefix} is neither a directory nor a regular file"),
                ));
            }
            _ => return Err(refused(rel, format!("{prefix} is not a directory"))),
        }
        if last {
            return Ok(Walk::Found { fd, stat });
        }
        dir = fd;
    }
    Err(refused(rel, "has no components".to_owned()))
}

/// Makes the missing `names` below `parent`, each owned by `chown_to` when
/// given: directories, except the last one when the entry names a file
/// (an empty regular file then). Returns the last one.
fn create_missing(
    rel: &str,
    mut parent: OwnedFd,
    names: &[&str],
    missing: MissingScopePath,
    chown_to: Option<Owner>,
) -> Result<(OwnedFd, FileStat), JailError> {
    let error = |source: io::Error| JailError::CreateWritablePath {
        path: rel.to_owned(),
        source,
    };
    let mut last = None;
    for (i, name) in names.iter().enumerate() {
        let want = match missing {
            MissingScopePath::File if i + 1 == names.len() => SFlag::S_IFREG,
            _ => SFlag::S_IFDIR,
        };
        let made = if want == SFlag::S_IFDIR {
            mkdirat(&parent, *name, Mode::from_bits_truncate(CREATED_DIR_MODE))
        } else {
            openat(
                &parent,
                *name,
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(CREATED_FILE_MODE),
            )
            .map(drop)
        };
        let created = match made {
            Ok(()) => true,
            // Made by an earlier path of the same scope (or a racer): checked below.
            Err(Errno::EEXIST) => false,
            Err(e) => return Err(error(e.into())),
        };
        let fd = open_component(parent.as_fd(), name).map_err(|e| error(e.into()))?;
        let stat = fstat(&fd).map_err(|e| error(e.into()))?;
        if file_type(&stat) != want {
            let what = if want == SFlag::S_IFDIR {
                "a directory"
            } else {
                "a regular file"
            };
            return Err(refused(
                rel,
                format!("{name} changed into something other than {what} while being created"),
            ));
        }
        if created && let Some(owner) = chown_to {
            fchownat(
                &fd,
                "",
                Some(Uid::from_raw(owner.uid)),
                Some(Gid::from_raw(owner.gid)),
                AtFlags::AT_EMPTY_PATH,
            )
            .map_err(|e| error(e.into()))?;
        }
        parent = fd;
        last = Some(stat);
    }
    let stat = last.ok_or_else(|| refused(rel, "has no components".to_owned()))?;
    Ok((parent, stat))
}

/// Resolves every path of the scope below the workspace directory (in the
/// monitor, on the host). Every path is checked before anything is
/// created, so a refused scope leaves the workspace untouched; then missing
/// paths are made (with missing parents as directories): as a directory
/// when the entry ends in `/`, else as an empty file, owned by `chown_to`
/// when given (the monitor is host root: they must belong to the
/// workspace owner, not to root). An entry ending in `/` that names an
/// existing file is refused: the caller asked for a directory.
pub(crate) fn resolve_all(
    workspace: &Path,
    entries: &[ScopeEntry],
    chown_to: Option<Owner>,
) -> Result<Vec<Resolved>, JailError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let root = open_dir(workspace).map_err(|source| JailError::ResolvePath {
        path: workspace.to_path_buf(),
        source,
    })?;
    let walks = entries
        .iter()
        .map(|entry| {
            let found = walk(root.as_fd(), &entry.rel)?;
            if let Walk::Found { stat, .. } = &found
                && entry.missing == MissingScopePath::Directory
                && file_type(stat) != SFlag::S_IFDIR
            {
                return Err(refused(
                    &entry.rel,
                    format!(
                        "{} is a file, but the trailing '/' asks for a directory; \
                         name the file without it",
                        entry.rel
                    ),
                ));
            }
            Ok(found)
        })
        .collect::<Result<Vec<_>, _>>()?;
    entries
        .iter()
        .zip(walks)
        .map(|(entry, found)| {
            let rel = &entry.rel;
            let (fd, stat) = match found {
                Walk::Found { fd, stat } => (fd, stat),
                Walk::Missing {
                    parent,
                    first_missing,
                } => {
                    let names: Vec<&str> = rel.split('/').skip(first_missing).collect();
                    create_missing(rel, parent, &names, entry.missing, chown_to)?
                }
            };
            Ok(Resolved {
                rel: rel.clone(),
                fd,
                identity: Identity::of(&stat),
            })
        })
        .collect()
}

fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    open(
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

/// Finds `mount.rel` below the directory `root` again (in the init) and
/// checks it is the object the monitor resolved.
fn reopen(root: &Path, mount: &WritableMount) -> Result<OwnedFd, JailError> {
    let root_fd = open_dir(root).map_err(|source| JailError::ResolveWritablePath {
        path: mount.rel.clone(),
        source,
    })?;
    match walk(root_fd.as_fd(), &mount.rel)? {
        Walk::Found { fd, stat } if Identity::of(&stat) == mount.identity => Ok(fd),
        _ => Err(JailError::WritablePathChanged {
            path: mount.rel.clone(),
            under: root.to_path_buf(),
        }),
    }
}

/// Binds one writable path read-write onto its place below `sandbox_root`
/// (/workspace), in the init after the read-only workspace is mounted
/// there. Without a tree from the monitor, the source is found below
/// `host_workspace` (the workspace reached through the old root) and bound
/// with the same nosuid, nodev restrictions as the workspace.
pub(crate) fn bind(
    mount: &mut WritableMount,
    sandbox_root: &Path,
    host_workspace: Option<&Path>,
) -> Result<(), JailError> {
    let target = sandbox_root.join(&mount.rel);
    let mount_error = |step, source| JailError::mount(step, &target, source);
    let tree = match (mount.tree.take(), host_workspace) {
        (Some(tree), _) => tree,
        (None, Some(host_workspace)) => {
            let source = reopen(host_workspace, mount)?;
            // Recursive like the plain workspace bind, so mounts the host
            // has below this path stay covered (and cloning is allowed).
            let tree = sys::open_tree_clone_fd(source.as_fd(), true)
                .map_err(|e| mount_error("writable-clone", e))?;
            sys::set_tree_attrs(
                tree.as_fd(),
                sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV,
                None,
                true,
            )
            .map_err(|e| mount_error("writable-restrict", e))?;
            tree
        }
        (None, None) => {
            return Err(mount_error(
                "writable-bind",
                io::Error::new(io::ErrorKind::NotFound, "no tree and no host source"),
            ));
        }
    };
    let target_fd = reopen(sandbox_root, mount)?;
    sys::move_tree_onto(tree.as_fd(), target_fd.as_fd())
        .map_err(|e| mount_error("writable-bind", e))
}

/// The sandbox path of a writable path.
pub(crate) fn sandbox_path(rel: &str) -> PathBuf {
    Path::new("/workspace").join(rel)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{MetadataExt, symlink};

    use super::*;

    fn strings(paths: &[&str]) -> Vec<ScopeEntry> {
        crate::validate::writable_paths(
            &paths.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>(),
            false,
        )
        .unwrap()
    }

    fn workspace() -> tempfile::TempDir {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join("src/deep")).unwrap();
        fs::write(ws.path().join("notes.txt"), "n").unwrap();
        ws
    }

    #[test]
    fn existing_directories_and_files_resolve_to_their_inodes() {
        let ws = workspace();
        let resolved = resolve_all(ws.path(), &strings(&["src/deep", "notes.txt"]), None).unwrap();
        let inode = |p: &str| fs::metadata(ws.path().join(p)).unwrap().ino();
        assert_eq!(resolved[0].rel, "notes.txt");
        assert_eq!(resolved[0].identity.ino, inode("notes.txt"));
        assert_eq!(resolved[1].rel, "src/deep");
        assert_eq!(resolved[1].identity.ino, inode("src/deep"));
        let kind = |r: &Resolved| file_type(&fstat(&r.fd).unwrap());
        assert_eq!(kind(&resolved[0]), SFlag::S_IFREG);
        assert_eq!(kind(&resolved[1]), SFlag::S_IFDIR);
        // Without or with the trailing '/', an existing directory is the same.
        let again = resolve_all(ws.path(), &strings(&["src/deep/"]), None).unwrap();
        assert_eq!(again[0].identity, resolved[1].identity);
    }

    #[test]
    fn symlinks_at_any_component_are_refused_and_nothing_is_created() {
        let ws = workspace();
        symlink("/etc", ws.path().join("etc-link")).unwrap();
        symlink("..", ws.path().join("up")).unwrap();
        symlink("src", ws.path().join("inner")).unwrap();
        for (bad, component) in [
            ("etc-link", "etc-link"),
            ("etc-link/new", "etc-link"),
            ("up/x", "up"),
            ("inner/deep", "inner"),
        ] {
            // A missing path listed first must not be created either.
            let err = resolve_all(ws.path(), &strings(&["fresh", bad]), None).unwrap_err();
            match &err {
                JailError::WritablePathRefused { path, reason } => {
                    assert_eq!(path, bad);
                    assert_eq!(
                        reason,
                        &format!(
                            "{component} is a symbolic link; writable paths never follow symlinks"
                        )
                    );
                }
                other => panic!("{bad}: {other}"),
            }
            assert!(!ws.path().join("fresh").exists(), "{bad}");
        }
        assert!(!Path::new("/etc/new").exists());
    }

    #[test]
    fn files_in_the_middle_and_special_files_are_refused() {
        let ws = workspace();
        nix::unistd::mkfifo(&ws.path().join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        for (bad, reason) in [
            ("notes.txt/x", "notes.txt is not a directory"),
            ("fifo", "fifo is neither a directory nor a regular file"),
            (
                "notes.txt/",
                "notes.txt is a file, but the trailing '/' asks for a directory; \
                 name the file without it",
            ),
        ] {
            let err = resolve_all(ws.path(), &strings(&[bad]), None).unwrap_err();
            assert!(
                matches!(&err, JailError::WritablePathRefused { reason: r, .. } if r == reason),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn missing_directories_are_created_with_their_parents_as_the_owner_as_root() {
        let ws = workspace();
        let owner = Owner {
            uid: 4321,
            gid: 4322,
        };
        let resolved = resolve_all(
            ws.path(),
            &strings(&["build/out/", "build/tmp/", "src/new/"]),
            Some(owner),
        )
        .unwrap();
        for (r, path) in resolved.iter().zip(["build/out", "build/tmp", "src/new"]) {
            let meta = fs::symlink_metadata(ws.path().join(path)).unwrap();
            assert!(meta.is_dir(), "{path}");
            assert_eq!(r.identity.ino, meta.ino());
            assert_eq!((meta.uid(), meta.gid()), (4321, 4322), "{path}");
        }
        assert_eq!(
            fs::metadata(ws.path().join("build")).unwrap().uid(),
            4321,
            "a created parent belongs to the owner too"
        );
        // The existing parent keeps its owner.
        assert_eq!(fs::metadata(ws.path().join("src")).unwrap().uid(), 0);
    }

    #[test]
    fn a_missing_file_is_created_empty_with_its_parents_as_the_owner_as_root() {
        let ws = workspace();
        let owner = Owner {
            uid: 4321,
            gid: 4322,
        };
        let resolved = resolve_all(
            ws.path(),
            &strings(&["gen/deep/new.rs", "src/new.txt", "build.mk"]),
            Some(owner),
        )
        .unwrap();
        for (r, path) in resolved
            .iter()
            .zip(["build.mk", "gen/deep/new.rs", "src/new.txt"])
        {
            let meta = fs::symlink_metadata(ws.path().join(path)).unwrap();
            assert!(meta.is_file(), "{path}");
            assert_eq!(meta.len(), 0, "{path}");
            assert_eq!(r.identity.ino, meta.ino());
            assert_eq!((meta.uid(), meta.gid()), (4321, 4322), "{path}");
            assert_eq!(file_type(&fstat(&r.fd).unwrap()), SFlag::S_IFREG);
        }
        for dir in ["gen", "gen/deep"] {
            let meta = fs::symlink_metadata(ws.path().join(dir)).unwrap();
            assert!(meta.is_dir(), "{dir}");
            assert_eq!(meta.uid(), 4321, "{dir}");
        }
        // Nothing else appeared next to the files.
        let mut names: Vec<String> = fs::read_dir(ws.path().join("src"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["deep", "new.txt"]);
    }

    #[test]
    fn reopening_checks_the_identity() {
        let ws = workspace();
        let resolved = resolve_all(ws.path(), &strings(&["src"]), None).unwrap();
        let mut mount = WritableMount {
            rel: "src".to_owned(),
            identity: resolved[0].identity,
            tree: None,
        };
        assert!(reopen(ws.path(), &mount).is_ok());
        fs::rename(ws.path().join("src"), ws.path().join("old")).unwrap();
        fs::create_dir(ws.path().join("src")).unwrap();
        let err = reopen(ws.path(), &mount).unwrap_err();
        assert!(
            matches!(err, JailError::WritablePathChanged { .. }),
            "{err}"
        );
        mount.rel = "gone".to_owned();
        assert!(reopen(ws.path(), &mount).is_err());
    }
}
