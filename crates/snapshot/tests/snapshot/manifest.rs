//! Reading an archive without restoring it: the manifest and chosen files
//! of a packed tree, and hostile or damaged archives refused exactly as a
//! restore refuses them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

use common::{CHAR, RawTar, pack_to_vec, zstd};
use paddock_proto::FsPath;
use paddock_snapshot::archive::{ContentHash, Entry, read_files, read_manifest};
use paddock_snapshot::{Limit, Limits, PackOptions, SnapshotError, UnpackOptions, unpack};

fn packed_tree() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/deep/a.rs"), "fn a() {}").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("/usr/bin/python3", root.join("python")).unwrap();
    let (archive, _) = pack_to_vec(&root, &PackOptions::default());
    (dir, archive)
}

#[test]
fn a_manifest_lists_every_entry_of_a_packed_tree_with_its_content_hash() {
    let (_dir, archive) = packed_tree();
    let manifest = read_manifest(archive.as_slice(), &Limits::default()).unwrap();
    assert_eq!(
        manifest.keys().map(FsPath::display).collect::<Vec<_>>(),
        ["python", "run.sh", "src", "src/deep", "src/deep/a.rs"]
    );
    assert_eq!(
        manifest["src/deep/a.rs".as_bytes()],
        Entry::File {
            hash: ContentHash::of(b"fn a() {}"),
            size: 9,
            mode: 0o644,
        }
    );
    assert!(matches!(
        manifest["run.sh".as_bytes()],
        Entry::File { mode: 0o755, .. }
    ));
    assert!(matches!(manifest["src".as_bytes()], Entry::Dir { .. }));
    // A manifest creates nothing: an absolute target is listed, not refused.
    assert_eq!(
        manifest["python".as_bytes()],
        Entry::Symlink {
            target: "/usr/bin/python3".into()
        }
    );
}

#[test]
fn chosen_files_are_read_and_large_or_other_entries_left_out() {
    let (_dir, archive) = packed_tree();
    let wanted: BTreeSet<FsPath> = ["src/deep/a.rs", "run.sh", "python", "src", "missing"]
        .into_iter()
        .map(FsPath::from)
        .collect();
    let found = read_files(archive.as_slice(), &Limits::default(), &wanted, 9).unwrap();
    assert_eq!(found.len(), 1, "{:?}", found.keys());
    assert_eq!(found["src/deep/a.rs".as_bytes()], b"fn a() {}");
    let found = read_files(archive.as_slice(), &Limits::default(), &wanted, 10).unwrap();
    assert_eq!(found["run.sh".as_bytes()], b"#!/bin/sh\n");
    assert_eq!(found.len(), 2);
}

/// The error a restore gives, and the manifest's, within `limits`.
fn both(tar: &[u8], limits: Limits) -> (String, String) {
    let archive = zstd(tar);
    let target = tempfile::tempdir().unwrap();
    let opts = UnpackOptions {
        limits,
        max_file_bytes: limits.max_bytes,
        ..UnpackOptions::default()
    };
    let restored = unpack(archive.as_slice(), &target.path().join("t"), &opts)
        .expect_err("the restore refuses it");
    let listed = read_manifest(archive.as_slice(), &limits).expect_err("the manifest refuses it");
    let wanted: BTreeSet<FsPath> = [FsPath::from("x")].into_iter().collect();
    let read = read_files(archive.as_slice(), &limits, &wanted, u64::MAX)
        .expect_err("reading files refuses it");
    assert_eq!(listed.to_string(), read.to_string());
    (restored.to_string(), listed.to_string())
}

#[test]
fn what_a_restore_refuses_a_manifest_refuses_with_the_same_error() {
    let limits = Limits::default();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("traversal", RawTar::new().file(b"a/../../x", b"p").finish()),
        ("absolute", RawTar::new().file(b"/etc/x", b"p").finish()),
        (
            "through a symlink",
            RawTar::new()
                .dir(b"real/")
                .symlink(b"alias", b"real")
                .file(b"alias/x", b"p")
                .finish(),
        ),
        (
            "through an absolute symlink",
            RawTar::new()
                .symlink(b"root", b"/")
                .file(b"root/etc/x", b"p")
                .finish(),
        ),
        (
            "through a climbing symlink",
            RawTar::new()
                .symlink(b"up", b"../..")
                .dir(b"up/x/")
                .finish(),
        ),
        (
            "empty symlink target",
            RawTar::new().symlink(b"l", b"").finish(),
        ),
        (
            "through a file",
            RawTar::new().file(b"f", b"1").file(b"f/x", b"2").finish(),
        ),
        (
            "duplicate",
            RawTar::new().file(b"x", b"1").file(b"x", b"2").finish(),
        ),
        (
            "dir over a file",
            RawTar::new().file(b"x", b"1").dir(b"x/").finish(),
        ),
        (
            "hardlink to nothing",
            RawTar::new().hardlink(b"x", b"missing").finish(),
        ),
        (
            "hardlink to a directory",
            RawTar::new().dir(b"d/").hardlink(b"x", b"d").finish(),
        ),
        (
            "device",
            RawTar::new().entry(CHAR, b"x", b"", 0, b"").finish(),
        ),
        (
            "no end marker",
            RawTar::new().file(b"x", b"1").unterminated(),
        ),
    ];
    for (name, tar) in cases {
        let (restored, listed) = both(&tar, limits);
        assert_eq!(listed, restored, "{name}");
    }
}

