//! File operations beyond reading, writing and listing for display (ops.rs):
//! stat, mkdir, rename, and a listing that keeps each name's raw bytes so a
//! caller can walk into the entries (E2B's envd filesystem service).

use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_proto::{DirEntry, ErrorCode, FileStat, FsPath};

use super::commands;
use super::{SandboxService, ServiceError};

impl SandboxService {
    /// The entry at `path`; a final symlink is not followed.
    pub async fn stat_file(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        path: &FsPath,
    ) -> Result<FileStat, ServiceError> {
        let path = commands::file_path("path", path)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.file_stat(&path).await {
            Ok(stat) => Ok(stat),
            Err(e) => Err(self.guest_failed(id, "file_stat", e).await),
        }
    }

    /// Creates the directory; with `parents`, the missing ones above it
    /// too, and an existing directory is no error.
    pub async fn make_dir(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        path: &FsPath,
        parents: bool,
    ) -> Result<(), ServiceError> {
        let path = commands::file_path("path", path)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.mkdir(&path, parents).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "mkdir", e).await),
        }
    }

    /// Renames `from` to `to`, replacing a file there.
    pub async fn rename_file(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        from: &FsPath,
        to: &FsPath,
    ) -> Result<(), ServiceError> {
        let from = commands::file_path("from", from)?;
        let to = commands::file_path("to", to)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.rename(&from, &to).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "rename", e).await),
        }
    }

    /// The directory's entries as the guest gives them: raw names, sorted
    /// by their bytes.
    pub async fn list_dir_entries(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        dir: &FsPath,
    ) -> Result<Vec<DirEntry>, ServiceError> {
        let dir = commands::file_path("dir", dir)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.file_list(&dir).await {
            Ok(entries) => Ok(entries),
            Err(e) => Err(self.guest_failed(id, "file_list", e).await),
        }
    }
}

impl ServiceError {
    /// The guest's code when the guest refused the operation.
    pub fn guest_code(&self) -> Option<ErrorCode> {
        match self {
            ServiceError::Guest { source, .. } => source.code(),
            _ => None,
        }
    }
}
