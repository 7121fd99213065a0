//! Checkpoint capture and in-place restore on a real directory and a real
//! local blob store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use paddock_core::blob::{BlobKey, BlobStore};
use paddock_snapshot::LocalBlobStore;
use paddock_snapshot::checkpoint::{
    CaptureOptions, ChangeKind, Entry, Manifest, Node, capture, diff, restore,
};

fn options() -> CaptureOptions {
    CaptureOptions {
        excludes: vec!["target".to_owned()],
        ..CaptureOptions::default()
    }
}

fn tree(root: &Path) {
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("README.md"), "hello\n").unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("src/deep/copy.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("src/main.rs", root.join("link")).unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/big.bin"), "built").unwrap();
}

/// Every path under `root` with its content (or link target) and mode.
fn listing(root: &Path) -> Vec<(String, String, u32)> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String, u32)>) {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for path in names {
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                out.push((
                    rel,
                    format!("-> {}", fs::read_link(&path).unwrap().display()),
                    0,
                ));
            } else if meta.is_dir() {
                out.push((rel, "dir".to_owned(), mode));
                walk(root, &path, out);
            } else {
                out.push((rel, fs::read_to_string(&path).unwrap(), mode));
            }
        }
    }
    walk(root, root, &mut out);
    out
}

#[test]
fn a_workspace_emptied_by_rm_is_restored_byte_for_byte_and_unchanged_files_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let (root, store_dir) = (dir.path().join("ws"), dir.path().join("blobs"));
    fs::create_dir_all(&root).unwrap();
    tree(&root);
    let blobs = LocalBlobStore::open(&store_dir).unwrap();
    let before = listing(&root);

    let (first, stats) = capture(&root, None, &options(), Some(&blobs)).unwrap();
    // main.rs and deep/copy.rs hold the same bytes: one blob
    assert_eq!((stats.files, stats.new_blobs.len()), (4, 3));
    assert!(
        !first.entries.contains_key(b"target".as_slice()),
        "excluded"
    );
    assert_eq!(blobs.list().unwrap().len(), 3);

    // a second capture with nothing changed stores nothing
    let (second, stats) = capture(&root, Some(&first), &options(), Some(&blobs)).unwrap();
    assert!(stats.new_blobs.is_empty());
    assert_eq!(diff(&first, &second), []);

    for entry in fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == "target" {
            continue;
        }
        if fs::symlink_metadata(&path).unwrap().is_dir() {
            fs::remove_dir_all(&path).unwrap();
        } else {
            fs::remove_file(&path).unwrap();
        }
    }
    fs::write(root.join("new.txt"), "agent was here").unwrap();
    let stats = restore(&root, &second, Some(&second), &options(), &blobs).unwrap();
    assert_eq!(stats.files_written, 4);
    assert_eq!(stats.removed, 1);
    assert_eq!(listing(&root), before);
}

