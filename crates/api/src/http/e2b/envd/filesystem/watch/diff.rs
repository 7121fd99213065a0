//! What changed between two listings of a watched tree, as envd's event
//! types, written as a pure function of the two snapshots:
//!
//! - a name only in the new one is `CREATE`;
//! - a name only in the old one is `REMOVE`;
//! - a name whose kind changed (a file replaced by a directory) is
//!   `REMOVE` then `CREATE`;
//! - a file (or symlink, or other) whose size or mtime changed is `WRITE`;
//! - a name whose mode changed is `CHMOD` (after its `WRITE` when both did);
//! - a directory's own size and mtime are not compared: they change when
//!   its entries do, which are reported as themselves (inotify reports no
//!   write of a directory either).
//!
//! Removals come first, deepest first (a tree's files before the tree),
//! then the rest in path order (a directory before its files).

use std::collections::BTreeMap;

use paddock_proto::{FileKind, FileStat, FsPath};

use super::super::super::filesystem_pb::watch::{
    EVENT_TYPE_CHMOD, EVENT_TYPE_CREATE, EVENT_TYPE_REMOVE, EVENT_TYPE_WRITE,
};

/// What a snapshot keeps of an entry: what the diff compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: FileKind,
    pub size: u64,
    pub mtime_ms: i64,
    pub mode: u32,
}

impl From<&FileStat> for Meta {
    fn from(stat: &FileStat) -> Self {
        Self {
            kind: stat.kind,
            size: stat.size,
            mtime_ms: stat.mtime_ms,
            mode: stat.mode,
        }
    }
}

/// A listing of a watched tree: each entry by its path relative to the
/// watched directory.
pub type Snapshot = BTreeMap<FsPath, Meta>;

/// What happened to a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Create,
    Write,
    Chmod,
    Remove,
}

impl ChangeKind {
    /// envd's `EventType`.
    pub fn event_type(self) -> i32 {
        match self {
            ChangeKind::Create => EVENT_TYPE_CREATE,
            ChangeKind::Write => EVENT_TYPE_WRITE,
            ChangeKind::Chmod => EVENT_TYPE_CHMOD,
            ChangeKind::Remove => EVENT_TYPE_REMOVE,
        }
    }

    /// Whether the event names an entry that is there, and so may carry
    /// it (envd's `opCarriesEntry`): never a removal.
    pub fn carries_entry(self) -> bool {
        self != ChangeKind::Remove
    }
}

/// One change of one name, relative to the watched directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub name: FsPath,
    pub kind: ChangeKind,
}

