//! LocalBlobStore: content addressing, atomic puts, reads that survive deletes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use paddock_core::blob::{BlobError, BlobInfo, BlobKey, BlobStore};
use paddock_snapshot::{LocalBlobStore, PackOptions, UnpackOptions, pack, unpack};
use sha2::{Digest, Sha256};

fn key_of(bytes: &[u8]) -> BlobKey {
    BlobKey::from_digest(Sha256::digest(bytes).into())
}

#[test]
fn put_open_size_list_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let info = store.put(&mut &b"hello blob"[..]).unwrap();
    assert_eq!(info.key, key_of(b"hello blob"));
    assert_eq!(info.size, 10);
    assert!(store.exists(&info.key).unwrap());
    assert_eq!(store.size(&info.key).unwrap(), Some(10));

    let mut reader = store.open(&info.key).unwrap();
    assert_eq!(reader.size, 10);
    let mut read = Vec::new();
    reader.read_to_end(&mut read).unwrap();
    assert_eq!(read, b"hello blob");

    let other = store.put(&mut &b"other"[..]).unwrap();
    let mut expected = vec![info.clone(), other.clone()];
    expected.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(store.list().unwrap(), expected);

    assert!(store.delete(&info.key).unwrap());
    assert!(!store.delete(&info.key).unwrap());
    assert!(!store.exists(&info.key).unwrap());
    assert!(matches!(
        store.open(&info.key),
        Err(BlobError::NotFound { .. })
    ));
    assert_eq!(store.list().unwrap(), vec![other]);
}

#[test]
fn a_reader_keeps_reading_a_deleted_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let data = vec![7u8; 1 << 20];
    let info = store.put(&mut data.as_slice()).unwrap();
    let mut reader = store.open(&info.key).unwrap();
    let mut head = vec![0; 1000];
    reader.read_exact(&mut head).unwrap();
    assert!(store.delete(&info.key).unwrap());
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert_eq!(head.len() + rest.len(), data.len());
}

#[test]
fn a_dropped_writer_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let mut writer = store.writer().unwrap();
    writer.write_all(b"half").unwrap();
    assert_eq!(common::names(&tmp.path().join("tmp")).len(), 1);
    drop(writer);
    assert!(common::names(&tmp.path().join("tmp")).is_empty());
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn concurrent_puts_of_the_same_content() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalBlobStore::open(tmp.path()).unwrap());
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    let data = Arc::new(data);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            let data = Arc::clone(&data);
            std::thread::spawn(move || {
                let mut writer = store.writer().unwrap();
                for chunk in data.chunks(65_536) {
                    writer.write_all(chunk).unwrap();
                }
                writer.commit().unwrap()
            })
        })
        .collect();
    let infos: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let key_size = |info: &BlobInfo| (info.key.clone(), info.size);
    assert!(
        infos
            .iter()
            .all(|info| key_size(info) == key_size(&infos[0]))
    );
    let listed: Vec<_> = store.list().unwrap().iter().map(key_size).collect();
    assert_eq!(listed, vec![key_size(&infos[0])]);
    let mut stored = Vec::new();
    store
        .open(&infos[0].key)
        .unwrap()
        .read_to_end(&mut stored)
        .unwrap();
    assert_eq!(&stored, data.as_ref());
    assert!(common::names(&tmp.path().join("tmp")).is_empty());
}

#[test]
fn foreign_files_are_not_listed_and_stale_temps_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let info = store.put(&mut &b"x"[..]).unwrap();
    std::fs::create_dir_all(tmp.path().join("zz")).unwrap();
    std::fs::write(tmp.path().join("zz/not-a-key"), b"").unwrap();
    std::fs::write(tmp.path().join("ab").with_extension("txt"), b"").unwrap();
    // A key in the wrong shard is not a blob of this store.
    let misplaced = key_of(b"misplaced");
    let wrong = if misplaced.as_str().starts_with("00") {
        "01"
    } else {
        "00"
    };
    std::fs::create_dir_all(tmp.path().join(wrong)).unwrap();
    std::fs::write(tmp.path().join(wrong).join(misplaced.as_str()), b"").unwrap();
    assert_eq!(store.list().unwrap(), vec![info]);

    std::fs::write(tmp.path().join("tmp/crashed.part"), b"partial").unwrap();
    assert_eq!(
        store.remove_stale_temps(Duration::from_secs(3600)).unwrap(),
        0
    );
    assert_eq!(store.remove_stale_temps(Duration::ZERO).unwrap(), 1);
}

#[test]
fn snapshot_through_the_store_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::write(src.join("a/b/file"), b"content").unwrap();
    let store: Box<dyn BlobStore> =
        Box::new(LocalBlobStore::open(tmp.path().join("blobs")).unwrap());

    let mut writer = store.writer().unwrap();
    let stats = pack(&src, &PackOptions::default(), &mut writer).unwrap();
    let info = writer.commit().unwrap();
    assert_eq!(
        (info.key.clone(), info.size),
        (stats.key, stats.bytes_compressed)
    );

    // Fork: the same blob restored into several targets, each independent.
    for fork in 0..3 {
        let target = tmp.path().join(format!("fork{fork}"));
        unpack(
            store.open(&info.key).unwrap(),
            &target,
            &UnpackOptions::default(),
        )
        .unwrap();
        assert_eq!(common::read_tree(&src), common::read_tree(&target));
    }
    std::fs::write(tmp.path().join("fork0/a/b/file"), b"changed").unwrap();
    assert_eq!(
        std::fs::read(tmp.path().join("fork1/a/b/file")).unwrap(),
        b"content"
    );
}