#[test]
fn limits_count_as_a_restore_counts_implied_parents_included() {
    // 3 entries and 2 parents the archive leaves implied: 5 for a restore.
    let tar = RawTar::new()
        .file(b"a/b/one", b"1")
        .file(b"a/b/two", b"2")
        .file(b"three", b"3")
        .finish();
    let archive = zstd(&tar);
    let limits = |max_files| Limits {
        max_files,
        max_bytes: 1 << 20,
    };
    let manifest = read_manifest(archive.as_slice(), &limits(5)).unwrap();
    assert_eq!(manifest.len(), 3, "implied parents are not listed");
    let (restored, listed) = both(&tar, limits(4));
    assert_eq!(listed, restored);
    assert!(listed.contains("max_files = 4"), "{listed}");

    let (restored, listed) = both(
        &tar,
        Limits {
            max_files: 10,
            max_bytes: 2,
        },
    );
    assert_eq!(listed, restored);
    let err = read_manifest(
        archive.as_slice(),
        &Limits {
            max_files: 10,
            max_bytes: 2,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, SnapshotError::OverLimit { limit: Limit::Bytes(2), ref path } if path == "three"),
        "{err:?}"
    );
}

#[test]
fn a_damaged_archive_is_refused() {
    let (_dir, archive) = packed_tree();
    let mut corrupted = archive.clone();
    let middle = corrupted.len() / 2;
    corrupted[middle] ^= 0xff;
    let err = read_manifest(corrupted.as_slice(), &Limits::default()).unwrap_err();
    assert!(
        matches!(
            err,
            SnapshotError::Decompress { .. } | SnapshotError::ReadArchive { .. }
        ),
        "{err:?}"
    );
    let truncated = &archive[..archive.len() - 8];
    assert!(read_manifest(truncated, &Limits::default()).is_err());
}

#[test]
fn a_name_not_in_utf8_is_listed_and_read_by_its_bytes() {
    let tar = RawTar::new().file(b"caf\xe9", b"x").finish();
    let manifest = read_manifest(zstd(&tar).as_slice(), &Limits::default()).unwrap();
    let name = FsPath::from_bytes(b"caf\xe9".to_vec());
    assert_eq!(
        manifest.keys().collect::<Vec<_>>(),
        [&name],
        "the one entry, by its bytes"
    );
    let wanted = BTreeSet::from([name.clone()]);
    let found = read_files(zstd(&tar).as_slice(), &Limits::default(), &wanted, 9).unwrap();
    assert_eq!(found.get(&name).map(Vec::as_slice), Some(b"x".as_slice()));
}

#[test]
fn pack_entries_are_what_a_restore_of_the_archive_counts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/deep/a.rs"), "fn a() {}").unwrap();
    fs::write(root.join("b.txt"), "b").unwrap();
    symlink("src/deep/a.rs", root.join("link")).unwrap();
    let (archive, stats) = pack_to_vec(&root, &PackOptions::default());
    // 2 files, 2 directories, 1 symlink
    assert_eq!(stats.entries(), 5);
    let restore = |max_files| {
        let target = tempfile::tempdir().unwrap();
        let opts = UnpackOptions {
            limits: Limits {
                max_files,
                ..Limits::default()
            },
            ..UnpackOptions::default()
        };
        unpack(archive.as_slice(), &target.path().join("t"), &opts)
    };
    let restored = restore(stats.entries()).unwrap();
    assert_eq!(restored.entries(), stats.entries());
    let err = restore(stats.entries() - 1).unwrap_err();
    assert!(
        matches!(
            err,
            SnapshotError::OverLimit {
                limit: Limit::Files(4),
                ..
            }
        ),
        "{err:?}"
    );
}
