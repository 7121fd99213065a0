//! The control plane's row of a snapshot, built in one place so that what
//! it says of its archive means one thing whoever packed or checked it.

use paddock_core::blob::BlobInfo;
use paddock_core::ids::{SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::SandboxId;
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

/// Where a snapshot comes from, for its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotOrigin {
    pub tenant: TenantId,
    pub workspace: Option<WorkspaceId>,
    pub source_sandbox: Option<SandboxId>,
    pub session: Option<SessionId>,
    /// The snapshot the source was restored from.
    pub parent: Option<SnapshotId>,
}

impl SnapshotOrigin {
    /// A snapshot of `tenant` from nowhere in particular (an import).
    pub fn tenant(tenant: TenantId) -> Self {
        Self {
            tenant,
            workspace: None,
            source_sandbox: None,
            session: None,
            parent: None,
        }
    }
}

/// The row of a new snapshot (a fresh id) whose archive, holding `counts`,
/// was stored as `blob`, leaving out `excludes`.
pub fn snapshot_record(
    origin: SnapshotOrigin,
    counts: impl Into<ArchiveCounts>,
    blob: &BlobInfo,
    excludes: Vec<String>,
    created_at: Timestamp,
) -> SnapshotRecord {
    let counts = counts.into();
    SnapshotRecord {
        id: SnapshotId::generate(),
        tenant: origin.tenant,
        workspace: origin.workspace,
        source_sandbox: origin.source_sandbox,
        session: origin.session,
        parent: origin.parent,
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
        let mut origin = SnapshotOrigin::tenant(TenantId::parse("acme").unwrap());
        origin.session = Some(SessionId::generate());
        snapshot_record(
            origin,
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
            bytes_compressed: 321,
            excluded: 9,
            skipped: 4,
            key: pack.key.to_string(),
        };
        let unpack = UnpackStats {
            files: 2,
            dirs: 2,
            symlinks: 1,
            hardlinks: 1,
            bytes: 40,
            skipped_symlinks: Vec::new(),
        };
        for row in [record(&pack), record(&wire), record(&unpack)] {
            assert_eq!((row.file_count, row.bytes_raw), (6, 40), "{row:?}");
            assert_eq!(row.bytes_compressed, 321);
            assert_eq!(row.blob_hash, pack.key.to_string());
            assert_eq!(row.excludes, ["target"]);
            assert_eq!(row.created_at, Timestamp::from_millis(5));
            assert!(row.session.is_some() && row.workspace.is_none());
        }
    }
}
