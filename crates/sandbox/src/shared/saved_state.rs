//! The state file of a sandbox saved whole (`<data>/paused/<id>.vm`): the
//! microVM's migrated VM, gVisor's note of its checkpointed container.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use paddock_core::sandbox::BoxError;

/// Creates (or empties) the state file at `path`, readable by its owner only.
pub(crate) fn create(path: &Path) -> Result<File, BoxError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating {}: {e}", path.display()).into())
}
