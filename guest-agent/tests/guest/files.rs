//! File operations, and every way a path could try to leave the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use common::{Guest, host_listing};
use paddock_proto::{
    DirEntry, ErrorCode, FileKind, MAX_PAYLOAD_LEN, Reply, Request, SearchMatch, SearchSpec,
};

fn write(path: &str) -> Request {
    Request::FileWrite {
        path: path.into(),
        mode: None,
        create_parents: false,
    }
}

fn read_all(path: &str) -> Request {
    Request::FileRead {
        path: path.into(),
        offset: 0,
        len: None,
    }
}

async fn read_file(
    guest: &mut Guest,
    path: &str,
    offset: u64,
    len: Option<u64>,
) -> (u64, u64, Vec<u8>) {
    match guest
        .call(
            Request::FileRead {
                path: path.into(),
                offset,
                len,
            },
            &[],
        )
        .await
        .unwrap()
    {
        (Reply::FileData { size, offset }, data) => (size, offset, data),
        other => panic!("{other:?}"),
    }
}

async fn list(guest: &mut Guest, path: &str) -> Vec<DirEntry> {
    match guest
        .call(Request::FileList { path: path.into() }, &[])
        .await
        .unwrap()
        .0
    {
        Reply::DirEntries { entries } => entries,
        other => panic!("{other:?}"),
    }
}

async fn stat(guest: &mut Guest, path: &str) -> paddock_proto::FileStat {
    match guest
        .call(Request::FileStat { path: path.into() }, &[])
        .await
        .unwrap()
        .0
    {
        Reply::Stat(stat) => stat,
        other => panic!("{other:?}"),
    }
}

async fn search(guest: &mut Guest, spec: SearchSpec) -> (Vec<SearchMatch>, bool) {
    match guest.call(Request::Search(spec), &[]).await.unwrap().0 {
        Reply::SearchResults { matches, truncated } => (matches, truncated),
        other => panic!("{other:?}"),
    }
}

fn names(entries: &[DirEntry]) -> Vec<String> {
    entries.iter().map(|e| e.name.display()).collect()
}

#[tokio::test]
async fn write_then_read_back_binary_data_with_ranges() {
    let mut guest = Guest::start().await;
    let data: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    let written = guest.call(write("data.bin"), &data).await.unwrap().0;
    assert_eq!(written, Reply::FileWritten { bytes: 100_000 });
    assert_eq!(std::fs::read(guest.path("data.bin")).unwrap(), data);

    assert_eq!(
        read_file(&mut guest, "data.bin", 0, None).await,
        (100_000, 0, data.clone())
    );
    assert_eq!(
        read_file(&mut guest, "data.bin", 1000, Some(10)).await,
        (100_000, 1000, data[1000..1010].to_vec())
    );
    // Clamped to the file.
    assert_eq!(
        read_file(&mut guest, "data.bin", 99_990, Some(100)).await,
        (100_000, 99_990, data[99_990..].to_vec())
    );
    assert_eq!(
        read_file(&mut guest, "data.bin", 200_000, None).await,
        (100_000, 100_000, vec![])
    );
    // Absolute paths under the root work too.
    let absolute = guest.abs("data.bin");
    assert_eq!(
        read_file(&mut guest, &absolute, 0, Some(3)).await.2,
        data[..3]
    );
}

#[tokio::test]
async fn one_read_returns_at_most_one_frame_and_the_size_to_page_on() {
    let mut guest = Guest::start().await;
    let size = u64::from(MAX_PAYLOAD_LEN) + 10;
    std::fs::File::create(guest.path("big"))
        .unwrap()
        .set_len(size)
        .unwrap();
    let (reported, offset, data) = read_file(&mut guest, "big", 0, None).await;
    assert_eq!(
        (reported, offset, data.len() as u64),
        (size, 0, u64::from(MAX_PAYLOAD_LEN))
    );
    let (_, offset, rest) = read_file(&mut guest, "big", data.len() as u64, None).await;
    assert_eq!((offset, rest.len()), (u64::from(MAX_PAYLOAD_LEN), 10));
}

