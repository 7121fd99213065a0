//! Background processes: start, list, read output from an offset, write
//! stdin, signal. A process is named by the `handle` its start answered.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::sandbox::SandboxId;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::commands::{SendSignal, StartProcess, WriteStdin};
use crate::service::{ProcessOutputView, ProcessView};
use crate::text::Encoding;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProcessList {
    pub processes: Vec<ProcessView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct OutputQuery {
    /// Where to start reading, in bytes of the whole output (default 0).
    #[serde(default)]
    offset: u64,
    /// Most bytes to return (at most 4 MiB).
    #[param(minimum = 1, maximum = 4194304)]
    max_bytes: Option<u64>,
    /// How the bytes are written into `data` (default `text`).
    #[serde(default)]
    encoding: Encoding,
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/processes", tag = "processes",
    summary = "Start a background process",
    params(("id" = SandboxId, Path)),
    request_body = StartProcess,
    responses(
        (status = 201, description = "started", body = ProcessView),
        (status = 422, description = "the body does not fit the request type (`invalid_request`), or the command could not be started (`spawn_failed`)", body = ErrorBody),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn start(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<StartProcess>,
) -> Result<(StatusCode, Json<ProcessView>), ApiError> {
    let id = sandbox_id(&id)?;
    let view = state.service.start_process(&tenant, &id, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/processes", tag = "processes",
    summary = "List the sandbox's background processes",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the processes", body = ProcessList),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ProcessList>, ApiError> {
    let id = sandbox_id(&id)?;
    let processes = state.service.list_processes(&tenant, &id).await?;
    Ok(Json(ProcessList { processes }))
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/processes/{handle}/output", tag = "processes",
    summary = "Read a process's output from an offset",
    params(("id" = SandboxId, Path), ("handle" = u64, Path, description = "The handle its start answered."), OutputQuery),
    responses(
        (status = 200, description = "output from `offset` on", body = ProcessOutputView),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn output(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, handle)): ApiPath<(String, u64)>,
    ApiQuery(query): ApiQuery<OutputQuery>,
) -> Result<Json<ProcessOutputView>, ApiError> {
    let id = sandbox_id(&id)?;
    let view = state
        .service
        .read_process_output(
            &tenant,
            &id,
            handle,
            query.offset,
            query.max_bytes,
            query.encoding,
        )
        .await?;
    Ok(Json(view))
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/processes/{handle}/stdin", tag = "processes",
    summary = "Write to a process's stdin",
    params(("id" = SandboxId, Path), ("handle" = u64, Path, description = "The handle its start answered.")),
    request_body = WriteStdin,
    responses(
        (status = 204, description = "written"),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), the process's stdin is closed (`stdin_closed`: ended, or the process stopped reading), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn stdin(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, handle)): ApiPath<(String, u64)>,
    ApiJson(command): ApiJson<WriteStdin>,
) -> Result<StatusCode, ApiError> {
    let id = sandbox_id(&id)?;
    state
        .service
        .write_process_stdin(&tenant, &id, handle, command)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/processes/{handle}/signal", tag = "processes",
    summary = "Send a process a signal",
    params(("id" = SandboxId, Path), ("handle" = u64, Path, description = "The handle its start answered.")),
    request_body = SendSignal,
    responses(
        (status = 204, description = "sent"),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn signal(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, handle)): ApiPath<(String, u64)>,
    ApiJson(command): ApiJson<SendSignal>,
) -> Result<StatusCode, ApiError> {
    let id = sandbox_id(&id)?;
    state
        .service
        .signal_process(&tenant, &id, handle, command)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
