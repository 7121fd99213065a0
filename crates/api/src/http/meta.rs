//! Routes that need no token: health (details only with one) and the
//! OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;
use super::openapi::OPENAPI;
use crate::service::{BackendHealth, ComponentHealth, StoreWrites};

/// What `GET /v1/health` answers.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HealthView {
    pub status: Overall,
    /// Only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseView>,
    /// Only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<ComponentView>,
    /// Every backend a sandbox request may name (`name` or `name:image`),
    /// in the operator's order; only with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backends: Option<Vec<BackendView>>,
    /// The caller's tenant's sandboxes running on this node (never the
    /// node's total: other tenants' work is not the caller's to see); only
    /// with a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandboxes: Option<usize>,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overall {
    /// The answer without a token: the server is up.
    Up,
    Ok,
    Degraded,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ComponentView {
    /// `sqlite`, `postgres`, `native`, ...
    pub name: String,
    pub status: ComponentStatus,
}

/// The store: whether it answers, and whether it takes a write.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DatabaseView {
    /// `sqlite` or `postgres`.
    pub name: String,
    /// `ok`; `unavailable` (it does not answer); `full` (it answers, but
    /// its file system has no space left to write); `cannot_write` (it
    /// answers, but a write failed or did not commit within 0.7 s).
    pub status: DatabaseStatus,
    /// Whether a write committed just now (a probe row, at most one probe
    /// per 0.5 s whoever asks).
    pub writable: bool,
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseStatus {
    Ok,
    Unavailable,
    Full,
    CannotWrite,
}

impl DatabaseView {
    fn of(database: &ComponentHealth, writes: StoreWrites) -> Self {
        let status = match (database.ok, writes) {
            (false, _) => DatabaseStatus::Unavailable,
            (true, StoreWrites::Ok) => DatabaseStatus::Ok,
            (true, StoreWrites::Full) => DatabaseStatus::Full,
            (true, StoreWrites::Failed) => DatabaseStatus::CannotWrite,
        };
        Self {
            name: database.name.clone(),
            status,
            writable: database.ok && writes == StoreWrites::Ok,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackendView {
    /// `native`, or `docker:IMAGE` / `gvisor:IMAGE`.
    pub name: String,
    pub status: ComponentStatus,
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

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ComponentStatus {
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
/// anonymous callers). With one: 200 when the database answers and takes a
/// write and the backend can make sandboxes, else 503, with which component
/// is down (and a full disk said as such), never more of why (the log does).
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
        database: Some(DatabaseView::of(&health.database, health.database_writes)),
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
