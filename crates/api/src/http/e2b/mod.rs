//! The E2B API, served beside Paddock's own so that code written for E2B's
//! SDKs runs on Paddock unchanged (docs/e2b.md): the control plane at the
//! server's root (`/v2/sandboxes`, `/sandboxes/{id}`, ...; the tenant's
//! token in `X-API-KEY`), and envd at the same root, routed by the
//! `E2b-Sandbox-Id` header the SDKs always send (`E2B_SANDBOX_URL` = the
//! server's URL). Errors are E2B's `{"code", "message"}`.

mod auth;
mod envd;
mod error;
mod lifecycle;
mod logs;
mod metrics;
mod network;
mod sandboxes;
mod snapshots;
mod templates;

pub use auth::SANDBOX_ID_HEADER;

use axum::Router;
use axum::routing::{delete, get, post, put};

use super::AppState;

/// The port E2B's SDKs put in front of a sandbox id in envd's host name
/// (`49983-{id}.{domain}`).
pub const ENVD_PORT: &str = "49983";

/// The E2B routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v2/sandboxes",
            post(sandboxes::create).get(sandboxes::list),
        )
        .route("/v2/sandboxes/{id}/connect", post(sandboxes::connect))
        .route(
            "/sandboxes/{id}",
            get(sandboxes::get).delete(sandboxes::kill),
        )
        .route("/sandboxes/{id}/timeout", post(sandboxes::set_timeout))
        .route("/sandboxes/{id}/pause", post(sandboxes::pause))
        .route("/sandboxes/{id}/resume", post(lifecycle::resume))
        .route("/sandboxes/{id}/connect", post(sandboxes::connect))
        .route("/sandboxes/{id}/fork", post(lifecycle::fork))
        .route("/sandboxes/{id}/refreshes", post(lifecycle::refresh))
        .route("/sandboxes/{id}/network", put(network::update_network))
        .route("/sandboxes/{id}/snapshots", post(snapshots::create))
        .route("/snapshots", get(snapshots::list))
        .route("/templates/{id}", delete(snapshots::delete_template))
        .route("/sandboxes/metrics", get(metrics::list_metrics))
        .route("/sandboxes/{id}/metrics", get(metrics::sandbox_metrics))
        .route("/sandboxes/{id}/logs", get(logs::logs_v1))
        .route("/v2/sandboxes/{id}/logs", get(logs::logs_v2))
        .route("/health", get(envd::files::health))
        .route(
            "/files",
            get(envd::files::download).post(envd::files::upload),
        )
        .route("/process.Process/Start", post(envd::process::start))
        .route("/process.Process/Connect", post(envd::process::connect))
        .route("/process.Process/List", post(envd::process::list))
        .route(
            "/process.Process/SendInput",
            post(envd::process::send_input),
        )
        .route(
            "/process.Process/StreamInput",
            post(envd::process::stream_input),
        )
        .route(
            "/process.Process/CloseStdin",
            post(envd::process::close_stdin),
        )
        .route(
            "/process.Process/SendSignal",
            post(envd::process::send_signal),
        )
        .route("/process.Process/Update", post(envd::process::update))
        .route("/filesystem.Filesystem/Stat", post(envd::filesystem::stat))
        .route(
            "/filesystem.Filesystem/ListDir",
            post(envd::filesystem::list_dir),
        )
        .route(
            "/filesystem.Filesystem/MakeDir",
            post(envd::filesystem::make_dir),
        )
        .route("/filesystem.Filesystem/Move", post(envd::filesystem::move_))
        .route(
            "/filesystem.Filesystem/Remove",
            post(envd::filesystem::remove),
        )
        .route(
            "/filesystem.Filesystem/WatchDir",
            post(envd::filesystem::watch_dir),
        )
        .route(
            "/filesystem.Filesystem/CreateWatcher",
            post(envd::filesystem::create_watcher),
        )
        .route(
            "/filesystem.Filesystem/GetWatcherEvents",
            post(envd::filesystem::get_watcher_events),
        )
        .route(
            "/filesystem.Filesystem/RemoveWatcher",
            post(envd::filesystem::remove_watcher),
        )
}
