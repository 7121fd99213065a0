//! A raw TCP tunnel to a port in a sandbox, for `paddock sandbox
//! port-forward`: an upgrade to the `paddock-tcp` protocol, after which the
//! connection carries the bytes of one TCP connection to `127.0.0.1:{port}`
//! in the sandbox, whatever protocol they speak.

use axum::extract::{Request, State};
use axum::http::header::{CONNECTION, UPGRADE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use paddock_core::sandbox::SandboxId;
use serde::Deserialize;

use super::hop;
use crate::http::error::Body as ErrorBody;
use crate::http::extract::ApiPath;
use crate::http::{ApiError, AppState, Caller};

/// The protocol a tunnel upgrade names.
pub const TCP_PROTOCOL: &str = "paddock-tcp";

#[derive(Debug, Deserialize)]
pub(crate) struct TunnelPath {
    id: String,
    port: String,
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/tunnel/{port}", tag = "ports",
    summary = "A raw TCP connection to a port in the sandbox (port-forward)",
    description = "With `Connection: upgrade` and `Upgrade: paddock-tcp`, answers `101` and then relays the connection's bytes to and from one TCP connection to `127.0.0.1:{port}` inside the sandbox, opened by the guest (any protocol; every backend; network `none` too). `paddock sandbox port-forward` uses it. Counts as one of the tenant's streams while open.",
    params(("id" = SandboxId, Path), ("port" = u16, Path, minimum = 1, maximum = 65535)),
    responses(
        (status = 101, description = "switched to `paddock-tcp`: the bytes of the connection follow"),
        (status = 400, description = "no `paddock-tcp` upgrade asked for, or a port out of range or the egress proxy's (`invalid_request`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`)", body = ErrorBody),
        (status = 429, description = "the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`)", body = ErrorBody),
        (status = 502, description = "nothing listens on the port (`port_not_listening`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(crate) async fn tunnel(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(params): ApiPath<TunnelPath>,
    mut request: Request,
) -> Result<Response, ApiError> {
    let (id, port) = super::parse_target(&params.id, &params.port)?;
    // Whose sandbox comes first: another tenant learns nothing more.
    state.service.running_sandbox(&tenant, &id).await?;
    let asked = hop::is_upgrade(request.headers())
        && request
            .headers()
            .get(UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(TCP_PROTOCOL.as_bytes()));
    if !asked {
        return Err(ApiError::invalid(format!(
            "a tunnel needs `Connection: upgrade` and `Upgrade: {TCP_PROTOCOL}`"
        )));
    }
    let slot = state.streams.take(&tenant)?;
    let tunnel = state
        .service
        .open_port(&tenant, &id, u64::from(port))
        .await?;
    let upgrade = hyper::upgrade::on(&mut request);
    let sandbox: SandboxId = id;
    tokio::spawn(async move {
        let _slot = slot;
        let mut tunnel = tunnel;
        match upgrade.await {
            Ok(upgraded) => {
                let relayed =
                    tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut tunnel.stream)
                        .await;
                tracing::debug!(sandbox_id = %sandbox, port, ?relayed, "port tunnel closed");
            }
            Err(err) => {
                tracing::debug!(sandbox_id = %sandbox, port, error = %err, "tunnel upgrade failed")
            }
        }
    });
    Ok((
        StatusCode::SWITCHING_PROTOCOLS,
        [
            (CONNECTION, HeaderValue::from_static("upgrade")),
            (UPGRADE, HeaderValue::from_static(TCP_PROTOCOL)),
        ],
    )
        .into_response())
}
