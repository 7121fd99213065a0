//! Routes that need no token: health (details only with one) and the
//! OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde::Serialize;

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;
use super::openapi::OPENAPI;
use crate::service::{BackendHealth, ComponentHealth};

/// What `GET /v1/health` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct HealthView {
    status: Overall,
    /// Only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<ComponentView>,
    /// Only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    backend: Option<ComponentView>,
    /// Every backend a sandbox request may name (`name` or `name:image`),
    /// in the operator's order; only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    backends: Option<Vec<BackendView>>,
    /// The caller's tenant's sandboxes running on this node (never the
    /// node's total: other tenants' work is not the caller's to see); only
    /// with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandboxes: Option<usize>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
enum Overall {
    /// The answer without a token: the server is up.
    Up,
    Ok,
    Degraded,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct ComponentView {
    /// `sqlite`, `postgres`, `native`, ...
    name: String,
    status: ComponentStatus,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct BackendView {
    /// `native`, or `docker:IMAGE` / `gvisor:IMAGE`.
    name: String,
    status: ComponentStatus,
}

impl From<&BackendHealth> for BackendView {
    fn from(b: &BackendHealth) -> Self {
        Self {
            name: b.name.clone(),
            status: if b.ok {
                ComponentStatus::Ok
            } else {
                ComponentStatus::Unavailable
            },
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
enum ComponentStatus {
    Ok,
    Unavailable,
}

impl From<&ComponentHealth> for ComponentView {
    fn from(c: &ComponentHealth) -> Self {
        Self {
            name: c.name.clone(),
            status: if c.ok {
                ComponentStatus::Ok
            } else {
                ComponentStatus::Unavailable
            },
        }
    }
}

/// Without a valid token: 200 `{"status": "up"}`, nothing more (the server
/// answers; what it runs on and how many sandboxes it holds are not for
/// anonymous callers). With one: 200 when the database answers and the
/// backend can make sandboxes, else 503, with which component is down, never
/// why (the log does).
#[utoipa::path(get, path = "/v1/health", tag = "meta", security(()),
    summary = "Server status (no auth): `up` without a token, database and backend with a valid one",
    responses(
        (status = 200, description = "up (no token), or healthy (with a token)", body = HealthView),
        (status = 503, description = "degraded (with a token)", body = HealthView),
    ))]
pub(super) async fn health(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
) -> impl IntoResponse {
    let Ok(caller) = caller else {
        let body = HealthView {
            status: Overall::Up,
            database: None,
            backend: None,
            backends: None,
            sandboxes: None,
        };
        return (StatusCode::OK, Json(body));
    };
    let health = state.service.health(&caller.0).await;
    let (status, overall) = if health.is_ok() {
        (StatusCode::OK, Overall::Ok)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Overall::Degraded)
    };
    let body = HealthView {
        status: overall,
        database: Some((&health.database).into()),
        backend: Some((&health.backend).into()),
        backends: Some(health.backends.iter().map(BackendView::from).collect()),
        sandboxes: Some(health.sandboxes),
    };
    (status, Json(body))
}

#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta", security(()),
    summary = "This document (no auth)",
    responses((status = 200, description = "the OpenAPI document", body = serde_json::Value)))]
pub(super) async fn openapi() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        OPENAPI.as_str(),
    )
}
