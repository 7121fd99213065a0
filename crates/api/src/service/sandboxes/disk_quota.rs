//! The per-tenant disk quota: what a tenant really holds on this server's
//! disk, against [`super::ServiceConfig::tenant_disk_quota`].
//!
//! One function, [`SandboxService::measure_disk`], counts it: the blocks
//! and inodes ([`paddock_snapshot::disk`]) of the tenant's server-managed
//! workspaces (those in the volume pool walked there) and of its part of the blob store (checkpoint files and
//! manifests), the archives of its snapshots (each charged its compressed
//! size in blocks, also when another tenant's snapshot has the same
//! content), the bytes its volume snapshots hold alone (btrfs's exclusive
//! count: what deleting them frees), and an estimate of its database rows
//! ([`paddock_core::store::Store::tenant_row_bytes`]). Registered host
//! directories (`paddock run --workspace DIR`) are the caller's own disk
//! and are not counted.
//!
//! The rows' estimate is read at most once a minute per tenant (it scans
//! every message and event). The figure is cached per tenant for [`CACHE_FOR`]. Enforcement points
//! that write much (imports, snapshots, restores, checkpoints) measure
//! afresh ([`SandboxService::disk_use`]); one measure runs at a time per
//! tenant, and callers waiting on it take its result. A file write over the
//! API checks the cached figure and adds what it wrote to it
//! ([`SandboxService::charge_disk`]). Commands inside a sandbox write
//! beyond the server's sight: the sandbox and volume limits bound them
//! (docs/architecture.md, "Storage").

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, Page, SnapshotFilter};
use paddock_snapshot::disk;

use super::{SandboxService, ServiceError};

/// How long a measured figure stands in for a new measure where a fresh
/// one is not needed (file writes over the API).
pub(super) const CACHE_FOR: Duration = Duration::from_secs(10);

/// The tenant's quota and what it holds now.
#[derive(Debug, Clone, Copy)]
pub(super) struct DiskUse {
    pub(super) quota: u64,
    pub(super) usage: u64,
}

impl DiskUse {
    /// Bytes that may still be written.
    pub(super) fn left(&self) -> u64 {
        self.quota.saturating_sub(self.usage)
    }

    /// Refuses writing `bytes` more, saying what for.
    pub(super) fn check(
        &self,
        bytes: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), ServiceError> {
        if bytes > self.left() {
            return Err(self.exceeded(format!("{} needs {bytes} bytes", what())));
        }
        Ok(())
    }

    pub(super) fn exceeded(&self, wanted: String) -> ServiceError {
        ServiceError::DiskQuota {
            quota: self.quota,
            usage: self.usage,
            wanted,
        }
    }
}

/// What one measure of a tenant found, by kind (bytes of disk).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    pub workspaces: u64,
    pub checkpoints: u64,
    pub snapshots: u64,
    /// Bytes the tenant's volume snapshots hold alone (btrfs exclusive).
    pub volume_snapshots: u64,
    pub rows: u64,
}

impl DiskUsage {
    pub fn total(&self) -> u64 {
        self.workspaces
            .saturating_add(self.checkpoints)
            .saturating_add(self.snapshots)
            .saturating_add(self.volume_snapshots)
            .saturating_add(self.rows)
    }
}

/// Per tenant: the last figure and the lock one measure holds.
#[derive(Debug, Default)]
pub(super) struct DiskLedger {
    tenants: Mutex<HashMap<TenantId, Arc<TenantDisk>>>,
}

#[derive(Debug, Default)]
struct TenantDisk {
    /// Held while measuring: one walk at a time per tenant.
    measuring: tokio::sync::Mutex<()>,
    /// Held by an import, snapshot or restore from its measure to its end,
    /// so two of them never both spend what is left.
    writing: Arc<tokio::sync::Mutex<()>>,
    cached: Mutex<Option<Cached>>,
    /// The rows' estimate and when it was read: a sum over every message
    /// and event of the tenant, read again after [`ROWS_FOR`] only.
    rows: Mutex<Option<(u64, Instant)>>,
}

/// How long a measure reuses the estimate of the tenant's rows (they grow
/// by messages and events, slowly next to files; each read scans them all).
const ROWS_FOR: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Cached {
    usage: u64,
    /// When the measure that found it began.
    began: Instant,
}

impl TenantDisk {
    fn cached(&self) -> Option<Cached> {
        *self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, cached: Option<Cached>) {
        *self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = cached;
    }
}

impl DiskLedger {
    fn of(&self, tenant: &TenantId) -> Arc<TenantDisk> {
        let mut tenants = self
            .tenants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(tenants.entry(tenant.clone()).or_default())
    }

    /// Forgets the tenant's figure: the next check measures.
    pub(super) fn forget(&self, tenant: &TenantId) {
        self.of(tenant).set(None);
    }
}

