//! The HTTP API under `/v1`: JSON, bearer-token auth scoped to a tenant,
//! errors as `{"error": {"code", "message"}}`, SSE for streamed exec and
//! for a session's events (resumable by sequence number).
//! docs/api.md describes it for callers; `GET /v1/openapi.json` serves the
//! OpenAPI document, generated from the types and the handlers (`openapi`).

mod agent_error;
mod auth;
mod body_budget;
mod checkpoints;
mod connection_limits;
mod doctor;
mod e2b;
mod egress;
mod error;
mod events;
mod exec;
mod extract;
mod files;
mod gate;
mod headers;
mod memory;
mod meta;
mod metered;
mod network;
mod openapi;
mod pause;
mod ports;
mod processes;
mod runs;
mod sandboxes;
mod sessions;
mod snapshots;
mod streams;
mod terminal;
mod transport;
mod volume_snapshots;
mod volumes;
mod workspace_archive;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::MethodFilter;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use auth::{Caller, MIN_TOKEN_LEN, TokenError, Tokens};
pub use checkpoints::CheckpointList;
pub use connection_limits::{ConnectionLimits, ConnectionLimitsError};
pub use doctor::QuarantineList;
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use events::EventEnvelope;
pub use exec::{ExecStarted, OutputChunk};
pub use files::{Listing, Written};
pub use memory::MemoryList;
pub use meta::{
    BackendView, ComponentStatus, ComponentView, DatabaseStatus, DatabaseView, HealthView, Overall,
};
pub use network::NetworkChangeList;
pub use openapi::{OPENAPI, document};
pub use ports::{
    InvalidPortsDomain, MAX_PORT_URL_TTL_SECS, MintPortUrl, PortKeyError, PortUrl, PortUrlKey,
    PortsDomain, PortsSettings, TCP_PROTOCOL, TOKEN_PARAM,
};
pub use processes::ProcessList;
pub use runs::{ChildRuns, DecideChanges, Decision};
pub use sandboxes::{SandboxList, WorkspaceList};
pub use sessions::{DeleteAnswer, RunList, SessionDeletedView, SessionList};
pub use snapshots::{Restored, SnapshotList};
pub use streams::StreamSlots;
pub use terminal::TerminalOutput;
pub use volume_snapshots::VolumeSnapshotList;
pub use volumes::VolumeList;

use crate::service::{AgentService, SandboxService};

/// Default request body limit: the guest protocol's largest payload (a whole
/// file write), so any body it could carry is accepted.
pub const DEFAULT_MAX_BODY_BYTES: usize = paddock_proto::MAX_PAYLOAD_LEN as usize;

/// How long a shutdown waits for open connections after the sandboxes are gone.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Largest request body accepted; larger ones get 413.
    pub max_body_bytes: usize,
    /// Connection caps and timeouts of the listener.
    pub connections: ConnectionLimits,
    /// The key of signed port URLs; None: a key for this process only
    /// (its URLs die with it).
    pub port_url_key: Option<PortUrlKey>,
    /// Host-based port routing (`{P}-{id}.{domain}`); None: off.
    pub ports_domain: Option<PortsDomain>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            connections: ConnectionLimits::default(),
            port_url_key: None,
            ports_domain: None,
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
    /// Long-lived streams open per tenant (`http.max_streams_per_tenant`).
    pub streams: Arc<StreamSlots>,
    /// Signs and checks port URLs; None when no key could be made.
    pub port_urls: Option<Arc<PortUrlKey>>,
    /// Host-based port routing; None: off.
    pub ports_domain: Option<Arc<PortsDomain>>,
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
    router_with(services.into(), Arc::new(tokens), options)
}

