//! The idmapped bind of the workspace. Host root makes it in the monitor,
//! before the clone; the sandbox init inherits the detached tree and moves it
//! onto /workspace.
//!
//! An idmapped mount reads the on-disk id as an id *inside* the mapping's user
//! namespace and shows its *outside* id. So a throwaway user namespace with
//! `owner -> host id of sandbox root` makes the workspace owner's files appear
//! owned by sandbox root, and files sandbox root creates land on disk owned by
//! the workspace owner.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::host::ids::WorkspaceIdmap;
use crate::process::threads::SingleThreaded;
use crate::sys;

/// The detached, idmapped trees the init mounts.
#[derive(Debug)]
pub(crate) struct IdmappedTrees {
    pub workspace: OwnedFd,
    /// One per writable path, in the order given.
    pub writable: Vec<OwnedFd>,
}

/// A detached clone of `workspace` with the idmapping applied (and
/// read-only when asked), ready for move_mount, plus a read-write one of
/// each writable path (O_PATH descriptors the caller resolved safely).
pub(crate) fn idmapped_trees(
    workspace: &Path,
    writable: &[BorrowedFd<'_>],
    map: &WorkspaceIdmap,
    read_only: bool,
    single: &SingleThreaded,
) -> io::Result<IdmappedTrees> {
    let userns = user_namespace_with(map, single)?;
    let data = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
    let tree = sys::open_tree_clone(workspace)?;
    let attrs = if read_only {
        data | sys::MOUNT_ATTR_RDONLY
    } else {
        data
    };
    sys::set_tree_attrs(tree.as_fd(), attrs, Some(userns.as_fd()), false)?;
    let writable = writable
        .iter()
        .map(|fd| {
            // Not recursive, like the workspace tree: the same view below.
            let tree = sys::open_tree_clone_fd(*fd, false)?;
            sys::set_tree_attrs(tree.as_fd(), data, Some(userns.as_fd()), false)?;
            Ok(tree)
        })
        .collect::<io::Result<Vec<_>>>()?;
    Ok(IdmappedTrees {
        workspace: tree,
        writable,
    })
}

/// A parked child in a new user namespace; killed and reaped on drop.
struct Helper(Pid);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGKILL);
        let _ = waitpid(self.0, None);
    }
}

/// A user namespace holding `map` (the idmapping an idmapped mount takes).
pub(crate) fn user_namespace_with(
    map: &WorkspaceIdmap,
    single: &SingleThreaded,
) -> io::Result<OwnedFd> {
    let pid = sys::clone_process(libc::CLONE_NEWUSER as libc::c_ulong, single)?;
    if pid == 0 {
        park();
    }
    let helper = Helper(Pid::from_raw(pid));
    let proc_dir = format!("/proc/{pid}");
    std::fs::write(format!("{proc_dir}/uid_map"), map.uid.line())?;
    std::fs::write(format!("{proc_dir}/gid_map"), map.gid.line())?;
    let ns = File::open(format!("{proc_dir}/ns/user"))?;
    drop(helper);
    Ok(OwnedFd::from(ns))
}

fn park() -> ! {
    let _ = sys::set_parent_death_signal(libc::SIGKILL);
    loop {
        // Waits for a signal; SIGKILL from the parent ends us.
        nix::unistd::pause();
    }
}
