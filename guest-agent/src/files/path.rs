//! Workspace path resolution.
//!
//! Two gates, both before any I/O on the target: a lexical check turns the
//! request's path into normal components below the root (refusing `..` past
//! the root and absolute paths elsewhere), then the kernel resolves those
//! components from a directory fd on the root with `RESOLVE_BENEATH`, so no
//! symlink can lead out either. Operations that create, remove or rename an
//! entry resolve only its parent this way and then act on the final name with
//! `*at()` calls relative to that parent fd. Where the kernel lacks openat2
//! (gVisor), beneath.rs walks the same rules one component at a time.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, open, openat2};
use nix::sys::stat::Mode;
use paddock_proto::ErrorInfo;

use crate::error::{bad_request, path_escape, resolve_error};

/// How often an `openat2` is retried when the kernel reports EAGAIN (a rename
/// raced the resolution of `..`).
const EAGAIN_RETRIES: usize = 8;

/// Set once openat2 answered ENOSYS: from then on paths resolve through
/// `beneath::open_beneath`, the same rules walked one component at a time.
static OPENAT2_MISSING: AtomicBool = AtomicBool::new(false);

/// A path below the workspace root, as normal components (no `.`, `..` or
/// empty ones), each the bytes of a name (UTF-8 or not). No components =
/// the root itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsPath {
    components: Vec<Vec<u8>>,
}

impl WsPath {
    pub fn root() -> Self {
        Self {
            components: Vec::new(),
        }
    }

    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    pub fn components(&self) -> &[Vec<u8>] {
        &self.components
    }

    /// The parent and the final name; None for the root.
    pub fn split_last(&self) -> Option<(WsPath, &OsStr)> {
        let (last, parent) = self.components.split_last()?;
        Some((
            WsPath {
                components: parent.to_vec(),
            },
            OsStr::from_bytes(last),
        ))
    }

    pub fn join(&self, name: &[u8]) -> WsPath {
        let mut components = self.components.clone();
        components.push(name.to_vec());
        WsPath { components }
    }

    /// Relative form handed to `openat2` ("." for the root).
    pub fn relative(&self) -> Vec<u8> {
        if self.is_root() {
            b".".to_vec()
        } else {
            self.components.join(&b'/')
        }
    }
}

/// Workspace-relative display form used in messages and search results
/// (bytes not in UTF-8 as `\xNN`, [`paddock_proto::FsPath::display`]).
impl std::fmt::Display for WsPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&paddock_proto::escape_path(&self.relative()))
    }
}

