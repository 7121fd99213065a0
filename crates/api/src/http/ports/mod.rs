//! Servers inside sandboxes, reached through `paddock serve`:
//! `/v1/sandboxes/{id}/ports/{port}/...` forwards the request (any method,
//! the body streamed, a WebSocket upgrade passed through) to
//! `127.0.0.1:{port}` inside the sandbox, over a tunnel the guest opens
//! (`GuestOps::port_connect`), so every backend and a sandbox without
//! network are reached alike. The caller's token stays here: the server
//! sees neither `Authorization` nor any other hop-by-hop header.

mod access;
pub(crate) use access::now_secs;
mod hop;
mod host;
mod proxy;
mod signed;
pub(super) mod tunnel;

pub use host::{InvalidPortsDomain, PortsDomain, PortsSettings};
pub use signed::{PortKeyError, PortUrlKey, TOKEN_PARAM};
pub use tunnel::TCP_PROTOCOL;

use axum::extract::{Request, State};
use axum::http::uri::PathAndQuery;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use paddock_core::sandbox::SandboxId;
use serde::{Deserialize, Serialize};

use super::Caller;
use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, sandbox_id};
use super::{ApiError, AppState};

/// The path parameters of a port route (the rest of the path is read off
/// the request's URI, undecoded, as the server must see it).
#[derive(Debug, Deserialize)]
pub(super) struct PortPath {
    id: String,
    port: String,
}

impl PortPath {
    /// The prefix in front of what the server sees.
    fn prefix(&self) -> String {
        format!("/v1/sandboxes/{}/ports/{}", self.id, self.port)
    }
}

/// The path and query the server sees: the request's, less the route's prefix.
fn forwarded_path(request: &Request, prefix: &str) -> PathAndQuery {
    let path = request.uri().path();
    let rest = path.strip_prefix(prefix).unwrap_or("/");
    let rest = if rest.is_empty() { "/" } else { rest };
    let full = match request.uri().query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_owned(),
    };
    full.parse()
        .unwrap_or_else(|_| PathAndQuery::from_static("/"))
}

