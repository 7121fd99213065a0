//! Named persistent volumes: a tenant's directory with a size quota the kernel
//! enforces, kept apart from any sandbox (it outlives them). The control
//! plane keeps the row ([`VolumeRecord`], in the [`Store`](crate::store::Store));
//! a [`VolumeHost`] keeps the bytes (the `paddock` binary chooses it: the
//! btrfs pool of `paddock_sandbox::volumes`).

use std::fmt;
use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::ids::{TenantId, WorkspaceId};
use crate::store::{BoxError, Timestamp};

/// Longest volume name.
pub const VOLUME_NAME_MAX: usize = 63;
/// Smallest quota a volume may ask for (a filesystem's own metadata needs
/// some room; below this a quota only surprises).
pub const VOLUME_MIN_BYTES: u64 = 1 << 20;

/// A volume's name, unique per tenant: 1 to [`VOLUME_NAME_MAX`] of `a-z`,
/// `0-9`, `-`, `_`, `.`, starting with a letter or digit. It names a
/// directory on the host, so it has no `/` and is never `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct VolumeName(String);

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for VolumeName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::ids::id_schema(
            "^[a-z0-9][a-z0-9._-]{0,62}$",
            "A volume's name, unique per tenant.",
            "pip-cache",
        )
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for VolumeName {}

/// Why a text is not a [`VolumeName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid volume name {name:?}: {reason}")]
pub struct InvalidVolumeName {
    pub name: String,
    pub reason: &'static str,
}

impl VolumeName {
    pub fn parse(name: &str) -> Result<Self, InvalidVolumeName> {
        let refuse = |reason| {
            Err(InvalidVolumeName {
                name: name.chars().take(VOLUME_NAME_MAX + 1).collect(),
                reason,
            })
        };
        let Some(first) = name.chars().next() else {
            return refuse("it is empty");
        };
        if name.len() > VOLUME_NAME_MAX {
            return refuse("it is longer than 63 characters");
        }
        if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
            return refuse("it must start with a-z or 0-9");
        }
        let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c);
        if !name.chars().all(allowed) {
            return refuse("only a-z, 0-9, '.', '_' and '-' are allowed");
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for VolumeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for VolumeName {
    type Error = InvalidVolumeName;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<VolumeName> for String {
    fn from(name: VolumeName) -> Self {
        name.0
    }
}

/// A volume as the control plane records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeRecord {
    pub tenant: TenantId,
    pub name: VolumeName,
    /// Bytes the volume may hold; the kernel refuses the write past it
    /// (`EDQUOT`, "Disk quota exceeded").
    pub quota_bytes: u64,
    pub created_at: Timestamp,
}

/// A read-only snapshot of a volume, as the control plane records it
/// (named per volume with a volume name's rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeSnapshotRecord {
    pub tenant: TenantId,
    pub volume: VolumeName,
    pub name: VolumeName,
    pub created_at: Timestamp,
}

/// Where the bytes of volumes live. Every call is idempotent, so a crash
/// between the store's row and the host's directory is mended by the next
/// call; an implementation that cannot enforce the quota fails the call
/// (a volume never exists without its quota).
#[async_trait]
pub trait VolumeHost: Send + Sync + fmt::Debug {
    /// Makes the volume's directory (if missing) with its quota set to
    /// `quota_bytes`; returns its host path.
    async fn create(
        &self,
        tenant: &TenantId,
        name: &VolumeName,
        quota_bytes: u64,
    ) -> Result<PathBuf, VolumeError>;
    /// The host path of an existing volume (set up again if the host
    /// restarted since).
    async fn path(&self, tenant: &TenantId, name: &VolumeName) -> Result<PathBuf, VolumeError>;
    /// Bytes the volume holds now, as its quota counts them.
    async fn used_bytes(&self, tenant: &TenantId, name: &VolumeName) -> Result<u64, VolumeError>;
    /// Removes the volume and its bytes; a volume already gone is fine.
    async fn remove(&self, tenant: &TenantId, name: &VolumeName) -> Result<(), VolumeError>;

    /// Takes a read-only snapshot `snapshot` of the volume (instant: it
    /// shares the volume's blocks until either changes); one already there
    /// is kept.
    async fn snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<(), VolumeError>;
    /// Bytes only the snapshot holds (what deleting it frees; blocks still
    /// shared with the volume are the volume's).
    async fn snapshot_bytes(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<u64, VolumeError>;
    /// Removes the snapshot; one already gone is fine.
    async fn remove_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
    ) -> Result<(), VolumeError>;
    /// Makes the volume `name` (missing until now) a writable copy of the
    /// snapshot with its quota set to `quota_bytes`; returns its host path.
    async fn create_from_snapshot(
        &self,
        tenant: &TenantId,
        volume: &VolumeName,
        snapshot: &VolumeName,
        name: &VolumeName,
        quota_bytes: u64,
    ) -> Result<PathBuf, VolumeError>;

    /// Makes a server-managed persistent workspace's directory in the pool
    /// (if missing) with its quota set to `quota_bytes`, as a volume's.
    async fn create_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
        quota_bytes: u64,
    ) -> Result<PoolWorkspace, VolumeError>;
    /// The workspace's directory in the pool and the quota the kernel holds
    /// it to; None when the pool has no such workspace (one made without a
    /// quota, or before workspaces could have one: a plain directory).
    async fn workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<Option<PoolWorkspace>, VolumeError>;
    /// Removes the workspace's directory and its bytes; one already gone
    /// is fine.
    async fn remove_workspace(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), VolumeError>;
}

/// A persistent workspace the pool holds under a quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolWorkspace {
    pub path: PathBuf,
    /// How the kernel holds it (`mechanism` names the quota group; no inode
    /// limit: a quota group counts bytes only).
    pub quota: paddock_proto::WorkspaceQuotaEnforcement,
}

#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// The pool holding every volume could not be set up (its file made,
    /// formatted, mounted, quotas turned on).
    #[error("setting up the volume pool at {path}: {step}")]
    Pool {
        path: PathBuf,
        step: &'static str,
        #[source]
        source: BoxError,
    },
    /// One volume's operation failed; `step` names it.
    #[error("volume {name}: {step}")]
    Volume {
        name: String,
        step: &'static str,
        #[source]
        source: BoxError,
    },
    /// The volume has no directory on the host.
    #[error("volume {name} has no data on this host")]
    Missing { name: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_their_directory_are_refused() {
        for bad in ["", ".", "..", "../x", "a/b", "-x", ".x", "A", "x y", "x\0"] {
            assert!(VolumeName::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(VolumeName::parse(&"a".repeat(64)).is_err());
    }

    #[test]
    fn plain_names_are_accepted() {
        for good in ["a", "pip-cache", "data.v2", "0_x", &"a".repeat(63)] {
            assert_eq!(
                VolumeName::parse(good).map(|n| n.to_string()),
                Ok(good.to_owned())
            );
        }
    }

    #[test]
    fn a_name_deserialises_through_the_check() {
        assert!(serde_json::from_str::<VolumeName>("\"..\"").is_err());
        assert_eq!(
            serde_json::from_str::<VolumeName>("\"cache\"").ok(),
            VolumeName::parse("cache").ok()
        );
    }
}
