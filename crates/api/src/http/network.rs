//! `PUT /v1/sandboxes/{id}/network`: replaces the allowlist of a running
//! sandbox; `GET` answers its network now and the changes made to it.

use axum::Json;
use axum::extract::State;
use paddock_core::sandbox::SandboxId;

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::sandboxes::{NetworkChanged, NetworkView, SetNetwork};

#[utoipa::path(put, path = "/v1/sandboxes/{id}/network", tag = "sandboxes",
    summary = "Change the allowlist of a running sandbox",
    description = "Replaces the sandbox's allowlist: new connections (and DNS answers) follow the new one at once, and every open connection it refuses (a CONNECT tunnel, a transparent relay, an intercepted TLS connection) is cut. A secret stays bound to its hosts: one whose host left the list is no longer put in anywhere. The server's network bounds apply as at create. Only an allowlist can become another: a sandbox made with `none` has no egress to change, `full` is routed by NAT rules made at start, and an allowlist cannot become `none` or `full` (409, saying why). The change is kept as a `network.changed` event (`GET` on this path).",
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
    summary = "The network of a running sandbox and its changes",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the network now and the last 64 `network.changed` events, oldest first", body = NetworkView),
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
