//! Workspaces and the sandbox lifecycle: create, list, get, delete.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::WorkspaceId;
use paddock_core::sandbox::SandboxId;
use paddock_core::store::SandboxState;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::commands::{CreateSandbox, CreateWorkspace};
use crate::service::{SandboxFilter, SandboxView, WorkspaceView};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Only sandboxes in this state (sandbox listings only).
    #[param(value_type = Option<SandboxState>)]
    state: Option<String>,
    /// The last id of the previous page.
    #[param(value_type = Option<SandboxId>)]
    after: Option<String>,
    /// Page size, default 100.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SandboxList {
    pub sandboxes: Vec<SandboxView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<SandboxId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<WorkspaceId>,
}

#[utoipa::path(post, path = "/v1/workspaces", tag = "workspaces",
    summary = "Create a workspace",
    request_body = CreateWorkspace,
    responses((status = 201, description = "created", body = WorkspaceView)))]
pub(super) async fn create_workspace(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<CreateWorkspace>,
) -> Result<(StatusCode, Json<WorkspaceView>), ApiError> {
    let view = state.service.create_workspace(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/workspaces", tag = "workspaces",
    summary = "List workspaces, oldest first",
    params(
        ("after" = Option<WorkspaceId>, Query, description = "The last id of the previous page."),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Page size, default 100."),
    ),
    responses((status = 200, description = "one page", body = WorkspaceList)))]
pub(super) async fn list_workspaces(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<WorkspaceList>, ApiError> {
    if query.state.is_some() {
        return Err(ApiError::invalid("query string: workspaces have no state"));
    }
    let after = query.after.as_deref().map(workspace_id).transpose()?;
    let limit = query.limit;
    let workspaces = state.service.list_workspaces(&tenant, after, limit).await?;
    let next_after = full_page(workspaces.len(), limit)
        .then(|| workspaces.last().map(|w| w.id.clone()))
        .flatten();
    Ok(Json(WorkspaceList {
        workspaces,
        next_after,
    }))
}

#[utoipa::path(get, path = "/v1/workspaces/{id}", tag = "workspaces",
    summary = "Get a workspace",
    params(("id" = WorkspaceId, Path)),
    responses((status = 200, description = "the workspace", body = WorkspaceView)))]
pub(super) async fn get_workspace(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WorkspaceView>, ApiError> {
    let id = workspace_id(&id)?;
    Ok(Json(state.service.get_workspace(&tenant, &id).await?))
}

#[utoipa::path(delete, path = "/v1/workspaces/{id}", tag = "workspaces",
    summary = "Delete a workspace",
    description = "Deletes the workspace row and, when the server made it, its directory. Stopped sandboxes and snapshots keep their rows with `workspace` set to null. Its archived sessions are deleted with it (`DELETE /v1/sessions/{id}?purge=true`); a session not archived keeps it (409 `workspace_in_use`, naming the sessions).",
    params(("id" = WorkspaceId, Path)),
    responses(
        (status = 200, description = "the deleted workspace", body = WorkspaceView),
        (status = 409, description = "a session not archived works in it (`workspace_in_use`), one of its archived sessions was forked into another workspace (`session_in_use`), or a running sandbox uses it (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn delete_workspace(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<WorkspaceView>, ApiError> {
    let id = workspace_id(&id)?;
    if let Some(agents) = &state.agents {
        agents.delete_workspace_sessions(&tenant, &id).await?;
    }
    Ok(Json(state.service.delete_workspace(&tenant, &id).await?))
}

#[utoipa::path(post, path = "/v1/sandboxes", tag = "sandboxes",
    summary = "Start a sandbox",
    request_body = CreateSandbox,
    responses(
        (status = 201, description = "running", body = SandboxView),
        (status = 400, description = "a value the server refuses (`invalid_request`): limits, a network no backend can apply, a caller's secret that is not valid, secrets with network none", body = ErrorBody),
        (status = 403, description = "a network beyond what the server allows tenants (`network_not_allowed`), or a secret the server does not grant to this tenant (`secret_not_allowed`)", body = ErrorBody),
        (status = 404, description = "no such workspace (`workspace_not_found`)", body = ErrorBody),
        (status = 409, description = "a read-write sandbox's workspace has another writer, a sandbox or a run (`workspace_busy`, naming it), or a conflicting write (`conflict`)", body = ErrorBody),
        (status = 429, description = "the server runs its limit of sandboxes (`too_many_sandboxes`)", body = ErrorBody),
    ))]
