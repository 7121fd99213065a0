//! A session's checkpoints: list them, rewind the session to one, diff two
//! (or one and the workspace now). A fork at one is `POST
//! /v1/sessions/{id}/fork` with `at_checkpoint`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::{CheckpointId, SessionId};
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::sessions::session_id;
use super::{ApiError, AppState, Caller};
use crate::service::{CheckpointDiffView, CheckpointView, RewindSession, RewindView};

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckpointList {
    pub checkpoints: Vec<CheckpointView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct DiffQuery {
    /// From this checkpoint (default: the one before `to`, or the latest).
    #[param(value_type = Option<CheckpointId>)]
    from: Option<String>,
    /// To this checkpoint (default: the workspace as it is now).
    #[param(value_type = Option<CheckpointId>)]
    to: Option<String>,
}

fn checkpoint_id(raw: &str) -> Result<CheckpointId, ApiError> {
    CheckpointId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}

#[utoipa::path(get, path = "/v1/sessions/{id}/checkpoints", tag = "sessions",
    summary = "List a session's checkpoints, oldest first",
    description = "A writing run records one before it starts and after every tool batch that \
changed the workspace; a rewind records the state it restored.",
    params(("id" = SessionId, Path)),
    responses((status = 200, description = "the checkpoints", body = CheckpointList)))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<CheckpointList>, ApiError> {
    let id = session_id(&id)?;
    let checkpoints = state.agents()?.list_checkpoints(&tenant, &id).await?;
    Ok(Json(CheckpointList { checkpoints }))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/rewind", tag = "sessions",
    summary = "Rewind a session's workspace and history to a checkpoint, as a new run",
    description = "Restores only what differs from the workspace now; later runs no longer see \
the messages after the checkpoint (they stay stored). The workspace as it is is recorded first as \
a checkpoint (`safety_checkpoint`): the rewind to it (`undo`) undoes this one. Refused while the \
session runs or another writer holds the workspace, and, unless `force`, when the workspace \
changed since the session's last checkpoint.",
    params(("id" = SessionId, Path)),
    request_body = RewindSession,
    responses(
        (status = 200, description = "the rewind", body = RewindView),
        (status = 404, description = "no such checkpoint of the session (`checkpoint_not_found`)", body = ErrorBody),
        (status = 409, description = "the session runs (`session_busy`), is archived (`session_archived`), its workspace has another writer (`workspace_busy`), or it changed since the session's last checkpoint and `force` is not set (`workspace_changed`, naming the paths)", body = ErrorBody),
    ))]
pub(super) async fn rewind(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<RewindSession>,
) -> Result<Json<RewindView>, ApiError> {
    let id = session_id(&id)?;
    Ok(Json(
        state
            .agents()?
            .rewind_session(&tenant, &id, command)
            .await?,
    ))
}

#[utoipa::path(get, path = "/v1/sessions/{id}/diff", tag = "sessions",
    summary = "What changed between two checkpoints, or since one",
    description = "Paths added, removed or changed, each text file with its unified diff.",
    params(("id" = SessionId, Path), DiffQuery),
    responses(
        (status = 200, description = "the changes", body = CheckpointDiffView),
        (status = 404, description = "no such checkpoint of the session (`checkpoint_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn diff(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> Result<Json<CheckpointDiffView>, ApiError> {
    let id = session_id(&id)?;
    let from = query.from.as_deref().map(checkpoint_id).transpose()?;
    let to = query.to.as_deref().map(checkpoint_id).transpose()?;
    Ok(Json(
        state
            .agents()?
            .diff_checkpoints(&tenant, &id, from.as_ref(), to.as_ref())
            .await?,
    ))
}
