//! Hostile archives: every one is refused with an error naming the entry,
//! nothing is written outside the target, and no staging directory is left.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;
use std::io::Read;
use std::path::Path;

use common::{BLOCK, CHAR, FIFO, GNU_LONGNAME, RawTar, names, pack_everything, pack_to_vec, zstd};
use paddock_snapshot::{Limit, Refusal, SnapshotError, UnpackOptions, unpack};

/// A scratch directory laid out as `<tmp>/outside/` (must stay empty) and
/// `<tmp>/target` (the restore target, must not appear).
struct Scene {
    tmp: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("outside")).unwrap();
        Self { tmp }
    }

    fn outside(&self) -> std::path::PathBuf {
        self.tmp.path().join("outside")
    }

    fn target(&self) -> std::path::PathBuf {
        self.tmp.path().join("target")
    }

    fn restore(&self, archive: &[u8], opts: &UnpackOptions) -> SnapshotError {
        let err = unpack(archive, &self.target(), opts).expect_err("hostile archive accepted");
        self.assert_untouched();
        err
    }

    fn refuse(&self, tar: Vec<u8>) -> SnapshotError {
        self.restore(&zstd(&tar), &UnpackOptions::default())
    }

    /// Restores an archive that must be accepted; nothing is written outside.
    fn accept(&self, tar: Vec<u8>) -> std::path::PathBuf {
        let target = self.target();
        unpack(zstd(&tar).as_slice(), &target, &UnpackOptions::default()).unwrap();
        assert!(
            names(&self.outside()).is_empty(),
            "wrote outside the target"
        );
        target
    }

    fn assert_untouched(&self) {
        assert_eq!(
            names(self.tmp.path()),
            ["outside"],
            "target or staging left"
        );
        assert!(
            names(&self.outside()).is_empty(),
            "wrote outside the target"
        );
    }
}

fn assert_refused(err: &SnapshotError, entry: &str, reason: fn(&Refusal) -> bool) {
    match err {
        SnapshotError::Refused {
            entry: e,
            reason: r,
        } => {
            assert_eq!(e, entry, "{err}");
            assert!(reason(r), "unexpected reason: {err}");
            assert!(err.to_string().contains(entry), "{err}");
        }
        other => panic!("expected a refusal of {entry:?}, got {other:?}: {other}"),
    }
}

#[test]
fn parent_traversal() {
    let scene = Scene::new();
    let err = scene.refuse(RawTar::new().file(b"../outside/x", b"pwned").finish());
    assert_refused(&err, "../outside/x", |r| *r == Refusal::ParentComponent);
}

#[test]
fn traversal_in_the_middle() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .file(b"ok", b"fine")
        .file(b"a/../../outside/x", b"pwned")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "a/../../outside/x", |r| {
        *r == Refusal::ParentComponent
    });
}

#[test]
fn absolute_paths() {
    let scene = Scene::new();
    let err = scene.refuse(
        RawTar::new()
            .file(b"/etc/paddock-hostile-x", b"pwned")
            .finish(),
    );
    assert_refused(&err, "/etc/paddock-hostile-x", |r| {
        *r == Refusal::AbsolutePath
    });
    assert!(!Path::new("/etc/paddock-hostile-x").exists());

    let abs = scene.outside().join("x");
    let err = scene.refuse(
        RawTar::new()
            .file(abs.as_os_str().as_encoded_bytes(), b"pwned")
            .finish(),
    );
    assert!(matches!(
        err,
        SnapshotError::Refused {
            reason: Refusal::AbsolutePath,
            ..
        }
    ));
}

#[test]
fn symlink_to_root_then_write_through_it() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .symlink(b"evil", b"/")
        .file(b"evil/tmp/paddock-hostile-x", b"pwned")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(
        &err,
        "evil/tmp/paddock-hostile-x",
        |r| matches!(r, Refusal::ThroughSymlink { link } if link == "evil"),
    );
    assert!(!Path::new("/tmp/paddock-hostile-x").exists());
}

#[test]
fn symlink_to_parent_then_write_through_it() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .symlink(b"up", b"..")
        .file(b"up/outside/x", b"pwned")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(
        &err,
        "up/outside/x",
        |r| matches!(r, Refusal::ThroughSymlink { link } if link == "up"),
    );
}