#[tokio::test]
async fn writes_are_atomic_replace_and_honour_mode_and_parents() {
    let mut guest = Guest::start().await;
    guest.call(write("f.txt"), b"old").await.unwrap();
    std::fs::set_permissions(guest.path("f.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    guest.call(write("f.txt"), b"new").await.unwrap();
    assert_eq!(std::fs::read(guest.path("f.txt")).unwrap(), b"new");
    assert_eq!(
        stat(&mut guest, "f.txt").await.mode,
        0o600,
        "mode kept on replace"
    );
    let exe = Request::FileWrite {
        path: "run.sh".into(),
        mode: Some(0o755),
        create_parents: false,
    };
    guest.call(exe, b"#!/bin/sh\n").await.unwrap();
    assert_eq!(stat(&mut guest, "run.sh").await.mode, 0o755);
    assert_eq!(stat(&mut guest, "f.txt").await.size, 3);

    assert_eq!(
        guest.error(write("a/b/c.txt"), b"x").await.code,
        ErrorCode::NotFound
    );
    let deep = Request::FileWrite {
        path: "a/b/c.txt".into(),
        mode: None,
        create_parents: true,
    };
    guest.call(deep, b"deep").await.unwrap();
    assert_eq!(std::fs::read(guest.path("a/b/c.txt")).unwrap(), b"deep");
    // No temporary files left behind.
    assert_eq!(host_listing(&guest.root), ["a", "f.txt", "run.sh"]);
    assert_eq!(
        guest.error(write("a"), b"x").await.code,
        ErrorCode::IsADirectory
    );
    assert_eq!(
        guest.error(write(""), b"x").await.code,
        ErrorCode::IsADirectory
    );
    assert_eq!(
        guest.error(write("f.txt/x"), b"x").await.code,
        ErrorCode::NotADirectory
    );
}

#[tokio::test]
async fn list_and_stat_describe_entries_without_following_symlinks() {
    let mut guest = Guest::start().await;
    std::fs::create_dir(guest.path("dir")).unwrap();
    std::fs::write(guest.path("file"), b"12345").unwrap();
    symlink("file", guest.path("link")).unwrap();
    symlink("/etc/passwd", guest.path("out_link")).unwrap();
    let entries = list(&mut guest, "").await;
    assert_eq!(names(&entries), ["dir", "file", "link", "out_link"]);
    let kinds: Vec<FileKind> = entries.iter().map(|e| e.stat.kind).collect();
    assert_eq!(
        kinds,
        [
            FileKind::Dir,
            FileKind::File,
            FileKind::Symlink,
            FileKind::Symlink
        ]
    );
    assert_eq!(entries[1].stat.size, 5);
    assert_eq!(entries[3].stat.link_target, Some("/etc/passwd".into()));

    // lstat semantics: a symlink out is described, not followed.
    let link = stat(&mut guest, "out_link").await;
    assert_eq!(
        (link.kind, link.link_target),
        (FileKind::Symlink, Some("/etc/passwd".into()))
    );
    let root = stat(&mut guest, "").await;
    assert_eq!(root.kind, FileKind::Dir);
    let modified = std::fs::metadata(guest.path("file"))
        .unwrap()
        .modified()
        .unwrap();
    let mtime_ms = modified
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(stat(&mut guest, "file").await.mtime_ms, mtime_ms);

    assert_eq!(
        guest
            .error_code(Request::FileList {
                path: "file".into()
            })
            .await,
        ErrorCode::NotADirectory
    );
    assert_eq!(
        guest
            .error_code(Request::FileList {
                path: "nope".into()
            })
            .await,
        ErrorCode::NotFound
    );
    assert_eq!(
        guest
            .error_code(Request::FileStat {
                path: "nope".into()
            })
            .await,
        ErrorCode::NotFound
    );
    assert_eq!(
        guest.error_code(read_all("dir")).await,
        ErrorCode::IsADirectory
    );
    let missing = guest.error(read_all("nope"), &[]).await;
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert!(missing.message.contains("nope"), "{missing}");
}

#[tokio::test]
async fn mkdir_remove_and_rename() {
    let mut guest = Guest::start().await;
    guest
        .ok(Request::Mkdir {
            path: "d".into(),
            parents: false,
        })
        .await;
    assert!(guest.path("d").is_dir());
    assert_eq!(
        guest
            .error_code(Request::Mkdir {
                path: "d".into(),
                parents: false
            })
            .await,
        ErrorCode::AlreadyExists
    );
    guest
        .ok(Request::Mkdir {
            path: "d".into(),
            parents: true,
        })
        .await;
    assert_eq!(
        guest
            .error_code(Request::Mkdir {
                path: "x/y".into(),
                parents: false
            })
            .await,
        ErrorCode::NotFound
    );
    guest
        .ok(Request::Mkdir {
            path: "x/y/z".into(),
            parents: true,
        })
        .await;
    assert!(guest.path("x/y/z").is_dir());

    std::fs::write(guest.path("x/y/z/f"), b"f").unwrap();
    assert_eq!(
        guest
            .error_code(Request::Remove {
                path: "x".into(),
                recursive: false
            })
            .await,
        ErrorCode::DirectoryNotEmpty
    );
    guest
        .ok(Request::Remove {
            path: "x".into(),
            recursive: true,
        })
        .await;
    assert!(!guest.path("x").exists());
    guest
        .ok(Request::Remove {
            path: "d".into(),
            recursive: false,
        })
        .await;
    assert_eq!(
        guest
            .error_code(Request::Remove {
                path: "d".into(),
                recursive: false
            })
            .await,
        ErrorCode::NotFound
    );
    assert_eq!(
        guest
            .error_code(Request::Remove {
                path: "".into(),
                recursive: true
            })
            .await,
        ErrorCode::PermissionDenied
    );

    std::fs::write(guest.path("a"), b"a").unwrap();
    guest
        .ok(Request::Mkdir {
            path: "sub".into(),
            parents: false,
        })
        .await;
    guest
        .ok(Request::Rename {
            from: "a".into(),
            to: "sub/b".into(),
        })
        .await;
    assert_eq!(std::fs::read(guest.path("sub/b")).unwrap(), b"a");
    assert!(!guest.path("a").exists());
    assert_eq!(
        guest
            .error_code(Request::Rename {
                from: "a".into(),
                to: "c".into()
            })
            .await,
        ErrorCode::NotFound
    );
    guest
        .ok(Request::Remove {
            path: "sub/b".into(),
            recursive: false,
        })
        .await;
}

#[tokio::test]
async fn recursive_remove_unlinks_symlinks_without_following_them() {
    let mut guest = Guest::start().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), b"keep").unwrap();
    std::fs::create_dir_all(guest.path("tree/inner")).unwrap();
    symlink(outside.path(), guest.path("tree/inner/out")).unwrap();
    symlink(outside.path(), guest.path("top_link")).unwrap();
    guest
        .ok(Request::Remove {
            path: "tree".into(),
            recursive: true,
        })
        .await;
    guest
        .ok(Request::Remove {
            path: "top_link".into(),
            recursive: true,
        })
        .await;
    assert!(!guest.path("tree").exists() && !guest.path("top_link").exists());
    assert_eq!(host_listing(outside.path()), ["keep"]);
}

