//! Who may use a port route: the tenant's bearer token, or a signed port
//! URL's token (`?paddock_token=`, or the cookie of that name a first
//! signed request sets for the port's path, so a browser's later requests
//! for the page's scripts and images get in too). The token is taken out of
//! what the server sees, as the bearer token is.

use axum::http::header::{COOKIE, HeaderMap, HeaderValue};
use axum::http::uri::PathAndQuery;
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;

use super::signed::{PortUrlKey, TOKEN_PARAM};
use crate::http::{ApiError, AppState};

/// Who the request acts for, and how it proved it.
#[derive(Debug)]
pub(super) struct Access {
    pub tenant: TenantId,
    /// The signed token came in the query: the answer sets it as a cookie.
    pub set_cookie: Option<String>,
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix(TOKEN_PARAM)?.strip_prefix('='))
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(TOKEN_PARAM)?.strip_prefix('='))
}

/// The tenant of a request to `port` of `sandbox`: its bearer token's, or
/// a valid signed token's; 401 naming why otherwise.
pub(super) fn authorize(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
    sandbox: &SandboxId,
    port: u16,
) -> Result<Access, ApiError> {
    if let Some(tenant) = state.tokens.tenant_of(headers) {
        return Ok(Access {
            tenant: tenant.clone(),
            set_cookie: None,
        });
    }
    let from_query = query_token(query);
    let Some(token) = from_query.or_else(|| cookie_token(headers)) else {
        return Err(ApiError::unauthorized());
    };
    let Some(key) = state.port_urls.as_deref() else {
        return Err(ApiError::unauthorized());
    };
    let tenant = verify(key, token, sandbox, port)?;
    Ok(Access {
        tenant,
        set_cookie: from_query.map(str::to_owned),
    })
}

fn verify(
    key: &PortUrlKey,
    token: &str,
    sandbox: &SandboxId,
    port: u16,
) -> Result<TenantId, ApiError> {
    key.verify(token, sandbox, port, now_secs())
        .map_err(|refused| {
            ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                refused.to_string(),
            )
        })
}

/// The `Set-Cookie` that lets later requests under `path` in with `token`.
pub(super) fn cookie(token: &str, path: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{TOKEN_PARAM}={token}; Path={path}; HttpOnly; SameSite=Lax"
    ))
    .ok()
}

/// `path` with the signed token taken out of its query.
pub(super) fn without_token(path: &PathAndQuery) -> PathAndQuery {
    let Some(query) = path.query() else {
        return path.clone();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| pair.split('=').next() != Some(TOKEN_PARAM))
        .collect();
    let full = if kept.is_empty() {
        path.path().to_owned()
    } else {
        format!("{}?{}", path.path(), kept.join("&"))
    };
    full.parse().unwrap_or_else(|_| path.clone())
}

/// The `Cookie` headers with the signed token's cookie taken out.
pub(super) fn strip_cookie(headers: &mut HeaderMap) {
    let kept: Vec<String> = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|c| !c.is_empty() && c.split('=').next() != Some(TOKEN_PARAM))
        .map(str::to_owned)
        .collect();
    headers.remove(COOKIE);
    if !kept.is_empty()
        && let Ok(value) = HeaderValue::from_str(&kept.join("; "))
    {
        headers.insert(COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_found_and_then_kept_from_the_server() {
        let path: PathAndQuery = "/a?x=1&paddock_token=T.acme.S&y=2".parse().unwrap();
        assert_eq!(query_token(path.query()), Some("T.acme.S"));
        assert_eq!(without_token(&path).as_str(), "/a?x=1&y=2");
        let only: PathAndQuery = "/a?paddock_token=T".parse().unwrap();
        assert_eq!(without_token(&only).as_str(), "/a");
        assert_eq!(query_token(Some("paddock_tokenx=1")), None);

        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; paddock_token=T.acme.S; b=2"),
        );
        assert_eq!(cookie_token(&headers), Some("T.acme.S"));
        strip_cookie(&mut headers);
        assert_eq!(headers[COOKIE], "a=1; b=2");
        let mut only = HeaderMap::new();
        only.insert(COOKIE, HeaderValue::from_static("paddock_token=T"));
        strip_cookie(&mut only);
        assert!(only.get(COOKIE).is_none());
    }
}
