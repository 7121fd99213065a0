//! How agent errors answer: runtime refusals keep their meaning (not found,
//! busy, archived, ...); internal failures are logged and answered generically.

use axum::http::StatusCode;
use paddock_core::store::StoreError;
use paddock_proto::error_chain;
use paddock_runtime::RuntimeError;

use super::ApiError;
use crate::service::AgentError;

impl From<AgentError> for ApiError {
    fn from(err: AgentError) -> Self {
        match err {
            AgentError::Invalid { field, reason } => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("{field}: {reason}"),
            ),
            AgentError::ModelRefused { reason } => {
                ApiError::new(StatusCode::BAD_REQUEST, "model_not_allowed", reason)
            }
            AgentError::ModelUnavailable { reason } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "model_unavailable",
                reason,
            ),
            err @ AgentError::WorkspaceBusy { .. } => {
                ApiError::new(StatusCode::CONFLICT, "workspace_busy", err.to_string())
            }
            AgentError::NetworkNotAllowed { reason } => {
                ApiError::new(StatusCode::FORBIDDEN, "network_not_allowed", reason)
            }
            AgentError::SecretNotAllowed { reason } => {
                ApiError::new(StatusCode::FORBIDDEN, "secret_not_allowed", reason)
            }
            AgentError::ShuttingDown => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down",
            ),
            AgentError::Runtime { op, source } => runtime_error(op, *source),
            AgentError::ChangesRefused { message, .. } => {
                ApiError::new(StatusCode::CONFLICT, "change_set_refused", message)
            }
            other => {
                tracing::error!(error = %error_chain(&other), "agent request failed");
                ApiError::internal()
            }
        }
    }
}

fn runtime_error(op: &'static str, err: RuntimeError) -> ApiError {
    // a run refused a sandbox slot answers as a sandbox refused one does
    let err = match err {
        RuntimeError::NotAdmitted { source } => {
            return match source.downcast::<crate::service::ServiceError>() {
                Ok(refused) => ApiError::from(*refused),
                Err(other) => {
                    tracing::error!(op, error = %other, "admitting a run's sandbox");
                    ApiError::internal()
                }
            };
        }
        err => err,
    };
    let (status, code) = match &err {
        RuntimeError::NotFound { entity, .. } => (StatusCode::NOT_FOUND, not_found_code(entity)),
        RuntimeError::SessionBusy { .. } => (StatusCode::CONFLICT, "session_busy"),
        RuntimeError::WorkspaceBusy { .. } => (StatusCode::CONFLICT, "workspace_busy"),
        RuntimeError::SessionArchived { .. } => (StatusCode::CONFLICT, "session_archived"),
        RuntimeError::WorkspaceChanged { .. } => (StatusCode::CONFLICT, "workspace_changed"),
        RuntimeError::NoUndo { .. } => (StatusCode::CONFLICT, "no_undo"),
        RuntimeError::DiskQuota { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "disk_quota_exceeded"),
        RuntimeError::InUse { entity, .. } => (
            StatusCode::CONFLICT,
            if *entity == "workspace" {
                "workspace_in_use"
            } else {
                "session_in_use"
            },
        ),
        RuntimeError::RunInProgress { .. } => (StatusCode::CONFLICT, "session_in_use"),
        RuntimeError::CheckpointsBusy => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
        RuntimeError::Invalid { .. } | RuntimeError::RunNotInSession { .. } => {
            (StatusCode::BAD_REQUEST, "invalid_request")
        }
        RuntimeError::CheckpointNotInSession { .. } => {
            (StatusCode::NOT_FOUND, "checkpoint_not_found")
        }
        RuntimeError::NoEndSnapshot { .. } => (StatusCode::CONFLICT, "no_end_snapshot"),
        RuntimeError::RunNotActive { .. } => (StatusCode::CONFLICT, "run_not_active"),
        RuntimeError::RunFinished { .. } => (StatusCode::CONFLICT, "run_finished"),
        RuntimeError::DriverCannot { .. } => (StatusCode::CONFLICT, "driver_cannot"),
        RuntimeError::SteeringLimit { .. } => (StatusCode::TOO_MANY_REQUESTS, "steering_limit"),
        RuntimeError::QueueFull { .. } => (StatusCode::TOO_MANY_REQUESTS, "queue_full"),
        RuntimeError::NotResumable { .. } => (StatusCode::CONFLICT, "run_not_resumable"),
        RuntimeError::Sandbox { .. } => {
            tracing::error!(op, error = %error_chain(&err), "starting a run's sandbox");
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sandbox_start_failed",
                "the run's sandbox could not be started; the server log has the details",
            );
        }
        RuntimeError::Store {
            source: StoreError::Invalid { .. },
            ..
        } => (StatusCode::BAD_REQUEST, "invalid_request"),
        RuntimeError::Store {
            source: StoreError::Full { .. },
            ..
        } => {
            tracing::error!(op, error = %error_chain(&err), "the store has no space left");
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "storage_full",
                "the server's storage is full; nothing was written, try again later",
            );
        }
        RuntimeError::Store {
            source: StoreError::Unavailable { .. },
            ..
        } => {
            tracing::error!(op, error = %error_chain(&err), "store unavailable");
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                "the database is unavailable",
            );
        }
        _ => {
            tracing::error!(op, error = %error_chain(&err), "agent operation failed");
            return ApiError::internal();
        }
    };
    ApiError::new(status, code, err.to_string())
}

fn not_found_code(entity: &str) -> &'static str {
    match entity {
        "session" => "session_not_found",
        "run" => "run_not_found",
        "workspace" => "workspace_not_found",
        "snapshot" => "snapshot_not_found",
        "memory" => "memory_not_found",
        "checkpoint" => "checkpoint_not_found",
        _ => "not_found",
    }
}
