//! A build child's change set: its end snapshot compared with the snapshot
//! its workspace was made from, file by file (content hashes); `apply`
//! writes it to the parent's workspace.
//!
//! Both sides are read from the archives in the blob store, never from the
//! child's directory (which is removed once the child ended), through
//! `paddock_snapshot::archive`: the checks of a restore, within the
//! snapshot limits; nothing in them is followed or executed here.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;

use paddock_proto::FsPath;
use paddock_snapshot::archive;
use paddock_snapshot::{Limits, SnapshotError};

use super::report::{ChangeKind, ChangedPath};

/// Largest file an apply writes (or keeps to put back): one guest frame
/// carries it whole.
pub(crate) const MAX_APPLY_BYTES: u64 = 8 << 20;

/// One entry of a snapshot, as far as a change set cares: a file or a
/// symlink (directories are implied, hardlinks are never packed).
pub(crate) use paddock_snapshot::archive::Entry;

/// Files and symlinks of a snapshot by path (its bytes: a name not in
/// UTF-8 is changed and applied like any other).
pub(crate) type Manifest = archive::Manifest;

/// One changed path and both sides of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) path: FsPath,
    pub(crate) kind: ChangeKind,
    pub(crate) before: Option<Entry>,
    pub(crate) after: Option<Entry>,
}

/// What a build child changed, with the new contents of its files.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChangeSet {
    pub(crate) changes: Vec<Change>,
    pub(crate) contents: HashMap<FsPath, Vec<u8>>,
}

impl ChangeSet {
    pub(crate) fn paths(&self) -> Vec<ChangedPath> {
        self.changes
            .iter()
            .map(|c| ChangedPath {
                path: c.path.display(),
                change: c.kind,
            })
            .collect()
    }
}

/// The files and symlinks of a packed snapshot, read within `limits`.
pub(crate) fn manifest<R: Read>(reader: R, limits: &Limits) -> Result<Manifest, SnapshotError> {
    let mut manifest = archive::read_manifest(reader, limits)?;
    manifest.retain(|_, entry| matches!(entry, Entry::File { .. } | Entry::Symlink { .. }));
    Ok(manifest)
}

/// What differs between `base` and `end`, in path order.
pub(crate) fn diff(base: &Manifest, end: &Manifest) -> Vec<Change> {
    let paths: BTreeSet<&FsPath> = base.keys().chain(end.keys()).collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let (before, after) = (base.get(path), end.get(path));
            let kind = match (before, after) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Deleted,
                (Some(b), Some(a)) if b != a => ChangeKind::Modified,
                _ => return None,
            };
            Some(Change {
                path: path.clone(),
                kind,
                before: before.cloned(),
                after: after.cloned(),
            })
        })
        .collect()
}

/// The contents of the regular files `wanted` in a packed snapshot, read
/// within `limits`; files over [`MAX_APPLY_BYTES`] are left out (an apply
/// refuses them by their size in the manifest).
pub(crate) fn contents<R: Read>(
    reader: R,
    limits: &Limits,
    wanted: &BTreeSet<FsPath>,
) -> Result<HashMap<FsPath, Vec<u8>>, SnapshotError> {
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    archive::read_files(reader, limits, wanted, MAX_APPLY_BYTES)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(byte: u8) -> Entry {
        Entry::File {
            hash: paddock_snapshot::archive::ContentHash::from_bytes([byte; 32]),
            size: 1,
            mode: 0o644,
        }
    }

    #[test]
    fn diff_lists_added_modified_and_deleted_files_in_order() {
        let base: Manifest = [
            ("a".into(), file(1)),
            ("b".into(), file(2)),
            ("c".into(), file(3)),
        ]
        .into_iter()
        .collect();
        let end: Manifest = [
            ("a".into(), file(1)),
            ("b".into(), file(9)),
            ("d".into(), file(4)),
        ]
        .into_iter()
        .collect();
        let kinds: Vec<(String, ChangeKind)> = diff(&base, &end)
            .into_iter()
            .map(|c| (c.path.display(), c.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("b".to_owned(), ChangeKind::Modified),
                ("c".to_owned(), ChangeKind::Deleted),
                ("d".to_owned(), ChangeKind::Added),
            ]
        );
    }

    #[test]
    fn a_manifest_and_contents_come_from_a_packed_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(dir.path().join("b.txt"), "b").unwrap();
        std::os::unix::fs::symlink("src/a.rs", dir.path().join("link")).unwrap();
        let mut packed = Vec::new();
        paddock_snapshot::pack(
            dir.path(),
            &paddock_snapshot::PackOptions::default(),
            &mut packed,
        )
        .unwrap();
        let limits = Limits::default();
        let manifest = manifest(packed.as_slice(), &limits).unwrap();
        assert_eq!(
            manifest.keys().map(FsPath::display).collect::<Vec<_>>(),
            ["b.txt", "link", "src/a.rs"]
        );
        assert_eq!(
            manifest["link".as_bytes()],
            Entry::Symlink {
                target: "src/a.rs".into()
            }
        );
        let wanted: BTreeSet<FsPath> = [FsPath::from("src/a.rs")].into_iter().collect();
        let found = contents(packed.as_slice(), &limits, &wanted).unwrap();
        assert_eq!(found["src/a.rs".as_bytes()], b"fn a() {}");
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn a_name_not_in_utf8_is_a_change_with_its_content() {
        use std::os::unix::ffi::OsStrExt;
        let pack = |dir: &std::path::Path| {
            let mut packed = Vec::new();
            paddock_snapshot::pack(dir, &paddock_snapshot::PackOptions::default(), &mut packed)
                .unwrap();
            packed
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kept.txt"), "k").unwrap();
        let limits = Limits::default();
        let base = manifest(pack(dir.path()).as_slice(), &limits).unwrap();
        let name = b"caf\xe9.txt";
        std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), "x").unwrap();
        let end_archive = pack(dir.path());
        let end = manifest(end_archive.as_slice(), &limits).unwrap();
        let changes = diff(&base, &end);
        let added: Vec<(&[u8], ChangeKind)> = changes
            .iter()
            .map(|c| (c.path.as_bytes(), c.kind))
            .collect();
        assert_eq!(added, [(name.as_slice(), ChangeKind::Added)]);
        let wanted: BTreeSet<FsPath> = [FsPath::from(name.as_slice())].into_iter().collect();
        let found = contents(end_archive.as_slice(), &limits, &wanted).unwrap();
        assert_eq!(found[name.as_slice()], b"x");
        let set = ChangeSet {
            changes,
            contents: found,
        };
        assert_eq!(set.paths()[0].path, "caf\\xe9.txt", "shown escaped");
    }
}
