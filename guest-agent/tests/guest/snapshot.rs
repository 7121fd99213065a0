//! Snapshot export and import over the protocol, between two serve-mode guests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use common::Guest;
use paddock_proto::{
    ErrorCode, ErrorInfo, Event, GuestMessage, Reply, Request, SnapshotPackStats,
    SnapshotUnpackStats,
};

fn export_request(excludes: &[&str], max_files: Option<u64>) -> Request {
    Request::SnapshotExport {
        excludes: excludes.iter().map(|s| s.to_string()).collect(),
        max_files,
        max_bytes: None,
    }
}

/// The archive (all `Chunk` events joined) and the final answer.
async fn export(
    guest: &mut Guest,
    request: Request,
) -> (Vec<u8>, Result<SnapshotPackStats, ErrorInfo>) {
    let id = guest.send(request, &[]).await;
    let mut archive = Vec::new();
    loop {
        match guest.next_for(id).await {
            (GuestMessage::Event(Event::Chunk), data) => {
                assert!(!data.is_empty() && data.len() <= 1 << 20, "{}", data.len());
                archive.extend(data);
            }
            (GuestMessage::Reply(Reply::SnapshotExported(stats)), _) => {
                return (archive, Ok(stats));
            }
            (GuestMessage::Error(error), _) => return (archive, Err(error)),
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Sends the archive as the import payload's first bytes plus `chunk`-sized
/// `SnapshotChunk`s, the last with `eof`.
async fn import(
    guest: &mut Guest,
    archive: &[u8],
    chunk: usize,
) -> Result<SnapshotUnpackStats, ErrorInfo> {
    let first = archive.len().min(chunk);
    let id = guest
        .send(
            Request::SnapshotImport {
                max_files: None,
                max_bytes: None,
            },
            &archive[..first],
        )
        .await;
    let mut rest = archive[first..].chunks(chunk).peekable();
    if rest.peek().is_none() {
        let _ = guest
            .call(
                Request::SnapshotChunk {
                    target: id,
                    eof: true,
                },
                &[],
            )
            .await;
    }
    while let Some(piece) = rest.next() {
        let eof = rest.peek().is_none();
        // A chunk after a failed restore is answered with an error; the
        // import's own reply says why.
        let _ = guest
            .call(Request::SnapshotChunk { target: id, eof }, piece)
            .await;
    }
    match guest.finish_of(id).await {
        Ok((Reply::SnapshotImported(stats), _)) => Ok(stats),
        Ok(other) => panic!("unexpected reply {other:?}"),
        Err(error) => Err(error),
    }
}

fn populate(root: &Path) {
    fs::create_dir_all(root.join("src/nested")).unwrap();
    fs::write(root.join("src/main.rs"), b"fn main() {}\n").unwrap();
    fs::write(root.join("src/nested/data.bin"), vec![7u8; 300_000]).unwrap();
    // Incompressible, so the archive spans more than one 1 MiB chunk.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..1_500_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    fs::write(root.join("src/nested/noise.bin"), noise).unwrap();
    fs::write(root.join("run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    fs::create_dir(root.join("empty")).unwrap();
    symlink("src/main.rs", root.join("link")).unwrap();
    fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
    fs::write(root.join("node_modules/pkg/index.js"), b"x").unwrap();
    fs::write(root.join("debug.log"), b"noise").unwrap();
}

/// Every path under `root` with its kind, permission bits and content or link target.
fn describe(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    fs::read_link(&path).unwrap().display()
                ));
            } else if meta.is_dir() {
                out.push(format!("{rel}/ {mode:o}"));
                stack.push(path);
            } else {
                let data = fs::read(&path).unwrap();
                out.push(format!(
                    "{rel} {mode:o} {} {}",
                    data.len(),
                    data.iter().map(|b| u64::from(*b)).sum::<u64>()
                ));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn export_then_import_into_another_guest_restores_the_tree() {
    let mut source = Guest::start().await;
    populate(&source.root);
    let (archive, stats) = export(&mut source, export_request(&["*.log"], None)).await;
    let stats = stats.unwrap();
    assert_eq!(stats.bytes_compressed, archive.len() as u64);
    assert_eq!(stats.key.len(), 64);
    assert!(stats.excluded >= 2, "{stats:?}");
    assert!(archive.len() > 1_400_000, "{}", archive.len());
    let mut target = Guest::start().await;
    let restored = import(&mut target, &archive, 256 * 1024 + 7).await.unwrap();
    assert_eq!(restored.files, stats.files);
    assert_eq!(restored.symlinks, 1);

    let mut expected = describe(&source.root);
    expected.retain(|line| !line.starts_with("node_modules") && !line.starts_with("debug.log"));
    assert_eq!(describe(&target.root), expected);
    assert!(expected.iter().any(|l| l == "empty/ 755"), "{expected:?}");
    assert!(
        expected.iter().any(|l| l.starts_with("run.sh 750 ")),
        "{expected:?}"
    );
    assert!(
        expected.iter().any(|l| l == "link -> src/main.rs"),
        "{expected:?}"
    );
}

#[tokio::test]
async fn import_into_a_non_empty_workspace_is_refused() {
    let mut source = Guest::start().await;
    populate(&source.root);
    let (archive, stats) = export(&mut source, export_request(&[], None)).await;
    stats.unwrap();
    let mut target = Guest::start().await;
    fs::write(target.root.join("keep.txt"), b"mine").unwrap();
    let error = import(&mut target, &archive, 4096).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::DirectoryNotEmpty, "{error}");
    assert_eq!(
        describe(&target.root),
        vec!["keep.txt 644 4 425".to_string()]
    );
}

#[tokio::test]
async fn a_hostile_archive_is_refused_naming_the_entry() {
    let mut tar = Vec::new();
    for (name, data) in [(&b"fine.txt"[..], &b"ok"[..]), (b"../escape.txt", b"evil")] {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.extend_from_slice(header.as_bytes());
        tar.extend_from_slice(data);
        tar.extend(std::iter::repeat_n(0u8, 512 - data.len()));
    }
    tar.extend([0u8; 1024]);
    let archive = zstd::encode_all(&tar[..], 3).unwrap();

    let mut guest = Guest::start().await;
    let error = import(&mut guest, &archive, 64).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::BadRequest, "{error}");
    assert!(error.message.contains("../escape.txt"), "{error}");
    assert!(
        describe(&guest.root).is_empty(),
        "a failed restore left files"
    );
    assert!(!guest.root.parent().unwrap().join("escape.txt").exists());
}

#[tokio::test]
async fn export_over_the_file_limit_fails_as_too_large() {
    let mut guest = Guest::start().await;
    populate(&guest.root);
    let (_, stats) = export(&mut guest, export_request(&[], Some(2))).await;
    assert_eq!(stats.unwrap_err().code, ErrorCode::TooLarge);
}

#[tokio::test]
async fn a_chunk_for_no_import_is_an_error() {
    let mut guest = Guest::start().await;
    let error = guest
        .error(
            Request::SnapshotChunk {
                target: 999,
                eof: false,
            },
            b"x",
        )
        .await;
    assert_eq!(error.code, ErrorCode::UnknownProcess);
}
