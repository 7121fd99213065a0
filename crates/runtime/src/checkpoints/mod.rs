//! Per-turn checkpoints: a run records its workspace (a manifest of
//! content-addressed files, see [`paddock_snapshot::checkpoint`]) with the
//! session's position (last message, event and plan version) before it
//! starts and after every tool batch that changed the workspace. A rewind
//! puts a session's workspace and history back to one, as a new run; a fork
//! starts a new session from one; a diff says what changed between two.
//!
//! Checkpoints are taken on the host over the workspace directory, which
//! every backend shares with its sandbox (a bind mount for native, docker
//! and gVisor; 9p for a microVM), while the run's tools are not running.

pub(crate) mod collect_lock;
mod ops;
mod retention;
mod rewind;
mod safety;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use paddock_core::blob::{BlobKey, BlobStore};
use paddock_core::ids::{CheckpointId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{Checkpoint, CheckpointReason, Lease, Store, StoredMessage};
use paddock_snapshot::checkpoint::{CaptureOptions, DiskBudget, Manifest};
use paddock_snapshot::{Limit, SnapshotError};

use crate::error::RuntimeError;
use crate::events::{CheckpointCreated, CheckpointsPruned};
use crate::util::error_chain;

pub use ops::{CheckpointDiff, FileChange};
pub(crate) use retention::Storage;
pub use rewind::Rewound;
pub(crate) use safety::{Baseline, Guarded, guard, name_paths};

/// Largest manifest read back from the blob store.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// Takes a run's checkpoints, remembering the last manifest so the next
/// capture hashes only what changed.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    store: Arc<dyn Store>,
    blobs: Arc<dyn BlobStore>,
    tenant: TenantId,
    session: SessionId,
    run: RunId,
    workspace: WorkspaceId,
    dir: PathBuf,
    options: CaptureOptions,
    last: Option<Arc<Manifest>>,
    /// The quota, the retention cap and the tenant's blob lock; None:
    /// unbounded (only tests build one without).
    storage: Option<Storage>,
}

/// Where a checkpointer works.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) tenant: TenantId,
    pub(crate) session: SessionId,
    pub(crate) run: RunId,
    pub(crate) workspace: WorkspaceId,
    pub(crate) dir: PathBuf,
}

