//! Unauthenticated routes: health and the OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde::Serialize;

use super::AppState;
use super::openapi::OPENAPI;
use crate::service::ComponentHealth;

/// What `GET /v1/health` answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct HealthView {
    status: Overall,
    database: ComponentView,
    backend: ComponentView,
    /// Sandboxes running on this node.
    sandboxes: usize,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
enum Overall {
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

/// 200 when the database answers and the backend can make sandboxes, else 503.
/// Says which, never why (the log does).
#[utoipa::path(get, path = "/v1/health", tag = "meta", security(()),
    summary = "Database and backend status (no auth)",
    responses(
        (status = 200, description = "healthy", body = HealthView),
        (status = 503, description = "degraded", body = HealthView),
    ))]
pub(super) async fn health(State(state): State<AppState>) -> impl IntoResponse {
    let health = state.service.health().await;
    let (status, overall) = if health.is_ok() {
        (StatusCode::OK, Overall::Ok)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Overall::Degraded)
    };
    let body = HealthView {
        status: overall,
        database: (&health.database).into(),
        backend: (&health.backend).into(),
        sandboxes: health.sandboxes,
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
