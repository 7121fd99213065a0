//! Background processes: start, list, read output from an offset, write
//! stdin, signal. A process is named by the `handle` its start answered.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::commands::{SendSignal, StartProcess, WriteStdin};
use crate::service::{ProcessOutputView, ProcessView};
use crate::text::Encoding;

#[derive(Debug, Serialize)]
pub(super) struct ProcessList {
    processes: Vec<ProcessView>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OutputQuery {
    #[serde(default)]
    offset: u64,
    max_bytes: Option<u64>,
    #[serde(default)]
    encoding: Encoding,
}

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

pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ProcessList>, ApiError> {
    let id = sandbox_id(&id)?;
    let processes = state.service.list_processes(&tenant, &id).await?;
    Ok(Json(ProcessList { processes }))
}

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
