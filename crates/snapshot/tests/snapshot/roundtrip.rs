//! Pack then unpack: everything a workspace holds comes back identical.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{Node, names, pack_everything, pack_to_vec, read_tree};
use paddock_snapshot::{
    BlobKey, PackOptions, SpecialKind, UnpackOptions, UnpackStats, pack, unpack,
};
use sha2::{Digest, Sha256};

fn set_mtime(path: &Path, secs: u64) {
    File::open(path)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Pseudo-random bytes (xorshift), so the tree needs no extra crate.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A workspace with thousands of files: nested directories, several modes,
/// empty files and directories, symlinks (relative, dangling, upward),
/// long and non-UTF-8 names, a 3 MiB file, and distinct mtimes everywhere.
fn build_tree(root: &Path) -> usize {
    let mut files = 0;
    for d in 0..40 {
        let dir = root.join(format!("pkg{d:02}/src/module{}", d % 7));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..60 {
            let path = dir.join(format!("file{f:03}.rs"));
            let content = if f % 3 == 0 {
                noise(d * 1000 + f, (f as usize * 37) % 5000)
            } else {
                format!("// file {d} {f}\n")
                    .repeat(f as usize % 50)
                    .into_bytes()
            };
            fs::write(&path, content).unwrap();
            chmod(&path, [0o644, 0o755, 0o600, 0o444][f as usize % 4]);
            set_mtime(&path, 1_500_000_000 + d * 100 + f);
            files += 1;
        }
    }
    fs::write(root.join("big.bin"), noise(42, 3 << 20)).unwrap();
    fs::write(root.join("empty"), b"").unwrap();
    fs::create_dir_all(root.join("empty-dir/nested-empty")).unwrap();
    let long = "l".repeat(200);
    let deep = root.join(format!("{long}/{long}/{long}"));
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join(format!("{long}.txt")), b"deep").unwrap();
    fs::write(
        root.join(std::ffi::OsStr::from_bytes(b"latin1-\xe9t\xe9")),
        b"x",
    )
    .unwrap();
    symlink("pkg00/src/module0/file000.rs", root.join("link-file")).unwrap();
    symlink("pkg01", root.join("link-dir")).unwrap();
    symlink("does/not/exist", root.join("dangling")).unwrap();
    symlink("../../big.bin", root.join("pkg02/src/up-link")).unwrap();
    symlink(format!("{long}/{long}/{long}"), root.join("long-target")).unwrap();
    // Read-only directory: restored last, after its contents.
    fs::create_dir(root.join("readonly")).unwrap();
    fs::write(root.join("readonly/inside"), b"ro").unwrap();
    chmod(&root.join("readonly"), 0o555);
    chmod(&root.join("pkg03"), 0o700);
    // Directory mtimes last, once their contents exist.
    let mut dirs = Vec::new();
    collect_dirs(root, &mut dirs);
    for (i, dir) in dirs.iter().enumerate() {
        set_mtime(dir, 1_400_000_000 + i as u64);
    }
    files + 5
}

fn collect_dirs(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            collect_dirs(&entry.path(), out);
            out.push(entry.path());
        }
    }
}

#[test]
fn round_trip_keeps_every_path_mode_target_content_and_mtime() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    let files = build_tree(&source);
    assert!(files > 2000);
    let before = read_tree(&source);

    let (archive, stats) = pack_to_vec(&source, &pack_everything());
    assert_eq!(stats.files, files as u64);
    assert_eq!(stats.symlinks, 5);
    assert_eq!(stats.bytes_compressed, archive.len() as u64);
    let digest: [u8; 32] = Sha256::digest(&archive).into();
    assert_eq!(stats.key, BlobKey::from_digest(digest));

    let target = tmp.path().join("restored");
    let restored = unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    assert_eq!(restored.files, stats.files);
    assert_eq!(restored.dirs, stats.dirs);
    assert_eq!(restored.symlinks, stats.symlinks);
    assert_eq!(restored.bytes, stats.bytes_raw);

    let after = read_tree(&target);
    assert_eq!(before.len(), after.len());
    for (path, node) in &before {
        assert_eq!(after.get(path), Some(node), "{}", path.display());
    }
    // No staging directory left beside the target.
    assert_eq!(names(tmp.path()), ["restored", "source"]);
}

#[test]
fn packing_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    let (first, a) = pack_to_vec(tmp.path(), &pack_everything());
    let (second, b) = pack_to_vec(tmp.path(), &pack_everything());
    assert_eq!(a.key, b.key);
    assert_eq!(first, second);
}

