//! Workspace snapshots: export a running sandbox's workspace into the blob
//! store, restore (or fork) a snapshot into fresh sandboxes, move archives
//! in and out (download, import), and collect blobs no snapshot names.
//!
//! Archives stream through bounded pipes between the guest connection (or
//! the HTTP body) and the blocking blob store; none is held whole in memory.
//!
//! Blob collection: deleting a row removes its blob when no row of any
//! tenant names it and it was last written more than `blob_grace` ago; a
//! sweeper removes the younger ones later. Recording a snapshot commits its
//! blob (which sets its written time to now) before inserting the row, and
//! the blob store checks the written time and unlinks atomically with
//! respect to commits, so a collection that found no row for a blob never
//! removes one a concurrent snapshot of the same content is recording.
//! Restores and downloads read from an open file, which outlives an unlink.
//!
//! Parts: `create` (taking one), `catalog` (list, get, delete), `restore`
//! (and fork, reading a blob once through `shared`), `archive` (download,
//! import), `sweep` (blob collection); the request and answer types and the
//! helpers they share are here.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use paddock_core::blob::{BlobError, BlobKey, BlobReader, BlobStore, BlobWriter};
use paddock_core::ids::{SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::sandbox::{SandboxId, SnapshotExportOptions, SnapshotImportOptions};
use paddock_core::store::{SandboxRecord, SnapshotFilter, SnapshotRecord, StoreError};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, DuplexStream};
use tokio::task::JoinHandle;
use tokio_util::io::SyncIoBridge;

use super::commands::{CreateSandbox, CreateWorkspace, LimitsRequest};
use super::{SandboxService, SandboxView, ServiceError, destroy_quietly};
use paddock_proto::{NetworkPolicy, error_chain};
use paddock_snapshot::{DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, SnapshotError, snapshot_record};

mod archive;
mod catalog;
mod create;
mod restore;
mod shared;
mod sweep;

use super::page;
use shared::SharedArchive;

/// Bytes buffered between the async and the blocking side of a transfer.
const PIPE_BYTES: usize = 1 << 20;
/// Bytes moved per read on the blocking side: each crossing of the bridge
/// wakes the other side, so few large ones (std's copy moves 8 KiB).
const COPY_BYTES: usize = 256 * 1024;
/// Most sandboxes one restore (fork) makes.
pub const MAX_RESTORE_COUNT: u32 = 16;
/// Highest `max_files` a snapshot or an import may ask for.
pub const MAX_SNAPSHOT_FILES: u64 = paddock_snapshot::MAX_REQUEST_FILES;
/// Highest `max_bytes` (file content before compression) a snapshot or an
/// import may ask for; an import unpacks into a scratch directory on the host.
pub const MAX_SNAPSHOT_BYTES: u64 = paddock_snapshot::MAX_REQUEST_BYTES;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSnapshot {
    /// Patterns left out, added to the defaults (node_modules, target, ...).
    #[serde(default)]
    pub excludes: Vec<String>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_files: Option<u64>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 8589934592_u64)]
    pub max_bytes: Option<u64>,
    /// The agent session the snapshot belongs to, recorded on its row.
    #[serde(default)]
    pub session: Option<SessionId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreSnapshot {
    /// How many sandboxes to make (more than one is a fork).
    #[serde(default = "one")]
    #[schema(minimum = 1, maximum = 16)]
    pub count: u32,
    #[serde(default)]
    pub limits: LimitsRequest,
    #[serde(default)]
    pub network: NetworkPolicy,
    /// The sandboxes' workspaces are read-only (the restore itself writes
    /// them before the sandboxes start).
    #[serde(default)]
    pub read_only: bool,
    /// The backend of the new sandboxes (as in `CreateSandbox`).
    #[serde(default)]
    pub backend: Option<String>,
    /// Their image (as in `CreateSandbox`).
    #[serde(default)]
    pub image: Option<String>,
}

fn one() -> u32 {
    1
}

impl Default for RestoreSnapshot {
    fn default() -> Self {
        Self {
            count: 1,
            limits: LimitsRequest::default(),
            network: NetworkPolicy::default(),
            read_only: false,
            backend: None,
            image: None,
        }
    }
}

/// Limits of an imported archive's check; each missing one is the snapshot default.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams,
)]
#[serde(deny_unknown_fields)]
pub struct ImportSnapshot {
    #[serde(default)]
    pub max_files: Option<u64>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SnapshotView {
    pub id: SnapshotId,
    pub workspace: Option<WorkspaceId>,
    pub source_sandbox: Option<SandboxId>,
    pub session: Option<SessionId>,
    /// The snapshot the source sandbox was restored from.
    pub parent: Option<SnapshotId>,
    /// Entries a restore of the archive creates: what `max_files` counts
    /// (see [`SnapshotRecord::file_count`]).
    pub file_count: u64,
    pub bytes_raw: u64,
    pub bytes_compressed: u64,
    pub excludes: Vec<String>,
    /// sha256 of the archive, its key in the blob store.
    pub blob_hash: String,
    pub created_at: String,
}

impl From<&SnapshotRecord> for SnapshotView {
    fn from(r: &SnapshotRecord) -> Self {
        Self {
            id: r.id.clone(),
            workspace: r.workspace.clone(),
            source_sandbox: r.source_sandbox.clone(),
            session: r.session.clone(),
            parent: r.parent.clone(),
            file_count: r.file_count,
            bytes_raw: r.bytes_raw,
            bytes_compressed: r.bytes_compressed,
            excludes: r.excludes.clone(),
            blob_hash: r.blob_hash.clone(),
            created_at: r.created_at.to_string(),
        }
    }
}

/// A snapshot's archive being downloaded: `size` bytes read from `body`.
#[derive(Debug)]
pub struct SnapshotArchive {
    pub size: u64,
    pub body: DuplexStream,
}

/// What one sweep of the blob store did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct BlobSweep {
    /// Blobs old enough to be collected, checked for rows naming them.
    pub checked: u64,
    pub removed: u64,
    pub bytes_freed: u64,
}
impl SandboxService {
    fn blobs(&self) -> Result<Arc<dyn BlobStore>, ServiceError> {
        self.config
            .blobs
            .clone()
            .ok_or(ServiceError::SnapshotsUnavailable)
    }

