//! One watched directory: its first listing, and each poll's listing
//! diffed against the last into events (the rules in `super`'s doc).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

use paddock_core::sandbox::SandboxId;
use paddock_core::store::SandboxState;
use paddock_proto::{ErrorCode, FileKind, FileStat, FsPath};

use super::super::super::connect::{Code, ConnectError};
use super::super::super::filesystem_pb::watch::{EVENT_TYPE_REMOVE, FilesystemEvent, WatchRequest};
use super::super::super::paths::e2b_path;
use super::super::walk::{self, child};
use super::super::{Files, MAX_LIST_ENTRIES, request_path};
use super::diff::{Meta, Snapshot, diff};
use super::registry::Owner;
use super::{MAX_PENDING, WATCHERS};
use crate::service::ServiceError;

/// One watched directory.
#[derive(Debug)]
pub(super) struct Watch {
    /// The directory listed, workspace-relative (a symlink asked for is
    /// followed once, at the start).
    root: FsPath,
    /// The path as asked for, for messages.
    pub(super) shown: String,
    recursive: bool,
    include_entry: bool,
    /// The last listing; None once the directory is gone.
    snapshot: Option<Snapshot>,
    /// Events found and not yet sent.
    pub(super) pending: VecDeque<FilesystemEvent>,
}

/// Why a poll failed.
#[derive(Debug)]
pub(super) enum PollError {
    /// The sandbox is gone: its watchers go too.
    SandboxGone(ConnectError),
    /// Anything else: the watcher is kept and the next poll tries again.
    Failed(ConnectError),
}

impl PollError {
    /// The error to answer, the owner's watchers dropped first when the
    /// sandbox is gone.
    pub(super) fn forgetting(self, owner: &Owner) -> ConnectError {
        match self {
            PollError::SandboxGone(err) => {
                let dropped = WATCHERS.forget(owner);
                tracing::debug!(sandbox_id = %owner.sandbox, dropped, "sandbox gone: its watchers dropped");
                err
            }
            PollError::Failed(err) => err,
        }
    }
}

impl Watch {
    /// Checks the path and takes the first listing.
    pub(super) async fn open(files: &Files, request: &WatchRequest) -> Result<Self, ConnectError> {
        let asked = request_path(&request.path)?;
        let shown = e2b_path(&asked.display());
        let not_found = || ConnectError::new(Code::NotFound, format!("path {shown} not found"));
        let stat = match files.stat(&asked).await {
            Ok(stat) => stat,
            Err(e) if e.code == Code::NotFound => return Err(not_found()),
            Err(e) => return Err(e),
        };
        let (root, stat) = match stat.kind {
            FileKind::Symlink => match files.follow(&asked, &stat).await {
                Some(end) => (end.path, end.stat),
                None => return Err(not_found()),
            },
            _ => (asked, stat),
        };
        if stat.kind != FileKind::Dir {
            return Err(ConnectError::new(
                Code::InvalidArgument,
                format!("path {shown} not a directory"),
            ));
        }
        let listing = match list(files, &root, request.recursive, &shown).await {
            Ok(listing) => listing,
            Err(Failure::RootGone) => return Err(not_found()),
            Err(Failure::SandboxGone(e) | Failure::Other(e)) => return Err(e),
        };
        Ok(Self {
            root,
            shown,
            recursive: request.recursive,
            include_entry: request.include_entry,
            snapshot: Some(snapshot_of(&listing)),
            pending: VecDeque::new(),
        })
    }

    /// Lists again and queues what changed. The snapshot moves only once
    /// the events are queued, so a poll cut short (its call's deadline)
    /// loses nothing: the next one finds the same changes.
    pub(super) async fn poll(&mut self, files: &Files) -> Result<(), PollError> {
        let Some(old) = &self.snapshot else {
            return Ok(());
        };
        let (listing, root_gone) = match list(files, &self.root, self.recursive, &self.shown).await
        {
            Ok(listing) => (listing, false),
            Err(Failure::RootGone) => (BTreeMap::new(), true),
            Err(Failure::SandboxGone(e)) => return Err(PollError::SandboxGone(e)),
            Err(Failure::Other(e)) => return Err(PollError::Failed(e)),
        };
        let new = snapshot_of(&listing);
        let mut events = Vec::new();
        for change in diff(old, &new) {
            let entry = match listing.get(&change.name) {
                Some(stat) if self.include_entry && change.kind.carries_entry() => {
                    let path = child(&self.root, change.name.as_bytes());
                    Some(files.describe(&path, stat).await)
                }
                _ => None,
            };
            events.push(FilesystemEvent {
                name: change.name.display(),
                r#type: change.kind.event_type(),
                entry,
            });
        }
        if root_gone {
            tracing::debug!(sandbox_id = %files.sandbox, watched = %self.shown, "watched directory gone: the watcher goes quiet");
            events.push(FilesystemEvent {
                name: ".".into(),
                r#type: EVENT_TYPE_REMOVE,
                entry: None,
            });
            self.snapshot = None;
        } else {
            self.snapshot = Some(new);
        }
        queue(&mut self.pending, events, MAX_PENDING, &files.sandbox);
        Ok(())
    }
}

/// Adds `events` to `pending`, the oldest dropped past `max`.
fn queue(
    pending: &mut VecDeque<FilesystemEvent>,
    events: Vec<FilesystemEvent>,
    max: usize,
    sandbox: &SandboxId,
) {
    pending.extend(events);
    let over = pending.len().saturating_sub(max);
    if over > 0 {
        pending.drain(..over);
        tracing::warn!(
            sandbox_id = %sandbox,
            dropped = over,
            kept = max,
            "watch events dropped: more than the watcher keeps between reads"
        );
    }
}