impl Checkpointer {
    /// Starts from the session's latest checkpoint of this workspace when
    /// it has one (a failure to read it only costs hashing everything once).
    /// Files go to the tenant's part of `blobs` ([`BlobStore::tenant`]).
    pub(crate) async fn new(
        store: &Arc<dyn Store>,
        blobs: &Arc<dyn BlobStore>,
        options: CaptureOptions,
        place: Place,
    ) -> Self {
        let blobs = &blobs.tenant(&place.tenant);
        let last = match latest_of_workspace(store, &place.tenant, &place.session, &place.workspace)
            .await
        {
            Ok(Some(checkpoint)) => match load_manifest(blobs, &checkpoint.manifest_hash).await {
                Ok(manifest) => Some(Arc::new(manifest)),
                Err(err) => {
                    tracing::warn!(error = %error_chain(&err), "reading the last checkpoint's manifest");
                    None
                }
            },
            Ok(None) => None,
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "finding the session's last checkpoint");
                None
            }
        };
        Self {
            store: Arc::clone(store),
            blobs: Arc::clone(blobs),
            tenant: place.tenant,
            session: place.session,
            run: place.run,
            workspace: place.workspace,
            dir: place.dir,
            options,
            last,
            storage: None,
        }
    }

    /// Holds the checkpointer's captures to `storage`'s quota and cap.
    pub(crate) fn with_storage(mut self, storage: Storage) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Prunes the session's checkpoints past the per-session cap (fenced by
    /// `lease`), then collects the tenant's blobs no checkpoint names; None
    /// when the session was within its cap.
    pub(crate) async fn prune(
        &self,
        lease: &Lease,
    ) -> Result<Option<CheckpointsPruned>, RuntimeError> {
        let Some(storage) = &self.storage else {
            return Ok(None);
        };
        retention::prune(
            &self.store,
            &self.blobs,
            storage,
            lease,
            &self.tenant,
            &self.session,
        )
        .await
    }

    /// The manifest the next capture compares with (None: the session had
    /// no checkpoint of the workspace, or it could not be read).
    pub(crate) fn last(&self) -> Option<&Manifest> {
        self.last.as_deref()
    }

    /// Sets the manifest the next capture compares with.
    pub(crate) fn set_last(&mut self, manifest: Arc<Manifest>) {
        self.last = Some(manifest);
    }

    /// Records a checkpoint (fenced by `lease`, the session's), or nothing
    /// for a tool batch after which the tree is what the last one recorded.
    pub(crate) async fn take(
        &mut self,
        lease: &Lease,
        reason: CheckpointReason,
    ) -> Result<Option<(Checkpoint, CheckpointCreated)>, RuntimeError> {
        let Some(capture) = self.capture(reason).await? else {
            return Ok(None);
        };
        self.record(lease, capture).await.map(Some)
    }

    /// Records `capture` (fenced by `lease`, the session's); the next
    /// capture compares with it.
    pub(crate) async fn record(
        &mut self,
        lease: &Lease,
        capture: Capture,
    ) -> Result<(Checkpoint, CheckpointCreated), RuntimeError> {
        let stored = self
            .store
            .create_checkpoint(lease, &capture.row, &capture.blobs)
            .await
            .map_err(RuntimeError::store("create_checkpoint"))?;
        Ok(self.recorded(capture, stored))
    }

    /// Appends `message` (a tool batch's results) and records the
    /// checkpoint of `capture` at the position that includes it, in one
    /// write (see run/resume.rs for why).
    pub(crate) async fn record_with_message(
        &mut self,
        lease: &Lease,
        message: &StoredMessage,
        capture: Capture,
    ) -> Result<CheckpointCreated, RuntimeError> {
        let (_, stored) = self
            .store
            .append_message_with_checkpoint(lease, message, &capture.row, &capture.blobs)
            .await
            .map_err(RuntimeError::store("append_message_with_checkpoint"))?;
        Ok(self.recorded(capture, stored).1)
    }

    /// Captures the workspace for a checkpoint, its new files stored in the
    /// blob store; None for a tool batch after which the tree is what the
    /// last one recorded. Nothing is recorded yet.
    pub(crate) async fn capture(
        &mut self,
        reason: CheckpointReason,
    ) -> Result<Option<Capture>, RuntimeError> {
        let started = Instant::now();
        // held until the row is written: the collection keeps what it names
        let hold = collect_lock::capturing(&self.tenant)
            .await
            .ok_or(RuntimeError::CheckpointsBusy)?;
        let mut options = self.options.clone();
        let guard = self.storage.as_ref().and_then(|s| s.guard.clone());
        let disk = match &guard {
            Some(guard) => {
                let disk = guard
                    .disk_use(&self.tenant)
                    .await
                    .map_err(|reason| RuntimeError::DiskUse { reason })?;
                if disk.left() == 0 {
                    return Err(quota_error(disk, "a checkpoint".to_owned()));
                }
                options.disk_budget = Some(Arc::new(DiskBudget::new(disk.left())));
                Some(disk)
            }
            None => None,
        };
        let captured = capture_stored(&self.blobs, &self.dir, self.last.clone(), options).await;
        if let Some(guard) = &guard {
            guard.changed(&self.tenant);
        }
        let captured = match (captured, disk) {
            (Ok(captured), _) => captured,
            (
                Err(RuntimeError::Checkpoint {
                    source:
                        SnapshotError::OverLimit {
                            limit: Limit::Disk(_),
                            path,
                        },
                    ..
                }),
                Some(disk),
            ) => {
                // what it stored before it stopped is named by nothing
                drop(hold);
                if let Some(storage) = &self.storage
                    && let Err(err) =
                        retention::collect(&self.store, &self.blobs, storage, &self.tenant).await
                {
                    tracing::warn!(error = %error_chain(&err), "collecting a refused checkpoint's blobs");
                }
                return Err(quota_error(
                    disk,
                    format!("the new files of a checkpoint (at {path})"),
                ));
            }
            (Err(err), _) => return Err(err),
        };
        let Captured {
            manifest,
            stats,
            manifest_key,
        } = captured;
        if reason == CheckpointReason::ToolBatch
            && self
                .last
                .as_deref()
                .is_some_and(|last| same_tree(last, &manifest))
        {
            self.last = Some(Arc::new(manifest));
            return Ok(None);
        }
        let mut blobs: Vec<String> = stats.new_blobs.iter().map(|b| b.key.to_string()).collect();
        blobs.push(manifest_key.to_string());
        let row = Checkpoint {
            id: CheckpointId::generate(),
            tenant: self.tenant.clone(),
            session: self.session.clone(),
            run: self.run.clone(),
            workspace: self.workspace.clone(),
            reason,
            message_seq: 0,
            event_seq: 0,
            plan_version: 0,
            manifest_hash: manifest_key.to_string(),
            file_count: stats.files,
            bytes: stats.bytes,
            new_blobs: stats.new_blobs.len() as u64,
            new_bytes: stats.new_bytes(),
            created_at: self.store.now(),
        };
        Ok(Some(Capture {
            row,
            blobs,
            manifest,
            hashed_files: stats.hashed_files,
            started,
            _hold: hold,
        }))
    }

    /// The capture is on record as `stored`: the next one compares with it.
    fn recorded(
        &mut self,
        capture: Capture,
        stored: Checkpoint,
    ) -> (Checkpoint, CheckpointCreated) {
        self.last = Some(Arc::new(capture.manifest));
        let event = CheckpointCreated {
            checkpoint_id: stored.id.clone(),
            reason: stored.reason,
            files: stored.file_count,
            bytes: stored.bytes,
            new_blobs: stored.new_blobs,
            new_bytes: stored.new_bytes,
            hashed_files: capture.hashed_files,
            duration_ms: u64::try_from(capture.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        tracing::debug!(
            checkpoint_id = %stored.id,
            reason = %stored.reason,
            new_blobs = stored.new_blobs,
            hashed_files = capture.hashed_files,
            "checkpoint taken"
        );
        (stored, event)
    }
}

/// A captured workspace not recorded yet ([`Checkpointer::capture`]).
#[derive(Debug)]
pub(crate) struct Capture {
    row: Checkpoint,
    blobs: Vec<String>,
    manifest: Manifest,
    hashed_files: u64,
    started: Instant,
    /// Keeps the tenant's blob collection out until the row is written
    /// ([`collect_lock`]).
    _hold: tokio::sync::OwnedRwLockReadGuard<()>,
}

/// The refusal of a capture that does not fit what the quota leaves.
fn quota_error(disk: crate::config::DiskUse, what: String) -> RuntimeError {
    RuntimeError::DiskQuota {
        quota: disk.quota,
        usage: disk.usage,
        what,
    }
}

/// Whether two manifests record the same tree (stat aside).
fn same_tree(a: &Manifest, b: &Manifest) -> bool {
    a.entries.len() == b.entries.len()
        && a.entries
            .iter()
            .zip(&b.entries)
            .all(|((pa, ea), (pb, eb))| pa == pb && ea.node == eb.node && ea.mode == eb.mode)
}

/// A capture whose files and manifest are all in the blob store.
pub(crate) struct Captured {
    pub(crate) manifest: Manifest,
    pub(crate) stats: paddock_snapshot::checkpoint::CaptureStats,
    pub(crate) manifest_key: BlobKey,
}

/// Captures `dir` against `previous`, storing new file contents and the
/// manifest itself.
pub(crate) async fn capture_stored(
    blobs: &Arc<dyn BlobStore>,
    dir: &std::path::Path,
    previous: Option<Arc<Manifest>>,
    options: CaptureOptions,
) -> Result<Captured, RuntimeError> {
    let blobs = Arc::clone(blobs);
    let path = dir.to_path_buf();
    blocking(format!("checkpointing {}", dir.display()), move || {
        let (manifest, stats) = paddock_snapshot::checkpoint::capture(
            &path,
            previous.as_deref(),
            &options,
            Some(blobs.as_ref()),
        )
        .map_err(|source| RuntimeError::Checkpoint {
            path: path.clone(),
            source,
        })?;
        let manifest_key = put_bytes(blobs.as_ref(), &manifest.to_bytes())?;
        Ok(Captured {
            manifest,
            stats,
            manifest_key,
        })
    })
    .await
}

/// Stores `bytes` (a manifest) as a blob; returns their key. The writer
/// hashes what passes through it, so the bytes are hashed once: a manifest
/// records when it was captured, so the store never has it already (and a
/// put of content the store has is harmless anyway).
fn put_bytes(blobs: &dyn BlobStore, bytes: &[u8]) -> Result<BlobKey, RuntimeError> {
    let blob_err = |what: &'static str| {
        move |source| RuntimeError::Blob {
            what: format!("{what} manifest"),
            source,
        }
    };
    let mut writer = blobs.writer().map_err(blob_err("write"))?;
    std::io::Write::write_all(&mut writer, bytes).map_err(|e| RuntimeError::Blob {
        what: "write manifest".to_owned(),
        source: paddock_core::blob::BlobError::Put { source: e },
    })?;
    let info = writer.commit().map_err(blob_err("commit"))?;
    Ok(info.key)
}