/// Lexical gate: the request's path as components below `root`.
///
/// Relative paths are taken from the root; absolute ones must lie under it.
/// `..` is applied lexically and may never climb above the root. A name
/// may be any bytes but NUL and `/`, UTF-8 or not.
pub fn normalize(root: &Path, input: &[u8]) -> Result<WsPath, ErrorInfo> {
    if input.contains(&0) {
        return Err(bad_request("path contains a NUL byte"));
    }
    let shown = paddock_proto::escape_path(input);
    let path = Path::new(OsStr::from_bytes(input));
    let mut stack: Vec<Vec<u8>> = Vec::new();
    if path.is_absolute() {
        // Normalize the whole absolute path, then strip the root prefix.
        for component in path.components() {
            match component {
                Component::Normal(name) => stack.push(name.as_bytes().to_vec()),
                Component::ParentDir => {
                    stack.pop();
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        let root_parts: Vec<Vec<u8>> = root
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.as_bytes().to_vec()),
                _ => None,
            })
            .collect();
        if stack.len() < root_parts.len() || stack[..root_parts.len()] != root_parts[..] {
            return Err(path_escape(&shown));
        }
        stack.drain(..root_parts.len());
    } else {
        for component in path.components() {
            match component {
                Component::Normal(name) => stack.push(name.as_bytes().to_vec()),
                Component::ParentDir => {
                    if stack.pop().is_none() {
                        return Err(path_escape(&shown));
                    }
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
    }
    Ok(WsPath { components: stack })
}

/// The workspace root: its path (for command working directories and
/// messages) and an `O_PATH` fd every resolution starts from.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    root_fd: OwnedFd,
}

impl Workspace {
    /// Opens `root`, which must be an absolute, canonical directory path.
    pub fn open_root(root: PathBuf) -> Result<Self, Errno> {
        let root_fd = open(
            &root,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { root, root_fd })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn root_fd(&self) -> &OwnedFd {
        &self.root_fd
    }

    pub fn normalize(&self, input: &[u8]) -> Result<WsPath, ErrorInfo> {
        normalize(&self.root, input)
    }

    /// Opens `path` (following symlinks that stay beneath the root) with `flags`.
    pub fn open(&self, path: &WsPath, flags: OFlag, mode: Mode) -> Result<OwnedFd, Errno> {
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC)
            .mode(mode)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let relative = path.relative();
        if !OPENAT2_MISSING.load(Ordering::Relaxed) {
            let mut attempts = 0;
            loop {
                match openat2(&self.root_fd, relative.as_slice(), how) {
                    Err(Errno::EAGAIN) if attempts < EAGAIN_RETRIES => attempts += 1,
                    Err(Errno::ENOSYS) => {
                        OPENAT2_MISSING.store(true, Ordering::Relaxed);
                        break;
                    }
                    other => return other,
                }
            }
        }
        super::beneath::open_beneath(&self.root_fd, &relative, flags, mode)
    }

    /// Resolves `path` to a directory fd, mapping failures to protocol errors.
    pub fn open_dir(&self, path: &WsPath) -> Result<OwnedFd, ErrorInfo> {
        self.open(path, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())
            .map_err(|errno| resolve_error(&path.to_string(), errno))
    }

    /// Resolves the parent of `path` and returns it with the final name.
    /// None when `path` is the root, which has no parent inside the workspace.
    pub fn open_parent<'a>(
        &self,
        path: &'a WsPath,
    ) -> Result<Option<(OwnedFd, &'a OsStr)>, ErrorInfo> {
        let Some((parent, name)) = path.split_last() else {
            return Ok(None);
        };
        let fd = self
            .open(&parent, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())
            .map_err(|errno| resolve_error(&path.to_string(), errno))?;
        Ok(Some((fd, name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_proto::ErrorCode;

    fn norm(input: &str) -> Result<Vec<String>, ErrorCode> {
        normalize(Path::new("/workspace"), input.as_bytes())
            .map(|p| {
                p.components()
                    .iter()
                    .map(|c| String::from_utf8_lossy(c).into_owned())
                    .collect()
            })
            .map_err(|e| e.code)
    }

    #[test]
    fn names_not_in_utf8_are_kept_as_their_bytes() {
        let path = normalize(Path::new("/workspace"), b"d\xfe/./\xff.bin").unwrap();
        assert_eq!(path.components(), [b"d\xfe".to_vec(), b"\xff.bin".to_vec()]);
        assert_eq!(path.to_string(), "d\\xfe/\\xff.bin");
        let absolute = normalize(Path::new("/workspace"), b"/workspace/\xff").unwrap();
        assert_eq!(absolute.components(), [b"\xff".to_vec()]);
    }

    #[test]
    fn lexical_gate_keeps_paths_below_the_root() {
        assert_eq!(norm("a/b"), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(norm("./a//b/."), Ok(vec!["a".into(), "b".into()]));
        assert_eq!(norm("a/../b"), Ok(vec!["b".into()]));
        assert_eq!(norm(""), Ok(vec![]));
        assert_eq!(norm("/workspace"), Ok(vec![]));
        assert_eq!(norm("/workspace/a/b"), Ok(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn lexical_gate_refuses_escapes() {
        assert_eq!(norm(".."), Err(ErrorCode::PathEscape));
        assert_eq!(norm("a/../../b"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("../workspace/a"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("/etc/passwd"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("/"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("/workspace/../etc"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("/workspacex/a"), Err(ErrorCode::PathEscape));
        assert_eq!(norm("a\0b"), Err(ErrorCode::BadRequest));
    }

    #[test]
    fn absolute_parent_components_stop_at_the_filesystem_root() {
        // "/../workspace/a" is "/workspace/a" to the kernel too.
        assert_eq!(norm("/../workspace/a"), Ok(vec!["a".into()]));
    }

    struct Fixture {
        _outside: tempfile::TempDir,
        outside: PathBuf,
        _root: tempfile::TempDir,
        ws: Workspace,
    }

    fn fixture() -> Fixture {
        let outside_dir = tempfile::tempdir().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        let root_dir = tempfile::tempdir().unwrap();
        let root = root_dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("dir")).unwrap();
        std::fs::write(root.join("dir/file"), "f").unwrap();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap()
        };
        link(Path::new("/etc"), "etc_link");
        link(&outside, "out_dir");
        link(&outside.join("secret"), "out_file");
        link(Path::new("out_dir"), "chain1");
        link(Path::new("chain1"), "chain2");
        link(Path::new("../.."), "up");
        link(Path::new("dir/file"), "in_file");
        link(Path::new("dir"), "in_dir");
        Fixture {
            ws: Workspace::open_root(root).unwrap(),
            outside,
            _outside: outside_dir,
            _root: root_dir,
        }
    }

    fn open_code(ws: &Workspace, input: &str) -> Result<(), Errno> {
        let path = ws.normalize(input.as_bytes()).unwrap();
        ws.open(&path, OFlag::O_RDONLY, Mode::empty()).map(drop)
    }

    #[test]
    fn symlinks_inside_the_workspace_resolve() {
        let f = fixture();
        assert_eq!(open_code(&f.ws, "in_file"), Ok(()));
        assert_eq!(open_code(&f.ws, "in_dir/file"), Ok(()));
        assert_eq!(open_code(&f.ws, "dir/../in_file"), Ok(()));
    }

    #[test]
    fn symlinks_leading_out_are_refused_by_the_kernel() {
        let f = fixture();
        for input in [
            "etc_link/passwd",
            "out_file",
            "out_dir/secret",
            "chain2/secret",
            "up",
        ] {
            let err = open_code(&f.ws, input).unwrap_err();
            assert!(
                matches!(err, Errno::EXDEV | Errno::ELOOP),
                "{input}: {err:?}"
            );
        }
    }

    #[test]
    fn parent_resolution_refuses_a_dir_symlink_out_before_a_write() {
        let f = fixture();
        let path = f.ws.normalize(b"out_dir/new_file").unwrap();
        let err = f.ws.open_parent(&path).unwrap_err();
        assert_eq!(err.code, ErrorCode::PathEscape);
        assert!(!f.outside.join("new_file").exists());
    }

    #[test]
    fn a_working_directory_resolves_beneath_the_root() {
        use std::os::unix::fs::MetadataExt;
        let f = fixture();
        let dir = |input: &str| {
            f.ws.normalize(input.as_bytes())
                .and_then(|p| f.ws.open_dir(&p))
        };
        let fd = dir("dir").unwrap();
        let opened = nix::sys::stat::fstat(&fd).unwrap();
        let expected = std::fs::metadata(f.ws.root().join("dir")).unwrap();
        assert_eq!(opened.st_ino, expected.ino());
        assert_eq!(dir("etc_link").unwrap_err().code, ErrorCode::PathEscape);
        assert_eq!(dir("dir/file").unwrap_err().code, ErrorCode::NotADirectory);
        assert_eq!(dir("/etc").unwrap_err().code, ErrorCode::PathEscape);
    }
}