#[test]
fn escaping_symlinks_are_restored_as_links() {
    // A venv's `bin/python -> /usr/bin/python3`, links climbing out, links
    // through other links: links, never followed while writing.
    let scene = Scene::new();
    let outside = scene.outside();
    let tar = RawTar::new()
        .dir(b"d/")
        .symlink(b"d/l", b"..")
        .symlink(b"x", b"d/l/../outside")
        .symlink(b"a/b/l", b"../../../outside")
        .symlink(b"python", b"/usr/bin/python3")
        .symlink(b"abs", outside.as_os_str().as_encoded_bytes())
        .finish();
    let target = scene.accept(tar);
    for (link, pointing_at) in [
        ("d/l", Path::new("..")),
        ("x", Path::new("d/l/../outside")),
        ("a/b/l", Path::new("../../../outside")),
        ("python", Path::new("/usr/bin/python3")),
        ("abs", outside.as_path()),
    ] {
        let path = target.join(link);
        assert!(fs::symlink_metadata(&path).unwrap().is_symlink(), "{link}");
        assert_eq!(fs::read_link(&path).unwrap(), pointing_at, "{link}");
    }
}

#[test]
fn nothing_is_restored_through_an_escaping_symlink() {
    let scene = Scene::new();
    for (link, pointing_at) in [
        (
            &b"abs"[..],
            scene.outside().as_os_str().as_encoded_bytes().to_vec(),
        ),
        (b"up", b"../outside".to_vec()),
    ] {
        let mut entry = link.to_vec();
        entry.extend_from_slice(b"/x");
        for tar in [
            RawTar::new()
                .symlink(link, &pointing_at)
                .file(&entry, b"pwned"),
            RawTar::new().symlink(link, &pointing_at).dir(&entry),
            RawTar::new()
                .file(b"f", b"f")
                .symlink(link, &pointing_at)
                .hardlink(&entry, b"f"),
        ] {
            let err = scene.refuse(tar.finish());
            assert_refused(&err, &String::from_utf8_lossy(&entry), |r| {
                matches!(r, Refusal::ThroughSymlink { .. })
            });
        }
        // Nor a file over the link itself.
        let err = scene.refuse(
            RawTar::new()
                .symlink(link, &pointing_at)
                .file(link, b"pwned")
                .finish(),
        );
        assert_refused(&err, &String::from_utf8_lossy(link), |r| {
            *r == Refusal::Duplicate
        });
    }
}

#[test]
fn symlink_with_an_empty_target() {
    let scene = Scene::new();
    let err = scene.refuse(RawTar::new().symlink(b"l", b"").finish());
    assert_refused(&err, "l", |r| *r == Refusal::EmptySymlink);
}

#[test]
fn write_through_an_inside_symlink() {
    // Even a harmless symlink must not be written through: the file would
    // land somewhere other than where the archive says.
    let scene = Scene::new();
    let tar = RawTar::new()
        .dir(b"real/")
        .symlink(b"alias", b"real")
        .file(b"alias/x", b"through")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(
        &err,
        "alias/x",
        |r| matches!(r, Refusal::ThroughSymlink { link } if link == "alias"),
    );
}

#[test]
fn file_replacing_a_symlink_or_a_file_twice() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .symlink(b"x", b"real")
        .file(b"x", b"replace the link")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "x", |r| *r == Refusal::Duplicate);

    let tar = RawTar::new().file(b"a", b"1").file(b"a", b"2").finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "a", |r| *r == Refusal::Duplicate);
}

#[test]
fn entry_under_a_regular_file() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .file(b"f", b"file")
        .file(b"f/x", b"x")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "f/x", |r| *r == Refusal::ThroughNonDirectory);
}

#[test]
fn hardlink_escapes() {
    let scene = Scene::new();
    let err = scene.refuse(RawTar::new().hardlink(b"passwd", b"/etc/passwd").finish());
    assert_refused(&err, "passwd", |r| *r == Refusal::AbsolutePath);

    let err = scene.refuse(RawTar::new().hardlink(b"x", b"../outside/y").finish());
    assert_refused(&err, "x", |r| *r == Refusal::ParentComponent);

    // To a path that is not a regular file restored earlier (here a
    // symlink that itself points outside).
    let tar = RawTar::new()
        .symlink(b"l", b"/etc/passwd")
        .hardlink(b"x", b"l")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "x", |r| matches!(r, Refusal::HardlinkTarget { .. }));
}

#[test]
fn device_nodes_and_fifos() {
    let scene = Scene::new();
    for (kind, name) in [(CHAR, "null"), (BLOCK, "sda")] {
        let tar = RawTar::new()
            .entry(kind, name.as_bytes(), b"", 0, b"")
            .finish();
        let err = scene.refuse(tar);
        assert_refused(&err, name, |r| *r == Refusal::Device);
    }
    let tar = RawTar::new().entry(FIFO, b"pipe", b"", 0, b"").finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "pipe", |r| *r == Refusal::Fifo);
}

