//! The HTTP API under `/v1`: JSON, bearer-token auth scoped to a tenant,
//! errors as `{"error": {"code", "message"}}`, SSE for streamed exec and
//! for a session's events (resumable by sequence number).
//! docs/api.md describes it for callers; `GET /v1/openapi.json` serves the
//! OpenAPI document.

mod agent_error;
mod auth;
mod error;
mod events;
mod exec;
mod extract;
mod files;
mod meta;
mod processes;
mod runs;
mod sandboxes;
mod sessions;
mod snapshots;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use auth::{Caller, MIN_TOKEN_LEN, TokenError, Tokens};
pub use error::ApiError;
pub use meta::OPENAPI;

use crate::service::{AgentService, SandboxService};

/// Default request body limit: the guest protocol's largest payload (a whole
/// file write), so any body it could carry is accepted.
pub const DEFAULT_MAX_BODY_BYTES: usize = paddock_proto::MAX_PAYLOAD_LEN as usize;

/// How long a shutdown waits for open connections after the sandboxes are gone.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Every route, as (method, path template) in the OpenAPI document's
/// spelling; a test checks that the document and the router agree.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/v1/health"),
    ("get", "/v1/openapi.json"),
    ("post", "/v1/workspaces"),
    ("get", "/v1/workspaces"),
    ("get", "/v1/workspaces/{id}"),
    ("delete", "/v1/workspaces/{id}"),
    ("post", "/v1/sandboxes"),
    ("get", "/v1/sandboxes"),
    ("get", "/v1/sandboxes/{id}"),
    ("delete", "/v1/sandboxes/{id}"),
    ("post", "/v1/sandboxes/{id}/exec"),
    ("post", "/v1/sandboxes/{id}/processes"),
    ("get", "/v1/sandboxes/{id}/processes"),
    ("get", "/v1/sandboxes/{id}/processes/{handle}/output"),
    ("post", "/v1/sandboxes/{id}/processes/{handle}/stdin"),
    ("post", "/v1/sandboxes/{id}/processes/{handle}/signal"),
    ("get", "/v1/sandboxes/{id}/files"),
    ("get", "/v1/sandboxes/{id}/files/{path}"),
    ("put", "/v1/sandboxes/{id}/files/{path}"),
    ("delete", "/v1/sandboxes/{id}/files/{path}"),
    ("post", "/v1/sandboxes/{id}/search"),
    ("post", "/v1/sandboxes/{id}/snapshots"),
    ("post", "/v1/snapshots"),
    ("get", "/v1/snapshots"),
    ("get", "/v1/snapshots/{id}"),
    ("delete", "/v1/snapshots/{id}"),
    ("post", "/v1/snapshots/{id}/restore"),
    ("get", "/v1/snapshots/{id}/archive"),
    ("post", "/v1/sessions"),
    ("get", "/v1/sessions"),
    ("get", "/v1/sessions/{id}"),
    ("patch", "/v1/sessions/{id}"),
    ("delete", "/v1/sessions/{id}"),
    ("post", "/v1/sessions/{id}/fork"),
    ("get", "/v1/sessions/{id}/runs"),
    ("post", "/v1/sessions/{id}/runs"),
    ("get", "/v1/sessions/{id}/events"),
    ("get", "/v1/runs/{id}"),
    ("post", "/v1/runs/{id}/cancel"),
    ("get", "/v1/runs/{id}/children"),
    ("get", "/v1/runs/{id}/events"),
];

#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Largest request body accepted; larger ones get 413.
    pub max_body_bytes: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The services behind the API. Without `agents` the session and run routes
/// answer 503 `agents_unavailable`.
#[derive(Debug, Clone)]
pub struct Services {
    pub sandboxes: Arc<SandboxService>,
    pub agents: Option<Arc<AgentService>>,
}

impl From<Arc<SandboxService>> for Services {
    fn from(sandboxes: Arc<SandboxService>) -> Self {
        Self {
            sandboxes,
            agents: None,
        }
    }
}

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub service: Arc<SandboxService>,
    pub agents: Option<Arc<AgentService>>,
    pub tokens: Arc<Tokens>,
}

impl AppState {
    /// The agent service, or 503 when this server runs none.
    pub fn agents(&self) -> Result<&Arc<AgentService>, ApiError> {
        self.agents.as_ref().ok_or_else(|| {
            ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "agents_unavailable",
                "this server does not run agents",
            )
        })
    }
}

