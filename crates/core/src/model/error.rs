//! Errors of the model port.

use std::path::PathBuf;
use std::time::Duration;

/// A transport- or parser-specific cause carried as a source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model configuration cannot work: unknown provider, bad URL, ...
    #[error("invalid model configuration: {reason}")]
    Config { reason: String },
    #[error("API key environment variable {env} is not set")]
    MissingApiKey { env: String },
    /// Connecting, sending or reading the response failed.
    #[error("model request to {url} failed")]
    Network {
        url: String,
        #[source]
        source: BoxError,
    },
    /// A non-success status other than 429; `body` is an excerpt of the answer.
    #[error("model endpoint answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("model endpoint rate limited the request{}", retry_hint(*.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    /// An error the provider reported inside the stream.
    #[error("model endpoint reported {kind}: {message}")]
    Provider { kind: String, message: String },
    /// The answer does not have the provider's wire format.
    #[error("decoding {what}")]
    Decode {
        what: String,
        #[source]
        source: Option<BoxError>,
    },
    /// The stream stopped before its end marker, after some events were
    /// handed out: the answer is incomplete and was not retried.
    #[error("model stream ended before it was complete (after {after_events} events)")]
    StreamCut { after_events: usize },
    #[error("model call cancelled")]
    Cancelled,
    /// Every attempt failed with a retryable error; `last` is the final one.
    #[error("model request failed after {attempts} attempts")]
    RetriesExhausted {
        attempts: u32,
        #[source]
        last: Box<ModelError>,
    },
    #[error("reading model script {path}")]
    ScriptRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("model script {path} is malformed")]
    ScriptInvalid {
        path: PathBuf,
        #[source]
        source: BoxError,
    },
    /// `turn` is 1-based: the call that found no turn left.
    #[error("model script {path} has no turn {turn}: it holds {available}")]
    ScriptExhausted {
        path: PathBuf,
        turn: usize,
        available: usize,
    },
}

impl ModelError {
    /// Whether sending the same request again may succeed: network errors,
    /// rate limits, timeouts, server errors and overload reported in-stream.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Network { .. } | ModelError::RateLimited { .. } => true,
            ModelError::Http { status, .. } => *status == 408 || *status >= 500,
            ModelError::Provider { kind, .. } => matches!(
                kind.as_str(),
                "overloaded_error" | "api_error" | "server_error" | "rate_limit_error"
            ),
            _ => false,
        }
    }

    /// A decode error without an underlying cause.
    pub fn decode(what: impl Into<String>) -> Self {
        ModelError::Decode {
            what: what.into(),
            source: None,
        }
    }
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    retry_after
        .map(|after| format!(" (retry after {} ms)", after.as_millis()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_classification() {
        let http = |status| ModelError::Http {
            status,
            body: String::new(),
        };
        assert!(http(500).is_retryable());
        assert!(http(529).is_retryable());
        assert!(http(408).is_retryable());
        assert!(!http(400).is_retryable());
        assert!(!http(401).is_retryable());
        assert!(ModelError::RateLimited { retry_after: None }.is_retryable());
        assert!(!ModelError::StreamCut { after_events: 3 }.is_retryable());
        assert!(!ModelError::decode("chunk").is_retryable());
        assert!(
            ModelError::Provider {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            }
            .is_retryable()
        );
    }

    #[test]
    fn rate_limit_message_names_the_delay() {
        let error = ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(
            error.to_string(),
            "model endpoint rate limited the request (retry after 2000 ms)"
        );
    }
}
