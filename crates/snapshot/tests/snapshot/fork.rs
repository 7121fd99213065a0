//! Fork: one archive restored into several targets at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::path::Path;

use common::{RawTar, names, pack_everything, pack_to_vec, read_tree, zstd};
use paddock_snapshot::{Refusal, SnapshotError, UnpackOptions, unpack_many};

fn source_tree(root: &Path) {
    for i in 0..300 {
        let dir = root.join(format!("d{}/e{}", i % 7, i % 3));
        fs::create_dir_all(&dir).unwrap();
        // Large enough that the stream spans many chunks.
        fs::write(dir.join(format!("f{i}")), format!("{i:05}").repeat(i * 40)).unwrap();
    }
    std::os::unix::fs::symlink("d1", root.join("link")).unwrap();
}

#[test]
fn every_fork_gets_the_whole_tree_and_they_are_independent() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    source_tree(&source);
    let (archive, stats) = pack_to_vec(&source, &pack_everything());
    assert!(stats.bytes_raw > 4 << 20, "{}", stats.bytes_raw);

    let targets: Vec<_> = (0..5)
        .map(|i| tmp.path().join(format!("fork{i}")))
        .collect();
    let refs: Vec<&Path> = targets.iter().map(|t| t.as_path()).collect();
    let results = unpack_many(archive.as_slice(), &refs, &UnpackOptions::default());
    let expected = read_tree(&source);
    for (target, result) in targets.iter().zip(results) {
        let restored = result.unwrap();
        assert_eq!(restored.files, stats.files);
        assert_eq!(read_tree(target), expected);
    }
    fs::write(targets[0].join("d0/e0/f0"), b"changed in fork 0").unwrap();
    for target in &targets[1..] {
        assert_eq!(fs::read(target.join("d0/e0/f0")).unwrap(), b"");
    }
}

#[test]
fn one_failing_target_does_not_stop_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    source_tree(&source);
    let (archive, _) = pack_to_vec(&source, &pack_everything());
    let busy = tmp.path().join("busy");
    fs::create_dir(&busy).unwrap();
    fs::write(busy.join("mine"), b"keep").unwrap();
    let fresh = tmp.path().join("fresh");

    let results = unpack_many(
        archive.as_slice(),
        &[&busy, &fresh],
        &UnpackOptions::default(),
    );
    assert!(matches!(
        results[0],
        Err(SnapshotError::TargetNotEmpty { .. })
    ));
    assert!(results[1].is_ok());
    assert_eq!(names(&busy), ["mine"]);
    assert_eq!(read_tree(&source), read_tree(&fresh));
}

#[test]
fn a_damaged_or_hostile_archive_fails_every_target_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    source_tree(&source);
    let (archive, _) = pack_to_vec(&source, &pack_everything());
    let work = tmp.path().join("work");
    fs::create_dir(&work).unwrap();
    let targets = [work.join("a"), work.join("b"), work.join("c")];
    let refs: Vec<&Path> = targets.iter().map(|t| t.as_path()).collect();

    let truncated = &archive[..archive.len() - 100];
    for result in unpack_many(truncated, &refs, &UnpackOptions::default()) {
        assert!(
            matches!(result, Err(SnapshotError::Decompress { .. })),
            "{result:?}"
        );
    }
    assert!(names(&work).is_empty(), "{:?}", names(&work));

    let hostile = zstd(
        &RawTar::new()
            .file(b"fine", b"ok")
            .symlink(b"escape", b"../../..")
            .file(b"escape/x", b"pwned")
            .finish(),
    );
    for result in unpack_many(hostile.as_slice(), &refs, &UnpackOptions::default()) {
        match result {
            Err(SnapshotError::Refused { entry, reason }) => {
                assert_eq!(entry, "escape/x");
                assert!(matches!(reason, Refusal::ThroughSymlink { .. }));
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(names(&work).is_empty(), "{:?}", names(&work));
}
