//! The monitor: the calling process stays in the host namespaces, clones the
//! sandbox init, writes its id maps, lets it start, then waits for it, removes
//! the cgroups and exits with its status.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Gid, Pid, Uid, setresgid, setresuid};
use paddock_proto::{Enforcement, error_chain};

use crate::host::cgroup::SandboxCgroups;
use crate::host::id_pool::IdBlock;
use crate::host::ids::{IdPlan, Owner};
use crate::host::prepare::Prepared;
use crate::{JailError, JailSpec, host::sync, init, sys};

/// Namespaces of the sandbox init: clone flags and the names reported. The
/// network namespace is always the sandbox's own: a fresh one, or the one the
/// host made for its egress proxy (`joined_netns`, joined before the clone).
pub(crate) fn namespaces(joined_netns: bool) -> (libc::c_ulong, Vec<String>) {
    let mut list = vec![
        (libc::CLONE_NEWUSER, "user"),
        (libc::CLONE_NEWNS, "mount"),
        (libc::CLONE_NEWPID, "pid"),
        (libc::CLONE_NEWIPC, "ipc"),
        (libc::CLONE_NEWUTS, "uts"),
        (libc::CLONE_NEWCGROUP, "cgroup"),
    ];
    list.push((libc::CLONE_NEWNET, "net"));
    let flags = list
        .iter()
        .filter(|(flag, _)| !(joined_netns && *flag == libc::CLONE_NEWNET))
        .fold(0, |f, (flag, _)| f | *flag as libc::c_ulong);
    (
        flags,
        list.iter().map(|(_, name)| (*name).to_owned()).collect(),
    )
}