#[test]
fn a_restore_writes_only_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    fs::create_dir_all(&root).unwrap();
    tree(&root);
    let blobs = LocalBlobStore::open(dir.path().join("blobs")).unwrap();
    let (saved, _) = capture(&root, None, &options(), Some(&blobs)).unwrap();
    let before = listing(&root);

    fs::write(root.join("README.md"), "changed\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::remove_file(root.join("link")).unwrap();
    fs::create_dir(root.join("link")).unwrap();
    fs::write(root.join("link/inside"), "x").unwrap();
    let (now, _) = capture(&root, Some(&saved), &options(), Some(&blobs)).unwrap();
    let changes: Vec<(String, ChangeKind)> = diff(&saved, &now)
        .into_iter()
        .map(|c| (c.path.display(), c.change))
        .collect();
    assert_eq!(
        changes,
        [
            ("README.md".to_owned(), ChangeKind::Changed),
            ("link".to_owned(), ChangeKind::Changed),
            ("link/inside".to_owned(), ChangeKind::Added),
            ("run.sh".to_owned(), ChangeKind::Changed),
        ]
    );

    let stats = restore(&root, &saved, Some(&now), &options(), &blobs).unwrap();
    assert_eq!(
        (
            stats.files_written,
            stats.modes_set,
            stats.removed,
            stats.symlinks_created
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(listing(&root), before);
}

#[test]
fn hostile_manifests_and_symlinked_parents_never_write_outside() {
    let dir = tempfile::tempdir().unwrap();
    let (root, outside) = (dir.path().join("ws"), dir.path().join("outside"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let blobs = LocalBlobStore::open(dir.path().join("blobs")).unwrap();
    let mut writer = blobs.writer().unwrap();
    std::io::Write::write_all(&mut writer, b"pwned").unwrap();
    let key: BlobKey = writer.commit().unwrap().key;
    let file = |hash: &BlobKey| Entry {
        node: Node::File {
            hash: hash.clone(),
            size: 5,
        },
        mode: 0o644,
        stat: None,
    };
    for path in ["../outside/x", "/tmp/x", "a/../../outside/x"] {
        let mut manifest = Manifest::new(0);
        manifest.entries.insert(path.into(), file(&key));
        let err = restore(&root, &manifest, None, &options(), &blobs).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{path}: {err}");
    }

    // the workspace has a symlink where the manifest has a directory: the
    // link is replaced, never followed
    symlink(&outside, root.join("a")).unwrap();
    let mut manifest = Manifest::new(0);
    manifest.entries.insert(
        "a".into(),
        Entry {
            node: Node::Dir,
            mode: 0o755,
            stat: None,
        },
    );
    manifest.entries.insert("a/x".into(), file(&key));
    restore(&root, &manifest, None, &options(), &blobs).unwrap();
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert_eq!(fs::read_to_string(root.join("a/x")).unwrap(), "pwned");
    assert!(fs::symlink_metadata(root.join("a")).unwrap().is_dir());

    // a blob that is not what its key says is refused and leaves nothing
    let mut bad = Manifest::new(0);
    bad.entries
        .insert("b".into(), file(&BlobKey::from_digest([1; 32])));
    fs::write(blobs.blob_path(&BlobKey::from_digest([1; 32])), b"other").unwrap_or_else(|_| {
        fs::create_dir_all(
            blobs
                .blob_path(&BlobKey::from_digest([1; 32]))
                .parent()
                .unwrap(),
        )
        .unwrap();
        fs::write(blobs.blob_path(&BlobKey::from_digest([1; 32])), b"other").unwrap();
    });
    let err = restore(&root, &bad, None, &options(), &blobs).unwrap_err();
    assert!(err.to_string().contains("does not hold"), "{err}");
    assert!(!root.join("b").exists());
    let leftovers: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".paddock")
        })
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn names_not_in_utf8_are_checkpointed_diffed_and_rewound() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    fs::create_dir_all(&root).unwrap();
    let at = |name: &[u8]| root.join(OsStr::from_bytes(name));
    fs::write(root.join("ok.txt"), "ok\n").unwrap();
    fs::write(at(b"\xff.bin"), "kept\n").unwrap();
    fs::create_dir(at(b"d\xfe")).unwrap();
    fs::write(at(b"d\xfe/inner"), "inner\n").unwrap();
    symlink(OsStr::from_bytes(b"caf\xe9"), at(b"l\xe9")).unwrap();
    let blobs = LocalBlobStore::open(dir.path().join("blobs")).unwrap();

    let (saved, stats) = capture(&root, None, &options(), Some(&blobs)).unwrap();
    assert_eq!(stats.skipped, 0, "{stats:?}");
    let paths: Vec<&[u8]> = saved.entries.keys().map(|p| p.as_bytes()).collect();
    assert_eq!(
        paths,
        [
            &b"d\xfe"[..],
            b"d\xfe/inner",
            b"l\xe9",
            b"ok.txt",
            b"\xff.bin"
        ]
    );
    assert!(matches!(
        &saved.entries[b"l\xe9".as_slice()].node,
        Node::Symlink { target } if target.as_bytes() == b"caf\xe9"
    ));
    // the stored form keeps the bytes
    let stored = Manifest::from_bytes(&saved.to_bytes()).unwrap();
    assert_eq!(stored, saved);

    // after the checkpoint: a new name not in UTF-8, one changed, one removed
    fs::write(at(b"new\xff"), "added\n").unwrap();
    fs::write(at(b"\xff.bin"), "changed\n").unwrap();
    fs::remove_dir_all(at(b"d\xfe")).unwrap();
    let (now, _) = capture(&root, Some(&saved), &options(), Some(&blobs)).unwrap();
    let changes: Vec<(String, ChangeKind)> = diff(&saved, &now)
        .into_iter()
        .map(|c| (c.path.display(), c.change))
        .collect();
    assert_eq!(
        changes,
        [
            ("d\\xfe".to_owned(), ChangeKind::Removed),
            ("d\\xfe/inner".to_owned(), ChangeKind::Removed),
            ("new\\xff".to_owned(), ChangeKind::Added),
            ("\\xff.bin".to_owned(), ChangeKind::Changed),
        ]
    );

    // rewound: the new one is gone, the others are back as they were
    restore(&root, &saved, Some(&now), &options(), &blobs).unwrap();
    assert!(!at(b"new\xff").exists(), "created after the checkpoint");
    assert_eq!(fs::read_to_string(at(b"\xff.bin")).unwrap(), "kept\n");
    assert_eq!(fs::read_to_string(at(b"d\xfe/inner")).unwrap(), "inner\n");
    assert_eq!(
        fs::read_link(at(b"l\xe9")).unwrap().as_os_str().as_bytes(),
        b"caf\xe9"
    );
    let (again, _) = capture(&root, None, &options(), None).unwrap();
    assert!(diff(&saved, &again).is_empty());
}
