//! Routes that need no token: health (details only with one) and the
//! OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;

/// The OpenAPI 3.1 document; a test checks it lists every route of [`super::ROUTES`].
pub const OPENAPI: &str = include_str!("openapi.json");

/// Without a valid token: 200 `{"status": "up"}`, nothing more (the server
/// answers; what it runs on and how many sandboxes it holds are not for
/// anonymous callers). With one: 200 when the database answers and the
/// backend can make sandboxes, else 503, with which component is down, never
/// why (the log does).
pub(super) async fn health(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
) -> impl IntoResponse {
    if caller.is_err() {
        return (StatusCode::OK, Json(json!({"status": "up"})));
    }
    let health = state.service.health().await;
    let status = if health.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let component = |c: &crate::service::ComponentHealth| json!({"name": c.name, "status": if c.ok { "ok" } else { "unavailable" }});
    let body = json!({
        "status": if health.is_ok() { "ok" } else { "degraded" },
        "database": component(&health.database),
        "backend": component(&health.backend),
        "sandboxes": health.sandboxes,
    });
    (status, Json(body))
}

pub(super) async fn openapi() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        OPENAPI,
    )
}
