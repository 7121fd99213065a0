//! Owners of host resources: every command that starts sandboxes in its own
//! process (`paddock sandbox run`, `sandbox shell`, `run`, `session`)
//! claims an owner record before it makes anything, and every later command
//! reaps what dead owners left ([`reap`]).
//!
//! A record is `<OWNERS_DIR>/<pid>-<start>.json`, held under an exclusive
//! `flock` for its owner's whole life: the kernel drops the lock when the
//! process dies, however it dies (kill -9 too), so a free lock means a dead
//! owner, whatever the pid was reused for since. The record names where the
//! owner's resources are (its backend, its own cgroup parent, docker node
//! label and temporary directory, which also scope its NAT rules, veths and
//! network namespaces); reaping builds that backend and calls its
//! `reap_orphans`, the same code a server runs for its own node at startup.

mod reap;
mod server;

use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use self::reap::reap_dead;
pub use self::server::claim_server;
use crate::backend::{BackendKind, Placement};
use crate::cli::BackendArgs;

/// Where owner records live (tmpfs: a reboot ends every owner, and the
/// processes, namespaces and rules they held).
pub const OWNERS_DIR: &str = "/run/paddock/owners";

/// Who claims: the prefix of its cgroup parent, node label and directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `paddock sandbox run|shell` without a server.
    Sandbox,
    /// `paddock run` and `paddock session` without a server.
    Run,
}

impl Role {
    fn prefix(self) -> &'static str {
        match self {
            Role::Sandbox => "paddock-cli",
            Role::Run => "paddock-run",
        }
    }
}

/// One backend an owner made sandboxes with, and where they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedBackend {
    pub kind: BackendKind,
    /// Docker node label of its containers.
    pub node: String,
    /// Its own cgroup parent (native; microvm adds `-microvm`).
    pub cgroup_parent: String,
    /// Its own temporary directory (workspaces, sockets, namespace markers).
    pub temp_root: PathBuf,
    /// What the backend was connected with (a reaper connects the same way).
    pub guest_bin: Option<PathBuf>,
    pub image: Option<String>,
}

impl OwnedBackend {
    /// The placement the owner made its sandboxes with.
    pub fn placement(&self) -> Placement {
        Placement {
            node: self.node.clone(),
            cgroup_parent: self.cgroup_parent.clone(),
            temp_root: Some(self.temp_root.clone()),
            ..Placement::standalone()
        }
    }
}

/// What is written in a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub pid: u32,
    /// Clock ticks after boot (/proc/PID/stat), for people reading it.
    pub start: u64,
    pub command: String,
    pub backends: Vec<OwnedBackend>,
    /// A server's record (`server-<node>.json`): its cgroup parent and
    /// temporary directory are its node's, shared with its next start, so
    /// reaping removes what is in them, never them.
    #[serde(default)]
    pub server: bool,
    /// A server's directory of saved sandboxes (`<data dir>/paused`): what
    /// each state file there keeps on the host (a gVisor sandbox paused
    /// `full`: its checkpointed container) is spared by reaping.
    #[serde(default)]
    pub saved_states: Option<PathBuf>,
}

/// This process's held record.
struct Held {
    file: File,
    path: PathBuf,
    record: Record,
}

static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// This process's owner id: `<pid>-<start time>`.
fn this_owner() -> (u32, u64) {
    let pid = std::process::id();
    (pid, crate::agent::owner::start_time(pid).unwrap_or(0))
}

