//! The one error type of the HTTP API: a status, a stable code and a message
//! meant for the caller. Internal failures are logged with their sources and
//! answered with a generic message, never with their text.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use paddock_core::sandbox::{GuestError, SandboxError};
use paddock_core::store::StoreError;
use paddock_proto::{ErrorCode, error_chain};
use serde::{Deserialize, Serialize};

use crate::service::ServiceError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// The body of every error answer (and of an SSE `error` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The name the route annotations use for [`ErrorBody`].
pub(super) use self::ErrorBody as Body;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable and machine-readable: `invalid_request`, `sandbox_not_found`, ...
    pub code: String,
    /// For people; its wording may change.
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        )
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn route_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "route_not_found", "no such route")
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this route does not take that method",
        )
    }

    pub(crate) fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server log has the details",
        )
    }

    /// The JSON document of this error, as the body carries it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!(self.body())
    }

    /// The body this error is answered with.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::NotFound { entity, id } => Self::new(
                StatusCode::NOT_FOUND,
                not_found_code(entity),
                format!("{entity} {id} not found"),
            ),
            ServiceError::Invalid { field, reason } => Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("{field}: {reason}"),
            ),
            ServiceError::Conflict { entity, id, reason } => Self::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("{entity} {id}: {reason}"),
            ),
            ServiceError::NotRunning { id, state } => Self::new(
                StatusCode::CONFLICT,
                "sandbox_not_running",
                format!("sandbox {id} is {state}"),
            ),
            err @ ServiceError::PauseRefused { .. } => Self::new(
                StatusCode::CONFLICT,
                "pause_mode_unsupported",
                err.to_string(),
            ),
            err @ ServiceError::WorkspaceBusy { .. } => {
                Self::new(StatusCode::CONFLICT, "workspace_busy", err.to_string())
            }
            err @ ServiceError::OwnedByRun { .. } => Self::new(
                StatusCode::CONFLICT,
                "sandbox_owned_by_run",
                err.to_string(),
            ),
            ServiceError::NetworkNotAllowed { reason } => {
                Self::new(StatusCode::FORBIDDEN, "network_not_allowed", reason)
            }
            ServiceError::SecretNotAllowed { reason } => {
                Self::new(StatusCode::FORBIDDEN, "secret_not_allowed", reason)
            }
            ServiceError::TooManySandboxes { limit } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sandboxes",
                format!("this server already runs its limit of {limit} sandboxes"),
            ),
            err @ ServiceError::QuotaExceeded { .. } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "quota_exceeded",
                err.to_string(),
            ),
            ServiceError::ShuttingDown => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down",
            ),
            ServiceError::Guest { id, op, source } => guest_error(&id.to_string(), op, source),
            err @ ServiceError::DiskQuota { .. } => Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "disk_quota_exceeded",
                err.to_string(),
            ),
            ServiceError::SnapshotRefused { reason } => Self::new(
                StatusCode::BAD_REQUEST,
                "archive_refused",
                format!("archive refused: {reason}"),
            ),
            ServiceError::Upload { source } => Self::new(
                StatusCode::BAD_REQUEST,
                "upload_failed",
                format!("reading the uploaded archive: {source}"),
            ),
            ServiceError::SnapshotsUnavailable => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "snapshots_unavailable",
                "snapshots are not available on this server",
            ),
            ServiceError::VolumesUnavailable => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "volumes_unavailable",
                "volumes are not available on this server",
            ),
            ServiceError::Volume { op, source } => {
                tracing::error!(op, error = %error_chain(&source), "volume operation failed");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "volume_failed",
                    format!("the volume {op} failed; the server log has the details"),
                )
            }
            ServiceError::CreateSandbox(SandboxError::Unsupported { backend, what }) => Self::new(
                StatusCode::BAD_REQUEST,
                "unsupported",
                format!("the {backend} backend does not support {what}"),
            ),
            ServiceError::CreateSandbox(source) => {
                tracing::error!(error = %error_chain(&source), "creating a sandbox");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "sandbox_start_failed",
                    "the sandbox could not be started; the server log has the details",
                )
            }
            ServiceError::Store {
                source: StoreError::Full { operation, .. },
                ..
            } => {
                tracing::error!(operation, "the store has no space left to write");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "storage_full",
                    "the server's storage is full; nothing was written, try again later",
                )
            }
            ServiceError::Store {
                source: StoreError::Unavailable { operation, .. },
                ..
            } => {
                tracing::error!(operation, "store unavailable");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_unavailable",
                    "the database is unavailable",
                )
            }
            other => {
                tracing::error!(error = %error_chain(&other), "request failed");
                Self::internal()
            }
        }
    }
}