#[utoipa::path(method(get, post, put, patch, delete), path = "/v1/sandboxes/{id}/ports/{port}/{path}", tag = "ports",
    summary = "Reach a server started inside the sandbox",
    description = "Forwards the request (method, headers, streamed body) to `127.0.0.1:{port}` inside the sandbox as `/{path}` with the query, and answers the server's response as it comes. A WebSocket (or any `Connection: upgrade`) request is passed through and the connection relayed both ways. The server sees `Host: 127.0.0.1:{port}`, `X-Forwarded-Host` and `X-Forwarded-Prefix`; never the caller's `Authorization` nor other hop-by-hop headers. Works on every backend and with network `none`: the guest opens the connection inside the sandbox. `/v1/sandboxes/{id}/ports/{port}` without a path redirects to `.../{port}/`.",
    params(("id" = SandboxId, Path), ("port" = u16, Path, minimum = 1, maximum = 65535, description = "The port the server listens on inside the sandbox (127.0.0.1); 3128, the egress proxy's, is refused."),
        ("paddock_token" = Option<String>, Query, description = "A signed port URL's token (`POST .../url`), instead of the bearer token; also taken from the `paddock_token` cookie the first such request sets. Never passed to the server."),
        ("path" = String, Path, description = "The server's path; may be empty and may contain `/`.")),
    responses(
        (status = 200, description = "the server's answer, whatever its status, headers and body"),
        (status = 101, description = "the server switched protocols (WebSocket); the connection is relayed"),
        (status = 400, description = "a port out of range or the egress proxy's (`invalid_request`)", body = ErrorBody),
        (status = 401, description = "no valid bearer token and no valid signed token (`unauthorized`, naming why: expired, or not this sandbox and port)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`)", body = ErrorBody),
        (status = 429, description = "(upgrades) the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`)", body = ErrorBody),
        (status = 502, description = "nothing listens on the port (`port_not_listening`), or the server there did not answer HTTP (`port_unreachable`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn forward(
    State(state): State<AppState>,
    ApiPath(params): ApiPath<PortPath>,
    request: Request,
) -> Result<Response, ApiError> {
    let prefix = params.prefix();
    if request.uri().path() == prefix {
        // Still only for a caller the port would let in.
        let (id, port) = parse_target(&params.id, &params.port)?;
        access::authorize(&state, request.headers(), request.uri().query(), &id, port)?;
        return Ok(redirect_to_slash(&request));
    }
    let path = forwarded_path(&request, &prefix);
    let route = Route {
        path,
        cookie_path: format!("{prefix}/"),
        prefix: Some(prefix),
    };
    forward_to(&state, &params.id, &params.port, route, request).await
}

/// Host-based routing (`{P}-{id}.{ports domain}`), before any route:
/// such a request goes to the port whatever its path; any other passes on.
/// Port 49983, envd's in E2B, is the server's own E2B envd routes for the
/// sandbox (what `E2B_DOMAIN` makes the E2B SDKs call).
pub(super) async fn host_route(
    State(state): State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let target = state.ports_domain.as_deref().and_then(|domain| {
        domain
            .route(request.headers())
            .map(|(port, id): (&str, &str)| (port.to_string(), id.to_string()))
    });
    let Some((port, id)) = target else {
        return next.run(request).await;
    };
    if port == crate::http::e2b::ENVD_PORT {
        // E2B's host routing for envd: the same routes as the
        // `E2b-Sandbox-Id` header's, the sandbox named by the host
        let mut request = request;
        match axum::http::HeaderValue::from_str(&id) {
            Ok(value) => {
                request
                    .headers_mut()
                    .insert(crate::http::e2b::SANDBOX_ID_HEADER, value);
                return next.run(request).await;
            }
            Err(_) => {
                return ApiError::invalid(format!("sandbox id: {id:?}")).into_response();
            }
        }
    }
    let path = request
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let route = Route {
        path,
        cookie_path: "/".to_owned(),
        prefix: None,
    };
    forward_to(&state, &id, &port, route, request)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// Where in the server a request goes, and what the caller saw in front of it.
struct Route {
    /// What the server sees (the signed token still in it).
    path: PathAndQuery,
    /// Where a signed token's cookie applies.
    cookie_path: String,
    /// `X-Forwarded-Prefix` (path routes).
    prefix: Option<String>,
}

fn parse_target(id: &str, port: &str) -> Result<(SandboxId, u16), ApiError> {
    let id: SandboxId = sandbox_id(id)?;
    let port: u64 = port.parse().map_err(|_| {
        ApiError::invalid(format!(
            "port: expected a number in 1..=65535, not {port:?}"
        ))
    })?;
    let port = paddock_proto::check_port(port).map_err(|e| ApiError::invalid(e.to_string()))?;
    Ok((id, port))
}

async fn forward_to(
    state: &AppState,
    id: &str,
    port: &str,
    route: Route,
    mut request: Request,
) -> Result<Response, ApiError> {
    let (id, port) = parse_target(id, port)?;
    let access = access::authorize(state, request.headers(), request.uri().query(), &id, port)?;
    // TRACE echoes a request back (cross-site tracing) and CONNECT would
    // turn the port into a proxy: a gateway forwards neither.
    if matches!(*request.method(), Method::TRACE | Method::CONNECT) {
        return Err(ApiError::method_not_allowed());
    }
    let slot = if hop::is_upgrade(request.headers()) {
        Some(state.streams.take(&access.tenant)?)
    } else {
        None
    };
    let tunnel = state
        .service
        .open_port(&access.tenant, &id, u64::from(port))
        .await?;
    access::strip_cookie(request.headers_mut());
    let target = proxy::Target {
        port,
        path: access::without_token(&route.path),
        prefix: route.prefix,
    };
    let mut response = proxy::forward(tunnel, request, target, slot).await?;
    if let Some(cookie) = access
        .set_cookie
        .as_deref()
        .and_then(|token| access::cookie(token, &route.cookie_path))
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// How long a signed port URL lasts.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MintPortUrl {
    /// Seconds from now, 1 to 86400 (a day); default 3600.
    #[schema(minimum = 1, maximum = 86400)]
    pub ttl_secs: Option<u64>,
}

/// A signed port URL.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PortUrl {
    /// The port's root with the token in the query; append a path before
    /// the `?` to reach another page. The first request sets the token as
    /// a cookie for the port's path, so a browser's later requests get in.
    pub url: String,
    /// The token alone (`?paddock_token=` or the `paddock_token` cookie).
    pub token: String,
    /// RFC 3339.
    pub expires_at: String,
}

/// Longest a signed port URL may last.
pub const MAX_PORT_URL_TTL_SECS: u64 = 86_400;
const DEFAULT_PORT_URL_TTL_SECS: u64 = 3_600;

#[utoipa::path(post, path = "/v1/sandboxes/{id}/ports/{port}/url", tag = "ports",
    summary = "Mint a signed URL for a port, good without a token until it expires",
    description = "The URL lets whoever holds it reach this port of this sandbox (and nothing else) until `expires_at`, as the tenant. It is an HMAC over the tenant, sandbox, port and expiry with a key of the server (`port-url.key` in the data dir); only the expiry revokes it. A server's own `POST /url` is therefore reached through host routing only.",
    params(("id" = SandboxId, Path), ("port" = u16, Path, minimum = 1, maximum = 65535)),
    request_body(content = MintPortUrl, content_type = "application/json"),
    responses(
        (status = 201, description = "the URL", body = PortUrl),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`)", body = ErrorBody),
    ))]
pub(super) async fn mint_url(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(params): ApiPath<PortPath>,
    ApiJson(body): ApiJson<MintPortUrl>,
) -> Result<(StatusCode, axum::Json<PortUrl>), ApiError> {
    let (id, port) = parse_target(&params.id, &params.port)?;
    let ttl = body.ttl_secs.unwrap_or(DEFAULT_PORT_URL_TTL_SECS);
    if !(1..=MAX_PORT_URL_TTL_SECS).contains(&ttl) {
        return Err(ApiError::invalid(format!(
            "ttl_secs: expected 1 to {MAX_PORT_URL_TTL_SECS}, not {ttl}"
        )));
    }
    let key = state.port_urls.as_deref().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "port_urls_unavailable",
            "this server has no key to sign port URLs with",
        )
    })?;
    state.service.running_sandbox(&tenant, &id).await?;
    let expires = access::now_secs().saturating_add(ttl);
    let token = key.mint(&tenant, &id, port, expires);
    let millis = i64::try_from(expires.saturating_mul(1000)).unwrap_or(i64::MAX);
    Ok((
        StatusCode::CREATED,
        axum::Json(PortUrl {
            url: format!("{}/?{TOKEN_PARAM}={token}", params.prefix()),
            token,
            expires_at: paddock_core::store::Timestamp::from_millis(millis).to_string(),
        }),
    ))
}

/// `.../ports/{port}` to `.../ports/{port}/`, so the server's relative links resolve.
fn redirect_to_slash(request: &Request) -> Response {
    let location = match request.uri().query() {
        Some(query) => format!("{}/?{query}", request.uri().path()),
        None => format!("{}/", request.uri().path()),
    };
    match HeaderValue::from_str(&location) {
        Ok(location) => (
            StatusCode::PERMANENT_REDIRECT,
            [(header::LOCATION, location)],
        )
            .into_response(),
        Err(_) => ApiError::invalid("the path cannot be redirected").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str) -> Request {
        Request::builder()
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap()
    }

    #[test]
    fn the_server_sees_the_path_after_the_prefix_with_the_query() {
        let prefix = "/v1/sandboxes/sb-1/ports/8000";
        let cases = [
            ("/v1/sandboxes/sb-1/ports/8000/", "/"),
            (
                "/v1/sandboxes/sb-1/ports/8000/a/b%20c?x=1&y",
                "/a/b%20c?x=1&y",
            ),
            ("/v1/sandboxes/sb-1/ports/8000?q", "/?q"),
        ];
        for (uri, expected) in cases {
            assert_eq!(
                forwarded_path(&request(uri), prefix).as_str(),
                expected,
                "{uri}"
            );
        }
    }
}
