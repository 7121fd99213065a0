//! Errors of the sandbox port.

use std::path::PathBuf;

use paddock_proto::{ErrorInfo, FrameError};

use super::SandboxId;

/// A backend-specific cause carried as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Creating or destroying a sandbox failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("preparing workspace {path} for sandbox {id}")]
    Workspace {
        id: SandboxId,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("launching sandbox {id}")]
    Launch {
        id: SandboxId,
        #[source]
        source: BoxError,
    },
    /// The sandbox process started but its guest never answered the
    /// handshake; `detail` is what the guest said before dying (its stderr).
    #[error("sandbox {id} failed to start ({status}){}", fmt_detail(detail))]
    Startup {
        id: SandboxId,
        status: String,
        detail: String,
        #[source]
        source: BoxError,
    },
    /// The network of a running sandbox could not be changed (the change
    /// is impossible for it, or its backend cannot change it).
    #[error("changing the network of sandbox {id}")]
    NetworkChange {
        id: SandboxId,
        #[source]
        source: BoxError,
    },
    /// Saving the whole sandbox (memory and processes) failed; it keeps
    /// running as it was.
    #[error("saving sandbox {id} whole")]
    Suspend {
        id: SandboxId,
        #[source]
        source: BoxError,
    },
    /// Starting a sandbox from its saved state failed.
    #[error("restoring a sandbox from {state}")]
    Restore {
        state: PathBuf,
        #[source]
        source: BoxError,
    },
    #[error("destroying sandbox {id}")]
    Destroy {
        id: SandboxId,
        #[source]
        source: BoxError,
    },
    /// The backend cannot make sandboxes (its helper binary is gone, ...).
    #[error("the {backend} backend is unavailable: {reason}")]
    Unavailable {
        backend: &'static str,
        reason: String,
    },
    /// The backend cannot give the sandbox something its spec asks for.
    #[error("the {backend} backend does not support {what}")]
    Unsupported { backend: &'static str, what: String },
    #[error("removing what dead {backend} sandboxes left behind")]
    ReapOrphans {
        backend: &'static str,
        #[source]
        source: BoxError,
    },
}

fn fmt_detail(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// One operation on the guest agent failed.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// The guest answered the request with an error (path escape, not found, ...).
    #[error("guest refused {op}")]
    Refused {
        op: &'static str,
        #[source]
        error: ErrorInfo,
    },
    /// The connection is gone (the guest died, closed it, or sent garbage);
    /// every pending and later request fails with this.
    #[error("guest connection lost during {op}: {reason}")]
    Disconnected { op: &'static str, reason: String },
    #[error("guest speaks protocol {guest}, this host speaks {host}")]
    VersionMismatch { host: u32, guest: String },
    #[error("guest answered {op} with an unexpected {got}")]
    UnexpectedReply { op: &'static str, got: String },
    /// Writing an exported snapshot to the caller's sink failed.
    #[error("writing the snapshot archive")]
    SnapshotSink {
        #[source]
        source: std::io::Error,
    },
    /// Reading the archive to import from the caller's reader failed.
    #[error("reading the snapshot archive")]
    SnapshotSource {
        #[source]
        source: std::io::Error,
    },
    #[error("encoding {op} request")]
    Encode {
        op: &'static str,
        #[source]
        source: FrameError,
    },
}

impl GuestError {
    /// The guest's error code when it refused the request.
    pub fn code(&self) -> Option<paddock_proto::ErrorCode> {
        match self {
            GuestError::Refused { error, .. } => Some(error.code),
            _ => None,
        }
    }
}