/// Why a listing failed.
#[derive(Debug)]
enum Failure {
    /// The watched directory is missing or no directory any more.
    RootGone,
    SandboxGone(ConnectError),
    Other(ConnectError),
}

/// The entries under `root` by their path relative to it: its own, or
/// with `recursive` its whole tree (never into a symlink).
async fn list(
    files: &Files,
    root: &FsPath,
    recursive: bool,
    shown: &str,
) -> Result<BTreeMap<FsPath, FileStat>, Failure> {
    let sandbox_gone = AtomicBool::new(false);
    let depth = if recursive { u32::MAX } else { 1 };
    let walked = walk::walk(root, depth, MAX_LIST_ENTRIES, |dir| {
        let sandbox_gone = &sandbox_gone;
        async move {
            let listed = files
                .service
                .list_dir_entries(&files.tenant, &files.sandbox, &dir)
                .await;
            listed.map_err(|e| {
                if is_sandbox_gone(&e) {
                    sandbox_gone.store(true, Ordering::Relaxed);
                }
                match e.guest_code() {
                    // A directory gone (or replaced) since it was listed:
                    // the walk passes over it, or the root is gone.
                    Some(ErrorCode::NotFound | ErrorCode::NotADirectory) => {
                        ConnectError::new(Code::NotFound, format!("{} is gone", dir.display()))
                    }
                    _ => ConnectError::from(e),
                }
            })
        }
    })
    .await;
    match walked {
        Ok(walked) => Ok(walked
            .into_iter()
            .filter_map(|w| Some((relative(root, &w.path)?, w.stat)))
            .collect()),
        Err(e) if sandbox_gone.load(Ordering::Relaxed) => Err(Failure::SandboxGone(e)),
        Err(e) if e.code == Code::NotFound => Err(Failure::RootGone),
        Err(e) if e.code == Code::ResourceExhausted => {
            let reach = if recursive { " in its whole tree" } else { "" };
            Err(Failure::Other(ConnectError::new(
                Code::ResourceExhausted,
                format!(
                    "{shown} holds more than {MAX_LIST_ENTRIES} entries{reach}, the most a watch \
                     lists (Paddock watches by listing the directory on every poll): watch a \
                     subdirectory{}",
                    if recursive {
                        " or without recursive"
                    } else {
                        ""
                    }
                ),
            )))
        }
        Err(e) => Err(Failure::Other(e)),
    }
}

/// Whether the sandbox is gone for good (a paused one is not).
fn is_sandbox_gone(err: &ServiceError) -> bool {
    matches!(
        err,
        ServiceError::NotFound {
            entity: "sandbox",
            ..
        } | ServiceError::NotRunning {
            state: SandboxState::Stopped | SandboxState::Lost,
            ..
        }
    )
}

/// `path` relative to `root` (both workspace-relative; `.` the root).
fn relative(root: &FsPath, path: &FsPath) -> Option<FsPath> {
    if root.as_bytes() == b"." {
        return Some(path.clone());
    }
    let rest = path.as_bytes().strip_prefix(root.as_bytes())?;
    let rest = rest.strip_prefix(b"/")?;
    (!rest.is_empty()).then(|| FsPath::from_bytes(rest))
}

fn snapshot_of(listing: &BTreeMap<FsPath, FileStat>) -> Snapshot {
    listing
        .iter()
        .map(|(name, stat)| (name.clone(), Meta::from(stat)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> FilesystemEvent {
        FilesystemEvent {
            name: name.into(),
            r#type: EVENT_TYPE_REMOVE,
            entry: None,
        }
    }

    #[test]
    fn names_are_relative_to_the_watched_directory() {
        let at = |root: &str, path: &str| {
            relative(&FsPath::from(root), &FsPath::from(path)).map(|p| p.display())
        };
        assert_eq!(at(".", "a.txt").as_deref(), Some("a.txt"));
        assert_eq!(at(".", "d/a.txt").as_deref(), Some("d/a.txt"));
        assert_eq!(at("w", "w/a.txt").as_deref(), Some("a.txt"));
        assert_eq!(at("w", "w/sub/b.txt").as_deref(), Some("sub/b.txt"));
        assert_eq!(at("w", "wx/a.txt"), None);
        assert_eq!(at("w", "w"), None);
    }

    #[test]
    fn pending_events_past_the_bound_drop_the_oldest() {
        let sandbox = SandboxId::generate();
        let mut pending = VecDeque::new();
        queue(&mut pending, vec![event("a"), event("b")], 3, &sandbox);
        queue(&mut pending, vec![event("c"), event("d")], 3, &sandbox);
        let names: Vec<_> = pending.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b", "c", "d"]);
    }

    #[test]
    fn only_a_sandbox_gone_for_good_drops_its_watchers() {
        let id = SandboxId::generate();
        assert!(is_sandbox_gone(&ServiceError::NotFound {
            entity: "sandbox",
            id: id.to_string(),
        }));
        for (state, gone) in [
            (SandboxState::Stopped, true),
            (SandboxState::Lost, true),
            (SandboxState::Paused, false),
        ] {
            let err = ServiceError::NotRunning {
                id: id.clone(),
                state,
            };
            assert_eq!(is_sandbox_gone(&err), gone, "{state}");
        }
        assert!(!is_sandbox_gone(&ServiceError::invalid("path", "empty")));
    }
}
