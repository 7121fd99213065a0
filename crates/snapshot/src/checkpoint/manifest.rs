//! A checkpoint's manifest: every path of the workspace with what it is
//! (a file by the key of its content, a directory, a symlink and its
//! target), its permission bits, and for files the stat a later capture
//! compares to decide whether to hash the file again.

use std::collections::{BTreeMap, BTreeSet};

use paddock_core::blob::BlobKey;
use paddock_proto::FsPath;
use serde::{Deserialize, Serialize};

use super::codec;
use crate::error::{Refusal, SnapshotError};
use crate::unpack::paths;

/// The format of [`Manifest`]'s stored form (3: compact binary, names and
/// symlink targets any bytes but NUL, see `codec.rs`); stored manifests of
/// version 2 (the same binary form, UTF-8 names only) and 1 (JSON) are read
/// too, one of any other version is refused.
pub const MANIFEST_VERSION: u32 = 3;

/// A workspace tree as one checkpoint saw it, keyed by `/`-separated path
/// from the root, as bytes: every name the kernel can hold, UTF-8 or not
/// (sorted by bytes, so a parent comes before its children).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// When the capture started, in nanoseconds since the Unix epoch.
    pub captured_at_ns: i64,
    pub entries: BTreeMap<FsPath, Entry>,
}

/// One path of a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(flatten)]
    pub node: Node,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    /// A file's stat when it was hashed; None: hash it again next time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<StatKey>,
}

/// What a path is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Node {
    /// A regular file, stored as the blob `hash` (the sha256 of its bytes).
    File {
        hash: BlobKey,
        size: u64,
    },
    Dir,
    Symlink {
        target: FsPath,
    },
}

/// The part of a file's stat that changes whenever its content can have:
/// a capture that finds it equal (and not racy) reuses the earlier hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatKey {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub dev: u64,
}

impl Manifest {
    pub fn new(captured_at_ns: i64) -> Self {
        Self {
            version: MANIFEST_VERSION,
            captured_at_ns,
            entries: BTreeMap::new(),
        }
    }

    /// The manifest's stored form (version [`MANIFEST_VERSION`], binary).
    pub fn to_bytes(&self) -> Vec<u8> {
        codec::encode(self)
    }

    /// Reads a stored manifest (of the current version, or JSON of
    /// version 1) and checks it ([`Manifest::validate`]): a manifest comes back from
    /// the blob store, which is not trusted to be what this code wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let manifest = codec::decode(bytes)?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Refuses a manifest a restore could not apply safely: a version this
    /// code does not know, a path that is not relative and canonical (`..`,
    /// absolute, empty or `.` components, NUL, over-long names), an entry
    /// whose parent is not a directory of the manifest, a bad symlink target
    /// or mode bits beyond `0o7777`.
    pub fn validate(&self) -> Result<(), SnapshotError> {
        if self.version != MANIFEST_VERSION {
            return Err(SnapshotError::ManifestVersion {
                version: self.version,
            });
        }
        for (path, entry) in &self.entries {
            let refused = |reason| SnapshotError::Refused {
                entry: path.display(),
                reason,
            };
            let components = paths::components(path.as_bytes()).map_err(refused)?;
            if components.is_empty() {
                return Err(refused(Refusal::EmptyPath));
            }
            if components.join(&b'/') != path.as_bytes() {
                return Err(refused(Refusal::NotCanonical));
            }
            if let Some(slash) = path.as_bytes().iter().rposition(|b| *b == b'/') {
                let parent = &path.as_bytes()[..slash];
                match self.entries.get(parent).map(|e| &e.node) {
                    Some(Node::Dir) => {}
                    Some(Node::Symlink { .. }) => {
                        return Err(refused(Refusal::ThroughSymlink {
                            link: paddock_proto::escape_path(parent),
                        }));
                    }
                    _ => return Err(refused(Refusal::ThroughNonDirectory)),
                }
            }
            if let Node::Symlink { target } = &entry.node {
                paths::check_symlink_target(target.as_bytes()).map_err(refused)?;
            }
            if entry.mode & !0o7777 != 0 {
                return Err(refused(Refusal::BadMode { mode: entry.mode }));
            }
        }
        Ok(())
    }

    /// The blobs the manifest's files are stored as.
    pub fn blob_keys(&self) -> BTreeSet<BlobKey> {
        self.entries
            .values()
            .filter_map(|entry| match &entry.node {
                Node::File { hash, .. } => Some(hash.clone()),
                _ => None,
            })
            .collect()
    }

    /// Bytes of file content, all files together.
    pub fn file_bytes(&self) -> u64 {
        self.entries
            .values()
            .map(|entry| match &entry.node {
                Node::File { size, .. } => *size,
                _ => 0,
            })
            .sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn file(byte: u8) -> Entry {
        Entry {
            node: Node::File {
                hash: BlobKey::from_digest([byte; 32]),
                size: 1,
            },
            mode: 0o644,
            stat: None,
        }
    }

    fn dir() -> Entry {
        Entry {
            node: Node::Dir,
            mode: 0o755,
            stat: None,
        }
    }

    fn with(entries: &[(&str, Entry)]) -> Manifest {
        let mut manifest = Manifest::new(0);
        for (path, entry) in entries {
            manifest.entries.insert((*path).into(), entry.clone());
        }
        manifest
    }

    #[test]
    fn a_manifest_round_trips_through_its_stored_form() {
        let manifest = with(&[("a", dir()), ("a/b.txt", file(1))]);
        let back = Manifest::from_bytes(&manifest.to_bytes()).unwrap();
        assert_eq!(back, manifest);
    }

    #[test]
    fn hostile_paths_are_refused() {
        for path in [
            "../x",
            "/etc/passwd",
            "a/../../x",
            "./a",
            "a//b",
            "a/",
            "",
            "a\0b",
        ] {
            let manifest = with(&[(path, file(1))]);
            let err = manifest.validate().unwrap_err();
            assert!(
                matches!(err, SnapshotError::Refused { .. }),
                "{path:?}: {err}"
            );
        }
    }

    #[test]
    fn an_entry_needs_a_directory_of_the_manifest_as_its_parent() {
        let orphan = with(&[("a/b", file(1))]);
        assert!(orphan.validate().is_err());
        let link = Entry {
            node: Node::Symlink {
                target: "/etc".into(),
            },
            mode: 0o777,
            stat: None,
        };
        let through_link = with(&[("a", link), ("a/passwd", file(1))]);
        let err = through_link.validate().unwrap_err();
        assert!(err.to_string().contains("a/passwd"), "{err}");
        let mut other = with(&[("a", dir())]);
        other.version = 9;
        assert!(matches!(
            other.validate(),
            Err(SnapshotError::ManifestVersion { version: 9 })
        ));
    }
}