/// The manifest stored as `hash`, checked.
pub(crate) async fn load_manifest(
    blobs: &Arc<dyn BlobStore>,
    hash: &str,
) -> Result<Manifest, RuntimeError> {
    let key = BlobKey::parse(hash).map_err(|e| RuntimeError::Invalid {
        reason: format!("checkpoint manifest: {e}"),
    })?;
    let bytes = read_blob(blobs, &key, MAX_MANIFEST_BYTES).await?;
    Manifest::from_bytes(&bytes).map_err(|source| RuntimeError::Checkpoint {
        path: PathBuf::from(format!("manifest {key}")),
        source,
    })
}

/// A blob's bytes, refused past `max`.
pub(crate) async fn read_blob(
    blobs: &Arc<dyn BlobStore>,
    key: &BlobKey,
    max: u64,
) -> Result<Vec<u8>, RuntimeError> {
    let blobs = Arc::clone(blobs);
    let key = key.clone();
    blocking(format!("reading blob {key}"), move || {
        let blob = blobs.open(&key).map_err(|source| RuntimeError::Blob {
            what: format!("open {key}"),
            source,
        })?;
        if blob.size > max {
            return Err(RuntimeError::Invalid {
                reason: format!("blob {key} holds {} bytes, more than {max}", blob.size),
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(blob.size).unwrap_or(0));
        std::io::Read::read_to_end(&mut std::io::Read::take(blob.reader, max), &mut bytes)
            .map_err(|e| RuntimeError::Blob {
                what: format!("read {key}"),
                source: paddock_core::blob::BlobError::Open {
                    key: key.clone(),
                    source: e,
                },
            })?;
        Ok(bytes)
    })
    .await
}

/// The session's latest checkpoint of `workspace`.
pub(crate) async fn latest_of_workspace(
    store: &Arc<dyn Store>,
    tenant: &TenantId,
    session: &SessionId,
    workspace: &WorkspaceId,
) -> Result<Option<Checkpoint>, RuntimeError> {
    Ok(store
        .list_checkpoints(tenant, session)
        .await
        .map_err(RuntimeError::store("list_checkpoints"))?
        .into_iter()
        .rev()
        .find(|c| c.workspace == *workspace))
}

/// Runs blocking file work off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    what: String,
    work: impl FnOnce() -> Result<T, RuntimeError> + Send + 'static,
) -> Result<T, RuntimeError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RuntimeError::Task {
            what,
            reason: e.to_string(),
        })?
}
