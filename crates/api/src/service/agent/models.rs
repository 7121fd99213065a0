//! Which model a run over the API may use. A tenant chooses a provider and a
//! model, never a server file or a server environment variable:
//!
//! - `{"scripted": {"turns": [...]}}`: an inline script (the scripted
//!   provider's file format); `scripted:FILE` specs are refused, since they
//!   would make the server read one of its own files.
//! - `{"spec": "openai:gpt-4o"}` or `{"spec": "anthropic:..."}`: the provider's
//!   public endpoint with the server's API key from its environment
//!   (OPENAI_API_KEY, ANTHROPIC_API_KEY). `base_url` may name another
//!   endpoint only if the operator allowed it: the server's key is sent there
//!   if the server has one, and a keyless local server needs none.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::model::{
    ModelConfig, ModelError, ModelProvider, ModelRequest, ModelStream, ProviderKind,
};
use paddock_proto::SecretValue;
use paddock_runtime::ModelTarget;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The model of a run as a request names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelChoice {
    /// An inline script: `{"turns": [{"text", "tool_calls": [{"name", "arguments"}]}]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted: Option<Value>,
    /// `openai:MODEL` or `anthropic:MODEL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// Another endpoint of the spec's provider (an OpenAI-compatible server);
    /// only those the operator allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model's context window in tokens, instead of its profile's (or
    /// the server's `model_context_window`); at least 4096.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 4096)]
    pub context_window: Option<u32>,
}

/// Why a model choice was refused or cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ModelChoiceError {
    /// The choice is malformed or not allowed for tenants.
    #[error("{reason}")]
    Refused { reason: String },
    /// Allowed, but this server cannot provide it (no API key configured, ...).
    #[error("{reason}")]
    Unavailable { reason: String },
    /// Writing the inline script where the scripted provider reads it.
    #[error("staging an inline model script")]
    Stage {
        #[source]
        source: std::io::Error,
    },
}

/// The operator's rules for model choices.
#[derive(Debug, Clone, Default)]
pub struct ModelPolicy {
    /// Base URLs (besides each provider's public one) a request may name.
    /// The server's API key for the provider is sent to them.
    pub allowed_base_urls: Vec<String>,
    /// Where inline scripts are staged while they are loaded (default: the
    /// system's temporary directory).
    pub scratch_dir: Option<PathBuf>,
    /// The context window of every model a request does not give one for,
    /// instead of its profile's (an operator's local model, say).
    pub context_window: Option<u32>,
}

impl ModelPolicy {
    /// The provider for `choice`, or why not. Keys come from this process's
    /// environment.
    pub fn resolve(
        &self,
        choice: &ModelChoice,
    ) -> Result<Arc<dyn ModelProvider>, ModelChoiceError> {
        self.resolve_with_env(choice, |name| std::env::var(name).ok())
    }

