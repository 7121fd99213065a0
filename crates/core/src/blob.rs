//! Blob store port: content-addressed storage of snapshot archives.
//!
//! A blob is an opaque byte stream (a tar + zstd archive) kept under the
//! sha256 digest of its bytes, its [`BlobKey`]. Every method blocks on I/O:
//! async callers run them in `spawn_blocking` (the writer and readers are
//! `Send`, so they can be moved there). Writes stream: [`BlobStore::writer`]
//! hands out a [`BlobWriter`] that hashes what passes through it and only
//! [`BlobWriter::commit`] makes the blob visible, under the digest it computed,
//! so a reader never sees a half-written blob and two concurrent puts of the
//! same content both succeed.
//!
//! A checkpoint stores a tenant's files in that tenant's part of the store
//! ([`BlobStore::tenant`]): content is de-duplicated within a part, never
//! across tenants, so whether a put found its content already stored (a
//! checkpoint's `new_blobs`) tells a tenant nothing of what others hold.
//!
//! Garbage collection is the caller's (only it knows which blobs its rows
//! name): [`BlobStore::delete_if_written_before`] removes a blob only if no
//! put of the same content committed since a cutoff, atomically with respect
//! to [`BlobWriter::commit`], so a put that is about to be recorded is never
//! lost to a concurrent collection that saw no row for it yet.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::ids::TenantId;

/// Length of a key: a sha256 digest in hex.
pub const BLOB_KEY_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid blob key {value:?}: expected 64 lowercase hex digits (a sha256 digest)")]
pub struct InvalidBlobKey {
    pub value: String,
}

/// The sha256 digest of a blob's bytes in lowercase hex; validated on
/// construction, so it is always safe to use as a file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BlobKey(String);

impl BlobKey {
    pub fn parse(value: &str) -> Result<Self, InvalidBlobKey> {
        let valid = value.len() == BLOB_KEY_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if valid {
            Ok(Self(value.to_owned()))
        } else {
            Err(InvalidBlobKey {
                value: value.to_owned(),
            })
        }
    }

