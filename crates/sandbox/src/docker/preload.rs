//! The gVisor preload library on the host: [`paddock_gvisor_compat::LIBRARY`]
//! written once under a root-owned directory, named by its digest, and
//! bound read-only into each gVisor container at
//! [`paddock_gvisor_compat::PATH_INSIDE`], where every command's
//! `LD_PRELOAD` names it.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use paddock_core::sandbox::BoxError;
use sha2::{Digest, Sha256};

/// Root's: the file bound into sandboxes must not be anyone else's to change.
const DIR: &str = "/run/paddock/gvisor-compat";

/// The library's file on the host, written when it is not there yet.
pub(super) fn library_on_host() -> Result<PathBuf, BoxError> {
    write_library(Path::new(DIR), paddock_gvisor_compat::LIBRARY)
}

fn write_library(dir: &Path, library: &[u8]) -> Result<PathBuf, BoxError> {
    let digest = Sha256::digest(library);
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{name}.so"));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .map_err(|e| format!("making {}: {e}", dir.display()))?;
    // Written beside and renamed into place: a start running alongside
    // binds the whole file or none.
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("making a file in {}: {e}", dir.display()))?;
    file.write_all(library)
        .and_then(|()| {
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o444))
        })
        .map_err(|e| format!("writing the gVisor preload library: {e}"))?;
    file.persist(&path)
        .map_err(|e| format!("placing {}: {}", path.display(), e.error))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_written_once_readable_by_all_and_named_by_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("compat");
        let first = write_library(&root, b"one").unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o444);
        assert_eq!(write_library(&root, b"one").unwrap(), first);
        let other = write_library(&root, b"two").unwrap();
        assert_ne!(other, first);
        assert_eq!(std::fs::read(&other).unwrap(), b"two");
    }
}