#[tokio::test]
async fn search_by_name_and_content() {
    let mut guest = Guest::start().await;
    std::fs::create_dir_all(guest.path("src/deep")).unwrap();
    std::fs::write(
        guest.path("src/main.rs"),
        "fn main() {\n    println!(\"needle\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        guest.path("src/deep/lib.rs"),
        "// needle here\nno\nneedle again\n",
    )
    .unwrap();
    std::fs::write(guest.path("notes.txt"), "a needle in text\n").unwrap();
    std::fs::write(guest.path("binary.rs"), b"needle\0binary").unwrap();
    std::fs::write(guest.path("big.rs"), "needle\n".repeat(100)).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("out.rs"), "needle").unwrap();
    symlink(outside.path(), guest.path("src/out_link")).unwrap();

    let spec = |glob: Option<&str>, content: Option<&str>, max_results: u32| SearchSpec {
        path: None,
        name_glob: glob.map(str::to_string),
        content: content.map(str::to_string),
        max_results,
        max_file_bytes: Some(500),
    };
    let (by_name, truncated) = search(&mut guest, spec(Some("*.rs"), None, 100)).await;
    let paths: Vec<&str> = by_name.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(
        paths,
        ["big.rs", "binary.rs", "src/deep/lib.rs", "src/main.rs"]
    );
    assert!(!truncated);
    assert!(by_name.iter().all(|m| m.line.is_none() && m.text.is_none()));

    let (by_content, _) = search(&mut guest, spec(Some("*.rs"), Some("needle"), 100)).await;
    let hits: Vec<(&str, Option<u64>, Option<&str>)> = by_content
        .iter()
        .map(|m| (m.path.as_str(), m.line, m.text.as_deref()))
        .collect();
    // big.rs is over max_file_bytes, binary.rs is binary, out_link is not followed.
    assert_eq!(
        hits,
        [
            ("src/deep/lib.rs", Some(1), Some("// needle here")),
            ("src/deep/lib.rs", Some(3), Some("needle again")),
            ("src/main.rs", Some(2), Some("    println!(\"needle\");")),
        ]
    );
    let (everywhere, _) = search(&mut guest, spec(None, Some("needle"), 100)).await;
    assert_eq!(everywhere.len(), 4, "{everywhere:?}");
    let (under, _) = search(
        &mut guest,
        SearchSpec {
            path: Some("src/deep".into()),
            ..spec(None, Some("needle"), 100)
        },
    )
    .await;
    assert_eq!(under.len(), 2);
    assert!(under.iter().all(|m| m.path == "src/deep/lib.rs"));

    let (limited, truncated) = search(&mut guest, spec(None, Some("needle"), 2)).await;
    assert_eq!((limited.len(), truncated), (2, true));
    assert_eq!(
        guest
            .error_code(Request::Search(spec(None, None, 10)))
            .await,
        ErrorCode::BadRequest
    );
    let escape = SearchSpec {
        path: Some("src/out_link".into()),
        ..spec(None, Some("needle"), 10)
    };
    assert_eq!(
        guest.error_code(Request::Search(escape)).await,
        ErrorCode::PathEscape
    );
}