    /// The key of a finished sha256 digest.
    pub fn from_digest(digest: [u8; 32]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(BLOB_KEY_LEN);
        for byte in digest {
            hex.push(char::from(HEX[usize::from(byte >> 4)]));
            hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for BlobKey {
    type Err = InvalidBlobKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for BlobKey {
    type Error = InvalidBlobKey;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<BlobKey> for String {
    fn from(key: BlobKey) -> Self {
        key.0
    }
}

/// A stored blob: its key, its size in bytes and when it was last written
/// (created, or committed again with the same content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobInfo {
    pub key: BlobKey,
    pub size: u64,
    pub written: SystemTime,
}

/// An open blob. Reading it stays valid even if the blob is deleted meanwhile.
pub struct BlobReader {
    pub size: u64,
    pub reader: Box<dyn Read + Send>,
}

impl fmt::Debug for BlobReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobReader")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl Read for BlobReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }
}

/// A blob being written. Dropping it without [`BlobWriter::commit`] discards
/// everything written so far.
pub trait BlobWriter: Write + Send {
    /// Makes the blob durable and visible under the digest of the bytes
    /// written, and sets its written time to now, also when a blob with the
    /// same content was already there.
    fn commit(self: Box<Self>) -> Result<BlobInfo, BlobError>;
}

/// Content-addressed storage of snapshot archives (a local directory by default).
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Starts writing a new blob.
    fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError>;

    /// Stores everything `data` yields and returns its key and size.
    fn put(&self, data: &mut dyn Read) -> Result<BlobInfo, BlobError> {
        let mut writer = self.writer()?;
        io::copy(data, &mut writer).map_err(|source| BlobError::Put { source })?;
        writer.commit()
    }

    /// Opens a blob for reading ([`BlobError::NotFound`] if there is none).
    fn open(&self, key: &BlobKey) -> Result<BlobReader, BlobError>;

    /// The size of a blob, or `None` if there is none.
    fn size(&self, key: &BlobKey) -> Result<Option<u64>, BlobError>;

    fn exists(&self, key: &BlobKey) -> Result<bool, BlobError> {
        Ok(self.size(key)?.is_some())
    }

    /// Removes a blob; `false` if there was none. Readers that already opened
    /// it keep reading the old bytes.
    fn delete(&self, key: &BlobKey) -> Result<bool, BlobError>;

    /// Removes a blob only if it was last written before `cutoff`; `false`
    /// if it was written since (or there is none). Atomic with respect to
    /// [`BlobWriter::commit`]: a commit either lands before the check (and
    /// the blob is kept) or after the removal (and the blob is back).
    /// Readers that already opened it keep reading the old bytes.
    fn delete_if_written_before(
        &self,
        key: &BlobKey,
        cutoff: SystemTime,
    ) -> Result<bool, BlobError>;

    /// Every stored blob, in key order (of this part only: not those of
    /// the tenants' parts, [`BlobStore::tenant`]).
    fn list(&self) -> Result<Vec<BlobInfo>, BlobError>;

    /// The part of the store that holds `tenant`'s checkpoint files, made
    /// on its first write. Content is de-duplicated within the part only.
    /// Blobs stored before tenants had parts (in the store itself) stay
    /// readable: the part's [`BlobStore::open`] falls back to them, while
    /// its [`BlobStore::size`] and [`BlobStore::exists`] (what a capture asks
    /// before storing) answer for the part alone, so a capture stores its
    /// own copy. Called on a part, it answers as the whole store does.
    fn tenant(&self, tenant: &TenantId) -> std::sync::Arc<dyn BlobStore>;

    /// Bytes of disk this part's blobs take (blocks and inodes, as the
    /// tenant disk quota counts them); the whole store's when called on it.
    /// The default counts each blob's size.
    fn disk_usage(&self) -> Result<u64, BlobError> {
        Ok(self
            .list()?
            .iter()
            .fold(0u64, |sum, blob| sum.saturating_add(blob.size)))
    }

    /// The tenants that have a part, for the collection of unreferenced
    /// blobs (the whole store's, also when called on a part).
    fn tenants(&self) -> Result<Vec<TenantId>, BlobError>;
}

/// One blob store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("starting a blob write")]
    Begin {
        #[source]
        source: io::Error,
    },
    #[error("writing a blob")]
    Put {
        #[source]
        source: io::Error,
    },
    #[error("committing blob {key}")]
    Commit {
        key: BlobKey,
        #[source]
        source: io::Error,
    },
    #[error("blob {key} not found")]
    NotFound { key: BlobKey },
    #[error("opening blob {key}")]
    Open {
        key: BlobKey,
        #[source]
        source: io::Error,
    },
    #[error("reading the size of blob {key}")]
    Stat {
        key: BlobKey,
        #[source]
        source: io::Error,
    },
    #[error("deleting blob {key}")]
    Delete {
        key: BlobKey,
        #[source]
        source: io::Error,
    },
    #[error("listing blobs")]
    List {
        #[source]
        source: io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_lowercase_sha256_hex() {
        let key = BlobKey::from_digest([0xab; 32]);
        assert_eq!(key.as_str(), "ab".repeat(32));
        assert_eq!(BlobKey::parse(key.as_str()), Ok(key.clone()));
        assert_eq!(key.to_string().parse::<BlobKey>(), Ok(key));
    }

    #[test]
    fn path_tricks_and_malformed_keys_are_refused() {
        let too_short = "a".repeat(63);
        let upper = "A".repeat(64);
        let traversal = format!("../{}", "a".repeat(61));
        let slash = format!("{}/", "a".repeat(63));
        for bad in ["", "..", too_short.as_str(), &upper, &traversal, &slash] {
            assert!(BlobKey::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn serde_round_trip_validates() {
        let key = BlobKey::from_digest([7; 32]);
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(serde_json::from_str::<BlobKey>(&json).unwrap(), key);
        assert!(serde_json::from_str::<BlobKey>("\"../etc/passwd\"").is_err());
    }
}