#[test]
fn single_threaded_and_multithreaded_archives_restore_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    build_tree(&source);
    for workers in [Some(0), Some(1), Some(2), None] {
        let opts = PackOptions {
            workers,
            level: 1,
            ..pack_everything()
        };
        let (archive, _) = pack_to_vec(&source, &opts);
        let target = tmp.path().join(format!("restored-{workers:?}"));
        unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
        assert_eq!(
            read_tree(&source),
            read_tree(&target),
            "workers {workers:?}"
        );
    }
}

#[test]
fn restores_into_an_existing_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir_all(source.join("a/b")).unwrap();
    fs::write(source.join("a/b/c"), b"c").unwrap();
    fs::write(source.join("top"), b"t").unwrap();
    let (archive, _) = pack_to_vec(&source, &pack_everything());

    let target = tmp.path().join("mounted");
    fs::create_dir(&target).unwrap();
    chmod(&target, 0o751);
    unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    assert_eq!(read_tree(&source), read_tree(&target));
    // The target itself is kept (it may be a mount point), staging gone.
    assert_eq!(names(&target), ["a", "top"]);
    assert_eq!(
        fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o751
    );
}

#[test]
fn excludes_default_names_anywhere_and_caller_globs() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for dir in [
        "node_modules/x",
        "web/node_modules/y",
        "target/debug",
        "crate/target",
        "dist",
        "coverage",
        ".cache",
        "py/__pycache__",
        ".venv/lib",
        "py/venv",
        "py/.pytest_cache",
        ".mypy_cache",
        ".git/objects",
        "logs",
        "build/out",
        "keep/build/out",
    ] {
        fs::create_dir_all(src.join(dir)).unwrap();
        fs::write(src.join(dir).join("f"), b"x").unwrap();
    }
    fs::write(src.join("app.log"), b"log").unwrap();
    fs::write(src.join("keep/main.rs"), b"fn main() {}").unwrap();

    let opts = PackOptions::default().with_excludes(["*.log", "/build", "logs/"]);
    let (archive, stats) = pack_to_vec(&src, &opts);
    // node_modules, web/node_modules, target, crate/target, dist, coverage,
    // .cache, py/__pycache__, .venv, py/venv, py/.pytest_cache, .mypy_cache,
    // app.log, /build, logs; .git is kept
    assert_eq!(stats.excluded, 15);
    let target = tmp.path().join("restored");
    unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    let restored: Vec<String> = read_tree(&target)
        .keys()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        restored,
        [
            ".git",
            ".git/objects",
            ".git/objects/f",
            "crate",
            "keep",
            "keep/build",
            "keep/build/out",
            "keep/build/out/f",
            "keep/main.rs",
            "py",
            "web",
        ]
    );
}

#[test]
fn invalid_exclude_patterns_fail_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = PackOptions::default().with_excludes(["[unclosed"]);
    let mut out = Vec::new();
    let err = pack(tmp.path(), &opts, &mut out).unwrap_err();
    assert!(err.to_string().contains("[unclosed"), "{err}");
    assert!(out.is_empty());
}

#[test]
fn sockets_and_fifos_are_skipped_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("file"), b"f").unwrap();
    nix::unistd::mkfifo(
        &src.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();

    let (archive, stats) = pack_to_vec(&src, &pack_everything());
    assert_eq!(stats.files, 1);
    assert_eq!(stats.skipped_total, 2);
    let skipped: Vec<(String, SpecialKind)> = stats
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.kind))
        .collect();
    assert_eq!(
        skipped,
        [
            ("pipe".to_owned(), SpecialKind::Fifo),
            ("sock".to_owned(), SpecialKind::Socket)
        ]
    );
    let target = tmp.path().join("restored");
    unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    assert_eq!(names(&target), ["file"]);
}

