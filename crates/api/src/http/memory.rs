//! Project memory: list or search, add, get, approve a proposed record, remove.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::{MemoryId, WorkspaceId};
use paddock_core::store::MemoryKind;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::{ApiError, AppState, Caller};
use crate::service::{AddMemory, MemoryQuery, MemoryView, WidenMemory};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Search words: the records are ranked by relevance and recency.
    /// Without it, the records are listed newest first.
    #[param(
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    q: Option<String>,
    /// The tenant's records and this workspace's (default: all of the tenant's).
    #[param(value_type = Option<WorkspaceId>)]
    workspace: Option<String>,
    /// With `workspace`: this project's records too.
    project: Option<String>,
    kind: Option<MemoryKind>,
    /// Include records proposed by runs and not approved yet.
    #[serde(default)]
    proposed: bool,
    /// Include records replaced by newer ones.
    #[serde(default)]
    superseded: bool,
    /// Most records, default 50.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ApproveQuery {
    /// `tenant`: the record applies to every workspace of the tenant from
    /// now on (default: the scope it was written with; a run's record is
    /// its own workspace's).
    #[param(inline)]
    widen: Option<WidenMemory>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryList {
    pub memories: Vec<MemoryView>,
}

fn memory_id(raw: &str) -> Result<MemoryId, ApiError> {
    MemoryId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}

#[utoipa::path(get, path = "/v1/memory", tag = "memory",
    summary = "List or search project memory",
    params(ListQuery),
    responses(
        (status = 200, description = "the records", body = MemoryList),
        (status = 400, description = "a bad query (`invalid_request`, `invalid_id`)", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<MemoryList>, ApiError> {
    let workspace = query
        .workspace
        .as_deref()
        .map(|raw| {
            WorkspaceId::parse(raw)
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
        })
        .transpose()?;
    let memories = state
        .agents()?
        .memories(
            &tenant,
            MemoryQuery {
                text: query.q,
                workspace,
                project: query.project,
                kind: query.kind,
                include_proposed: query.proposed,
                include_superseded: query.superseded,
                limit: query.limit,
            },
        )
        .await?;
    Ok(Json(MemoryList { memories }))
}

#[utoipa::path(post, path = "/v1/memory", tag = "memory",
    summary = "Add a project memory record",
    request_body = AddMemory,
    responses(
        (status = 201, description = "stored, active", body = MemoryView),
        (status = 400, description = "a bad record (`invalid_request`)", body = ErrorBody),
        (status = 404, description = "no such workspace or superseded record (`workspace_not_found`, `memory_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn add(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<AddMemory>,
) -> Result<(StatusCode, Json<MemoryView>), ApiError> {
    let view = state.agents()?.add_memory(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/memory/{id}", tag = "memory",
    summary = "Get a project memory record",
    params(("id" = MemoryId, Path)),
    responses(
        (status = 200, description = "the record", body = MemoryView),
        (status = 404, description = "no such record (`memory_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<MemoryView>, ApiError> {
    let id = memory_id(&id)?;
    Ok(Json(state.agents()?.memory(&tenant, &id).await?))
}

#[utoipa::path(post, path = "/v1/memory/{id}/approve", tag = "memory",
    summary = "Approve a record a run proposed (it is recalled from then on), optionally widening it to the tenant",
    params(("id" = MemoryId, Path), ApproveQuery),
    responses(
        (status = 200, description = "the record, active", body = MemoryView),
        (status = 400, description = "a bad query (`invalid_request`, `invalid_id`)", body = ErrorBody),
        (status = 404, description = "no such record (`memory_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn approve(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ApproveQuery>,
) -> Result<Json<MemoryView>, ApiError> {
    let id = memory_id(&id)?;
    Ok(Json(
        state
            .agents()?
            .approve_memory(&tenant, &id, query.widen)
            .await?,
    ))
}

#[utoipa::path(delete, path = "/v1/memory/{id}", tag = "memory",
    summary = "Remove a project memory record",
    params(("id" = MemoryId, Path)),
    responses(
        (status = 204, description = "removed"),
        (status = 404, description = "no such record (`memory_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn remove(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let id = memory_id(&id)?;
    state.agents()?.forget(&tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
