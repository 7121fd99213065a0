//! Anthropic Messages: `POST {base}/v1/messages` with `stream: true`,
//! answered as named SSE events from `message_start` to `message_stop`.

mod decode;
mod request;

use paddock_core::model::{
    ContextProfile, ModelConfig, ModelError, ModelProvider, ModelRequest, ModelStream,
};
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::endpoint;
use crate::http::{Transport, WireDecoder};
use crate::key::ApiKey;
use crate::retry::RetryPolicy;

/// The API version this wire format follows.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is mandatory in this API: used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

#[derive(Debug)]
pub struct AnthropicProvider {
    name: String,
    model: String,
    context_window: u32,
    profile: ContextProfile,
    transport: Transport,
}

impl AnthropicProvider {
    /// `config.base_url` is the API root, with or without `/v1`; `key` is
    /// sent as `x-api-key`, or nothing for a keyless endpoint.
    pub fn new(config: &ModelConfig, key: Option<ApiKey>) -> Result<Self, ModelError> {
        let base = config
            .base_url
            .as_deref()
            .ok_or_else(|| ModelError::Config {
                reason: format!("{}: no base URL", config.label()),
            })?;
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert("x-api-key", key.header("")?);
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        let url = endpoint::v1_url(base, "messages");
        Ok(Self {
            name: config.label(),
            model: config.model.clone(),
            context_window: config.context_window,
            profile: crate::profiles::profile_of(config),
            transport: Transport::new(url, headers)?,
        })
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.transport.set_retry(retry);
        self
    }
}

impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> u32 {
        self.context_window
    }

    fn context_profile(&self) -> ContextProfile {
        self.profile
    }

    fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> ModelStream {
        let body = request::body(&self.model, request);
        tracing::debug!(model = %self.name, url = self.transport.url(), "model request");
        self.transport.stream(body, new_decoder, cancel)
    }
}

fn new_decoder() -> Box<dyn WireDecoder> {
    Box::new(decode::EventDecoder::default())
}