pub(super) async fn create_sandbox(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<CreateSandbox>,
) -> Result<(StatusCode, Json<SandboxView>), ApiError> {
    let view = state.service.create_sandbox(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/sandboxes", tag = "sandboxes",
    summary = "List sandboxes, oldest first",
    description = "Every sandbox of the tenant: those started through this API and those of agent runs (`run` names the run; `running` while the run has it, `stopped` once the run ended).",
    params(ListQuery),
    responses((status = 200, description = "one page", body = SandboxList)))]
pub(super) async fn list_sandboxes(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SandboxList>, ApiError> {
    let state_filter = match query.state.as_deref() {
        None => None,
        Some(s) => Some(SandboxState::parse(s).ok_or_else(|| {
            ApiError::invalid("query string: state is one of running, stopped, lost")
        })?),
    };
    let filter = SandboxFilter {
        state: state_filter,
        after: query.after.as_deref().map(sandbox_id).transpose()?,
        limit: query.limit,
    };
    let limit = filter.limit;
    let sandboxes = state.service.list_sandboxes(&tenant, filter).await?;
    let next_after = full_page(sandboxes.len(), limit)
        .then(|| sandboxes.last().map(|s| s.id.clone()))
        .flatten();
    Ok(Json(SandboxList {
        sandboxes,
        next_after,
    }))
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}", tag = "sandboxes",
    summary = "Get a sandbox",
    params(("id" = SandboxId, Path)),
    responses((status = 200, description = "the sandbox", body = SandboxView)))]
pub(super) async fn get_sandbox(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SandboxView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(state.service.get_sandbox(&tenant, &id).await?))
}

#[utoipa::path(delete, path = "/v1/sandboxes/{id}", tag = "sandboxes",
    summary = "Destroy a sandbox (its record stays, `stopped`)",
    description = "Destroys a sandbox started through this API; one that no longer runs answers its record. The sandbox of an agent run that is still going (its `run` is set) is refused with 409 `sandbox_owned_by_run`, naming the run: a sandbox ends with its run, so cancel the run (`POST /v1/runs/{id}/cancel`); deleting never cancels a run as a side effect.",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the sandbox as it ended", body = SandboxView),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "an agent run that is still going owns it (`sandbox_owned_by_run`); the message names the run", body = ErrorBody),
    ))]
pub(super) async fn delete_sandbox(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SandboxView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(state.service.delete_sandbox(&tenant, &id).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct KeepAliveQuery {
    /// Seconds more, 1 to 120 (default 120): a page that goes away asks for
    /// a few, so that a reload takes the sandbox back and a closed tab frees
    /// its workspace.
    #[param(minimum = 1, maximum = 120)]
    secs: Option<u64>,
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/keepalive", tag = "sandboxes",
    summary = "Keep a console sandbox alive",
    description = "A console sandbox (`\"console\": true`) lives while its page calls this at least every 120 s: it is destroyed once `keepalive_until` passed while nothing uses it. Answers the sandbox with its new `keepalive_until`.",
    params(("id" = SandboxId, Path), KeepAliveQuery),
    responses(
        (status = 200, description = "the sandbox", body = SandboxView),
        (status = 400, description = "not a console sandbox, or `secs` out of range (`invalid_request`)", body = ErrorBody),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "it no longer runs (`sandbox_not_running`)", body = ErrorBody),
    ))]
pub(super) async fn keep_alive(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<KeepAliveQuery>,
) -> Result<Json<SandboxView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(
        state.service.keep_alive(&tenant, &id, query.secs).await?,
    ))
}

pub(super) fn workspace_id(raw: &str) -> Result<WorkspaceId, ApiError> {
    WorkspaceId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}

pub(super) fn full_page(len: usize, limit: Option<u32>) -> bool {
    len > 0 && len as u64 == u64::from(limit.unwrap_or(100))
}
