//! The per-tenant disk quota: what the tenant's server-managed workspaces
//! hold on disk, measured when a snapshot import or restore is about to
//! write, against [`super::ServiceConfig::tenant_disk_quota`].
//!
//! A restore knows what it will write before it starts (the snapshot's
//! `bytes_raw`, once per sandbox of a fork); an import learns it from the
//! archive's declared sizes while reading, and is held to what is left.
//! Registered host directories (`paddock run --workspace DIR`) are the
//! caller's own disk and are not counted.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, Page};

use super::{SandboxService, ServiceError};

/// The tenant's quota and what its workspaces hold now.
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

impl SandboxService {
    /// Measures the disk the tenant's server-managed workspaces hold.
    pub(super) async fn disk_use(&self, tenant: &TenantId) -> Result<DiskUse, ServiceError> {
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
            dirs.extend(
                rows.into_iter()
                    .filter(|w| w.root.is_none())
                    .map(|w| self.config.workspaces_root.join(w.id.as_str())),
            );
            if !full {
                break;
            }
        }
        let usage = tokio::task::spawn_blocking(move || {
            dirs.iter().try_fold(0u64, |sum, dir| {
                Ok::<_, (PathBuf, io::Error)>(sum + disk_usage(dir).map_err(|e| (dir.clone(), e))?)
            })
        })
        .await
        .map_err(|e| ServiceError::Workspace {
            id: "(disk usage)".to_owned(),
            source: io::Error::other(e),
        })?
        .map_err(|(dir, source)| ServiceError::Workspace {
            id: dir.display().to_string(),
            source,
        })?;
        Ok(DiskUse {
            quota: self.config.tenant_disk_quota,
            usage,
        })
    }
}

/// Bytes allocated on disk under `dir` (which may be missing), symlinks not
/// followed.
fn disk_usage(dir: &Path) -> io::Result<u64> {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            // The entry's own metadata: a symlink is not followed.
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_usage_counts_allocated_bytes_without_following_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![1u8; 4 << 20]).unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/f"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("out")).unwrap();
        let used = disk_usage(tmp.path()).unwrap();
        assert!(used >= 1 << 20, "{used}");
        assert!(used < 2 << 20, "{used}");
        assert_eq!(disk_usage(&tmp.path().join("missing")).unwrap(), 0);
    }
}