/// A workspace laid out with every kind of way out, next to a directory
/// that must stay untouched.
struct Escapes {
    guest: Guest,
    outside: tempfile::TempDir,
}

async fn escapes() -> Escapes {
    let guest = Guest::start().await;
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    std::fs::write(out.join("secret"), b"secret").unwrap();
    std::fs::create_dir(out.join("dir")).unwrap();
    std::fs::create_dir(guest.path("inside")).unwrap();
    std::fs::write(guest.path("inside/file"), b"in").unwrap();
    symlink("/etc", guest.path("etc_link")).unwrap();
    symlink(&out, guest.path("out_dir")).unwrap();
    symlink(out.join("secret"), guest.path("out_file")).unwrap();
    symlink("out_dir", guest.path("chain1")).unwrap();
    symlink("chain1", guest.path("chain2")).unwrap();
    symlink("../../../../../../..", guest.path("inside/up")).unwrap();
    symlink(
        format!("/proc/self/root{}", out.display()),
        guest.path("magic"),
    )
    .unwrap();
    Escapes { guest, outside }
}

fn outside_state(dir: &Path) -> (Vec<String>, Vec<String>, Vec<u8>) {
    (
        host_listing(dir),
        host_listing(&dir.join("dir")),
        std::fs::read(dir.join("secret")).unwrap(),
    )
}

