//! `GET /v1/sandboxes/{id}/egress`: every egress decision of a sandbox with
//! network (allowed or denied, host, port, bytes, duration), oldest first.

use axum::Json;
use axum::extract::State;
use paddock_core::sandbox::SandboxId;
use paddock_proto::EgressDecision;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiPath, sandbox_id};
use super::{ApiError, AppState, Caller};

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EgressList {
    pub decisions: Vec<EgressDecision>,
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/egress", tag = "sandboxes",
    summary = "List the sandbox's egress decisions",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the decisions, oldest first (the last 1024)", body = EgressList),
        (status = 404, description = "no such sandbox (`not_found`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`)", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<EgressList>, ApiError> {
    let id = sandbox_id(&id)?;
    let decisions = state.service.list_egress(&tenant, &id).await?;
    Ok(Json(EgressList { decisions }))
}