/// Sets a blob's written time (its file's mtime) into the past.
fn backdate(store: &LocalBlobStore, key: &BlobKey, by: Duration) {
    let file = std::fs::File::options()
        .write(true)
        .open(store.blob_path(key))
        .unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn collection_removes_only_blobs_written_before_the_cutoff() {
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let info = store.put(&mut &b"collect me"[..]).unwrap();
    let hour = Duration::from_secs(3600);
    let cutoff = SystemTime::now() - Duration::from_secs(60);
    // Just written: within the grace period.
    assert!(!store.delete_if_written_before(&info.key, cutoff).unwrap());
    assert!(store.exists(&info.key).unwrap());

    backdate(&store, &info.key, hour);
    let listed = store.list().unwrap();
    assert!(listed[0].written < cutoff, "{listed:?}");
    // Putting the same content again makes it new.
    let again = store.put(&mut &b"collect me"[..]).unwrap();
    assert_eq!(again.key, info.key);
    assert!(again.written >= cutoff);
    assert!(!store.delete_if_written_before(&info.key, cutoff).unwrap());

    backdate(&store, &info.key, hour);
    assert!(store.delete_if_written_before(&info.key, cutoff).unwrap());
    assert!(!store.exists(&info.key).unwrap());
    // Gone already: nothing to do.
    assert!(!store.delete_if_written_before(&info.key, cutoff).unwrap());
}

/// A collection racing puts of the same content never removes a blob whose
/// commit returned: the check of the written time and the unlink are atomic
/// against commits (without the lock, a collector that saw the old file can
/// unlink the new one renamed over it).
#[test]
fn collection_never_removes_a_blob_committed_meanwhile() {
    // On tmpfs a put's fsync costs nothing, so puts come fast enough to land
    // between a collector's check and its unlink if those were not atomic.
    let shm = std::path::Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let store = Arc::new(LocalBlobStore::open(tmp.path()).unwrap());
    let data = vec![3u8; 16 * 1024];
    let key = store.put(&mut data.as_slice()).unwrap().key;
    let cutoff = SystemTime::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let collector = {
        let (store, key, stop) = (Arc::clone(&store), key.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut removed = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if store.delete_if_written_before(&key, cutoff).unwrap() {
                    removed += 1;
                }
            }
            removed
        })
    };
    for round in 0..3000 {
        let info = store.put(&mut data.as_slice()).unwrap();
        assert_eq!(info.key, key);
        assert!(
            store.exists(&key).unwrap(),
            "round {round}: a committed blob was collected"
        );
        // Old and unreferenced again: fair game for the collector.
        backdate(&store, &key, Duration::from_secs(3600));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let removed = collector.join().unwrap();
    assert!(removed > 0, "the collector never removed a backdated blob");
}

/// A tenant's part: its own content only for `size`/`exists`/`list` (what
/// a capture asks before storing), reads falling back to the store itself
/// (blobs stored before parts existed), made on its first write.
#[test]
fn tenant_parts_dedupe_alone_and_read_the_old_layout() {
    use paddock_core::ids::TenantId;
    let tmp = tempfile::tempdir().unwrap();
    let store = LocalBlobStore::open(tmp.path()).unwrap();
    let (acme, globex) = (
        TenantId::parse("acme").unwrap(),
        TenantId::parse("globex").unwrap(),
    );
    let old = store.put(&mut &b"stored before parts"[..]).unwrap();
    let a = store.tenant(&acme);
    let g = store.tenant(&globex);
    assert!(
        store.tenants().unwrap().is_empty(),
        "no part before a write"
    );
    assert_eq!(a.size(&old.key).unwrap(), None);
    let mut read = String::new();
    a.open(&old.key).unwrap().read_to_string(&mut read).unwrap();
    assert_eq!(read, "stored before parts");

    let mine = a.put(&mut &b"acme's file"[..]).unwrap();
    assert!(a.exists(&mine.key).unwrap());
    assert!(!g.exists(&mine.key).unwrap(), "another tenant's content");
    assert!(!store.exists(&mine.key).unwrap());
    assert!(matches!(g.open(&mine.key), Err(BlobError::NotFound { .. })));
    assert_eq!(
        a.list().unwrap().iter().map(|b| &b.key).collect::<Vec<_>>(),
        [&mine.key]
    );
    assert_eq!(
        store.list().unwrap(),
        vec![old],
        "parts are not the store's"
    );
    assert_eq!(store.tenants().unwrap(), vec![acme.clone()]);
    assert_eq!(a.tenants().unwrap(), vec![acme]);
    assert!(g.list().unwrap().is_empty());
}
