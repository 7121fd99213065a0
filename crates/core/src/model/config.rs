//! Explicit model configuration: which provider, where, which model.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat completions endpoint.
    #[serde(rename = "openai")]
    OpenAi,
    Anthropic,
    /// Canned turns from a JSON file, for tests and demos.
    Scripted,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Scripted => "scripted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            "scripted" => Some(ProviderKind::Scripted),
            _ => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything needed to build a provider. It holds the *name* of the
/// environment variable with the API key, never the key, so it is safe to
/// print, log and persist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub provider: ProviderKind,
    /// The model id sent to the endpoint; for `scripted`, the script's path.
    pub model: String,
    /// Endpoint base URL; `None` for `scripted`.
    pub base_url: Option<String>,
    /// Context window in tokens, for compaction decisions.
    pub context_window: u32,
    /// Environment variable holding the API key; `None` for `scripted`.
    pub api_key_env: Option<String>,
}

impl ModelConfig {
    /// `provider:model`, as written on the command line.
    pub fn label(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }
}
