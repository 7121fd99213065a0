//! Building a provider from a `provider:model` spec plus explicit settings.

use std::path::Path;
use std::sync::Arc;

use paddock_core::model::{ModelConfig, ModelError, ModelProvider, ProviderKind};

use crate::anthropic::AnthropicProvider;
use crate::key::ApiKey;
use crate::openai::OpenAiProvider;
use crate::profiles::known_profile;
use crate::scripted::ScriptedProvider;

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// Parses `scripted:FILE`, `openai:MODEL` or `anthropic:MODEL` into a config
/// with that provider's defaults (public base URL, key variable) and the
/// model's context window from the profile table (an unknown OpenAI-compatible
/// model gets a conservative 32k); the caller overrides fields as configured.
pub fn parse_spec(spec: &str) -> Result<ModelConfig, ModelError> {
    let invalid = |reason: &str| ModelError::Config {
        reason: format!("model {spec:?}: {reason}"),
    };
    let (provider, model) = spec.split_once(':').ok_or_else(|| {
        invalid("expected PROVIDER:MODEL (scripted:FILE, openai:MODEL, anthropic:MODEL)")
    })?;
    let provider = ProviderKind::parse(provider)
        .ok_or_else(|| invalid("unknown provider: use scripted, openai or anthropic"))?;
    if model.trim().is_empty() {
        return Err(invalid("the model (or script file) is empty"));
    }
    let (base_url, api_key_env) = match provider {
        ProviderKind::OpenAi => (Some(OPENAI_BASE_URL), Some(OPENAI_KEY_ENV)),
        ProviderKind::Anthropic => (Some(ANTHROPIC_BASE_URL), Some(ANTHROPIC_KEY_ENV)),
        ProviderKind::Scripted => (None, None),
    };
    let context_window = known_profile(provider, model).context_window;
    Ok(ModelConfig {
        provider,
        model: model.to_owned(),
        base_url: base_url.map(str::to_owned),
        context_window,
        api_key_env: api_key_env.map(str::to_owned),
    })
}

/// Builds the provider, reading the API key from the process environment.
pub fn build(config: &ModelConfig) -> Result<Arc<dyn ModelProvider>, ModelError> {
    build_with_env(config, |name| std::env::var(name).ok())
}

/// [`build`] with the environment lookup supplied (tests, embedders). The
/// provider's public endpoint needs its key: an unset variable is
/// [`ModelError::MissingApiKey`]. Another base URL gets the key if the
/// variable is set and none otherwise (local servers mostly take none);
/// `api_key_env: None` never sends one.
pub fn build_with_env(
    config: &ModelConfig,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelProvider>, ModelError> {
    if config.context_window == 0 {
        return Err(ModelError::Config {
            reason: format!("{}: the context window is 0", config.label()),
        });
    }
    let key = key_with_env(config, lookup)?;
    Ok(match config.provider {
        ProviderKind::Scripted => Arc::new(ScriptedProvider::load(
            Path::new(&config.model),
            config.context_window,
        )?),
        ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(config, key)?),
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(config, key)?),
    })
}

/// The key requests to `config`'s endpoint carry: the provider's public
/// endpoint needs it (an unset variable is [`ModelError::MissingApiKey`]);
/// another base URL gets it if the variable is set and none otherwise;
/// `api_key_env: None` never has one.
pub fn key_with_env(
    config: &ModelConfig,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ModelError> {
    Ok(match config.api_key_env.as_deref() {
        None => None,
        Some(env) if needs_key(config) => Some(ApiKey::from_env(env, &lookup)?),
        Some(env) => ApiKey::from_env(env, &lookup).ok(),
    })
}

/// The config names its provider's public endpoint, which takes no request
/// without a key.
fn needs_key(config: &ModelConfig) -> bool {
    let public = match config.provider {
        ProviderKind::OpenAi => OPENAI_BASE_URL,
        ProviderKind::Anthropic => ANTHROPIC_BASE_URL,
        ProviderKind::Scripted => return false,
    };
    config
        .base_url
        .as_deref()
        .is_none_or(|base| paddock_core::model::same_api(base, public))
}
