//! Snapshot requests: packing the workspace into an archive streamed to the
//! host ([`export`]) and restoring one streamed from the host ([`import`]).
//! The archive work is blocking and runs on blocking threads; bytes cross
//! to and from the async side through bounded channels, so neither side ever
//! holds the whole archive.

pub mod export;
pub mod import;

use paddock_proto::{ErrorCode, ErrorInfo, error_chain};
use paddock_snapshot::{Limits, SnapshotError};

/// Limits from a request, the snapshot defaults where not given.
fn limits(max_files: Option<u64>, max_bytes: Option<u64>) -> Limits {
    let defaults = Limits::default();
    Limits {
        max_files: max_files.unwrap_or(defaults.max_files),
        max_bytes: max_bytes.unwrap_or(defaults.max_bytes),
    }
}

fn snapshot_error(action: &str, err: &SnapshotError) -> ErrorInfo {
    let code = match err {
        SnapshotError::OverLimit { .. } => ErrorCode::TooLarge,
        SnapshotError::InvalidExclude { .. }
        | SnapshotError::Refused { .. }
        | SnapshotError::Decompress { .. }
        | SnapshotError::ReadArchive { .. }
        | SnapshotError::Truncated { .. } => ErrorCode::BadRequest,
        SnapshotError::TargetNotEmpty { .. } => ErrorCode::DirectoryNotEmpty,
        // A workspace entry the guest may not read (a file of mode 000): the
        // caller's own doing, answered as such rather than as a guest failure.
        SnapshotError::ReadDir { source, .. }
        | SnapshotError::Stat { source, .. }
        | SnapshotError::ReadFile { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            ErrorCode::PermissionDenied
        }
        SnapshotError::Target { source, .. }
        | SnapshotError::Staging { source, .. }
        | SnapshotError::Extract { source, .. }
        | SnapshotError::Commit { source, .. }
            if source.raw_os_error() == Some(nix::libc::EROFS) =>
        {
            ErrorCode::ReadOnly
        }
        _ => ErrorCode::Io,
    };
    ErrorInfo::new(code, format!("{action}: {}", error_chain(err)))
}
