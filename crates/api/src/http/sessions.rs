//! Agent sessions: create, list by workspace, get, rename or archive, fork,
//! and their runs (list, start).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::{SessionId, WorkspaceId};
use serde::{Deserialize, Serialize};

use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::{ApiError, AppState, Caller};
use crate::service::sessions::{CreateSession, ForkSession, StartRunCommand, UpdateSession};
use crate::service::{RunView, SessionView};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    workspace: Option<String>,
    after: Option<String>,
    limit: Option<u32>,
}

#[derive(Debug, Serialize)]
pub(super) struct SessionList {
    sessions: Vec<SessionView>,
    /// Pass as `after` for the next page; absent on the last page.
    next_after: Option<SessionId>,
}

#[derive(Debug, Serialize)]
pub(super) struct RunList {
    runs: Vec<RunView>,
}

pub(super) async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<CreateSession>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let view = state.agents()?.create_session(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let workspace = query
        .workspace
        .as_deref()
        .map(|raw| {
            WorkspaceId::parse(raw)
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
        })
        .transpose()?;
    let after = query.after.as_deref().map(session_id).transpose()?;
    let limit = query.limit;
    let sessions = state
        .agents()?
        .list_sessions(&tenant, workspace.as_ref(), after, limit)
        .await?;
    let full = !sessions.is_empty() && sessions.len() as u64 == u64::from(limit.unwrap_or(100));
    let next_after = full
        .then(|| sessions.last().map(|s| s.id.clone()))
        .flatten();
    Ok(Json(SessionList {
        sessions,
        next_after,
    }))
}

pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionView>, ApiError> {
    let id = session_id(&id)?;
    Ok(Json(state.agents()?.get_session(&tenant, &id).await?))
}

pub(super) async fn update(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<UpdateSession>,
) -> Result<Json<SessionView>, ApiError> {
    let id = session_id(&id)?;
    Ok(Json(
        state
            .agents()?
            .update_session(&tenant, &id, command)
            .await?,
    ))
}

/// Archives the session; its runs and events stay readable.
pub(super) async fn archive(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionView>, ApiError> {
    let id = session_id(&id)?;
    Ok(Json(state.agents()?.archive_session(&tenant, &id).await?))
}

pub(super) async fn fork(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<ForkSession>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let id = session_id(&id)?;
    let view = state.agents()?.fork_session(&tenant, &id, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

pub(super) async fn list_runs(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunList>, ApiError> {
    let id = session_id(&id)?;
    let runs = state.agents()?.list_runs(&tenant, &id).await?;
    Ok(Json(RunList { runs }))
}

/// Starts a run and answers at once (202); the events route follows it.
pub(super) async fn start_run(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<StartRunCommand>,
) -> Result<(StatusCode, Json<RunView>), ApiError> {
    let id = session_id(&id)?;
    let view = state.agents()?.start_run(&tenant, &id, command).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// A session id from the path; malformed ids are a 400, not a 404.
pub(super) fn session_id(raw: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}
