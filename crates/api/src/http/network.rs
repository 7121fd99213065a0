//! `PUT /v1/sandboxes/{id}/network`: replaces the allowlist of a running
//! sandbox; `GET` answers its network now; `GET .../network/changes` lists
//! the changes made to it, also once it stopped.

use axum::Json;
use axum::extract::State;
use paddock_core::sandbox::SandboxId;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::sandboxes::{NetworkChanged, NetworkView, SetNetwork};

#[utoipa::path(put, path = "/v1/sandboxes/{id}/network", tag = "sandboxes",
    summary = "Change the allowlist of a running sandbox",
    description = "Replaces the sandbox's allowlist: new connections (and DNS answers) follow the new one at once, and every open connection it refuses (a CONNECT tunnel, a transparent relay, an intercepted TLS connection) is cut. A secret stays bound to its hosts: one whose host left the list is no longer put in anywhere. The server's network bounds apply as at create. Only an allowlist can become another: a sandbox made with `none` has no egress to change, `full` is routed by NAT rules made at start, and an allowlist cannot become `none` or `full` (409, saying why). The change is stored as a `network.changed` event, listed by `GET /v1/sandboxes/{id}/network/changes` (also after the sandbox stops).",
    params(("id" = SandboxId, Path)),
    request_body = SetNetwork,
    responses(
        (status = 200, description = "the change made", body = NetworkChanged),
        (status = 400, description = "a network no backend can apply (`invalid_request`)", body = ErrorBody),
        (status = 403, description = "a network beyond what the server allows tenants (`network_not_allowed`)", body = ErrorBody),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "a change a running sandbox cannot take, or a backend that cannot change it (`conflict`, saying why); the sandbox is not running (`sandbox_not_running`) or is a run's (`sandbox_owned_by_run`)", body = ErrorBody),
    ))]
pub(super) async fn set(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<SetNetwork>,
) -> Result<Json<NetworkChanged>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(
        state.service.set_network(&tenant, &id, command).await?,
    ))
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/network", tag = "sandboxes",
    summary = "The network of a running sandbox now",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the network now", body = NetworkView),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or is a run's (`sandbox_owned_by_run`)", body = ErrorBody),
    ))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<NetworkView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(state.service.get_network(&tenant, &id).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ChangesQuery {
    /// Only changes with a higher `seq` (the last of the previous page).
    after: Option<u64>,
    /// Page size, default 100.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NetworkChangeList {
    /// Oldest first.
    pub changes: Vec<NetworkChanged>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<u64>,
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/network/changes", tag = "sandboxes",
    summary = "The `network.changed` events of a sandbox, running or not",
    description = "Every change of the sandbox's allowlist, in the order made (`seq` from 1), with the old and new network, who made it, when and the connections it cut. Kept in the server's database: listed after the sandbox stops and after a restart of the server.",
    params(("id" = SandboxId, Path), ChangesQuery),
    responses(
        (status = 200, description = "one page, oldest first", body = NetworkChangeList),
        (status = 400, description = "a limit outside 1 to 1000 (`invalid_request`)", body = ErrorBody),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn changes(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ChangesQuery>,
) -> Result<Json<NetworkChangeList>, ApiError> {
    let id = sandbox_id(&id)?;
    let limit = query.limit;
    let changes = state
        .service
        .list_network_changes(&tenant, &id, query.after.unwrap_or(0), limit)
        .await?;
    let next_after = super::sandboxes::full_page(changes.len(), limit)
        .then(|| changes.last().map(|c| c.seq))
        .flatten();
    Ok(Json(NetworkChangeList {
        changes,
        next_after,
    }))
}