    /// [`Self::resolve`] with the environment lookup supplied (tests).
    pub fn resolve_with_env(
        &self,
        choice: &ModelChoice,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ModelProvider>, ModelChoiceError> {
        let window = choice.context_window.or(self.context_window);
        if let Some(w) = window
            && w < paddock_models::MIN_CONTEXT_WINDOW
        {
            return Err(refused(format!(
                "model.context_window must be at least {}",
                paddock_models::MIN_CONTEXT_WINDOW
            )));
        }
        match (&choice.scripted, &choice.spec) {
            (Some(script), None) => {
                if choice.base_url.is_some() {
                    return Err(refused("model.base_url does not apply to a scripted model"));
                }
                self.inline_script(script, window)
            }
            (None, Some(spec)) => self.provider(spec, choice.base_url.as_deref(), window, lookup),
            (Some(_), Some(_)) => Err(refused(
                "model: give either `scripted` (an inline script) or `spec`, not both",
            )),
            (None, None) => Err(refused(
                "model: give `spec` (openai:MODEL, anthropic:MODEL) or `scripted` ({\"turns\": [...]})",
            )),
        }
    }

    fn provider(
        &self,
        spec: &str,
        base_url: Option<&str>,
        window: Option<u32>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ModelProvider>, ModelChoiceError> {
        let config = self.config(spec, base_url, window)?;
        paddock_models::build_with_env(&config, lookup).map_err(|err| unavailable(&config, err))
    }

    /// A provider spec and base URL checked against the operator's rules:
    /// a real provider (a script only inline), a base URL it allows.
    fn config(
        &self,
        spec: &str,
        base_url: Option<&str>,
        window: Option<u32>,
    ) -> Result<ModelConfig, ModelChoiceError> {
        let mut config: ModelConfig =
            paddock_models::parse_spec(spec).map_err(|e| refused(e.to_string()))?;
        if let Some(window) = window {
            config.context_window = window;
        }
        if config.provider == ProviderKind::Scripted {
            return Err(refused(
                "model.spec: scripted models are accepted only inline over the API: \
                 {\"model\": {\"scripted\": {\"turns\": [...]}}}",
            ));
        }
        if let Some(url) = base_url {
            let url = url.trim();
            // The same API however written (trailing slash, with or without /v1).
            let allowed = config
                .base_url
                .iter()
                .chain(&self.allowed_base_urls)
                .any(|a| paddock_models::same_api(a, url));
            if !allowed {
                return Err(refused(format!(
                    "model.base_url {url:?} is not one this server allows (the operator lists \
                     them in model_base_urls)"
                )));
            }
            config.base_url = Some(url.to_owned());
        }
        Ok(config)
    }

    /// The endpoint an agent CLI driving a run calls for `choice`, with the
    /// server's key for it; None for an inline script (no CLI calls one).
    pub fn target(&self, choice: &ModelChoice) -> Result<Option<ModelTarget>, ModelChoiceError> {
        self.target_with_env(choice, |name| std::env::var(name).ok())
    }

    /// [`Self::target`] with the environment lookup supplied (tests).
    pub fn target_with_env(
        &self,
        choice: &ModelChoice,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ModelTarget>, ModelChoiceError> {
        let Some(spec) = &choice.spec else {
            return Ok(None);
        };
        let config = self.config(spec, choice.base_url.as_deref(), None)?;
        let key = paddock_models::key_with_env(&config, lookup)
            .map_err(|err| unavailable(&config, err))?;
        Ok(Some(ModelTarget {
            provider: config.provider,
            base_url: config.base_url.clone().unwrap_or_default(),
            model: config.model,
            key: key.map(|k| SecretValue::new(k.expose())),
        }))
    }

    fn inline_script(
        &self,
        script: &Value,
        window: Option<u32>,
    ) -> Result<Arc<dyn ModelProvider>, ModelChoiceError> {
        let mut file = match &self.scratch_dir {
            Some(dir) => tempfile::NamedTempFile::new_in(dir),
            None => tempfile::NamedTempFile::new(),
        }
        .map_err(|source| ModelChoiceError::Stage { source })?;
        file.write_all(script.to_string().as_bytes())
            .and_then(|()| file.flush())
            .map_err(|source| ModelChoiceError::Stage { source })?;
        // The script is read whole and checked here; the file goes right after.
        let provider = paddock_models::ScriptedProvider::load(
            file.path(),
            window.unwrap_or(paddock_models::SCRIPTED_CONTEXT_WINDOW),
        )
        .map_err(|err| match err {
            ModelError::ScriptInvalid { source, .. } => {
                refused(format!("model.scripted is not a valid script: {source}"))
            }
            other => refused(format!("model.scripted: {other}")),
        })?;
        Ok(Arc::new(Inline(provider)))
    }
}

/// A model this server cannot serve (no key for it), or a bad config.
fn unavailable(config: &ModelConfig, err: ModelError) -> ModelChoiceError {
    match err {
        ModelError::MissingApiKey { env } => ModelChoiceError::Unavailable {
            reason: format!(
                "this server has no API key for {} (its operator sets {env})",
                config.provider
            ),
        },
        other => refused(format!("model: {other}")),
    }
}

fn refused(reason: impl Into<String>) -> ModelChoiceError {
    ModelChoiceError::Refused {
        reason: reason.into(),
    }
}

/// An inline script under a name that does not show the server's staging path.
#[derive(Debug)]
struct Inline(paddock_models::ScriptedProvider);

impl ModelProvider for Inline {
    fn name(&self) -> &str {
        "scripted:inline"
    }

    fn fresh_copy(&self) -> Option<Arc<dyn ModelProvider>> {
        Some(Arc::new(Inline(self.0.restart())))
    }

    fn context_window(&self) -> u32 {
        self.0.context_window()
    }

    fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> ModelStream {
        use futures_util::StreamExt;
        self.0
            .stream(request, cancel)
            .map(|item| {
                item.map_err(|err| match err {
                    ModelError::ScriptExhausted {
                        turn, available, ..
                    } => ModelError::ScriptExhausted {
                        path: PathBuf::from("inline"),
                        turn,
                        available,
                    },
                    other => other,
                })
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn choice(value: Value) -> ModelChoice {
        serde_json::from_value(value).unwrap()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn refusal(result: Result<Arc<dyn ModelProvider>, ModelChoiceError>) -> String {
        match result {
            Err(ModelChoiceError::Refused { reason }) => reason,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn inline_scripts_load_under_a_neutral_name() {
        let policy = ModelPolicy::default();
        let provider = policy
            .resolve_with_env(
                &choice(json!({"scripted": {"turns": [{"text": "hi"}]}})),
                no_env,
            )
            .unwrap();
        assert_eq!(provider.name(), "scripted:inline");
    }

    #[test]
    fn server_files_and_unknown_endpoints_are_refused() {
        let policy = ModelPolicy {
            allowed_base_urls: vec!["http://10.0.0.5:8000/v1".into()],
            scratch_dir: None,
            context_window: None,
        };
        let reason = refusal(
            policy.resolve_with_env(&choice(json!({"spec": "scripted:/etc/shadow"})), no_env),
        );
        assert!(reason.contains("only inline"), "{reason}");
        let reason = refusal(policy.resolve_with_env(
            &choice(json!({"spec": "openai:gpt-4o", "base_url": "http://attacker.example"})),
            |_| Some("sk-server".into()),
        ));
        assert!(reason.contains("not one this server allows"), "{reason}");
        let reason = refusal(
            policy.resolve_with_env(&choice(json!({"scripted": {"turns": "nope"}})), no_env),
        );
        assert!(reason.contains("not a valid script"), "{reason}");
        assert!(serde_json::from_value::<ModelChoice>(json!({"api_key_env": "HOME"})).is_err());
        refusal(policy.resolve_with_env(&choice(json!({})), no_env));
    }

    #[test]
    fn allowed_endpoints_use_the_servers_key() {
        let policy = ModelPolicy {
            allowed_base_urls: vec!["http://10.0.0.5:8000/v1/".into()],
            scratch_dir: None,
            context_window: None,
        };
        let provider = policy
            .resolve_with_env(
                &choice(json!({"spec": "openai:local", "base_url": "http://10.0.0.5:8000/v1"})),
                |_| Some("sk-server".into()),
            )
            .unwrap();
        assert_eq!(provider.name(), "openai:local");
        match policy.resolve_with_env(&choice(json!({"spec": "anthropic:claude"})), no_env) {
            Err(ModelChoiceError::Unavailable { reason }) => {
                assert!(reason.contains("ANTHROPIC_API_KEY"), "{reason}");
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }

    #[test]
    fn the_window_comes_from_the_request_the_server_or_the_profile() {
        let mut policy = ModelPolicy {
            allowed_base_urls: vec!["http://10.0.0.5:8000".into()],
            scratch_dir: None,
            context_window: None,
        };
        let local = json!({"spec": "openai:qwen-coder", "base_url": "http://10.0.0.5:8000"});
        let window = |policy: &ModelPolicy, choice_json: Value| {
            policy
                .resolve_with_env(&choice(choice_json), no_env)
                .unwrap()
                .context_profile()
                .context_window
        };
        assert_eq!(
            window(&policy, local.clone()),
            32_768,
            "unknown: conservative"
        );
        policy.context_window = Some(16_384);
        assert_eq!(window(&policy, local.clone()), 16_384, "the server's");
        let mut asked = local.clone();
        asked["context_window"] = json!(8_192);
        assert_eq!(window(&policy, asked.clone()), 8_192, "the request's");
        assert_eq!(
            window(
                &policy,
                json!({"scripted": {"turns": []}, "context_window": 8_192})
            ),
            8_192
        );
        asked["context_window"] = json!(100);
        let reason = refusal(policy.resolve_with_env(&choice(asked), no_env));
        assert!(reason.contains("at least 4096"), "{reason}");
    }

    #[test]
    fn an_allowed_local_endpoint_needs_no_server_key() {
        let policy = ModelPolicy {
            allowed_base_urls: vec!["http://10.0.0.5:8000".into()],
            scratch_dir: None,
            context_window: None,
        };
        for spec in ["openai:local", "anthropic:local"] {
            let provider = policy
                .resolve_with_env(
                    &choice(json!({"spec": spec, "base_url": "http://10.0.0.5:8000/v1/"})),
                    no_env,
                )
                .unwrap();
            assert_eq!(provider.name(), spec);
        }
    }
}
