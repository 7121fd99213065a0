//! Helpers shared by the snapshot tests: tree snapshots for equality,
//! hand-built (hostile) archives, and checks that a failed restore left nothing.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use paddock_snapshot::{PackOptions, PackStats, pack};

/// Everything a round trip must keep about one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File {
        mode: u32,
        mtime: i64,
        content: Vec<u8>,
    },
    Dir {
        mode: u32,
        mtime: i64,
    },
    Symlink {
        target: Vec<u8>,
    },
}

/// Every entry under `root` (not the root itself), by path relative to it.
pub fn read_tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut nodes = BTreeMap::new();
    collect(root, root, &mut nodes);
    nodes
}

fn collect(root: &Path, dir: &Path, nodes: &mut BTreeMap<PathBuf, Node>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        let node = if meta.file_type().is_symlink() {
            Node::Symlink {
                target: fs::read_link(&path)
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec(),
            }
        } else if meta.is_dir() {
            collect(root, &path, nodes);
            Node::Dir {
                mode: meta.mode() & 0o7777,
                mtime: meta.mtime(),
            }
        } else {
            Node::File {
                mode: meta.mode() & 0o7777,
                mtime: meta.mtime(),
                content: fs::read(&path).unwrap(),
            }
        };
        nodes.insert(rel, node);
    }
}

pub fn pack_to_vec(root: &Path, opts: &PackOptions) -> (Vec<u8>, PackStats) {
    let mut archive = Vec::new();
    let stats = pack(root, opts, &mut archive).unwrap();
    (archive, stats)
}

/// Pack options with no excludes and room for big trees.
pub fn pack_everything() -> PackOptions {
    PackOptions {
        excludes: Vec::new(),
        limits: paddock_snapshot::Limits {
            max_files: 1_000_000,
            max_bytes: 1 << 40,
        },
        ..PackOptions::default()
    }
}

/// Names in `dir`, sorted (empty if it does not exist).
pub fn names(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A tar archive built entry by entry with raw headers, so that names the
/// tar crate's safe setters refuse (`..`, absolute) can be written.
#[derive(Default)]
pub struct RawTar {
    bytes: Vec<u8>,
}

pub const REGULAR: u8 = b'0';
pub const HARDLINK: u8 = b'1';
pub const SYMLINK: u8 = b'2';
pub const CHAR: u8 = b'3';
pub const BLOCK: u8 = b'4';
pub const DIR: u8 = b'5';
pub const FIFO: u8 = b'6';
pub const PAX: u8 = b'x';
pub const GNU_LONGNAME: u8 = b'L';

impl RawTar {
    pub fn new() -> Self {
        Self::default()
    }

    /// One entry: a header claiming `size` bytes followed by `data` (which
    /// may be shorter, to make a header lie), padded to a block.
    pub fn entry(mut self, kind: u8, path: &[u8], link: &[u8], size: u64, data: &[u8]) -> Self {
        let mut header = tar::Header::new_gnu();
        {
            let old = header.as_old_mut();
            old.name[..path.len()].copy_from_slice(path);
            old.linkname[..link.len()].copy_from_slice(link);
        }
        header.set_entry_type(tar::EntryType::new(kind));
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(1_600_000_000);
        header.set_cksum();
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0, pad));
        self
    }

    pub fn file(self, path: &[u8], data: &[u8]) -> Self {
        self.entry(REGULAR, path, b"", data.len() as u64, data)
    }

    pub fn dir(self, path: &[u8]) -> Self {
        self.entry(DIR, path, b"", 0, b"")
    }

    pub fn symlink(self, path: &[u8], target: &[u8]) -> Self {
        self.entry(SYMLINK, path, target, 0, b"")
    }

    pub fn hardlink(self, path: &[u8], target: &[u8]) -> Self {
        self.entry(HARDLINK, path, target, 0, b"")
    }

    /// A pax extended header with the given records.
    pub fn pax(self, records: &[(&str, &[u8])]) -> Self {
        let mut data = Vec::new();
        for (key, value) in records {
            // "<len> <key>=<value>\n" where len counts itself.
            let body = key.len() + value.len() + 3;
            let mut len = body + body.to_string().len();
            if len.to_string().len() != body.to_string().len() {
                len += 1;
            }
            data.extend_from_slice(format!("{len} {key}=").as_bytes());
            data.extend_from_slice(value);
            data.push(b'\n');
        }
        let size = data.len() as u64;
        self.entry(PAX, b"PaxHeaders/x", b"", size, &data)
    }

    /// The archive with its end-of-archive marker.
    pub fn finish(mut self) -> Vec<u8> {
        self.bytes.extend(std::iter::repeat_n(0, 1024));
        self.bytes
    }

    /// Without the end-of-archive marker.
    pub fn unterminated(self) -> Vec<u8> {
        self.bytes
    }
}

pub fn zstd(tar: &[u8]) -> Vec<u8> {
    zstd::encode_all(tar, 3).unwrap()
}
