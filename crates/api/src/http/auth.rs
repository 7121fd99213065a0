//! Bearer tokens, each scoped to one tenant.

use std::fmt;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use paddock_core::ids::TenantId;

use super::{ApiError, AppState};

/// Shortest token accepted in configuration.
pub const MIN_TOKEN_LEN: usize = 16;

/// Text that marks a token copied from a sample rather than made: the
/// sample config's and the docs' tokens, and the words samples use. A
/// token holding one (any case) is refused; each with where it comes from.
const PLACEHOLDERS: &[(&str, &str)] = &[
    ("change-me", "deploy/paddock.toml's token"),
    ("changeme", "the usual spelling of the same"),
    ("change_me", "the usual spelling of the same"),
    ("replace-me", "a sample's word for a value to fill in"),
    ("long-random", "docs/api.md's token"),
    ("your-token", "a sample's word for a value to fill in"),
    ("placeholder", "a sample's word for a value to fill in"),
];

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token #{index} for tenant {tenant} is shorter than {MIN_TOKEN_LEN} characters")]
    TooShort { index: usize, tenant: TenantId },
    #[error(
        "token #{index} for tenant {tenant} is the sample's placeholder (it holds {found:?}): \
         make a random one, e.g. `openssl rand -hex 32`"
    )]
    Placeholder {
        index: usize,
        tenant: TenantId,
        found: &'static str,
    },
    #[error("token #{index} has characters other than visible ASCII")]
    NotPrintable { index: usize },
    #[error("token #{index} is configured twice")]
    Duplicate { index: usize },
}

/// The configured tokens. Debug output never shows them.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<(String, TenantId)>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("count", &self.entries.len())
            .field("tenants", &self.tenants())
            .finish()
    }
}

impl Tokens {
    pub fn new(entries: Vec<(String, TenantId)>) -> Result<Self, TokenError> {
        for (index, (token, tenant)) in entries.iter().enumerate() {
            if token.len() < MIN_TOKEN_LEN {
                return Err(TokenError::TooShort {
                    index,
                    tenant: tenant.clone(),
                });
            }
            let lower = token.to_ascii_lowercase();
            let placeholder = PLACEHOLDERS
                .iter()
                .map(|(p, _)| *p)
                .find(|p| lower.contains(p));
            if let Some(found) = placeholder {
                return Err(TokenError::Placeholder {
                    index,
                    tenant: tenant.clone(),
                    found,
                });
            }
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(TokenError::NotPrintable { index });
            }
            if entries[..index].iter().any(|(t, _)| t == token) {
                return Err(TokenError::Duplicate { index });
            }
        }
        Ok(Self { entries })
    }

    /// Every tenant some token names, once each.
    pub fn tenants(&self) -> Vec<TenantId> {
        let mut tenants: Vec<TenantId> = self.entries.iter().map(|(_, t)| t.clone()).collect();
        tenants.sort();
        tenants.dedup();
        tenants
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tenant of `presented`. Every configured token is compared in full,
    /// so the time taken does not tell how much of a token matched.
    pub fn tenant_for(&self, presented: &str) -> Option<&TenantId> {
        let mut found = None;
        for (token, tenant) in &self.entries {
            if constant_time_eq(token.as_bytes(), presented.as_bytes()) {
                found = Some(tenant);
            }
        }
        found
    }

    /// The tenant of a request's `Authorization: Bearer` header, when it
    /// carries a valid token (the handlers' [`Caller`], and the transport's
    /// connection and body accounting, read it alike).
    pub fn tenant_of(&self, headers: &axum::http::HeaderMap) -> Option<&TenantId> {
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        self.tenant_for(token.trim())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The tenant a request acts for, from its `Authorization: Bearer` header.
#[derive(Debug, Clone)]
pub struct Caller(pub TenantId);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        state
            .tokens
            .tenant_of(&parts.headers)
            .map(|tenant| Caller(tenant.clone()))
            .ok_or_else(ApiError::unauthorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(s: &str) -> TenantId {
        TenantId::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn each_token_names_its_tenant() {
        let tokens = Tokens::new(vec![
            ("a".repeat(20), tenant("acme")),
            ("b".repeat(20), tenant("globex")),
        ])
        .unwrap_or_default();
        assert_eq!(tokens.tenant_for(&"a".repeat(20)), Some(&tenant("acme")));
        assert_eq!(tokens.tenant_for(&"b".repeat(20)), Some(&tenant("globex")));
        assert_eq!(tokens.tenant_for(&"a".repeat(19)), None);
        assert_eq!(tokens.tenant_for(""), None);
        assert!(!format!("{tokens:?}").contains("aaaa"));
    }

    #[test]
    fn weak_or_repeated_tokens_are_refused() {
        assert!(matches!(
            Tokens::new(vec![("short".into(), tenant("acme"))]),
            Err(TokenError::TooShort { .. })
        ));
        assert!(matches!(
            Tokens::new(vec![
                ("x".repeat(16), tenant("acme")),
                ("x".repeat(16), tenant("other"))
            ]),
            Err(TokenError::Duplicate { index: 1 })
        ));
        assert!(matches!(
            Tokens::new(vec![(format!("{} x", "y".repeat(16)), tenant("acme"))]),
            Err(TokenError::NotPrintable { .. })
        ));
    }

    /// Issue 26: the token of deploy/paddock.toml and of docs/api.md's
    /// example are refused when loaded, whatever their case; so is a short one.
    #[test]
    fn sample_placeholder_tokens_are_refused() {
        let sample = include_str!("../../../../deploy/paddock.toml");
        let docs = include_str!("../../../../docs/api.md");
        let quoted_token = |text: &'static str| -> Vec<String> {
            text.lines()
                .filter_map(|line| line.trim().strip_prefix("token = \""))
                .filter_map(|rest| rest.split('"').next())
                .map(str::to_owned)
                .collect()
        };
        let samples: Vec<String> = quoted_token(sample)
            .into_iter()
            .chain(quoted_token(docs))
            .collect();
        assert!(samples.len() >= 2, "{samples:?}");
        for token in samples
            .iter()
            .cloned()
            .chain(["CHANGE-ME-0123456789abcdef".to_owned()])
        {
            let refused = Tokens::new(vec![(token.clone(), tenant("acme"))]);
            assert!(
                matches!(refused, Err(TokenError::Placeholder { .. })),
                "{token}: {refused:?}"
            );
        }
        assert!(matches!(
            Tokens::new(vec![("0123456789abcde".into(), tenant("acme"))]),
            Err(TokenError::TooShort { .. })
        ));
        assert!(Tokens::new(vec![("9f2c1e7a5b3d4c6e8a0b".into(), tenant("acme"))]).is_ok());
    }
}
