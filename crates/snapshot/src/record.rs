//! The control plane's row of a snapshot, built in one place so that what
//! it says of its archive means one thing whoever packed or checked it.

use paddock_core::blob::BlobInfo;
use paddock_core::ids::{SnapshotId, TenantId};
use paddock_core::store::{SnapshotRecord, Timestamp};
use paddock_proto::SnapshotPackStats;

use crate::pack::PackStats;
use crate::unpack::UnpackStats;

/// What a snapshot's row records of its archive's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveCounts {
    /// Entries a restore of the archive creates, which its `max_files`
    /// limit counts ([`SnapshotRecord::file_count`]).
    pub entries: u64,
    /// File content before compression.
    pub bytes_raw: u64,
}

impl From<&PackStats> for ArchiveCounts {
    fn from(stats: &PackStats) -> Self {
        Self {
            entries: stats.entries(),
            bytes_raw: stats.bytes_raw,
        }
    }
}

/// A pack in a sandbox, as its guest reported it.
impl From<&SnapshotPackStats> for ArchiveCounts {
    fn from(stats: &SnapshotPackStats) -> Self {
        // The fields of [`PackStats::entries`], sent over the wire.
        Self {
            entries: stats.files + stats.dirs + stats.symlinks,
            bytes_raw: stats.bytes_raw,
        }
    }
}

/// An archive checked by restoring it (an import).
impl From<&UnpackStats> for ArchiveCounts {
    fn from(stats: &UnpackStats) -> Self {
        Self {
            entries: stats.entries(),
            bytes_raw: stats.bytes,
        }
    }
}

/// The row of a new snapshot of `tenant` (a fresh id) whose archive,
/// holding `counts`, was stored as `blob`, leaving out `excludes`. It names
/// no workspace, sandbox, session or parent: callers that have them set them
/// (`SnapshotRecord { session, ..snapshot_record(..) }`).
pub fn snapshot_record(
    tenant: TenantId,
    counts: impl Into<ArchiveCounts>,
    blob: &BlobInfo,
    excludes: Vec<String>,
    created_at: Timestamp,
) -> SnapshotRecord {
    let counts = counts.into();
    SnapshotRecord {
        id: SnapshotId::generate(),
        tenant,
        workspace: None,
        source_sandbox: None,
        session: None,
        parent: None,
        file_count: counts.entries,
        bytes_raw: counts.bytes_raw,
        bytes_compressed: blob.size,
        excludes,
        blob_hash: blob.key.to_string(),
        created_at,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::SystemTime;

    use paddock_core::blob::BlobKey;

    use super::*;

    fn blob() -> BlobInfo {
        BlobInfo {
            key: BlobKey::from_digest([7; 32]),
            size: 321,
            written: SystemTime::UNIX_EPOCH,
        }
    }

    fn record(counts: impl Into<ArchiveCounts>) -> SnapshotRecord {
        snapshot_record(
            TenantId::parse("acme").unwrap(),
            counts,
            &blob(),
            vec!["target".into()],
            Timestamp::from_millis(5),
        )
    }

    #[test]
    fn every_kind_of_statistics_counts_the_entries_a_restore_creates() {
        let pack = PackStats {
            files: 3,
            dirs: 2,
            symlinks: 1,
            bytes_raw: 40,
            bytes_compressed: 321,
            excluded: 9,
            skipped_total: 4,
            skipped: Vec::new(),
            key: BlobKey::from_digest([7; 32]),
        };
        let wire = SnapshotPackStats {
            files: 3,
            dirs: 2,
            symlinks: 1,
            bytes_raw: 40,
            ..SnapshotPackStats::default()
        };
        let unpack = UnpackStats {
            files: 2,
            dirs: 2,
            symlinks: 1,
            hardlinks: 1,
            bytes: 40,
        };
        for row in [record(&pack), record(&wire), record(&unpack)] {
            assert_eq!((row.file_count, row.bytes_raw), (6, 40), "{row:?}");
            assert_eq!(row.bytes_compressed, 321);
            assert_eq!(row.blob_hash, pack.key.to_string());
            assert_eq!(row.excludes, ["target"]);
            assert_eq!(row.created_at, Timestamp::from_millis(5));
            assert_eq!(row.tenant.as_str(), "acme");
            assert!(row.session.is_none() && row.workspace.is_none() && row.parent.is_none());
        }
    }
}
