//! Model providers behind `paddock_core::model::ModelProvider`: any
//! OpenAI-compatible chat completions endpoint, the Anthropic Messages API
//! (both streamed over SSE with reqwest), and a scripted provider that
//! replays a JSON file for tests and demos. [`parse_spec`] and [`build`] turn
//! `openai:MODEL`, `anthropic:MODEL` or `scripted:FILE` into a provider.

mod anthropic;
mod endpoint;
mod factory;
mod http;
mod key;
mod openai;
mod profiles;
mod retry;
mod scripted;
mod sse;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicProvider, DEFAULT_MAX_TOKENS};
pub use endpoint::api_root;
pub use factory::{
    ANTHROPIC_BASE_URL, ANTHROPIC_KEY_ENV, OPENAI_BASE_URL, OPENAI_KEY_ENV, build, build_with_env,
    key_with_env, parse_spec,
};
pub use key::ApiKey;
pub use openai::OpenAiProvider;
pub use paddock_core::model::same_api;
pub use profiles::{
    ANTHROPIC_CONTEXT_WINDOW, MIN_CONTEXT_WINDOW, SCRIPTED_CONTEXT_WINDOW,
    UNKNOWN_OPENAI_CONTEXT_WINDOW, known_profile, profile_of,
};
pub use retry::RetryPolicy;
pub use scripted::ScriptedProvider;

use paddock_core::model::ModelError;
use serde_json::Value;

/// A finished tool call's arguments; empty means no arguments (`{}`).
fn parse_arguments(id: &str, name: &str, json: &str) -> Result<Value, ModelError> {
    if json.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(json).map_err(|source| ModelError::Decode {
        what: format!("arguments of tool call {id} ({name})"),
        source: Some(Box::new(source)),
    })
}
