//! Memory of a checked reading: the path state grows with the tree, not with
//! the sum of the entries' path lengths. One million entries under ~900-byte
//! paths (about 1 GB of path text) are read through the same checks a
//! restore makes, in a child process whose peak RSS (VmHWM) is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use paddock_snapshot::Limits;
use paddock_snapshot::archive::read_files;

const CHILD_ENV: &str = "PADDOCK_MEMORY_TEST_CHILD";
const LEAF_DIRS: usize = 1_000;
const FILES_PER_DIR: usize = 1_000;
/// Components above each leaf directory, each this long.
const DEPTH: usize = 6;
const COMPONENT: usize = 150;
/// Far below the ~1 GB the entries' paths take as text.
const MAX_PEAK_RSS: u64 = 384 << 20;

fn leaf_dir(i: usize) -> String {
    (0..DEPTH)
        .map(|level| format!("{i:04}-{level}-{}", "n".repeat(COMPONENT - 8)))
        .collect::<Vec<_>>()
        .join("/")
}

fn file_path(i: usize, j: usize) -> String {
    format!("{}/f{j:04}", leaf_dir(i))
}

/// Streams the archive (empty files, parents implied) into `out`.
fn write_archive(out: impl Write) {
    let encoder = zstd::stream::write::Encoder::new(out, 1).unwrap();
    let mut builder = tar::Builder::new(encoder);
    for i in 0..LEAF_DIRS {
        for j in 0..FILES_PER_DIR {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(0);
            header.set_mode(0o644);
            builder
                .append_data(&mut header, file_path(i, j), std::io::empty())
                .unwrap();
        }
    }
    builder.into_inner().unwrap().finish().unwrap();
}

fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// The child: reads the archive from stdin, prints its peak RSS.
fn child() {
    let limits = Limits {
        max_files: (LEAF_DIRS * (FILES_PER_DIR + DEPTH)) as u64,
        max_bytes: 1 << 20,
    };
    let wanted: BTreeSet<paddock_proto::FsPath> =
        [file_path(LEAF_DIRS - 1, FILES_PER_DIR - 1).into()]
            .into_iter()
            .collect();
    let before = peak_rss();
    let found = read_files(std::io::stdin().lock(), &limits, &wanted, 1).unwrap();
    assert_eq!(found.len(), 1, "the last file is read");
    println!("peak_rss_before={before} peak_rss_after={}", peak_rss());
}

/// This test's name as the harness lists it: its module path within the
/// test binary, then the function's name.
fn test_name() -> String {
    let name = "a_million_entries_with_long_paths_are_read_in_bounded_memory";
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    }
}

#[test]
fn a_million_entries_with_long_paths_are_read_in_bounded_memory() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child();
        return;
    }
    let mut reader = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test_name(), "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    write_archive(reader.stdin.take().unwrap());
    let mut output = String::new();
    reader
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut output)
        .unwrap();
    assert!(reader.wait().unwrap().success(), "{output}");
    let after: u64 = output
        .split_whitespace()
        .find_map(|field| field.strip_prefix("peak_rss_after="))
        .unwrap_or_else(|| panic!("no figure in {output:?}"))
        .parse()
        .unwrap();
    println!("{output}");
    assert!(
        after < MAX_PEAK_RSS,
        "peak RSS {after} bytes reading {} entries (bound {MAX_PEAK_RSS})",
        LEAF_DIRS * FILES_PER_DIR
    );
}