fn router_with(services: Services, tokens: Arc<Tokens>, options: &HttpOptions) -> Router {
    let state = AppState {
        service: services.sandboxes,
        agents: services.agents,
        tokens,
        streams: Arc::new(StreamSlots::new(options.connections.max_streams_per_tenant)),
        port_urls: port_url_key(options),
        ports_domain: options.ports_domain.clone().map(Arc::new),
    };
    routes()
        .router
        .merge(e2b::router())
        .merge(paddock_console::router())
        .fallback(|| async { ApiError::route_not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(DefaultBodyLimit::max(options.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            ports::host_route,
        ))
        .layer(axum::middleware::map_response(headers::layer))
        .with_state(state)
}

fn port_url_key(options: &HttpOptions) -> Option<Arc<PortUrlKey>> {
    match options
        .port_url_key
        .clone()
        .map(Ok)
        .unwrap_or_else(PortUrlKey::ephemeral)
    {
        Ok(key) => Some(Arc::new(key)),
        Err(err) => {
            tracing::error!(error = %paddock_proto::error_chain(&err), "no key for signed port URLs; they are refused");
            None
        }
    }
}

/// Every route the router serves, as (method, path template) in the OpenAPI
/// document's spelling (`{path}` for axum's `{*path}`); a test checks that
/// the document lists exactly these.
pub fn registered_routes() -> Vec<(String, String)> {
    routes().registered
}

/// The router and what it registered, built together so neither can miss a route.
struct Routes {
    router: Router<AppState>,
    registered: Vec<(String, String)>,
}

impl Routes {
    fn get<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.add(MethodFilter::GET, "get", path, handler)
    }

    fn post<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.add(MethodFilter::POST, "post", path, handler)
    }

    fn put<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.add(MethodFilter::PUT, "put", path, handler)
    }

    fn patch<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.add(MethodFilter::PATCH, "patch", path, handler)
    }

    fn delete<H: Handler<T, AppState>, T: 'static>(self, path: &str, handler: H) -> Self {
        self.add(MethodFilter::DELETE, "delete", path, handler)
    }

    /// Every method the OpenAPI document can name (a proxied route).
    fn any<H: Handler<T, AppState> + Clone, T: 'static>(self, path: &str, handler: H) -> Self {
        self.get(path, handler.clone())
            .post(path, handler.clone())
            .put(path, handler.clone())
            .patch(path, handler.clone())
            .delete(path, handler)
    }

    /// A POST route whose GET, PUT, PATCH and DELETE go to `fallback` (the
    /// methods [`Self::any`] takes); any other method is a 405.
    fn post_or<H, T, F, U>(mut self, path: &str, handler: H, fallback: F) -> Self
    where
        H: Handler<T, AppState>,
        F: Handler<U, AppState> + Clone,
        T: 'static,
        U: 'static,
    {
        let methods = axum::routing::post(handler)
            .get(fallback.clone())
            .put(fallback.clone())
            .patch(fallback.clone())
            .delete(fallback);
        self.router = self.router.route(path, methods);
        self.registered
            .push(("post".to_owned(), path.replace("{*", "{")));
        self
    }

    /// A route served but not in the document (an alias of a documented one).
    fn alias<H: Handler<T, AppState> + Clone, T: 'static>(
        mut self,
        path: &str,
        handler: H,
    ) -> Self {
        self.router = self.router.route(path, axum::routing::any(handler));
        self
    }

    fn add<H: Handler<T, AppState>, T: 'static>(
        mut self,
        filter: MethodFilter,
        method: &str,
        path: &str,
        handler: H,
    ) -> Self {
        self.router = self.router.route(path, axum::routing::on(filter, handler));
        self.registered
            .push((method.to_owned(), path.replace("{*", "{")));
        self
    }
}

