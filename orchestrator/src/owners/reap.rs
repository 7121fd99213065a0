//! Reaping what dead owners left: each record whose lock is free is taken
//! (locked by the reaper, so two reapers never work on one), its backends
//! are connected as the owner connected them and asked to `reap_orphans`
//! with nothing kept, then its own directories go, then the record. Live
//! owners' records stay locked and are never opened further.

use std::fs::{self, File, TryLockError};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use paddock_core::sandbox::OrphanReport;

use super::{OWNERS_DIR, OwnedBackend, Record};
use crate::backend::BackendKind;
use crate::cli::BackendArgs;

/// The most one dead owner's reaping may take (a docker engine that does
/// not answer, iptables held by another process).
const OWNER_TIMEOUT: Duration = Duration::from_secs(20);
/// The most one command spends reaping; what is left waits for the next.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(45);
/// A staged record younger than this may belong to an owner starting now.
const STAGING_AGE: Duration = Duration::from_secs(60);

/// Reaps what every dead owner on this host left. Never fails the command:
/// what it removed is logged at info, what it could not at warn (the record
/// then stays for the next command). Only root can remove these resources;
/// for anyone else it does nothing.
pub async fn reap_dead() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let entries = match fs::read_dir(OWNERS_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::warn!(dir = OWNERS_DIR, error = %e, "listing owners of sandboxes");
            return;
        }
    };
    let deadline = Instant::now() + TOTAL_TIMEOUT;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') && name.ends_with(".tmp") {
            // An owner killed before it named its record made nothing yet;
            // a young one may be an owner between creating and locking it.
            let old = fs::metadata(&path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().unwrap_or_default() > STAGING_AGE);
            if old && take_if_dead(&path).is_some() {
                let _ = fs::remove_file(&path);
            }
            continue;
        }
        if !name.ends_with(".json") {
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::warn!(record = %path.display(), "no time left to reap this owner: the next command will");
            break;
        }
        let Some((lock, text)) = take_if_dead(&path) else {
            continue;
        };
        match serde_json::from_str::<Record>(&text) {
            Ok(record) => reap_owner(&path, &record, left.min(OWNER_TIMEOUT)).await,
            Err(e) => {
                // Only a crash in the middle of rewriting it leaves one so.
                tracing::warn!(record = %path.display(), error = %e, "removing an unreadable owner record");
                let _ = fs::remove_file(&path);
            }
        }
        drop(lock);
    }
}

/// The record at `path`, locked, and its text, when its owner is dead (its
/// lock free) and no other reaper removed it meanwhile.
fn take_if_dead(path: &Path) -> Option<(File, String)> {
    let mut file = File::open(path).ok()?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return None,
        Err(TryLockError::Error(e)) => {
            tracing::warn!(record = %path.display(), error = %e, "locking an owner record");
            return None;
        }
    }
    // Another reaper may have finished and removed this one between our
    // open and our lock: then the name is gone or names another file.
    let held = file.metadata().ok()?;
    let named = fs::metadata(path).ok()?;
    if (held.dev(), held.ino()) != (named.dev(), named.ino()) {
        return None;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    Some((file, text))
}

async fn reap_owner(path: &Path, record: &Record, budget: Duration) {
    let deadline = Instant::now() + budget;
    let mut clean = true;
    for owned in &record.backends {
        let left = deadline.saturating_duration_since(Instant::now());
        let reaped =
            tokio::time::timeout(left, reap_backend(owned, record.saved_states.as_deref())).await;
        let backend = owned.kind.name();
        match reaped {
            Ok(Ok(report)) => {
                let dirs_left = if record.server {
                    Vec::new()
                } else {
                    remove_owned_dirs(owned, true)
                };
                tracing::info!(
                    owner_pid = record.pid,
                    command = %record.command,
                    backend,
                    cgroup_parent = %owned.cgroup_parent,
                    killed = ?report.processes_killed,
                    removed = ?report.sandboxes_removed,
                    "removed what a dead paddock process left"
                );
                if !dirs_left.is_empty() {
                    tracing::warn!(owner_pid = record.pid, backend, left = ?dirs_left, "could not remove a dead paddock process's directories");
                    clean = false;
                }
            }
            Ok(Err(err)) => {
                tracing::warn!(
                    owner_pid = record.pid,
                    command = %record.command,
                    backend,
                    error = %format!("{err:#}"),
                    "could not remove what a dead paddock process left: the next command tries again"
                );
                clean = false;
            }
            Err(_) => {
                tracing::warn!(
                    owner_pid = record.pid,
                    command = %record.command,
                    backend,
                    timeout = ?budget,
                    "removing what a dead paddock process left took too long: the next command tries again"
                );
                clean = false;
            }
        }
    }
    if clean && let Err(e) = fs::remove_file(path) {
        tracing::warn!(record = %path.display(), error = %e, "removing an owner record");
    }
}

/// The owner's backend, connected as it was, reaps everything of its
/// placement: the owner is dead, so nothing is kept but what the saved
/// sandboxes in `saved_states` (a server's) keep on the host.
async fn reap_backend(
    owned: &OwnedBackend,
    saved_states: Option<&Path>,
) -> anyhow::Result<OrphanReport> {
    let args = BackendArgs {
        guest_bin: owned.guest_bin.clone().filter(|p| p.is_file()),
        // Its namespaces, cgroups and NAT are found only when confined; an
        // unconfined owner simply has none.
        unconfined: false,
        backend: Some(owned.kind),
        image: owned.image.clone(),
    };
    let backend = crate::backend::connect(
        &args,
        paddock_egress::EgressConfig::default(),
        None,
        None,
        &owned.placement(),
    )
    .await?;
    let mut keep = Vec::new();
    if let Some(dir) = saved_states
        && let Ok(mut entries) = tokio::fs::read_dir(dir).await
    {
        while let Ok(Some(entry)) = entries.next_entry().await {
            if let Some(id) = backend.saved_instance(&entry.path()).await {
                keep.push(id);
            }
        }
    }
    Ok(backend.reap_orphans(&keep).await?)
}

/// Removes the owner's own cgroup parent (every hierarchy) and temporary
/// directory (`recursive` for a dead owner's; a live one's must be empty
/// already). Returns what could not be removed.
pub(super) fn remove_owned_dirs(owned: &OwnedBackend, recursive: bool) -> Vec<String> {
    let mut left = Vec::new();
    let parent = match owned.kind {
        BackendKind::Microvm => format!("{}-microvm", owned.cgroup_parent),
        _ => owned.cgroup_parent.clone(),
    };
    if let Err(e) = paddock_jail::remove_cgroup_parent(&parent) {
        left.push(format!("cgroup parent {parent}: {e}"));
    }
    let removed = if recursive {
        fs::remove_dir_all(&owned.temp_root)
    } else {
        fs::remove_dir(&owned.temp_root)
    };
    match removed {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => left.push(format!("{}: {e}", owned.temp_root.display())),
    }
    left
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_held_record_is_live_a_free_one_is_taken_by_one_reaper() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1-2.json");
        let mut owner = File::create(&path).unwrap();
        owner.write_all(b"{}").unwrap();
        owner.try_lock().unwrap();
        // Another open file description of this process counts as another owner.
        assert!(take_if_dead(&path).is_none(), "a live owner's record");
        drop(owner);
        let (lock, text) = take_if_dead(&path).expect("a dead owner's record");
        assert_eq!(text, "{}");
        // While one reaper holds it, another leaves it alone.
        assert!(take_if_dead(&path).is_none());
        drop(lock);
        assert!(take_if_dead(&dir.path().join("missing.json")).is_none());
    }
}
