//! Agent sessions: create, list by workspace, get, rename, archive or delete, fork,
//! and their runs (list, start).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::{SessionId, WorkspaceId};
use paddock_runtime::SessionDeleted;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::{ApiError, AppState, Caller};
use crate::service::sessions::{CreateSession, ForkSession, StartRunCommand, UpdateSession};
use crate::service::{RunView, SessionView};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Only the sessions of this workspace.
    #[param(value_type = Option<WorkspaceId>)]
    workspace: Option<String>,
    /// The last id of the previous page.
    #[param(value_type = Option<SessionId>)]
    after: Option<String>,
    /// Page size, default 100.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<SessionId>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunList {
    pub runs: Vec<RunView>,
}

#[utoipa::path(post, path = "/v1/sessions", tag = "sessions",
    summary = "Create a session on a workspace",
    request_body = CreateSession,
    responses(
        (status = 201, description = "created", body = SessionView),
        (status = 404, description = "no such workspace (`workspace_not_found`)", body = ErrorBody),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<CreateSession>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let view = state.agents()?.create_session(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/sessions", tag = "sessions",
    summary = "List sessions, oldest first (archived ones too)",
    params(ListQuery),
    responses((status = 200, description = "one page", body = SessionList)))]
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

#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    summary = "Get a session (an archived one too)",
    params(("id" = SessionId, Path)),
    responses((status = 200, description = "the session", body = SessionView)))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SessionView>, ApiError> {
    let id = session_id(&id)?;
    Ok(Json(state.agents()?.get_session(&tenant, &id).await?))
}

#[utoipa::path(patch, path = "/v1/sessions/{id}", tag = "sessions",
    summary = "Rename a session, archive it or take it out of the archive",
    params(("id" = SessionId, Path)),
    request_body = UpdateSession,
    responses(
        (status = 200, description = "the session as it is now", body = SessionView),
        (status = 409, description = "the session is archived (`session_archived`) or runs already (`session_busy`), or a conflicting write (`conflict`)", body = ErrorBody),
    ))]
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

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteQuery {
    /// Delete the session for good instead of archiving it.
    #[serde(default)]
    purge: bool,
    /// With `purge`: cancel the session's unfinished runs first (and wait
    /// up to 30 s for them to end) instead of refusing.
    #[serde(default)]
    force: bool,
}

/// What `DELETE ...?purge=true` removed.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SessionDeletedView {
    /// The session, then the sessions of the subagents its runs spawned.
    #[schema(value_type = Vec<String>)]
    pub deleted: Vec<SessionId>,
    pub checkpoints: u64,
    /// Checkpoint files (and manifests) no other checkpoint names, removed
    /// from the tenant's blob store.
    pub blobs_removed: u64,
    pub bytes_freed: u64,
}

impl From<&SessionDeleted> for SessionDeletedView {
    fn from(deleted: &SessionDeleted) -> Self {
        Self {
            deleted: deleted.sessions.clone(),
            checkpoints: deleted.checkpoints,
            blobs_removed: deleted.blobs_removed,
            bytes_freed: deleted.bytes_freed,
        }
    }
}

/// The archived session, or what a purge removed.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum DeleteAnswer {
    Archived(Box<SessionView>),
    Deleted(SessionDeletedView),
}

/// Archives the session (its runs and events stay readable), or with
/// `purge=true` deletes it.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions",
    summary = "Archive a session, or delete it for good with `purge=true`",
    description = "Without `purge`: the same as `PATCH {\"archived\": true}`, and idempotent. \
Nothing is removed: `GET` still answers it (`status: archived`) and lists still show it, its \
runs and events stay readable, and it takes no new run (409 `session_archived`). Archiving is \
for good (`PATCH {\"archived\": false}` is 400); fork the session to go on. Refused while one \
of its runs is in progress (409 `session_busy`).\n\n\
With `purge=true`: deletes the session and the sessions of the subagents its runs spawned, with \
their runs, events, messages, steering, goals, plan, checkpoints and rewinds, and the checkpoint \
files no other checkpoint names (a file another session's checkpoint names stays). Its \
workspace stays (`DELETE /v1/workspaces/{id}`); snapshots stay, without the session. Refused \
(409 `session_in_use`, naming them) while a run of it has not ended (give `force=true` to cancel \
them first) or while a session was forked from it (a fork reads its history from its parent: \
delete the forks first).",
    params(("id" = SessionId, Path), DeleteQuery),
    responses(
        (status = 200, description = "the session, archived; or, with `purge`, what was deleted", body = DeleteAnswer),
        (status = 409, description = "the session is archived (`session_archived`) or runs already (`session_busy`), it is forked or has unfinished runs (`session_in_use`, with `purge`), or a conflicting write (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn archive(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> Result<Json<DeleteAnswer>, ApiError> {
    let id = session_id(&id)?;
    let agents = state.agents()?;
    if !query.purge {
        if query.force {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "force is for purge=true (archiving never cancels a run)",
            ));
        }
        return Ok(Json(DeleteAnswer::Archived(Box::new(
            agents.archive_session(&tenant, &id).await?,
        ))));
    }
    let deleted = agents.delete_session(&tenant, &id, query.force).await?;
    Ok(Json(DeleteAnswer::Deleted(SessionDeletedView::from(
        &deleted,
    ))))
}

#[utoipa::path(post, path = "/v1/sessions/{id}/fork", tag = "sessions",
    summary = "Fork a session: a new one with its history up to a run",
    params(("id" = SessionId, Path)),
    request_body = ForkSession,
    responses(
        (status = 201, description = "the new session", body = SessionView),
        (status = 409, description = "the run left no end snapshot (`no_end_snapshot`), or a conflicting write (`conflict`)", body = ErrorBody),
    ))]
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

#[utoipa::path(get, path = "/v1/sessions/{id}/runs", tag = "runs",
    summary = "List a session's runs, oldest first",
    params(("id" = SessionId, Path)),
    responses((status = 200, description = "the runs", body = RunList)))]
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
#[utoipa::path(post, path = "/v1/sessions/{id}/runs", tag = "runs",
    summary = "Start a run (answers at once; the events route follows it)",
    params(("id" = SessionId, Path)),
    request_body = StartRunCommand,
    responses(
        (status = 202, description = "started, or `queued` where the server queues runs that find no slot (`[runs] when_full = \"queue\"`)", body = RunView),
        (status = 400, description = "a bad id or body, or a model the server does not allow (`model_not_allowed`); a caller's secret that is not valid, or secrets with network none (`invalid_request`)", body = ErrorBody),
        (status = 403, description = "a network beyond what the server allows tenants (`network_not_allowed`), or a secret the server does not grant to this tenant (`secret_not_allowed`)", body = ErrorBody),
        (status = 409, description = "the session is archived (`session_archived`) or runs already (`session_busy`), a build run's workspace has another writer (`workspace_busy`, naming it), or a conflicting write (`conflict`)", body = ErrorBody),
        (status = 422, description = "the body does not fit the request type (`invalid_request`), or the model cannot be provided here (`model_unavailable`)", body = ErrorBody),
        (status = 429, description = "the run's sandbox has no slot: a tenant or node quota (`quota_exceeded`, naming it: `sandboxes`, `runs`, ...) or the node's `max_sandboxes` (`too_many_sandboxes`), where the server refuses such runs; the tenant's run queue is full (`queue_full`), where it queues them; no run is recorded", body = ErrorBody),
    ))]
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
