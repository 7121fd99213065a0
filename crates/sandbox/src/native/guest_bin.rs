//! Finding the `paddock-guest` binary.

use std::path::{Path, PathBuf};

/// Environment variable naming the guest binary explicitly.
pub const GUEST_BIN_ENV: &str = "PADDOCK_GUEST_BIN";

const GUEST_BIN_NAME: &str = "paddock-guest";

#[derive(Debug, thiserror::Error)]
pub enum LocateGuestError {
    #[error("guest binary {path} does not exist")]
    Missing { path: PathBuf },
    #[error("finding the running executable")]
    CurrentExe(#[source] std::io::Error),
    #[error("no {GUEST_BIN_NAME} next to {exe} (set {GUEST_BIN_ENV} or pass its path)")]
    NotBesideExe { exe: PathBuf },
}

/// The guest binary: `explicit` when given, else `$PADDOCK_GUEST_BIN`, else
/// `paddock-guest` next to the running executable (or one level up when the
/// executable is a cargo test or bench binary in `<profile>/deps/`).
pub fn locate_guest_bin(explicit: Option<&Path>) -> Result<PathBuf, LocateGuestError> {
    let named = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(GUEST_BIN_ENV).map(PathBuf::from));
    if let Some(path) = named {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(LocateGuestError::Missing { path })
        };
    }
    let exe = std::env::current_exe().map_err(LocateGuestError::CurrentExe)?;
    let mut dir = exe.parent();
    while let Some(d) = dir {
        let candidate = d.join(GUEST_BIN_NAME);
        if candidate.is_file() {
            return Ok(candidate);
        }
        if d.file_name().is_some_and(|n| n == "deps") {
            dir = d.parent();
        } else {
            break;
        }
    }
    Err(LocateGuestError::NotBesideExe { exe })
}
