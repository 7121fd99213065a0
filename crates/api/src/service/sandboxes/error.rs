//! Errors of the sandbox service. The HTTP layer maps each to a status and a
//! stable code; the sources stay in logs.

use paddock_core::ids::RunId;
use paddock_core::sandbox::{GuestError, SandboxError, SandboxId};
use paddock_core::store::{SandboxState, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No such object for this tenant (another tenant's objects are not found either).
    #[error("{entity} {id} not found")]
    NotFound { entity: &'static str, id: String },
    /// The request is well-formed JSON but asks for something invalid.
    #[error("invalid {field}: {reason}")]
    Invalid { field: String, reason: String },
    /// The sandbox exists but does not run any more.
    #[error("sandbox {id} is {state}")]
    NotRunning { id: SandboxId, state: SandboxState },
    /// The sandbox is an agent run's: the run alone drives and ends it.
    #[error(
        "sandbox {id} belongs to run {run}, which is still going; it ends with the run: \
         cancel the run (POST /v1/runs/{run}/cancel, or `paddock runs cancel {run}`)"
    )]
    OwnedByRun { id: SandboxId, run: RunId },
    /// The object is in a state that forbids the request (e.g. a snapshot
    /// other snapshots were taken from cannot be deleted).
    #[error("{entity} {id}: {reason}")]
    Conflict {
        entity: &'static str,
        id: String,
        reason: String,
    },
    /// The sandbox's tier cannot keep what the pause asked for.
    #[error("sandbox {id} cannot be paused in {mode} mode: {reason}")]
    PauseRefused {
        id: SandboxId,
        mode: paddock_core::store::PauseMode,
        reason: String,
    },
    /// The network asked for is beyond what the operator allows tenants.
    #[error("{reason}")]
    NetworkNotAllowed { reason: String },
    /// An operator's secret the config does not grant to the tenant.
    #[error("{reason}")]
    SecretNotAllowed { reason: String },
    #[error("this node already runs its limit of {limit} sandboxes")]
    TooManySandboxes { limit: usize },
    /// Granting the sandbox's limits would go over a quota. The message
    /// shows the figures of a tenant quota (the tenant's own) and never
    /// those of the node's (they count every tenant's sandboxes):
    /// `quota::refusal`.
    #[error("{}", super::quota::refusal(*scope, quota, *limit, *used, *asked))]
    QuotaExceeded {
        scope: super::quota::QuotaScope,
        quota: &'static str,
        limit: u64,
        used: u64,
        asked: u64,
    },
    #[error("the service is shutting down")]
    ShuttingDown,
    /// The guest refused or failed an operation; `op` names it.
    #[error("sandbox {id}: {op} failed")]
    Guest {
        id: SandboxId,
        op: &'static str,
        #[source]
        source: GuestError,
    },
    #[error("creating a sandbox")]
    CreateSandbox(#[source] SandboxError),
    #[error("preparing workspace {id}")]
    Workspace {
        id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("store operation {op} failed")]
    Store {
        op: &'static str,
        #[source]
        source: StoreError,
    },
    /// Snapshots need a blob store, and none is configured.
    #[error("snapshots are not available on this server (no blob store)")]
    SnapshotsUnavailable,
    /// Volumes need a volume host, and none is configured.
    #[error("volumes are not available on this server (no volume host)")]
    VolumesUnavailable,
    /// The volume host failed; `op` names the operation.
    #[error("volume operation {op} failed")]
    Volume {
        op: &'static str,
        #[source]
        source: paddock_core::volume::VolumeError,
    },
    #[error("blob store operation {op} failed")]
    Blob {
        op: &'static str,
        #[source]
        source: paddock_core::blob::BlobError,
    },
    #[error("snapshot {id} names an invalid blob")]
    BadBlobKey {
        id: String,
        #[source]
        source: paddock_core::blob::InvalidBlobKey,
    },
    /// Another sandbox or a run may write the workspace (it holds the
    /// workspace lease); a read-only sandbox may still use it. `held_by`
    /// names the holder, since when, and how to free it.
    #[error(
        "workspace {workspace} already has a writer: {held_by}; a read-only sandbox may still \
         use it"
    )]
    WorkspaceBusy { workspace: String, held_by: String },
    /// A snapshot import or restore would take the tenant over its disk quota.
    #[error("over the tenant disk quota of {quota} bytes ({usage} bytes in use): {wanted}")]
    DiskQuota {
        quota: u64,
        usage: u64,
        wanted: String,
    },
    /// An imported archive failed the restore checks; `reason` names the entry.
    #[error("archive refused: {reason}")]
    SnapshotRefused { reason: String },
    /// The restore check of an import failed for a reason of this server's.
    #[error("checking an imported archive")]
    CheckArchive {
        #[source]
        source: paddock_snapshot::SnapshotError,
    },
    #[error("reading the uploaded archive")]
    Upload {
        #[source]
        source: std::io::Error,
    },
}

impl From<super::secrets::SecretRefused> for ServiceError {
    fn from(refused: super::secrets::SecretRefused) -> Self {
        match refused {
            refused @ super::secrets::SecretRefused::NotGranted { .. } => {
                ServiceError::SecretNotAllowed {
                    reason: refused.to_string(),
                }
            }
            other => ServiceError::invalid("secrets", other.to_string()),
        }
    }
}

impl ServiceError {
    /// Whether a tenant may have `network` under `bounds`: 400 when no
    /// backend could apply it, 403 beyond the operator's max.
    pub(crate) fn check_network(
        bounds: &paddock_proto::NetworkBounds,
        network: &paddock_proto::NetworkPolicy,
    ) -> Result<(), ServiceError> {
        bounds.check(network).map_err(|refused| match refused {
            paddock_proto::NetworkRefused::Invalid(e) => {
                ServiceError::invalid("network", e.to_string())
            }
            above => ServiceError::NetworkNotAllowed {
                reason: above.to_string(),
            },
        })
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ServiceError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A store error where a missing row means the object is not there for this tenant.
    pub(crate) fn store(op: &'static str) -> impl FnOnce(StoreError) -> ServiceError {
        move |source| match source {
            StoreError::NotFound { entity, id } => ServiceError::NotFound { entity, id },
            StoreError::Conflict { entity, id, reason } => {
                ServiceError::Conflict { entity, id, reason }
            }
            source => ServiceError::Store { op, source },
        }
    }
}
