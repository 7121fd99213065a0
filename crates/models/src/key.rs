//! API keys: read from a named environment variable, never printed.

use std::fmt;

use paddock_core::model::ModelError;
use reqwest::header::HeaderValue;

/// A provider API key. `Debug` shows only that a key is there.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key in the environment variable `env` (looked up with `lookup`);
    /// unset or blank is [`ModelError::MissingApiKey`].
    pub fn from_env(
        env: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ModelError> {
        match lookup(env) {
            Some(key) if !key.trim().is_empty() => Ok(Self(key.trim().to_owned())),
            _ => Err(ModelError::MissingApiKey {
                env: env.to_owned(),
            }),
        }
    }

    /// The key itself, for a component that sends it on its own (the
    /// egress proxy injecting it for an agent CLI).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A header value marked sensitive, so `Debug` of headers hides it too.
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, ModelError> {
        let mut value = HeaderValue::try_from(format!("{prefix}{}", self.0)).map_err(|_| {
            ModelError::Config {
                reason: "the API key contains characters not allowed in an HTTP header".into(),
            }
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() -> Result<(), ModelError> {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        let header = key.header("Bearer ")?;
        assert!(header.is_sensitive());
        assert!(!format!("{header:?}").contains("sk-secret"));
        Ok(())
    }

    #[test]
    fn unset_or_blank_env_is_missing_key() {
        for value in [None, Some("  ".to_owned())] {
            let result = ApiKey::from_env("MY_KEY", |_| value.clone());
            assert!(
                matches!(&result, Err(ModelError::MissingApiKey { env }) if env == "MY_KEY"),
                "{result:?}"
            );
        }
    }
}
