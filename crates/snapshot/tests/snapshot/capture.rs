//! An incremental capture against the previous manifest: what it reads
//! again and what it records, on one thread and split over two.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use paddock_snapshot::checkpoint::{CaptureOptions, Manifest, Node, capture};
use paddock_snapshot::{Limit, Limits, SnapshotError};

fn options() -> CaptureOptions {
    CaptureOptions::default()
}

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Out of the racy window: a capture from now on trusts the stat of what
/// was written before.
fn settle() {
    std::thread::sleep(Duration::from_millis(150));
}

/// What a capture with no previous manifest records (stat included).
fn fresh(root: &Path) -> Manifest {
    capture(root, None, &options(), None).unwrap().0
}

#[test]
fn an_incremental_capture_records_added_removed_changed_and_retyped_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // names around `/` in byte order: the walk visits a, a/x, a.txt; the
    // manifest orders a, a.txt, a/x
    for path in [
        "a/x", "a/y", "a.txt", "a-b", "keep", "gone", "to-dir", "dir/in",
    ] {
        write(root, path, path);
    }
    symlink("keep", root.join("to-file")).unwrap();
    fs::create_dir(root.join("to-link")).unwrap();
    write(root, "to-link/inside", "inside");
    write(root, "same-size", "aaaa");
    settle();
    let first = capture(root, None, &options(), None).unwrap().0;
    settle();

    write(root, "a/new", "new");
    write(root, "a.txt", "changed, and longer");
    write(root, "same-size", "bbbb");
    fs::remove_file(root.join("gone")).unwrap();
    fs::remove_file(root.join("to-dir")).unwrap();
    write(root, "to-dir/child", "child");
    fs::remove_file(root.join("to-file")).unwrap();
    write(root, "to-file", "a file now");
    fs::remove_dir_all(root.join("to-link")).unwrap();
    symlink("a", root.join("to-link")).unwrap();
    fs::remove_file(root.join("dir/in")).unwrap();
    symlink("../keep", root.join("dir/in")).unwrap();
    settle();

    let (second, stats) = capture(root, Some(&first), &options(), None).unwrap();
    assert_eq!(second.entries, fresh(root).entries);
    // read again: what changed or is new, nothing else
    assert_eq!(stats.hashed_files, 5, "{stats:?}");
    assert!(!second.entries.contains_key(b"gone".as_slice()));
    assert!(!second.entries.contains_key(b"to-link/inside".as_slice()));
    assert!(matches!(
        second.entries[b"to-dir".as_slice()].node,
        Node::Dir
    ));
    assert!(matches!(
        second.entries[b"to-file".as_slice()].node,
        Node::File { .. }
    ));
    assert!(matches!(
        second.entries[b"to-link".as_slice()].node,
        Node::Symlink { .. }
    ));
    assert!(matches!(
        second.entries[b"dir/in".as_slice()].node,
        Node::Symlink { .. }
    ));
    assert_ne!(
        second.entries[b"same-size".as_slice()].node,
        first.entries[b"same-size".as_slice()].node
    );
    assert_eq!(
        second.entries[b"keep".as_slice()].node,
        first.entries[b"keep".as_slice()].node
    );

    // unchanged since: nothing read
    let (third, stats) = capture(root, Some(&second), &options(), None).unwrap();
    assert_eq!(stats.hashed_files, 0, "{stats:?}");
    assert_eq!(third.entries, second.entries);
}

#[test]
fn a_file_replaced_by_another_of_the_same_size_and_mtime_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "f", "one");
    settle();
    let first = capture(root, None, &options(), None).unwrap().0;
    let mtime = fs::metadata(root.join("f")).unwrap().modified().unwrap();
    write(root, "other", "two");
    let other = fs::File::options()
        .write(true)
        .open(root.join("other"))
        .unwrap();
    other.set_modified(mtime).unwrap();
    drop(other);
    fs::rename(root.join("other"), root.join("f")).unwrap();
    let (second, stats) = capture(root, Some(&first), &options(), None).unwrap();
    assert_eq!(stats.hashed_files, 1);
    assert_ne!(
        second.entries[b"f".as_slice()].node,
        first.entries[b"f".as_slice()].node
    );
    assert_eq!(second.entries, fresh(root).entries);
}

/// A tree big enough for a capture to split it over two threads, with
/// names on both sides of `/` in byte order.
fn big_tree(root: &Path) -> usize {
    let mut count = 0;
    for top in ["a", "a.x", "a-b", "b"] {
        for sub in 0..8 {
            for file in 0..90 {
                write(
                    root,
                    &format!("{top}/d{sub}/f{file:03}.rs"),
                    &format!("{top}{sub}{file}"),
                );
                count += 1;
            }
            write(root, &format!("{top}/d{sub}.rs"), "mod");
            count += 2;
        }
        count += 1;
    }
    symlink("a", root.join("a/link")).unwrap();
    count + 1
}

#[test]
fn a_capture_split_over_two_threads_records_what_one_thread_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let entries = big_tree(root);
    settle();
    let first = fresh(root);
    assert_eq!(first.entries.len(), entries);
    settle();
    // changes on both sides of the middle
    write(root, "a/d0/f000.rs", "changed");
    write(root, "b/d7/new.rs", "new");
    fs::remove_file(root.join("a-b/d3/f010.rs")).unwrap();
    let (second, stats) = capture(root, Some(&first), &options(), None).unwrap();
    let alone = capture(root, None, &options(), None).unwrap();
    assert_eq!(second.entries, alone.0.entries);
    assert_eq!(stats.hashed_files, 2, "{stats:?}");
    assert_eq!(stats.files, alone.1.files);
    assert_eq!(stats.dirs, alone.1.dirs);
    assert_eq!(stats.symlinks, alone.1.symlinks);
    assert_eq!(stats.bytes, alone.1.bytes);

    // the directory the split point was in is a file now
    let split = second.entries.keys().nth(second.entries.len() / 2).unwrap();
    let top = split.display().split('/').next().unwrap().to_owned();
    fs::remove_dir_all(root.join(&top)).unwrap();
    write(root, &top, "a file now");
    let (third, _) = capture(root, Some(&second), &options(), None).unwrap();
    assert_eq!(third.entries, fresh(root).entries);
    assert!(matches!(
        third.entries[top.as_bytes()].node,
        Node::File { .. }
    ));
}

#[test]
fn a_split_capture_holds_both_halves_together_to_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let entries = big_tree(root) as u64;
    let first = fresh(root);
    let limited = |max_files, max_bytes| CaptureOptions {
        limits: Limits {
            max_files,
            max_bytes,
        },
        ..CaptureOptions::default()
    };
    let bytes = first.file_bytes();
    capture(root, Some(&first), &limited(entries, bytes), None).unwrap();
    let err = capture(root, Some(&first), &limited(entries - 1, u64::MAX), None).unwrap_err();
    assert!(
        matches!(err, SnapshotError::OverLimit { limit: Limit::Files(n), .. } if n == entries - 1),
        "{err:?}"
    );
    let err = capture(root, Some(&first), &limited(u64::MAX, bytes - 1), None).unwrap_err();
    assert!(
        matches!(
            err,
            SnapshotError::OverLimit {
                limit: Limit::Bytes(_),
                ..
            }
        ),
        "{err:?}"
    );
}
