//! Who an E2B request acts for. The control plane takes the tenant's token
//! in `X-API-KEY` (what the SDK sends) or `Authorization: Bearer`. envd's
//! routes take the sandbox from `E2b-Sandbox-Id` and its access token from
//! `X-Access-Token`: a signed port-URL token of the server's key for the
//! sandbox's envd (port 0, which no TCP server can listen on), minted when
//! the sandbox is created or connected to.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;

use super::error::E2bError;
use crate::http::AppState;
use crate::http::ports::now_secs;

/// The header the E2B SDKs send their API key in.
pub const API_KEY_HEADER: &str = "x-api-key";
/// The header naming the sandbox of an envd request.
pub const SANDBOX_ID_HEADER: &str = "e2b-sandbox-id";
/// The header carrying envd's access token.
pub const ACCESS_TOKEN_HEADER: &str = "x-access-token";
/// The port an envd access token is signed for: no TCP port, so a token
/// for envd opens no server in the sandbox and a port URL opens no envd.
pub const ENVD_TOKEN_PORT: u16 = 0;

/// The tenant of an E2B control-plane request.
#[derive(Debug, Clone)]
pub struct ApiKey(pub TenantId);

impl FromRequestParts<AppState> for ApiKey {
    type Rejection = E2bError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, E2bError> {
        let by_key = parts
            .headers
            .get(API_KEY_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|key| state.tokens.tenant_for(key.trim()));
        by_key
            .or_else(|| state.tokens.tenant_of(&parts.headers))
            .map(|tenant| ApiKey(tenant.clone()))
            .ok_or_else(E2bError::unauthorized)
    }
}

/// The sandbox an envd request is for, with its tenant, once its access
/// token checked out.
#[derive(Debug, Clone)]
pub struct EnvdCaller {
    pub tenant: TenantId,
    pub sandbox: SandboxId,
}

/// Why an envd request is refused: no sandbox named, or no valid token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvdRefused {
    NoSandbox,
    Unauthenticated(&'static str),
}

impl EnvdCaller {
    /// The caller of an envd request, from its headers.
    pub fn from_headers(headers: &HeaderMap, state: &AppState) -> Result<Self, EnvdRefused> {
        let sandbox = headers
            .get(SANDBOX_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|id| SandboxId::parse(id.trim()).ok())
            .ok_or(EnvdRefused::NoSandbox)?;
        let token = headers
            .get(ACCESS_TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .ok_or(EnvdRefused::Unauthenticated(
                "an X-Access-Token (the sandbox's envdAccessToken) is required",
            ))?;
        let key = state
            .port_urls
            .as_ref()
            .ok_or(EnvdRefused::Unauthenticated(
                "this server has no key to check access tokens with",
            ))?;
        let tenant = key
            .verify(token.trim(), &sandbox, ENVD_TOKEN_PORT, now_secs())
            .map_err(|_| {
                EnvdRefused::Unauthenticated("the access token is not valid for this sandbox")
            })?;
        Ok(Self { tenant, sandbox })
    }
}

impl From<EnvdRefused> for E2bError {
    fn from(refused: EnvdRefused) -> Self {
        match refused {
            EnvdRefused::NoSandbox => E2bError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "envd requests name their sandbox in the E2b-Sandbox-Id header",
            ),
            EnvdRefused::Unauthenticated(why) => {
                E2bError::new(axum::http::StatusCode::UNAUTHORIZED, why)
            }
        }
    }
}

impl FromRequestParts<AppState> for EnvdCaller {
    type Rejection = E2bError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, E2bError> {
        Ok(Self::from_headers(&parts.headers, state)?)
    }
}
