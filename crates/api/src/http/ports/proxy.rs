//! One request forwarded to a server in a sandbox over a port tunnel, with
//! hyper's HTTP/1 client; an upgrade (WebSocket) becomes a byte relay
//! between the caller's connection and the tunnel.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::HOST;
use axum::http::uri::PathAndQuery;
use axum::http::{HeaderName, HeaderValue, StatusCode, Version};
use axum::response::Response;
use hyper_util::rt::TokioIo;

use super::hop;
use crate::http::ApiError;
use crate::http::streams::StreamSlot;
use crate::service::PortTunnel;

const FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");

/// Where a request goes in the sandbox.
#[derive(Debug)]
pub(crate) struct Target {
    pub port: u16,
    /// The path and query the server sees.
    pub path: PathAndQuery,
    /// The path prefix the caller used in front of `path`, told to the
    /// server as `X-Forwarded-Prefix` (path routes only).
    pub prefix: Option<String>,
}

fn unreachable(port: u16, err: &hyper::Error) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "port_unreachable",
        format!("the server on port {port} in the sandbox did not answer HTTP: {err}"),
    )
}

/// Sends `request` to the server behind `tunnel` and answers its response.
/// `slot` is the stream slot an upgraded connection holds while it lasts.
pub(crate) async fn forward(
    tunnel: PortTunnel,
    mut request: Request,
    target: Target,
    slot: Option<StreamSlot>,
) -> Result<Response, ApiError> {
    let port = target.port;
    let client_upgrade =
        hop::is_upgrade(request.headers()).then(|| hyper::upgrade::on(&mut request));
    let (mut parts, body) = request.into_parts();
    let host = parts.headers.remove(HOST);
    hop::strip_request(&mut parts.headers);
    if let Ok(value) = HeaderValue::from_str(&format!("127.0.0.1:{port}")) {
        parts.headers.insert(HOST, value);
    }
    if let Some(host) = host {
        parts.headers.insert(FORWARDED_HOST, host);
    }
    if let Some(prefix) = target
        .prefix
        .as_deref()
        .and_then(|p| HeaderValue::from_str(p).ok())
    {
        parts.headers.insert(FORWARDED_PREFIX, prefix);
    }
    parts.uri = target.path.into();
    parts.version = Version::HTTP_11;
    let outgoing = Request::from_parts(parts, body);

    let PortTunnel { stream, activity } = tunnel;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| unreachable(port, &e))?;
    // The sandbox counts as in use until the response (or the upgraded
    // connection) is over.
    let activity = Arc::new(activity);
    let held = activity.clone();
    tokio::spawn(async move {
        if let Err(err) = connection.with_upgrades().await {
            tracing::debug!(port, error = %err, "port connection ended with an error");
        }
        drop(held);
    });
    let mut response = sender
        .send_request(outgoing)
        .await
        .map_err(|e| unreachable(port, &e))?;
    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let server_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            let _held = (activity, slot);
            let (Ok(client), Ok(server)) = tokio::join!(client_upgrade, server_upgrade) else {
                tracing::debug!(port, "upgrade did not complete");
                return;
            };
            let relayed =
                tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut TokioIo::new(server))
                    .await;
            tracing::debug!(port, ?relayed, "upgraded port connection closed");
        });
    }
    let (mut parts, body) = response.into_parts();
    hop::strip(&mut parts.headers);
    Ok(Response::from_parts(parts, Body::new(body)))
}
