//! Applying a build child's change set to the parent's workspace through the
//! parent's guest: all of it or, as far as the parent can tell, nothing.
//!
//! Every path is checked first: the parent's file must still be as in the
//! base (or already as the child left it), else it is a conflict and nothing
//! is written. The check reads the parent's whole file, and that copy (with
//! its mode, or the file's absence) is kept, along with the parent
//! directories a write will create. If a write then fails (the guest refuses
//! it, the connection drops), the paths written before it are put back from
//! those copies and the directories the apply created are removed.

use std::collections::{BTreeSet, HashMap};

use paddock_core::sandbox::{GuestError, GuestOps, WriteOptions};
use paddock_proto::{ErrorCode, FileKind, FsPath};
use paddock_snapshot::archive::ContentHash;

use super::changes::{Change, ChangeSet, Entry, MAX_APPLY_BYTES};
use crate::util::error_chain;

/// Bytes read from the guest per request when reading the parent's file.
const READ_CHUNK: u64 = 4 << 20;

/// A path of the change set that cannot be applied (or put back), and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Conflict {
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Every change is in the parent's workspace.
    Done { written: Vec<String> },
    /// Nothing was written: these paths cannot be applied as things are.
    Conflicts(Vec<Conflict>),
    /// A write failed; the paths written before it were put back.
    RolledBack {
        failed: Conflict,
        restored: Vec<String>,
    },
    /// A write failed and putting some paths back failed too: there the
    /// parent's workspace holds the child's version (or misses the file).
    Partial {
        failed: Conflict,
        unrestored: Vec<Conflict>,
    },
}

/// The parent's path before the apply, to put it back.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kept {
    Absent,
    File { data: Vec<u8>, mode: u32 },
}

impl Kept {
    fn is(&self, entry: Option<&Entry>) -> bool {
        match (self, entry) {
            (Kept::Absent, None) => true,
            (Kept::File { data, .. }, Some(Entry::File { hash, .. })) => {
                ContentHash::of(data) == *hash
            }
            _ => false,
        }
    }
}