pub fn router(services: impl Into<Services>, tokens: Tokens, options: &HttpOptions) -> Router {
    let services = services.into();
    let state = AppState {
        service: services.sandboxes,
        agents: services.agents,
        tokens: Arc::new(tokens),
    };
    Router::new()
        .route("/v1/health", get(meta::health))
        .route("/v1/openapi.json", get(meta::openapi))
        .route(
            "/v1/workspaces",
            post(sandboxes::create_workspace).get(sandboxes::list_workspaces),
        )
        .route(
            "/v1/workspaces/{id}",
            get(sandboxes::get_workspace).delete(sandboxes::delete_workspace),
        )
        .route(
            "/v1/sandboxes",
            post(sandboxes::create_sandbox).get(sandboxes::list_sandboxes),
        )
        .route(
            "/v1/sandboxes/{id}",
            get(sandboxes::get_sandbox).delete(sandboxes::delete_sandbox),
        )
        .route("/v1/sandboxes/{id}/exec", post(exec::exec))
        .route(
            "/v1/sandboxes/{id}/processes",
            post(processes::start).get(processes::list),
        )
        .route(
            "/v1/sandboxes/{id}/processes/{handle}/output",
            get(processes::output),
        )
        .route(
            "/v1/sandboxes/{id}/processes/{handle}/stdin",
            post(processes::stdin),
        )
        .route(
            "/v1/sandboxes/{id}/processes/{handle}/signal",
            post(processes::signal),
        )
        .route("/v1/sandboxes/{id}/files", get(files::list))
        .route(
            "/v1/sandboxes/{id}/files/{*path}",
            get(files::read).put(files::write).delete(files::delete),
        )
        .route("/v1/sandboxes/{id}/search", post(files::search))
        .route("/v1/sandboxes/{id}/snapshots", post(snapshots::create))
        .route(
            "/v1/snapshots",
            post(snapshots::import).get(snapshots::list),
        )
        .route(
            "/v1/snapshots/{id}",
            get(snapshots::get).delete(snapshots::delete),
        )
        .route("/v1/snapshots/{id}/restore", post(snapshots::restore))
        .route("/v1/snapshots/{id}/archive", get(snapshots::archive))
        .route("/v1/sessions", post(sessions::create).get(sessions::list))
        .route(
            "/v1/sessions/{id}",
            get(sessions::get)
                .patch(sessions::update)
                .delete(sessions::archive),
        )
        .route("/v1/sessions/{id}/fork", post(sessions::fork))
        .route(
            "/v1/sessions/{id}/runs",
            get(sessions::list_runs).post(sessions::start_run),
        )
        .route("/v1/sessions/{id}/events", get(events::stream))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route("/v1/runs/{id}/children", get(runs::children))
        .route("/v1/runs/{id}/events", get(events::run_stream))
        .fallback(|| async { ApiError::route_not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(DefaultBodyLimit::max(options.max_body_bytes))
        .with_state(state)
}

/// Serves until `shutdown` is cancelled (SIGTERM, SIGINT, or a test), then
/// stops accepting, cancels the runs in progress (their sandboxes torn
/// down), destroys every sandbox the service runs, and waits (a bounded
/// time) for open connections to finish. The expiry task runs meanwhile.
/// Binding is the caller's: tests pass a listener on port 0.
pub async fn run(
    listener: TcpListener,
    services: impl Into<Services>,
    tokens: Tokens,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let services = services.into();
    let service = services.sandboxes.clone();
    let agents = services.agents.clone();
    let expiry = service.spawn_expiry();
    let blob_sweeper = service.spawn_blob_sweeper();
    let app = router(services, tokens, &options);
    let graceful = shutdown.clone().cancelled_owned();
    // Small frames (SSE events, short JSON answers) go out at once instead of
    // waiting on Nagle's algorithm for the peer's delayed ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "setting TCP_NODELAY");
        }
    });
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(graceful)
            .await
    });
    let served = tokio::select! {
        () = shutdown.cancelled() => None,
        result = &mut server => Some(result),
    };
    // Event streams end with the agent service; runs end cancelled. Streams
    // and long execs end when their sandboxes go, so connections drain.
    if let Some(agents) = &agents {
        agents.shutdown().await;
    }
    service.shutdown().await;
    let served = match served {
        Some(result) => result,
        None => match tokio::time::timeout(DRAIN_TIMEOUT, &mut server).await {
            Ok(result) => result,
            Err(_) => {
                tracing::warn!("connections still open after the drain timeout; closing them");
                server.abort();
                Ok(Ok(()))
            }
        },
    };
    if let Err(err) = expiry.await {
        tracing::warn!(error = %err, "expiry task ended abnormally");
    }
    if let Some(task) = blob_sweeper
        && let Err(err) = task.await
    {
        tracing::warn!(error = %err, "blob sweeper ended abnormally");
    }
    match served {
        Ok(result) => result,
        Err(join) => Err(std::io::Error::other(join)),
    }
}
