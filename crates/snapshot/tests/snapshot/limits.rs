//! Pack limits: over a limit the snapshot fails naming the limit and the
//! path, and a blob store keeps nothing of it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;

use paddock_core::blob::BlobStore;
use paddock_snapshot::{Limit, Limits, LocalBlobStore, PackOptions, SnapshotError, pack};

fn tree(root: &std::path::Path) {
    for d in 0..5 {
        let dir = root.join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for f in 0..20 {
            fs::write(dir.join(format!("f{f:02}")), vec![b'x'; 1000]).unwrap();
        }
    }
}

fn opts(max_files: u64, max_bytes: u64) -> PackOptions {
    PackOptions {
        limits: Limits {
            max_files,
            max_bytes,
        },
        ..PackOptions::default()
    }
}

#[test]
fn over_the_file_limit() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    // 5 directories + 100 files = 105 entries.
    assert!(pack(tmp.path(), &opts(105, u64::MAX), std::io::sink()).is_ok());
    let err = pack(tmp.path(), &opts(104, u64::MAX), std::io::sink()).unwrap_err();
    match &err {
        SnapshotError::OverLimit { limit, path } => {
            assert_eq!(*limit, Limit::Files(104));
            // Refused while d4 is listed: 85 entries packed before it, and
            // its 20th name would be entry 105.
            assert_eq!(path, "d4");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "over the limit max_files = 104 entries at \"d4\""
    );
}

#[test]
fn over_the_byte_limit() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    assert!(pack(tmp.path(), &opts(10_000, 100_000), std::io::sink()).is_ok());
    let err = pack(tmp.path(), &opts(10_000, 50_500), std::io::sink()).unwrap_err();
    match err {
        SnapshotError::OverLimit { limit, path } => {
            assert_eq!(limit, Limit::Bytes(50_500));
            // 50 files of 1000 bytes fit; the 51st does not.
            assert_eq!(path, "d2/f10");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failed_snapshot_leaves_no_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    tree(&src);
    let store = LocalBlobStore::open(tmp.path().join("blobs")).unwrap();

    let mut writer = store.writer().unwrap();
    let err = pack(&src, &opts(10, u64::MAX), &mut writer).unwrap_err();
    assert!(matches!(err, SnapshotError::OverLimit { .. }));
    drop(writer);
    assert!(store.list().unwrap().is_empty());
    assert!(common::names(&store.root().join("tmp")).is_empty());

    // The previous complete snapshot is unaffected by a failed one.
    let mut writer = store.writer().unwrap();
    let stats = pack(&src, &PackOptions::default(), &mut writer).unwrap();
    let info = writer.commit().unwrap();
    assert_eq!(info.key, stats.key);
    assert_eq!(info.size, stats.bytes_compressed);
    let mut writer = store.writer().unwrap();
    assert!(pack(&src, &opts(10, u64::MAX), &mut writer).is_err());
    drop(writer);
    assert_eq!(store.list().unwrap(), vec![info]);
}

#[test]
fn missing_root_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = pack(
        &tmp.path().join("nope"),
        &PackOptions::default(),
        std::io::sink(),
    )
    .unwrap_err();
    assert!(matches!(err, SnapshotError::OpenRoot { .. }), "{err:?}");
}