    async fn snapshot_record(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
    ) -> Result<SnapshotRecord, ServiceError> {
        self.store
            .get_snapshot(tenant, id)
            .await
            .map_err(ServiceError::store("get_snapshot"))
    }
}

/// Limits a caller may set on a snapshot or an import: at least 1, at most the ceilings.
pub(super) fn check_limits(
    max_files: Option<u64>,
    max_bytes: Option<u64>,
) -> Result<(), ServiceError> {
    for (field, value, ceiling) in [
        ("max_files", max_files, MAX_SNAPSHOT_FILES),
        ("max_bytes", max_bytes, MAX_SNAPSHOT_BYTES),
    ] {
        if let Some(value) = value
            && !(1..=ceiling).contains(&value)
        {
            return Err(ServiceError::invalid(
                field,
                format!("expected 1 to {ceiling}"),
            ));
        }
    }
    Ok(())
}

/// Limits of restoring a recorded snapshot: what it holds, and at least the defaults.
fn import_limits(snapshot: &SnapshotRecord) -> SnapshotImportOptions {
    SnapshotImportOptions {
        max_files: Some(snapshot.file_count.max(DEFAULT_MAX_FILES)),
        max_bytes: Some(snapshot.bytes_raw.max(DEFAULT_MAX_BYTES)),
    }
}

pub(super) fn unpack_options(
    max_files: Option<u64>,
    max_bytes: Option<u64>,
) -> paddock_snapshot::UnpackOptions {
    let defaults = paddock_snapshot::UnpackOptions::default();
    let limits = paddock_snapshot::Limits {
        max_files: max_files.unwrap_or(defaults.limits.max_files),
        max_bytes: max_bytes.unwrap_or(defaults.limits.max_bytes),
    };
    paddock_snapshot::UnpackOptions {
        limits,
        max_file_bytes: defaults.max_file_bytes.max(limits.max_bytes),
        ..defaults
    }
}

/// A blocking task that panicked or was cancelled.
fn joined(op: &'static str) -> impl FnOnce(tokio::task::JoinError) -> ServiceError {
    move |e| ServiceError::Blob {
        op,
        source: BlobError::Put {
            source: io::Error::other(e),
        },
    }
}

/// Copies everything `data` yields into a new, uncommitted blob of at most
/// `max` bytes of disk ([`paddock_snapshot::disk::estimate`]); more fails
/// with [`BlobError::Put`] of kind `FileTooLarge` (and the blob is dropped).
fn write_blob(
    blobs: &dyn BlobStore,
    data: impl Read,
    max: u64,
) -> Result<Box<dyn BlobWriter>, BlobError> {
    let mut writer = blobs.writer()?;
    let allowed = max.saturating_sub(paddock_snapshot::disk::INODE_BYTES)
        / paddock_snapshot::disk::BLOCK_BYTES
        * paddock_snapshot::disk::BLOCK_BYTES;
    let mut data = data.take(allowed.saturating_add(1));
    let copied = copy(&mut data, &mut writer).map_err(|source| BlobError::Put { source })?;
    if copied > allowed {
        return Err(BlobError::Put {
            source: io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("more than the {allowed} bytes the tenant disk quota leaves"),
            ),
        });
    }
    Ok(writer)
}

/// A blob write that failed; over the quota when `write_blob` said so.
fn over_quota(source: BlobError, disk: &super::disk_quota::DiskUse, what: &str) -> ServiceError {
    match &source {
        BlobError::Put { source: e } if e.kind() == io::ErrorKind::FileTooLarge => {
            disk.exceeded(format!("{what}: {e}; nothing was kept"))
        }
        _ => ServiceError::Blob { op: "put", source },
    }
}

/// `io::copy` in [`COPY_BYTES`] pieces.
fn copy(from: &mut impl Read, to: &mut (impl io::Write + ?Sized)) -> io::Result<u64> {
    let mut buf = vec![0u8; COPY_BYTES];
    let mut copied = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(copied),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        copied += n as u64;
    }
}

/// The record's blob key; the store only ever holds valid ones.
fn blob_key(record: &SnapshotRecord) -> Result<BlobKey, ServiceError> {
    BlobKey::parse(&record.blob_hash).map_err(|source| ServiceError::BadBlobKey {
        id: record.id.to_string(),
        source,
    })
}
