//! `paddock serve`'s owner record, `server-<node>.json`: its node's
//! placement, so that any later command reaps what a killed server left.

use std::fs::File;
use std::io::{Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::{HELD, Held, OWNERS_DIR, OwnedBackend, Record, create_owners_dir, this_owner};
use crate::backend::{BackendKind, Placement};
use crate::cli::BackendArgs;

/// How long `paddock serve` waits for its node's record: another reaper
/// may be removing what its last start left (at most its owner timeout).
const SERVER_CLAIM_WAIT: Duration = Duration::from_secs(30);

/// Records `paddock serve`'s backends as `server-<node>.json`, so that any
/// later command reaps what a killed server left even when no server of that
/// node starts again. Waits while another process holds the record (a
/// reaper of the last start's leftovers, which must finish before this
/// server makes anything); a second live server of the node keeps it, and
/// this one then runs unrecorded, with a warning.
pub async fn claim_server(
    placement: &Placement,
    backends: &[(BackendKind, Option<String>)],
    args: &BackendArgs,
    saved_states: &Path,
) {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let (pid, start) = this_owner();
    let guest_bin = paddock_sandbox::locate_guest_bin(args.guest_bin.as_deref()).ok();
    let mut owned: Vec<OwnedBackend> = Vec::new();
    for (kind, image) in backends {
        if owned.iter().any(|o| o.kind == *kind) {
            continue;
        }
        owned.push(OwnedBackend {
            kind: *kind,
            node: placement.node.clone(),
            cgroup_parent: placement.cgroup_parent.clone(),
            temp_root: placement
                .temp_root
                .clone()
                .unwrap_or_else(std::env::temp_dir),
            guest_bin: guest_bin.clone(),
            image: image.clone().or_else(|| args.image.clone()),
        });
    }
    let record = Record {
        pid,
        start,
        command: "serve".to_owned(),
        backends: owned,
        server: true,
        saved_states: Some(saved_states.to_path_buf()),
    };
    let path = Path::new(OWNERS_DIR).join(format!("server-{}.json", placement.node));
    let deadline = Instant::now() + SERVER_CLAIM_WAIT;
    loop {
        match try_take(&path, &record) {
            Ok(Some(file)) => {
                if let Ok(mut held) = HELD.lock() {
                    *held = Some(Held { file, path, record });
                }
                return;
            }
            Ok(None) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(None) => {
                tracing::warn!(record = %path.display(), "another process holds this node's owner record: after a crash of this server, only its next start removes what it left");
                return;
            }
            Err(err) => {
                tracing::warn!(record = %path.display(), error = %format!("{err:#}"), "cannot record this server's sandboxes: after a crash only its next start removes them");
                return;
            }
        }
    }
}

/// Opens (or creates) the record at `path` and locks it: None while another
/// process holds it, or when the name was removed meanwhile (try again).
fn try_take(path: &Path, record: &Record) -> anyhow::Result<Option<File>> {
    use std::os::unix::fs::MetadataExt;
    create_owners_dir()?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    let held = file.metadata()?;
    let Ok(named) = std::fs::metadata(path) else {
        return Ok(None);
    };
    if (held.dev(), held.ino()) != (named.dev(), named.ino()) {
        return Ok(None);
    }
    // A dead server's record becomes ours: its leftovers are our node's,
    // which our reconcile removes before we serve.
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(&serde_json::to_vec_pretty(record)?)?;
    Ok(Some(file))
}
