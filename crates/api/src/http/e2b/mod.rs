//! The E2B API, served beside Paddock's own so that code written for E2B's
//! SDKs runs on Paddock unchanged (docs/e2b.md): the control plane at the
//! server's root (`/v2/sandboxes`, `/sandboxes/{id}`, ...; the tenant's
//! token in `X-API-KEY`), and envd at the same root, routed by the
//! `E2b-Sandbox-Id` header the SDKs always send (`E2B_SANDBOX_URL` = the
//! server's URL). Errors are E2B's `{"code", "message"}`.

mod auth;
mod envd;
mod error;
mod sandboxes;
mod templates;

use axum::Router;
use axum::routing::{get, post};

use super::AppState;

/// The E2B routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v2/sandboxes", post(sandboxes::create).get(sandboxes::list))
        .route("/v2/sandboxes/{id}/connect", post(sandboxes::connect))
        .route(
            "/sandboxes/{id}",
            get(sandboxes::get).delete(sandboxes::kill),
        )
        .route("/sandboxes/{id}/timeout", post(sandboxes::set_timeout))
        .route("/sandboxes/{id}/pause", post(sandboxes::pause))
        .route("/health", get(envd::files::health))
        .route(
            "/files",
            get(envd::files::download).post(envd::files::upload),
        )
}
