//! The guest connection of a runc container over a unix socket the host
//! listens on, bound into the container, instead of the attached stdio:
//! every frame on the attached stream goes through dockerd and the
//! container's shim both ways (about half a millisecond per round trip
//! here), a socket goes straight from guest to host.
//!
//! The directory holding the socket is the sandbox user's own (0700), so
//! on the host only root and that user reach it. The first peer to connect
//! must be a process in the container's pid namespace, else the create
//! fails. Once the guest is connected the directory and the socket are
//! removed: the container keeps an empty, unlinked directory, and nothing
//! more can connect. A directory left by an owner killed mid-start is
//! named like a temporary workspace (`paddock-<id>-<random>`), so orphan
//! reaping removes it with them.
//!
//! gVisor keeps the attached stdio: its sentry connects to a host socket
//! only when runsc runs with `--host-uds=open`, and then every command in
//! every gVisor sandbox could connect to any host socket bound inside its
//! workspace (git's fsmonitor daemon keeps one in `.git`), which gVisor
//! otherwise refuses. Measured here (a 1-byte echo, p50 of 40): 0.56 ms
//! over the attached stream against 0.10 ms over a host socket back to
//! back, 2.34 ms against 0.79 ms after 200 ms idle. Not worth that hole.

use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::time::Duration;

use paddock_core::sandbox::{BoxError, SandboxId};
use tokio::net::{UnixListener, UnixStream};

/// Where the socket's directory is bound inside the container.
pub(super) const GUEST_SOCKET_DIR: &str = "/run/paddock";
const SOCKET_NAME: &str = "guest.sock";
/// `sun_path` holds 108 bytes, its NUL included.
const SUN_PATH_MAX: usize = 107;

/// A listening socket for one container's guest.
#[derive(Debug)]
pub(super) struct GuestSocket {
    dir: tempfile::TempDir,
    listener: UnixListener,
}

impl GuestSocket {
    /// Listens in a new directory under `temp_root` (the system's temp
    /// directory when None) given to `uid`:`gid`, the container's user.
    /// None when the path would not fit in a socket address: then the
    /// container keeps the attached stdio.
    pub(super) fn bind(
        id: &SandboxId,
        temp_root: Option<&Path>,
        uid: u32,
        gid: u32,
    ) -> Result<Option<Self>, BoxError> {
        let root = temp_root.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let dir = tempfile::Builder::new()
            .prefix(&format!("paddock-{id}-"))
            .tempdir_in(&root)
            .map_err(|e| {
                format!(
                    "making the guest socket's directory in {}: {e}",
                    root.display()
                )
            })?;
        let path = dir.path().join(SOCKET_NAME);
        if path.as_os_str().len() > SUN_PATH_MAX {
            return Ok(None);
        }
        let listener = UnixListener::bind(&path)
            .map_err(|e| format!("listening on {}: {e}", path.display()))?;
        let owned = |p: &Path, mode: u32| -> Result<(), BoxError> {
            chown(p, Some(uid), Some(gid))
                .and_then(|()| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)))
                .map_err(|e| format!("giving {} to the sandbox user: {e}", p.display()).into())
        };
        owned(dir.path(), 0o700)?;
        owned(&path, 0o600)?;
        Ok(Some(Self { dir, listener }))
    }

    /// The engine's bind of the socket's directory (read-only: the guest
    /// only connects).
    pub(super) fn bind_spec(&self) -> String {
        format!("{}:{GUEST_SOCKET_DIR}:ro", self.dir.path().display())
    }

    /// The socket's path inside the container.
    pub(super) fn inside_path() -> PathBuf {
        Path::new(GUEST_SOCKET_DIR).join(SOCKET_NAME)
    }

    /// Takes the guest's connection, within `timeout`: the first peer, which
    /// must be in the pid namespace of the container's init (host pid
    /// `init_pid`). The socket and its directory go either way.
    pub(super) async fn accept(
        self,
        init_pid: i64,
        timeout: Duration,
    ) -> Result<UnixStream, BoxError> {
        let (stream, _) = tokio::time::timeout(timeout, self.listener.accept())
            .await
            .map_err(|_| format!("the guest did not connect within {timeout:?}"))?
            .map_err(|e| format!("accepting the guest's connection: {e}"))?;
        let peer = stream
            .peer_cred()
            .map_err(|e| format!("reading the guest connection's peer: {e}"))?
            .pid()
            .ok_or("the guest connection's peer has no pid")?;
        let namespace = |pid: i64| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
        match (namespace(i64::from(peer)), namespace(init_pid)) {
            (Some(peer_ns), Some(container_ns)) if peer_ns == container_ns => Ok(stream),
            _ => Err(format!(
                "the guest socket's first peer (pid {peer}) is not in the container's pid namespace"
            )
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listening(root: &Path) -> (GuestSocket, PathBuf) {
        let (uid, gid) = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        let socket = GuestSocket::bind(&SandboxId::generate(), Some(root), uid, gid)
            .unwrap()
            .unwrap();
        let path = socket.dir.path().join(SOCKET_NAME);
        (socket, path)
    }

    #[tokio::test]
    async fn a_peer_in_the_containers_pid_namespace_is_taken_and_nothing_is_left() {
        let root = tempfile::tempdir().unwrap();
        let (socket, path) = listening(root.path());
        let _client = UnixStream::connect(&path).await.unwrap();
        let own = i64::from(std::process::id());
        socket.accept(own, Duration::from_secs(5)).await.unwrap();
        assert_eq!(
            std::fs::read_dir(root.path()).unwrap().count(),
            0,
            "left behind"
        );
    }

    #[tokio::test]
    async fn a_peer_outside_the_containers_pid_namespace_is_refused_as_root() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        // A process in a pid namespace of its own stands in for a container's init.
        let mut unshare = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "sleep", "30"])
            .spawn()
            .unwrap();
        let children = format!("/proc/{0}/task/{0}/children", unshare.id());
        let mut init = None;
        for _ in 0..200 {
            init = std::fs::read_to_string(&children)
                .ok()
                .and_then(|s| s.split_whitespace().next().map(str::to_owned));
            if init.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let init: i64 = init.expect("unshare's child").parse().unwrap();
        let root = tempfile::tempdir().unwrap();
        let (socket, path) = listening(root.path());
        let _client = UnixStream::connect(&path).await.unwrap();
        let outcome = socket.accept(init, Duration::from_secs(5)).await;
        let _ = unshare.kill();
        let _ = unshare.wait();
        let err = outcome.expect_err("a peer in another pid namespace was taken");
        assert!(err.to_string().contains("pid namespace"), "{err}");
        assert_eq!(
            std::fs::read_dir(root.path()).unwrap().count(),
            0,
            "left behind"
        );
    }

    #[test]
    fn a_path_too_long_for_a_socket_address_keeps_stdio() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("d".repeat(100));
        std::fs::create_dir(&deep).unwrap();
        let (uid, gid) = (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        );
        let socket = GuestSocket::bind(&SandboxId::generate(), Some(&deep), uid, gid).unwrap();
        assert!(socket.is_none());
    }
}