/// The changes that make `old` into `new`, in the order the module doc
/// gives.
pub fn diff(old: &Snapshot, new: &Snapshot) -> Vec<Change> {
    let change = |name: &FsPath, kind| Change {
        name: name.clone(),
        kind,
    };
    let mut changes: Vec<Change> = old
        .iter()
        .rev()
        .filter(|(name, was)| new.get(*name).is_none_or(|now| now.kind != was.kind))
        .map(|(name, _)| change(name, ChangeKind::Remove))
        .collect();
    for (name, now) in new {
        match old.get(name) {
            Some(was) if was.kind == now.kind => {
                let content = now.kind != FileKind::Dir
                    && (was.size != now.size || was.mtime_ms != now.mtime_ms);
                if content {
                    changes.push(change(name, ChangeKind::Write));
                }
                if was.mode != now.mode {
                    changes.push(change(name, ChangeKind::Chmod));
                }
            }
            _ => changes.push(change(name, ChangeKind::Create)),
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(kind: FileKind, size: u64, mtime_ms: i64, mode: u32) -> Meta {
        Meta {
            kind,
            size,
            mtime_ms,
            mode,
        }
    }

    fn file(size: u64, mtime_ms: i64) -> Meta {
        meta(FileKind::File, size, mtime_ms, 0o644)
    }

    fn dir() -> Meta {
        meta(FileKind::Dir, 4096, 1, 0o755)
    }

    fn snapshot(entries: &[(&str, Meta)]) -> Snapshot {
        entries
            .iter()
            .map(|(name, meta)| (FsPath::from(*name), *meta))
            .collect()
    }

    fn changes(old: &Snapshot, new: &Snapshot) -> Vec<(String, ChangeKind)> {
        diff(old, new)
            .into_iter()
            .map(|c| (c.name.display(), c.kind))
            .collect()
    }

    fn named(list: &[(&str, ChangeKind)]) -> Vec<(String, ChangeKind)> {
        list.iter().map(|(n, k)| ((*n).to_owned(), *k)).collect()
    }

    #[test]
    fn the_same_listing_has_no_changes() {
        let tree = snapshot(&[("a", file(1, 1)), ("d", dir()), ("d/b", file(2, 2))]);
        assert_eq!(changes(&tree, &tree), []);
        assert_eq!(changes(&Snapshot::new(), &Snapshot::new()), []);
    }

    #[test]
    fn a_new_name_is_a_create_a_gone_one_a_remove() {
        let old = snapshot(&[("a", file(1, 1)), ("gone", file(1, 1))]);
        let new = snapshot(&[("a", file(1, 1)), ("new", file(0, 5))]);
        assert_eq!(
            changes(&old, &new),
            named(&[("gone", ChangeKind::Remove), ("new", ChangeKind::Create)])
        );
    }

    #[test]
    fn a_changed_size_or_mtime_is_a_write() {
        let old = snapshot(&[("a", file(1, 1)), ("b", file(1, 1)), ("c", file(1, 1))]);
        let new = snapshot(&[("a", file(2, 1)), ("b", file(1, 9)), ("c", file(1, 1))]);
        assert_eq!(
            changes(&old, &new),
            named(&[("a", ChangeKind::Write), ("b", ChangeKind::Write)])
        );
    }

    #[test]
    fn a_changed_mode_is_a_chmod_after_the_write_when_both_changed() {
        let old = snapshot(&[("a", file(1, 1)), ("b", file(1, 1))]);
        let new = snapshot(&[
            ("a", meta(FileKind::File, 1, 1, 0o600)),
            ("b", meta(FileKind::File, 7, 1, 0o600)),
        ]);
        assert_eq!(
            changes(&old, &new),
            named(&[
                ("a", ChangeKind::Chmod),
                ("b", ChangeKind::Write),
                ("b", ChangeKind::Chmod)
            ])
        );
    }

    #[test]
    fn a_directory_reports_its_mode_but_not_its_size_or_mtime() {
        let old = snapshot(&[("d", dir())]);
        let touched = snapshot(&[("d", meta(FileKind::Dir, 8192, 99, 0o755))]);
        assert_eq!(changes(&old, &touched), []);
        let chmodded = snapshot(&[("d", meta(FileKind::Dir, 4096, 1, 0o700))]);
        assert_eq!(changes(&old, &chmodded), named(&[("d", ChangeKind::Chmod)]));
    }

    #[test]
    fn a_changed_kind_is_a_remove_then_a_create() {
        let old = snapshot(&[("x", file(1, 1))]);
        let new = snapshot(&[("x", dir())]);
        assert_eq!(
            changes(&old, &new),
            named(&[("x", ChangeKind::Remove), ("x", ChangeKind::Create)])
        );
    }

    #[test]
    fn a_rename_is_a_remove_and_a_create() {
        let old = snapshot(&[("a.txt", file(3, 1))]);
        let new = snapshot(&[("b.txt", file(3, 1))]);
        assert_eq!(
            changes(&old, &new),
            named(&[("a.txt", ChangeKind::Remove), ("b.txt", ChangeKind::Create)])
        );
    }

    #[test]
    fn removals_go_deepest_first_and_creations_parents_first() {
        let old = snapshot(&[("d", dir()), ("d/e", dir()), ("d/e/f", file(1, 1))]);
        let new = snapshot(&[("n", dir()), ("n/m", dir()), ("n/m/o", file(1, 1))]);
        assert_eq!(
            changes(&old, &new),
            named(&[
                ("d/e/f", ChangeKind::Remove),
                ("d/e", ChangeKind::Remove),
                ("d", ChangeKind::Remove),
                ("n", ChangeKind::Create),
                ("n/m", ChangeKind::Create),
                ("n/m/o", ChangeKind::Create),
            ])
        );
    }

    #[test]
    fn event_types_are_envds_and_removals_carry_no_entry() {
        let types: Vec<_> = [
            ChangeKind::Create,
            ChangeKind::Write,
            ChangeKind::Remove,
            ChangeKind::Chmod,
        ]
        .iter()
        .map(|k| k.event_type())
        .collect();
        assert_eq!(types, [1, 2, 3, 5]);
        assert!(ChangeKind::Create.carries_entry() && ChangeKind::Chmod.carries_entry());
        assert!(ChangeKind::Write.carries_entry() && !ChangeKind::Remove.carries_entry());
    }
}