fn routes() -> Routes {
    let routes = Routes {
        router: Router::new(),
        registered: Vec::new(),
    };
    routes
        .get("/v1/health", meta::health)
        .get("/v1/openapi.json", meta::openapi)
        .post("/v1/workspaces", sandboxes::create_workspace)
        .get("/v1/workspaces", sandboxes::list_workspaces)
        .post("/v1/workspaces/import", workspace_archive::import)
        .get("/v1/workspaces/{id}/archive", workspace_archive::archive)
        .get("/v1/workspaces/{id}", sandboxes::get_workspace)
        .delete("/v1/workspaces/{id}", sandboxes::delete_workspace)
        .post("/v1/sandboxes", sandboxes::create_sandbox)
        .get("/v1/sandboxes", sandboxes::list_sandboxes)
        .get("/v1/sandboxes/{id}", sandboxes::get_sandbox)
        .delete("/v1/sandboxes/{id}", sandboxes::delete_sandbox)
        .post("/v1/sandboxes/{id}/keepalive", sandboxes::keep_alive)
        .post("/v1/sandboxes/{id}/pause", pause::pause)
        .post("/v1/sandboxes/{id}/resume", pause::resume)
        .post("/v1/sandboxes/{id}/exec", exec::exec)
        .post("/v1/sandboxes/{id}/processes", processes::start)
        .get("/v1/sandboxes/{id}/processes", processes::list)
        .get("/v1/sandboxes/{id}/egress", egress::list)
        .get("/v1/sandboxes/{id}/network", network::get)
        .put("/v1/sandboxes/{id}/network", network::set)
        .get("/v1/sandboxes/{id}/network/changes", network::changes)
        .get(
            "/v1/sandboxes/{id}/processes/{handle}/output",
            processes::output,
        )
        .post(
            "/v1/sandboxes/{id}/processes/{handle}/stdin",
            processes::stdin,
        )
        .post(
            "/v1/sandboxes/{id}/processes/{handle}/signal",
            processes::signal,
        )
        .get(
            "/v1/sandboxes/{id}/processes/{handle}/stream",
            terminal::stream,
        )
        .post(
            "/v1/sandboxes/{id}/processes/{handle}/resize",
            terminal::resize,
        )
        .get("/v1/sandboxes/{id}/files", files::list)
        .get("/v1/sandboxes/{id}/files/{*path}", files::read)
        .put("/v1/sandboxes/{id}/files/{*path}", files::write)
        .delete("/v1/sandboxes/{id}/files/{*path}", files::delete)
        .post("/v1/sandboxes/{id}/search", files::search)
        .any("/v1/sandboxes/{id}/ports/{port}/{*path}", ports::forward)
        .get("/v1/sandboxes/{id}/tunnel/{port}", ports::tunnel::tunnel)
        .post_or(
            "/v1/sandboxes/{id}/ports/{port}/url",
            ports::mint_url,
            ports::forward,
        )
        .alias("/v1/sandboxes/{id}/ports/{port}/", ports::forward)
        .alias("/v1/sandboxes/{id}/ports/{port}", ports::forward)
        .post("/v1/sandboxes/{id}/snapshots", snapshots::create)
        .post("/v1/snapshots", snapshots::import)
        .get("/v1/snapshots", snapshots::list)
        .get("/v1/snapshots/{id}", snapshots::get)
        .delete("/v1/snapshots/{id}", snapshots::delete)
        .post("/v1/snapshots/{id}/restore", snapshots::restore)
        .get("/v1/snapshots/{id}/archive", snapshots::archive)
        .post("/v1/volumes", volumes::create)
        .get("/v1/volumes", volumes::list)
        .get("/v1/volumes/{name}", volumes::get)
        .delete("/v1/volumes/{name}", volumes::delete)
        .post("/v1/volumes/{name}/snapshots", volume_snapshots::create)
        .get("/v1/volumes/{name}/snapshots", volume_snapshots::list)
        .delete(
            "/v1/volumes/{name}/snapshots/{snapshot}",
            volume_snapshots::delete,
        )
        .post("/v1/sessions", sessions::create)
        .get("/v1/sessions", sessions::list)
        .get("/v1/sessions/{id}", sessions::get)
        .patch("/v1/sessions/{id}", sessions::update)
        .delete("/v1/sessions/{id}", sessions::archive)
        .post("/v1/sessions/{id}/fork", sessions::fork)
        .get("/v1/sessions/{id}/checkpoints", checkpoints::list)
        .post("/v1/sessions/{id}/rewind", checkpoints::rewind)
        .get("/v1/sessions/{id}/diff", checkpoints::diff)
        .get("/v1/sessions/{id}/runs", sessions::list_runs)
        .post("/v1/sessions/{id}/runs", sessions::start_run)
        .get("/v1/sessions/{id}/events", events::stream)
        .get("/v1/runs/{id}", runs::get)
        .post("/v1/runs/{id}/cancel", runs::cancel)
        .post("/v1/runs/{id}/messages", runs::steer)
        .post("/v1/runs/{id}/resume", runs::resume)
        .get("/v1/runs/{id}/children", runs::children)
        .post(
            "/v1/runs/{id}/children/{child}/changes",
            runs::decide_changes,
        )
        .get("/v1/runs/{id}/events", events::run_stream)
        .get("/v1/memory", memory::list)
        .post("/v1/memory", memory::add)
        .get("/v1/memory/{id}", memory::get)
        .delete("/v1/memory/{id}", memory::remove)
        .post("/v1/memory/{id}/approve", memory::approve)
        .get("/v1/doctor/quarantine", doctor::quarantine)
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
    let tokens = Arc::new(tokens);
    let app = router_with(services, tokens.clone(), &options);
    let mut server = tokio::spawn(transport::serve(
        listener,
        app,
        options.connections.clone(),
        options.max_body_bytes,
        tokens,
        shutdown.clone(),
    ));
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
                Ok(())
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
    served.map_err(std::io::Error::other)
}