/// The parent's path as it is now.
enum Current {
    Kept(Kept),
    Other(&'static str),
    TooLarge(u64),
}

fn not_found(err: &GuestError) -> bool {
    matches!(err, GuestError::Refused { error, .. } if error.code == ErrorCode::NotFound)
}

async fn current(guest: &dyn GuestOps, raw: &FsPath) -> Result<Current, GuestError> {
    let stat = match guest.file_stat(raw).await {
        Ok(stat) => stat,
        Err(err) if not_found(&err) => return Ok(Current::Kept(Kept::Absent)),
        Err(err) => return Err(err),
    };
    match stat.kind {
        FileKind::File => {}
        FileKind::Dir => return Ok(Current::Other("a directory")),
        FileKind::Symlink => return Ok(Current::Other("a symlink")),
        FileKind::Other => return Ok(Current::Other("a special file")),
    }
    if stat.size > MAX_APPLY_BYTES {
        return Ok(Current::TooLarge(stat.size));
    }
    let mut data = Vec::new();
    loop {
        let chunk = guest
            .file_read(raw, data.len() as u64, Some(READ_CHUNK))
            .await?;
        if chunk.data.is_empty() {
            break;
        }
        data.extend_from_slice(&chunk.data);
        if data.len() as u64 > MAX_APPLY_BYTES {
            return Ok(Current::TooLarge(data.len() as u64));
        }
        if data.len() as u64 >= chunk.size {
            break;
        }
    }
    Ok(Current::Kept(Kept::File {
        data,
        mode: stat.mode,
    }))
}

/// The parent's path kept for putting back, or why the change cannot be applied.
async fn check(
    guest: &dyn GuestOps,
    change: &Change,
    contents: &HashMap<FsPath, Vec<u8>>,
) -> Result<Result<Kept, String>, GuestError> {
    match (&change.before, &change.after) {
        (Some(Entry::Symlink { .. }), _) | (_, Some(Entry::Symlink { .. })) => {
            return Ok(Err("symlink changes are not applied".to_owned()));
        }
        (_, Some(Entry::File { size, .. })) if *size > MAX_APPLY_BYTES => {
            return Ok(Err(format!(
                "{size} bytes, more than the {MAX_APPLY_BYTES} an apply writes"
            )));
        }
        (_, Some(Entry::File { .. })) if !contents.contains_key(&change.path) => {
            return Ok(Err(
                "its content is missing from the end snapshot".to_owned()
            ));
        }
        _ => {}
    }
    let kept = match current(guest, &change.path).await {
        Ok(Current::Kept(kept)) => kept,
        Ok(Current::Other(what)) => {
            return Ok(Err(format!("it is {what} in the parent's workspace")));
        }
        Ok(Current::TooLarge(size)) => {
            return Ok(Err(format!(
                "it is {size} bytes in the parent's workspace, more than the \
                 {MAX_APPLY_BYTES} an apply keeps to put it back"
            )));
        }
        Err(GuestError::Refused { error, .. }) => {
            return Ok(Err(format!(
                "the parent's workspace refused to read it: {}",
                error.message
            )));
        }
        Err(err) => return Err(err),
    };
    if kept.is(change.before.as_ref()) || kept.is(change.after.as_ref()) {
        Ok(Ok(kept))
    } else {
        Ok(Err(
            "the parent's workspace changed it since the spawn".to_owned()
        ))
    }
}

/// The parent directories missing in the parent's workspace that writing
/// the added files creates.
async fn missing_dirs(
    guest: &dyn GuestOps,
    changes: &[Change],
    kept: &[Kept],
) -> Result<BTreeSet<FsPath>, GuestError> {
    let mut missing = BTreeSet::new();
    let mut present = BTreeSet::new();
    for (change, kept) in changes.iter().zip(kept) {
        if *kept != Kept::Absent || change.after.is_none() {
            continue;
        }
        let mut dir = change.path.as_bytes();
        while let Some(slash) = dir.iter().rposition(|&b| b == b'/') {
            dir = &dir[..slash];
            if missing.contains(dir) || present.contains(dir) {
                break;
            }
            match guest.file_stat(&FsPath::from(dir)).await {
                Err(err) if not_found(&err) => {
                    missing.insert(FsPath::from(dir));
                }
                Ok(_) | Err(GuestError::Refused { .. }) => {
                    present.insert(FsPath::from(dir));
                    break;
                }
                Err(err) => return Err(err),
            }
        }
    }
    Ok(missing)
}

fn reason(err: &GuestError) -> String {
    match err {
        GuestError::Refused { error, .. } => {
            format!("the parent's guest refused it: {}", error.message)
        }
        other => error_chain(other),
    }
}

/// Removes `path` through the guest; one that is not there is fine.
async fn remove(guest: &dyn GuestOps, path: &FsPath) -> Result<(), GuestError> {
    match guest.remove(path, false).await {
        Err(err) if not_found(&err) => Ok(()),
        other => other,
    }
}

async fn write(guest: &dyn GuestOps, change: &Change, set: &ChangeSet) -> Result<(), GuestError> {
    match (&change.after, set.contents.get(&change.path)) {
        (Some(Entry::File { mode, .. }), Some(data)) => guest
            .file_write(
                &change.path,
                data,
                WriteOptions {
                    mode: Some(*mode),
                    create_parents: true,
                },
            )
            .await
            .map(drop),
        (None, _) => remove(guest, &change.path).await,
        // `check` lets no other change through
        _ => Ok(()),
    }
}

/// Puts the written paths back as they were (latest first), then removes the
/// directories the apply created; returns what could not be put back.
async fn restore(
    guest: &dyn GuestOps,
    written: &[(&FsPath, &Kept)],
    made: &BTreeSet<FsPath>,
) -> Vec<Conflict> {
    let mut unrestored = Vec::new();
    for (path, kept) in written.iter().rev() {
        let result = match kept {
            Kept::Absent => remove(guest, path).await,
            Kept::File { data, mode } => guest
                .file_write(
                    path,
                    data,
                    WriteOptions {
                        mode: Some(*mode),
                        create_parents: true,
                    },
                )
                .await
                .map(drop),
        };
        if let Err(err) = result {
            unrestored.push(Conflict {
                path: path.display(),
                reason: reason(&err),
            });
        }
    }
    // deepest first: "a/b" sorts after "a"
    for dir in made.iter().rev() {
        match remove(guest, dir).await {
            Ok(()) => {}
            // something else is in it (a file that could not be put back is listed already)
            Err(GuestError::Refused { error, .. })
                if error.code == ErrorCode::DirectoryNotEmpty => {}
            Err(err) => unrestored.push(Conflict {
                path: dir.display(),
                reason: format!("removing the directory the apply created: {}", reason(&err)),
            }),
        }
    }
    unrestored
}

/// Applies the change set through the parent's guest, all of it or nothing:
/// any conflict writes nothing, and a write that fails midway puts back what
/// was written before it. An error is a guest failure before any write.
pub(crate) async fn apply(guest: &dyn GuestOps, set: &ChangeSet) -> Result<Applied, GuestError> {
    let mut conflicts = Vec::new();
    let mut kept = Vec::with_capacity(set.changes.len());
    for change in &set.changes {
        match check(guest, change, &set.contents).await? {
            Ok(now) => kept.push(now),
            Err(reason) => conflicts.push(Conflict {
                path: change.path.display(),
                reason,
            }),
        }
    }
    if !conflicts.is_empty() {
        return Ok(Applied::Conflicts(conflicts));
    }
    let made = missing_dirs(guest, &set.changes, &kept).await?;
    let mut written: Vec<(&FsPath, &Kept)> = Vec::new();
    for (change, kept) in set.changes.iter().zip(&kept) {
        if let Err(err) = write(guest, change, set).await {
            let failed = Conflict {
                path: change.path.display(),
                reason: reason(&err),
            };
            tracing::warn!(path = %change.path, error = %error_chain(&err), "applying a change set failed midway; putting back what was written");
            let unrestored = restore(guest, &written, &made).await;
            return Ok(if unrestored.is_empty() {
                Applied::RolledBack {
                    failed,
                    restored: written.iter().map(|(p, _)| p.display()).collect(),
                }
            } else {
                Applied::Partial { failed, unrestored }
            });
        }
        written.push((&change.path, kept));
    }
    Ok(Applied::Done {
        written: written.iter().map(|(p, _)| p.display()).collect(),
    })
}