fn not_found_code(entity: &str) -> &'static str {
    match entity {
        "sandbox" => "sandbox_not_found",
        "workspace" => "workspace_not_found",
        "snapshot" => "snapshot_not_found",
        "volume" => "volume_not_found",
        "volume snapshot" => "volume_snapshot_not_found",
        _ => "not_found",
    }
}

/// The guest's refusals are about the caller's own sandbox (its paths, its
/// processes), so their messages are passed on.
fn guest_error(id: &str, op: &'static str, source: GuestError) -> ApiError {
    let GuestError::Refused { error, .. } = &source else {
        tracing::error!(sandbox_id = id, op, error = %error_chain(&source), "guest operation failed");
        return ApiError::internal();
    };
    let (status, code) = match error.code {
        ErrorCode::PathEscape => (StatusCode::BAD_REQUEST, "path_escape"),
        ErrorCode::NotFound => (StatusCode::NOT_FOUND, "file_not_found"),
        ErrorCode::UnknownProcess => (StatusCode::NOT_FOUND, "process_not_found"),
        ErrorCode::StdinClosed => (StatusCode::CONFLICT, "stdin_closed"),
        ErrorCode::AlreadyExists => (StatusCode::CONFLICT, "already_exists"),
        ErrorCode::DirectoryNotEmpty => (StatusCode::CONFLICT, "directory_not_empty"),
        ErrorCode::PermissionDenied => (StatusCode::FORBIDDEN, "permission_denied"),
        ErrorCode::ReadOnly => (StatusCode::FORBIDDEN, "read_only"),
        ErrorCode::NotADirectory => (StatusCode::BAD_REQUEST, "not_a_directory"),
        ErrorCode::IsADirectory => (StatusCode::BAD_REQUEST, "is_a_directory"),
        ErrorCode::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
        ErrorCode::SpawnFailed => (StatusCode::UNPROCESSABLE_ENTITY, "spawn_failed"),
        ErrorCode::Timeout => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
        ErrorCode::NotListening => (StatusCode::BAD_GATEWAY, "port_not_listening"),
        ErrorCode::Busy => (StatusCode::CONFLICT, "sandbox_busy"),
        ErrorCode::BadRequest => (StatusCode::BAD_REQUEST, "invalid_request"),
        ErrorCode::VersionMismatch | ErrorCode::Io => {
            tracing::error!(sandbox_id = id, op, error = %error, "guest operation failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "guest_error")
        }
    };
    ApiError::new(status, code, format!("{op}: {}", error.message))
}

#[cfg(test)]
mod tests {
    use paddock_core::sandbox::SandboxId;
    use paddock_proto::ErrorInfo;

    use super::*;

    #[test]
    fn internal_errors_do_not_leak_their_text() {
        let err = ServiceError::Store {
            op: "get_sandbox",
            source: StoreError::Database {
                operation: "get_sandbox",
                source: "relation \"sandboxes\" at /var/lib/secret".into(),
            },
        };
        let api = ApiError::from(err);
        assert_eq!(api.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(api.code, "internal");
        assert!(!api.message.contains("secret"), "{}", api.message);
    }

    #[test]
    fn guest_refusals_keep_their_meaning() {
        let id = SandboxId::generate();
        let err = ServiceError::Guest {
            id,
            op: "file_read",
            source: GuestError::Refused {
                op: "file_read",
                error: ErrorInfo::new(ErrorCode::PathEscape, "../x leaves the workspace"),
            },
        };
        let api = ApiError::from(err);
        assert_eq!(
            (api.status, api.code),
            (StatusCode::BAD_REQUEST, "path_escape")
        );
        assert!(api.message.contains("leaves the workspace"));
    }

    #[test]
    fn the_body_is_one_error_object() {
        let api = ApiError::invalid("limit: expected 1 to 1000");
        assert_eq!(
            api.to_json(),
            serde_json::json!({"error": {"code": "invalid_request", "message": "limit: expected 1 to 1000"}})
        );
    }
}