#[test]
fn header_claiming_100_gib() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .entry(common::REGULAR, b"huge", b"", 100 << 30, b"tiny")
        .finish();
    let err = scene.refuse(tar);
    match err {
        SnapshotError::OverLimit { limit, path } => {
            assert_eq!(path, "huge");
            assert_eq!(limit, Limit::FileBytes(paddock_snapshot::DEFAULT_MAX_BYTES));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pax_path_override_with_parent_components() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .pax(&[("path", b"../../outside/x")])
        .file(b"innocent", b"pwned")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "../../outside/x", |r| *r == Refusal::ParentComponent);

    // A pax linkpath is the link's target: restored as a link to it.
    let tar = RawTar::new()
        .pax(&[("linkpath", b"/")])
        .symlink(b"innocent", b"fine")
        .finish();
    let target = scene.accept(tar);
    assert_eq!(
        fs::read_link(target.join("innocent")).unwrap(),
        Path::new("/")
    );
}

#[test]
fn pax_size_override() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .pax(&[("size", b"1000000")])
        .file(b"f", b"short")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "f", |r| *r == Refusal::PaxSizeOverride);
}

#[test]
fn gnu_long_name_with_parent_components() {
    let scene = Scene::new();
    let name = b"../outside/long-name\0";
    let tar = RawTar::new()
        .entry(GNU_LONGNAME, b"././@LongLink", b"", name.len() as u64, name)
        .file(b"innocent", b"pwned")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "../outside/long-name", |r| {
        *r == Refusal::ParentComponent
    });
}

#[test]
fn oversize_long_name_record() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .entry(GNU_LONGNAME, b"././@LongLink", b"", 1 << 30, b"x")
        .finish();
    let err = scene.refuse(tar);
    assert_refused(&err, "././@LongLink", |r| *r == Refusal::OversizeExtension);
}

fn packed_tree() -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..200 {
        let dir = tmp.path().join(format!("d{}", i % 10));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("f{i}")), format!("{i}").repeat(500)).unwrap();
    }
    pack_to_vec(tmp.path(), &pack_everything()).0
}

#[test]
fn truncated_zstd_stream() {
    let scene = Scene::new();
    let archive = packed_tree();
    for cut in [archive.len() / 2, archive.len() - 1, 10] {
        let err = scene.restore(&archive[..cut], &UnpackOptions::default());
        assert!(
            matches!(err, SnapshotError::Decompress { .. }),
            "cut at {cut}: {err:?}"
        );
    }
}

#[test]
fn corrupted_zstd_frame() {
    let scene = Scene::new();
    let archive = packed_tree();
    for at in [archive.len() / 3, archive.len() / 2, archive.len() - 6] {
        let mut corrupted = archive.clone();
        corrupted[at] ^= 0x55;
        corrupted[at + 1] ^= 0xaa;
        let err = scene.restore(&corrupted, &UnpackOptions::default());
        // Caught by zstd's block checks, by the tar header checksums when
        // the damage decodes to garbage, or at the latest by the frame
        // checksum after the last entry: always before the commit.
        assert!(
            matches!(
                err,
                SnapshotError::Decompress { .. } | SnapshotError::ReadArchive { .. }
            ),
            "flipped at {at}: {err:?}"
        );
    }
    let err = scene.restore(b"not zstd at all", &UnpackOptions::default());
    assert!(matches!(err, SnapshotError::Decompress { .. }), "{err:?}");
}

#[test]
fn tar_without_end_marker() {
    let scene = Scene::new();
    let tar = RawTar::new().file(b"a", b"data").unterminated();
    let err = scene.refuse(tar);
    assert!(matches!(err, SnapshotError::Truncated { .. }), "{err:?}");
}

#[test]
fn entry_data_shorter_than_its_header() {
    let scene = Scene::new();
    let mut tar = RawTar::new()
        .entry(common::REGULAR, b"liar", b"", 4096, b"only this")
        .unterminated();
    tar.truncate(512 + 9);
    let err = scene.refuse(tar);
    assert!(matches!(err, SnapshotError::Truncated { .. }), "{err:?}");
    assert!(err.to_string().contains("liar"), "{err}");
}

#[test]
fn over_the_limits_nothing_is_written() {
    let scene = Scene::new();
    let archive = packed_tree();
    let opts = UnpackOptions {
        limits: paddock_snapshot::Limits {
            max_files: 50,
            max_bytes: 1 << 30,
        },
        ..UnpackOptions::default()
    };
    let err = scene.restore(&archive, &opts);
    assert!(
        matches!(
            err,
            SnapshotError::OverLimit {
                limit: Limit::Files(50),
                ..
            }
        ),
        "{err:?}"
    );
    let opts = UnpackOptions {
        limits: paddock_snapshot::Limits {
            max_files: 10_000,
            max_bytes: 10_000,
        },
        ..UnpackOptions::default()
    };
    let err = scene.restore(&archive, &opts);
    assert!(
        matches!(
            err,
            SnapshotError::OverLimit {
                limit: Limit::Bytes(10_000),
                ..
            }
        ),
        "{err:?}"
    );
}