impl SandboxService {
    /// Waits for the tenant's other large writes (imports, snapshots,
    /// restores) to end; hold the guard from the measure to the end of the write.
    pub(super) async fn disk_writer(&self, tenant: &TenantId) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.disk.of(tenant).writing).lock_owned().await
    }

    /// The tenant's quota and what it holds, measured now (or by a measure
    /// that began after this call did).
    pub(super) async fn disk_use(&self, tenant: &TenantId) -> Result<DiskUse, ServiceError> {
        let asked = Instant::now();
        let entry = self.disk.of(tenant);
        let _one = entry.measuring.lock().await;
        if let Some(cached) = entry.cached()
            && cached.began >= asked
        {
            return Ok(self.with_quota(cached.usage));
        }
        let began = Instant::now();
        let usage = self.measure(tenant, false).await?.total();
        entry.set(Some(Cached { usage, began }));
        Ok(self.with_quota(usage))
    }

    /// The tenant's quota and what it held at most [`CACHE_FOR`] ago plus
    /// what the API wrote since; measured when there is no such figure.
    pub(super) async fn disk_use_cached(&self, tenant: &TenantId) -> Result<DiskUse, ServiceError> {
        let entry = self.disk.of(tenant);
        if let Some(cached) = entry.cached()
            && cached.began.elapsed() < CACHE_FOR
        {
            return Ok(self.with_quota(cached.usage));
        }
        self.disk_use(tenant).await
    }

    /// Adds `bytes` of disk the API just wrote for the tenant to its cached figure.
    pub(super) fn charge_disk(&self, tenant: &TenantId, bytes: u64) {
        let entry = self.disk.of(tenant);
        let mut cached = entry
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cached) = cached.as_mut() {
            cached.usage = cached.usage.saturating_add(bytes);
        }
    }

    /// What the tenant holds now, by kind: a full walk of its directories
    /// and a fresh read of its rows (`SandboxService::disk_use` is the
    /// cached, one-at-a-time way in, whose rows may be a minute old).
    pub async fn measure_disk(&self, tenant: &TenantId) -> Result<DiskUsage, ServiceError> {
        self.measure(tenant, true).await
    }

    async fn measure(
        &self,
        tenant: &TenantId,
        fresh_rows: bool,
    ) -> Result<DiskUsage, ServiceError> {
        let mut dirs = Vec::new();
        let mut after = None;
        loop {
            let page = Page {
                after: after.take(),
                limit: MAX_PAGE,
            };
            let rows = self
                .store
                .list_workspaces(tenant, &page)
                .await
                .map_err(ServiceError::store("list_workspaces"))?;
            let full = rows.len() == MAX_PAGE as usize;
            after = rows.last().map(|w| w.id.to_string());
            for w in rows.iter().filter(|w| w.root.is_none()) {
                // a workspace in the volume pool is walked there
                let pool = self.pool_workspace(tenant, &w.id).await?;
                dirs.push(match pool {
                    Some(pool) => pool.path,
                    None => self.config.workspaces_root.join(w.id.as_str()),
                });
            }
            if !full {
                break;
            }
        }
        let mut snapshots = 0u64;
        let mut after = None;
        loop {
            let page = Page {
                after: after.take(),
                limit: MAX_PAGE,
            };
            let rows = self
                .store
                .list_snapshots(tenant, &SnapshotFilter::default(), &page)
                .await
                .map_err(ServiceError::store("list_snapshots"))?;
            let full = rows.len() == MAX_PAGE as usize;
            after = rows.last().map(|s| s.id.to_string());
            snapshots = rows.iter().fold(snapshots, |sum, s| {
                sum.saturating_add(disk::estimate(s.bytes_compressed))
            });
            if !full {
                break;
            }
        }
        let rows = self.row_bytes(tenant, fresh_rows).await?;
        let volume_snapshots = self.volume_snapshot_bytes(tenant).await?;
        let part = self.config.blobs.as_ref().map(|blobs| blobs.tenant(tenant));
        let (workspaces, checkpoints) = tokio::task::spawn_blocking(move || {
            let workspaces =
                dirs.iter().try_fold(0u64, |sum, dir| {
                    Ok::<_, (String, io::Error)>(sum.saturating_add(
                        disk::usage(dir).map_err(|e| (dir.display().to_string(), e))?,
                    ))
                })?;
            let checkpoints = match part {
                Some(part) => part
                    .disk_usage()
                    .map_err(|e| ("(checkpoint blobs)".to_owned(), io::Error::other(e)))?,
                None => 0,
            };
            Ok((workspaces, checkpoints))
        })
        .await
        .map_err(|e| ServiceError::Workspace {
            id: "(disk usage)".to_owned(),
            source: io::Error::other(e),
        })?
        .map_err(|(id, source): (String, io::Error)| ServiceError::Workspace { id, source })?;
        let usage = DiskUsage {
            workspaces,
            checkpoints,
            snapshots,
            volume_snapshots,
            rows,
        };
        tracing::debug!(tenant_id = %tenant, ?usage, "tenant disk measured");
        Ok(usage)
    }

    /// The estimate of the tenant's rows, read at most every [`ROWS_FOR`].
    async fn row_bytes(&self, tenant: &TenantId, fresh: bool) -> Result<u64, ServiceError> {
        let entry = self.disk.of(tenant);
        let recent = *entry
            .rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((rows, at)) = recent
            && !fresh
            && at.elapsed() < ROWS_FOR
        {
            return Ok(rows);
        }
        let rows = self
            .store
            .tenant_row_bytes(tenant)
            .await
            .map_err(ServiceError::store("tenant_row_bytes"))?;
        *entry
            .rows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((rows, Instant::now()));
        Ok(rows)
    }

    fn with_quota(&self, usage: u64) -> DiskUse {
        DiskUse {
            quota: self.config.tenant_disk_quota,
            usage,
        }
    }
}

/// The runtime's checkpoints are held to the same quota, measured afresh.
#[async_trait::async_trait]
impl paddock_runtime::DiskGuard for SandboxService {
    async fn disk_use(&self, tenant: &TenantId) -> Result<paddock_runtime::DiskUse, String> {
        let used = SandboxService::disk_use(self, tenant)
            .await
            .map_err(|e| paddock_proto::error_chain(&e))?;
        Ok(paddock_runtime::DiskUse {
            quota: used.quota,
            usage: used.usage,
        })
    }

    fn changed(&self, tenant: &TenantId) {
        self.disk.forget(tenant);
    }
}