/// Moves the (single-threaded) monitor into the host-made network namespace,
/// so the init it clones is born there.
fn join_netns(path: &std::path::Path) -> Result<(), JailError> {
    let joined = fs::File::open(path).and_then(|ns| {
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
    });
    joined.map_err(|source| JailError::JoinNetns {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn run(spec: &JailSpec, prepared: Prepared) -> Result<Enforcement, JailError> {
    let (monitor_end, init_end) = match sync::pair() {
        Ok(pair) => pair,
        Err(e) => {
            abandon(prepared.cgroups.as_ref());
            return Err(JailError::SyncSocket(e));
        }
    };
    if let Some(path) = &spec.tier.netns
        && let Err(e) = join_netns(path)
    {
        abandon(prepared.cgroups.as_ref());
        return Err(e);
    }
    let (flags, _) = namespaces(spec.tier.netns.is_some());
    let cloned = match clone_as(prepared.ids.namespace_owner, flags, &prepared) {
        Ok(cloned) => cloned,
        Err(e) => {
            abandon(prepared.cgroups.as_ref());
            return Err(e);
        }
    };
    let pid = match cloned {
        Ok(0) => {
            drop(monitor_end);
            return init::run(spec, prepared, init_end);
        }
        Ok(pid) => Pid::from_raw(pid),
        Err(e) => {
            abandon(prepared.cgroups.as_ref());
            return Err(JailError::Clone(e));
        }
    };
    drop(init_end);
    // The init inherited the idmapped trees; these copies are no longer needed.
    drop(prepared.workspace_tree);
    drop(prepared.writable);
    let handed_over = write_id_maps(pid, &prepared.ids)
        .and_then(|()| sync::send(&monitor_end, sync::START).map_err(JailError::SendStart));
    if let Err(e) = handed_over {
        let _ = kill(pid, Signal::SIGKILL);
        let _ = waitpid(pid, None);
        abandon(prepared.cgroups.as_ref());
        return Err(e);
    }
    let temporary = spec
        .tier
        .temporary_workspace
        .then(|| spec.tier.workspace.clone());
    supervise(
        pid,
        monitor_end,
        prepared.cgroups,
        prepared.id_block,
        temporary,
    )
}

/// Clones the sandbox init with the effective uid/gid of `owner`: the
/// kernel makes the creator's effective uid the owner of a new user
/// namespace and charges the per-user counters of everything inside
/// (inotify instances, user namespaces, ...) to it at every level up to the
/// host. Only the effective ids change (real and saved stay 0), so the
/// monitor takes back its capabilities right after, to write the id maps and
/// remove the cgroups. The outer error is the id switch's, the inner the clone's.
fn clone_as(
    owner: Option<Owner>,
    flags: libc::c_ulong,
    prepared: &Prepared,
) -> Result<std::io::Result<libc::pid_t>, JailError> {
    let Some(owner) = owner else {
        return Ok(sys::clone_process(flags, &prepared.single));
    };
    let root_uid = Uid::from_raw(0);
    let root_gid = Gid::from_raw(0);
    let failed = |source: nix::Error| JailError::NamespaceOwner {
        uid: owner.uid,
        gid: owner.gid,
        source: source.into(),
    };
    // The gid first: with the euid no longer 0 it could not be changed.
    setresgid(root_gid, Gid::from_raw(owner.gid), root_gid).map_err(failed)?;
    if let Err(e) = setresuid(root_uid, Uid::from_raw(owner.uid), root_uid) {
        let _ = setresgid(root_gid, root_gid, root_gid);
        return Err(failed(e));
    }
    let cloned = sys::clone_process(flags, &prepared.single);
    if matches!(cloned, Ok(0)) {
        // The init: it becomes root of its namespace once the maps are written.
        return Ok(cloned);
    }
    setresuid(root_uid, root_uid, root_uid).map_err(failed)?;
    setresgid(root_gid, root_gid, root_gid).map_err(failed)?;
    Ok(cloned)
}

fn abandon(cgroups: Option<&SandboxCgroups>) {
    if let Some(cgroups) = cgroups {
        let _ = cgroups.leave_and_remove();
    }
}

fn write_id_maps(pid: Pid, ids: &IdPlan) -> Result<(), JailError> {
    let write = |name: &str, contents: &str| {
        let path = format!("/proc/{pid}/{name}");
        fs::write(&path, contents).map_err(|source| JailError::WriteIdMap {
            path: path.into(),
            source,
        })
    };
    write("uid_map", &ids.uid.line())?;
    if ids.deny_setgroups {
        write("setgroups", "deny")?;
    }
    write("gid_map", &ids.gid.line())
}

/// `_id_block` is held (its lock with it) until the process exits.
fn supervise(
    pid: Pid,
    channel: OwnedFd,
    cgroups: Option<SandboxCgroups>,
    _id_block: Option<IdBlock>,
    temporary_workspace: Option<PathBuf>,
) -> ! {
    // Terminating the monitor kills the sandbox and still cleans up.
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        let _ = sys::kill_on_signal(signal, pid);
    }
    release_stdin();
    let ready = matches!(sync::recv(&channel), Ok(Some(sync::READY)));
    drop(channel);
    let status = wait_for(pid);
    if let Some(cgroups) = cgroups
        && let Err(e) = cgroups.leave_and_remove()
    {
        eprintln!("paddock-jail: {}", error_chain(&e));
    }
    // After the init and all its processes are gone (pid namespace), so
    // nothing writes there any more; the host may have removed it already.
    if let Some(dir) = temporary_workspace
        && let Err(e) = fs::remove_dir_all(&dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        eprintln!(
            "paddock-jail: removing the temporary workspace {}: {e}",
            dir.display()
        );
    }
    let code = match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        _ => 1,
    };
    if ready {
        std::process::exit(code);
    }
    // Setup failed: the init reported its error itself (the caller of enter
    // prints it), unless it never got the chance.
    if let WaitStatus::Signaled(_, signal, _) = status {
        eprintln!("paddock-jail: the sandbox init was killed by {signal} during setup");
    }
    std::process::exit(if code == 0 { 1 } else { code })
}

/// fd 0 is the host connection, which belongs to the sandbox init now: the
/// monitor's copy is replaced by /dev/null so the host sees EOF when the init
/// goes.
fn release_stdin() {
    if let Ok(null) = fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
    } else {
        sys::close_stdin();
    }
}

fn wait_for(pid: Pid) -> WaitStatus {
    loop {
        match waitpid(pid, None) {
            Ok(status @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => return status,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return WaitStatus::Exited(pid, 1),
        }
    }
}