/// 200 files of 500 bytes declare 100,000 bytes but take 200 blocks and
/// inodes: refused by what they cost on disk, nothing written.
#[test]
fn tiny_files_are_charged_their_blocks_and_nothing_is_written() {
    let scene = Scene::new();
    let archive = packed_tree();
    let cost = 200 * paddock_snapshot::disk::estimate(500) + 10 * paddock_snapshot::disk::DIR_BYTES;
    let opts = UnpackOptions {
        max_disk_bytes: cost / 2,
        ..UnpackOptions::default()
    };
    let err = scene.restore(&archive, &opts);
    assert!(
        matches!(err, SnapshotError::OverLimit { limit: Limit::Disk(max), .. } if max == cost / 2),
        "{err:?}"
    );
    assert!(err.to_string().contains("blocks and inode"), "{err}");
    // with room for all of it, it unpacks
    let opts = UnpackOptions {
        max_disk_bytes: cost + paddock_snapshot::disk::DIR_BYTES,
        ..UnpackOptions::default()
    };
    unpack(archive.as_slice(), &scene.target(), &opts).unwrap();
}

#[test]
fn failed_restore_into_an_existing_directory_leaves_it_empty() {
    let scene = Scene::new();
    let target = scene.target();
    fs::create_dir(&target).unwrap();
    let tar = RawTar::new()
        .file(b"fine", b"ok")
        .file(b"../outside/x", b"pwned")
        .finish();
    let err = unpack(zstd(&tar).as_slice(), &target, &UnpackOptions::default()).unwrap_err();
    assert!(matches!(err, SnapshotError::Refused { .. }));
    assert!(names(&target).is_empty(), "{:?}", names(&target));
    assert!(names(&scene.outside()).is_empty());
}

#[test]
fn non_empty_target_is_refused_and_untouched() {
    let scene = Scene::new();
    let target = scene.target();
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep"), b"mine").unwrap();
    let tar = RawTar::new().file(b"keep", b"overwritten").finish();
    let err = unpack(zstd(&tar).as_slice(), &target, &UnpackOptions::default()).unwrap_err();
    assert!(
        matches!(err, SnapshotError::TargetNotEmpty { .. }),
        "{err:?}"
    );
    assert_eq!(fs::read(target.join("keep")).unwrap(), b"mine");
    assert_eq!(names(&target), ["keep"]);
}

#[test]
fn data_attached_to_a_directory_is_bounded() {
    let scene = Scene::new();
    let tar = RawTar::new()
        .entry(common::DIR, b"dir/", b"", 100 << 30, b"")
        .finish();
    let err = scene.refuse(tar);
    match err {
        SnapshotError::OverLimit {
            limit: Limit::Stream(_),
            path,
        } => assert_eq!(path, "dir/"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn endless_pax_records_are_bounded() {
    let scene = Scene::new();
    let filler = vec![b'a'; 60_000];
    let mut tar = RawTar::new();
    for _ in 0..40 {
        tar = tar.pax(&[("comment", &filler)]);
    }
    let opts = UnpackOptions {
        limits: paddock_snapshot::Limits {
            max_files: 2,
            max_bytes: 1000,
        },
        ..UnpackOptions::default()
    };
    let err = scene.restore(&zstd(&tar.file(b"f", b"x").finish()), &opts);
    assert!(
        matches!(
            err,
            SnapshotError::OverLimit {
                limit: Limit::Stream(_),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn an_archive_that_expands_like_a_zip_bomb() {
    // 512 MiB of zeros compress to a few KB: refused once the output
    // outgrows the ratio cap, long before it is all written.
    let size = 512 << 20;
    let mut builder = tar::Builder::new(zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap());
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    builder
        .append_data(&mut header, "zeros", std::io::repeat(0).take(size))
        .unwrap();
    let archive = builder.into_inner().unwrap().finish().unwrap();
    assert!(archive.len() < 1 << 20, "{}", archive.len());
    let opts = UnpackOptions {
        limits: paddock_snapshot::Limits {
            max_files: 10,
            max_bytes: 1 << 30,
        },
        max_file_bytes: 1 << 30,
        ..UnpackOptions::default()
    };
    let scene = Scene::new();
    match scene.restore(&archive, &opts) {
        SnapshotError::OverLimit {
            limit: Limit::Ratio(ratio),
            path,
        } => {
            assert_eq!(ratio, 1_000);
            assert_eq!(path, "zeros");
        }
        other => panic!("{other:?}: {other}"),
    }
}