/// The placement of this process's sandboxes of `kind` (its own cgroup
/// parent, node label and temporary directory under `temp_base`), recorded
/// before anything is made. When the record cannot be written the
/// sandboxes are still kept apart, with a warning that a crash would leave
/// them for a person to remove (without root it is not tried: such a
/// process makes no namespaces, rules or cgroups).
pub fn claim(
    role: Role,
    command: &str,
    args: &BackendArgs,
    temp_base: &Path,
) -> anyhow::Result<Placement> {
    let (pid, start) = this_owner();
    let id = format!("{pid}-{start}");
    let prefix = role.prefix();
    let owned = OwnedBackend {
        kind: args.kind(),
        // A '.' no server node name has: never a server's label.
        node: format!("{prefix}.{id}"),
        cgroup_parent: format!("{prefix}/{id}"),
        temp_root: temp_base.join(format!("{prefix}.{id}")),
        guest_bin: paddock_sandbox::locate_guest_bin(args.guest_bin.as_deref()).ok(),
        image: args.image.clone(),
    };
    if !nix::unistd::geteuid().is_root() {
        // Without root there are no namespaces, rules or cgroups to leave,
        // and /run/paddock is not ours to write.
        tracing::debug!("not root: this process's sandboxes are not recorded");
    } else if let Err(err) = record(pid, start, command, owned.clone()) {
        tracing::warn!(
            error = %format!("{err:#}"),
            dir = OWNERS_DIR,
            "cannot record this process's sandboxes: after a crash nothing will remove them"
        );
    }
    create_owned_dir(&owned.temp_root)?;
    Ok(owned.placement())
}

fn create_owned_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    anyhow::Context::with_context(
        std::fs::DirBuilder::new()
            .recursive(true)
            // Traversable (sandbox users reach their workspaces through it), not listable.
            .mode(0o711)
            .create(dir),
        || format!("creating {}", dir.display()),
    )
}

/// Root's alone: records name host paths and pids.
fn create_owners_dir() -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(OWNERS_DIR)
}

/// Adds `owned` to this process's record, writing and locking it first.
fn record(pid: u32, start: u64, command: &str, owned: OwnedBackend) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut held = HELD.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    if let Some(held) = held.as_mut() {
        if !held.record.backends.contains(&owned) {
            held.record.backends.push(owned);
            let text = serde_json::to_vec_pretty(&held.record)?;
            // Only a reaper reads it, and only once our lock is gone.
            held.file.set_len(0)?;
            held.file.rewind()?;
            held.file.write_all(&text)?;
        }
        return Ok(());
    }
    let dir = Path::new(OWNERS_DIR);
    create_owners_dir().with_context(|| format!("creating {OWNERS_DIR}"))?;
    let record = Record {
        pid,
        start,
        command: command.to_owned(),
        backends: vec![owned],
        server: false,
        saved_states: None,
    };
    let name = format!("{pid}-{start}");
    // Locked before it gets the name reapers look for: a reaper never sees
    // a live owner's record unlocked.
    let staging = dir.join(format!(".{name}.tmp"));
    let path = dir.join(format!("{name}.json"));
    let mut file =
        File::create(&staging).with_context(|| format!("creating {}", staging.display()))?;
    file.try_lock()
        .map_err(|e| anyhow::anyhow!("locking {}: {e}", staging.display()))?;
    file.write_all(&serde_json::to_vec_pretty(&record)?)?;
    std::fs::rename(&staging, &path).with_context(|| format!("naming {}", path.display()))?;
    *held = Some(Held { file, path, record });
    Ok(())
}

/// At a normal exit: every sandbox was destroyed, so this process's own
/// directories are empty; removes them and the record. Anything still there
/// keeps the record, for the next command to reap.
pub fn retire() {
    let Ok(mut held) = HELD.lock() else {
        return;
    };
    let Some(mine) = held.take() else {
        return;
    };
    let mut clean = true;
    if !mine.record.server {
        for owned in &mine.record.backends {
            clean &= reap::remove_owned_dirs(owned, false).is_empty();
        }
    }
    if clean {
        let _ = std::fs::remove_file(&mine.path);
    }
    drop(mine.file);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back() {
        let record = Record {
            pid: 12,
            start: 34,
            command: "sandbox run".into(),
            backends: vec![OwnedBackend {
                kind: BackendKind::Docker,
                node: "paddock-cli.12-34".into(),
                cgroup_parent: "paddock-cli/12-34".into(),
                temp_root: "/tmp/paddock-cli.12-34".into(),
                guest_bin: None,
                image: Some("img".into()),
            }],
            server: false,
            saved_states: None,
        };
        let text = serde_json::to_string(&record).unwrap();
        assert!(text.contains("\"kind\":\"docker\""), "{text}");
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), record);
    }
}