#[test]
fn symlinks_are_stored_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), b"secret").unwrap();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    symlink(&outside, src.join("abs-dir")).unwrap();
    symlink("../outside", src.join("rel-dir")).unwrap();
    symlink("/etc/passwd", src.join("passwd")).unwrap();

    let (archive, stats) = pack_to_vec(&src, &pack_everything());
    assert_eq!((stats.files, stats.dirs, stats.symlinks), (0, 0, 3));
    assert_eq!(stats.bytes_raw, 0);

    // Such links are data to the packer and to the restorer: restored as
    // links, never followed (the secret is not copied).
    let target = tmp.path().join("restored");
    let stats = unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    assert_eq!(
        stats,
        UnpackStats {
            files: 0,
            dirs: 0,
            symlinks: 3,
            hardlinks: 0,
            bytes: 0,
        }
    );
    assert_eq!(names(&target), ["abs-dir", "passwd", "rel-dir"]);
    assert_eq!(fs::read_link(target.join("abs-dir")).unwrap(), outside);
    assert_eq!(
        fs::read_link(target.join("rel-dir")).unwrap(),
        Path::new("../outside")
    );
    assert_eq!(
        fs::read_link(target.join("passwd")).unwrap(),
        Path::new("/etc/passwd")
    );
}

#[test]
fn hardlinks_to_files_restored_earlier_are_kept() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let tar = common::RawTar::new()
        .dir(b"d/")
        .file(b"d/original", b"shared")
        .hardlink(b"link", b"d/original")
        .finish();
    let target = tmp.path().join("t");
    let stats = unpack(
        common::zstd(&tar).as_slice(),
        &target,
        &UnpackOptions::default(),
    )
    .unwrap();
    assert_eq!((stats.files, stats.hardlinks), (1, 1));
    let a = fs::metadata(target.join("d/original")).unwrap();
    let b = fs::metadata(target.join("link")).unwrap();
    assert_eq!(a.ino(), b.ino());
    assert_eq!(fs::read(target.join("link")).unwrap(), b"shared");
}

#[test]
fn setuid_setgid_and_sticky_bits_are_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(src.join("sticky")).unwrap();
    fs::write(src.join("suid"), b"#!/bin/sh\n").unwrap();
    chmod(&src.join("suid"), 0o6755);
    chmod(&src.join("sticky"), 0o1777);
    let (archive, _) = pack_to_vec(&src, &pack_everything());
    let target = tmp.path().join("restored");
    unpack(archive.as_slice(), &target, &UnpackOptions::default()).unwrap();
    let mode = |p: &str| fs::metadata(target.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o755);
    assert_eq!(mode("sticky"), 0o777);
    assert!(matches!(
        read_tree(&target).get(Path::new("suid")),
        Some(Node::File { .. })
    ));
}

#[test]
fn restored_entries_get_the_requested_owner() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    fs::write(src.join("d/f"), b"f").unwrap();
    symlink("d/f", src.join("l")).unwrap();
    let (archive, _) = pack_to_vec(&src, &pack_everything());
    let target = tmp.path().join("restored");
    let owner = paddock_snapshot::Owner {
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
    };
    let opts = UnpackOptions {
        owner: Some(owner),
        ..UnpackOptions::default()
    };
    unpack(archive.as_slice(), &target, &opts).unwrap();
    for path in ["", "d", "d/f", "l"] {
        let meta = fs::symlink_metadata(target.join(path)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (owner.uid, owner.gid), "{path}");
    }
}

#[test]
fn archives_of_gnu_tar_restore_and_ours_read_in_gnu_tar() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    fs::create_dir(&source).unwrap();
    build_tree(&source);

    // GNU tar's own archive of `.` (with its `./` root entry), zstd'ed here.
    let output = std::process::Command::new("tar")
        .args(["--format=gnu", "-C"])
        .arg(&source)
        .args(["-cf", "-", "."])
        .output()
        .unwrap();
    assert!(output.status.success());
    let target = tmp.path().join("from-gnu");
    unpack(
        common::zstd(&output.stdout).as_slice(),
        &target,
        &UnpackOptions::default(),
    )
    .unwrap();
    assert_eq!(read_tree(&source), read_tree(&target));

    // And GNU tar extracts ours to the same tree.
    let (archive, _) = pack_to_vec(&source, &pack_everything());
    let tar = zstd::decode_all(archive.as_slice()).unwrap();
    let extracted = tmp.path().join("by-gnu");
    fs::create_dir(&extracted).unwrap();
    let mut child = std::process::Command::new("tar")
        .arg("-C")
        .arg(&extracted)
        .args(["-xf", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &tar).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert_eq!(read_tree(&source), read_tree(&extracted));
}

#[test]
fn multithreaded_output_does_not_depend_on_the_worker_count() {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path());
    let key = |workers| {
        let opts = PackOptions {
            workers: Some(workers),
            ..pack_everything()
        };
        pack_to_vec(tmp.path(), &opts).1.key
    };
    assert_eq!(key(1), key(2));
    assert_eq!(key(2), key(4));
}