#[tokio::test]
async fn every_escape_is_refused_before_any_io() {
    let Escapes { mut guest, outside } = escapes().await;
    let before = outside_state(outside.path());
    let out = outside.path().canonicalize().unwrap();
    let out_secret = out.join("secret").to_string_lossy().into_owned();
    let escaping_paths = [
        "..".to_string(),
        "../x".to_string(),
        "inside/../../x".to_string(),
        "/etc/passwd".to_string(),
        out_secret.clone(),
        format!("{}/../x", guest.root.display()),
        "etc_link/passwd".to_string(),
        "out_file/x".to_string(),
        "out_dir/secret".to_string(),
        "out_dir/dir/new".to_string(),
        "chain2/secret".to_string(),
        "inside/up/etc/passwd".to_string(),
        "magic/secret".to_string(),
    ];
    for path in &escaping_paths {
        let attempts: Vec<(Request, &[u8])> = vec![
            (read_all(path), &[]),
            (
                Request::FileWrite {
                    path: path.into(),
                    mode: None,
                    create_parents: true,
                },
                b"pwned",
            ),
            (Request::FileList { path: path.into() }, &[]),
            (
                Request::Mkdir {
                    path: format!("{path}/d").into(),
                    parents: true,
                },
                &[],
            ),
            (
                Request::Mkdir {
                    path: format!("{path}/d").into(),
                    parents: false,
                },
                &[],
            ),
            (
                Request::Remove {
                    path: format!("{path}/x").into(),
                    recursive: true,
                },
                &[],
            ),
            (
                Request::Rename {
                    from: "inside/file".into(),
                    to: format!("{path}/stolen").into(),
                },
                &[],
            ),
            (
                Request::Rename {
                    from: format!("{path}/x").into(),
                    to: "inside/got".into(),
                },
                &[],
            ),
            (
                Request::Search(SearchSpec {
                    path: Some(path.clone()),
                    name_glob: Some("*".into()),
                    content: None,
                    max_results: 10,
                    max_file_bytes: None,
                }),
                &[],
            ),
        ];
        for (request, payload) in attempts {
            let error = guest.error(request.clone(), payload).await;
            assert_eq!(error.code, ErrorCode::PathEscape, "{request:?}: {error}");
        }
    }
    // Following a final symlink out (read, list) is an escape too.
    for path in ["out_file", "out_dir", "chain2", "etc_link", "magic"] {
        assert_eq!(
            guest.error_code(read_all(path)).await,
            ErrorCode::PathEscape,
            "{path}"
        );
        assert_eq!(
            guest
                .error_code(Request::FileList { path: path.into() })
                .await,
            ErrorCode::PathEscape,
            "{path}"
        );
    }
    // Stat of a path through a symlink out is an escape; of the link itself is not.
    for path in [
        "etc_link/passwd",
        "out_dir/secret",
        "/etc/passwd",
        "chain2/secret",
    ] {
        assert_eq!(
            guest
                .error_code(Request::FileStat { path: path.into() })
                .await,
            ErrorCode::PathEscape,
            "{path}"
        );
    }
    assert_eq!(stat(&mut guest, "out_dir").await.kind, FileKind::Symlink);
    assert_eq!(
        outside_state(outside.path()),
        before,
        "something outside changed"
    );
    assert!(guest.path("inside/file").exists());
}

#[tokio::test]
async fn writing_over_a_symlink_out_replaces_the_link_not_its_target() {
    let Escapes { mut guest, outside } = escapes().await;
    let before = outside_state(outside.path());
    guest.call(write("out_file"), b"mine").await.unwrap();
    assert_eq!(stat(&mut guest, "out_file").await.kind, FileKind::File);
    assert_eq!(std::fs::read(guest.path("out_file")).unwrap(), b"mine");
    // Removing and renaming a link touches only the link.
    guest
        .ok(Request::Rename {
            from: "out_dir".into(),
            to: "moved".into(),
        })
        .await;
    guest
        .ok(Request::Remove {
            path: "moved".into(),
            recursive: true,
        })
        .await;
    assert_eq!(
        outside_state(outside.path()),
        before,
        "something outside changed"
    );
}

#[tokio::test]
async fn paths_with_nul_are_bad_requests() {
    let mut guest = Guest::start().await;
    assert_eq!(
        guest.error_code(read_all("a\0b")).await,
        ErrorCode::BadRequest
    );
}

#[tokio::test]
async fn names_not_in_utf8_are_listed_read_written_and_removed_by_their_bytes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use paddock_proto::FsPath;

    let mut guest = Guest::start().await;
    let root = guest.root.clone();
    let on_host = |name: &[u8]| root.join(OsStr::from_bytes(name));
    std::fs::create_dir(on_host(b"d\xfe")).unwrap();
    std::fs::write(on_host(b"d\xfe/\xff.bin"), b"raw name").unwrap();
    std::fs::write(on_host(b"plain.txt"), b"plain").unwrap();
    symlink(OsStr::from_bytes(b"caf\xe9"), on_host(b"l\xe9")).unwrap();

    // every name is listed, as its bytes
    let top = list(&mut guest, ".").await;
    let listed: Vec<&[u8]> = top.iter().map(|e| e.name.as_bytes()).collect();
    assert_eq!(listed, [&b"d\xfe"[..], b"l\xe9", b"plain.txt"]);
    assert_eq!(names(&top), ["d\\xfe", "l\\xe9", "plain.txt"]);
    assert_eq!(
        top[1].stat.link_target,
        Some(FsPath::from_bytes(b"caf\xe9".to_vec()))
    );
    let raw_dir = FsPath::from_bytes(b"d\xfe".to_vec());
    let inner = match guest
        .call(
            Request::FileList {
                path: raw_dir.clone(),
            },
            &[],
        )
        .await
        .unwrap()
        .0
    {
        Reply::DirEntries { entries } => entries,
        other => panic!("{other:?}"),
    };
    assert_eq!(inner.len(), 1);
    let file = raw_dir.join(inner[0].name.as_bytes());
    assert_eq!(file.as_bytes(), b"d\xfe/\xff.bin");

    // named again by the bytes the listing gave: read, stat, written, removed
    let read = Request::FileRead {
        path: file.clone(),
        offset: 0,
        len: None,
    };
    match guest.call(read, &[]).await.unwrap() {
        (Reply::FileData { size: 8, offset: 0 }, data) => assert_eq!(data, b"raw name"),
        other => panic!("{other:?}"),
    }
    match guest
        .call(Request::FileStat { path: file.clone() }, &[])
        .await
        .unwrap()
        .0
    {
        Reply::Stat(stat) => assert_eq!((stat.kind, stat.size), (FileKind::File, 8)),
        other => panic!("{other:?}"),
    }
    let rewrite = Request::FileWrite {
        path: file.clone(),
        mode: None,
        create_parents: false,
    };
    guest.call(rewrite, b"rewritten").await.unwrap();
    assert_eq!(
        std::fs::read(on_host(b"d\xfe/\xff.bin")).unwrap(),
        b"rewritten"
    );
    // search finds it, with the bytes to name it by
    let spec = SearchSpec {
        path: None,
        name_glob: Some("*.bin".into()),
        content: None,
        max_results: 10,
        max_file_bytes: None,
    };
    let (found, _) = search(&mut guest, spec).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, "d\\xfe/\\xff.bin");
    assert_eq!(
        FsPath::from_b64(found[0].path_bytes.as_deref().unwrap()).unwrap(),
        file
    );
    let remove = Request::Remove {
        path: raw_dir,
        recursive: true,
    };
    assert_eq!(guest.call(remove, &[]).await.unwrap().0, Reply::Ok);
    assert!(!on_host(b"d\xfe").exists());
}
