//! Agent CLIs as drivers: Claude Code, Codex and opencode run inside the
//! run's sandbox as the untrusted processes they are. The CLI calls its
//! model provider through the sandbox's egress proxy, which lets it reach
//! that provider's host only and swaps the key's placeholder for the key
//! there (the key never exists in the sandbox: [`ExternalDriver::egress`]).
//! Its JSON lines are bridged into the run's events, history, checkpoints
//! and usage (bridge.rs); the runtime's budgets, cancel and review hold as
//! for the built-in loop (run.rs).

mod bridge;
mod bridged;
mod claude;
mod cli;
mod codex;
mod lines;
mod opencode;
mod prompt;
mod run;

use std::fmt;

use async_trait::async_trait;
use paddock_core::store::DriverKind;
use paddock_proto::{Destination, SecretSpec, SecretValue};

use super::{AgentDriver, DriveOutcome, DriverCapabilities, DriverEgress, ResumeSupport};
use crate::run::DriveContext;
use cli::CliAdapter;

/// Where the agent CLIs are installed, inside every sandbox
/// (images/agents-image.sh): the native backend sees the host's /usr, the
/// container image has the same tree at the same path.
pub const DEFAULT_AGENTS_DIR: &str = "/usr/local/lib/paddock-agents";

/// How an operator sets an agent CLI up (`[drivers.<kind>]`).
#[derive(Clone)]
pub struct ExternalSettings {
    /// The CLI's executable inside the sandbox.
    pub program: String,
    /// The model the CLI is told to use; None: its own default.
    pub model: Option<String>,
    /// The model provider's base URL (`https://api.anthropic.com`).
    pub base_url: String,
    /// The provider's key, injected at egress into requests to the base
    /// URL's host; None: the provider takes none.
    pub key: Option<SecretValue>,
}

impl fmt::Debug for ExternalSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalSettings")
            .field("program", &self.program)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Why an agent CLI's settings are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExternalSettingsError {
    #[error("[drivers.{kind}] base_url {url:?}: {reason}")]
    BaseUrl {
        kind: DriverKind,
        url: String,
        reason: String,
    },
    #[error("[drivers.{kind}] the key: {reason}")]
    Key { kind: DriverKind, reason: String },
    #[error("the built-in loop is not an agent CLI")]
    Builtin,
}

/// An agent CLI as a run's driver.
#[derive(Debug)]
pub struct ExternalDriver {
    kind: DriverKind,
    settings: ExternalSettings,
    egress: DriverEgress,
}

impl ExternalDriver {
    /// The driver of `kind` with `settings`, checked: the base URL names a
    /// host, and the key can be injected into requests to it.
    pub fn new(
        kind: DriverKind,
        settings: ExternalSettings,
    ) -> Result<Self, ExternalSettingsError> {
        let wire = Wire::of(kind).ok_or(ExternalSettingsError::Builtin)?;
        let destination = destination_of(&settings.base_url).map_err(|reason| {
            ExternalSettingsError::BaseUrl {
                kind,
                url: settings.base_url.clone(),
                reason,
            }
        })?;
        let secrets = match &settings.key {
            Some(key) => vec![
                SecretSpec::new(
                    wire.key_var,
                    key.clone(),
                    &[destination.to_string().as_str()],
                    Some(wire.key_header),
                )
                .map_err(|err| ExternalSettingsError::Key {
                    kind,
                    reason: err.to_string(),
                })?,
            ],
            None => Vec::new(),
        };
        Ok(Self {
            kind,
            settings,
            egress: DriverEgress {
                allow: vec![destination],
                secrets,
            },
        })
    }

    /// The CLI's installed executable under `agents_dir`.
    pub fn program_in(kind: DriverKind, agents_dir: &str) -> String {
        let name = match kind {
            DriverKind::ClaudeCode => "claude",
            DriverKind::Codex => "codex",
            DriverKind::Opencode => "opencode",
            DriverKind::Builtin => "paddock",
        };
        format!("{}/bin/{name}", agents_dir.trim_end_matches('/'))
    }

    fn adapter(&self) -> Box<dyn CliAdapter> {
        match self.kind {
            DriverKind::Codex => Box::new(codex::Codex::default()),
            DriverKind::Opencode => Box::new(opencode::Opencode::default()),
            DriverKind::ClaudeCode | DriverKind::Builtin => Box::new(claude::Claude::default()),
        }
    }

    /// `provider:model`, as the operator's prices name it.
    fn model_name(&self) -> String {
        let provider = match self.kind {
            DriverKind::ClaudeCode => "anthropic",
            _ => "openai",
        };
        format!(
            "{provider}:{}",
            self.settings.model.as_deref().unwrap_or("default")
        )
    }
}

/// What a CLI's provider wire needs: the variable holding the key's
/// placeholder and the header the CLI sends it in.
#[derive(Debug, Clone, Copy)]
struct Wire {
    key_var: &'static str,
    key_header: &'static str,
}

impl Wire {
    fn of(kind: DriverKind) -> Option<Self> {
        match kind {
            DriverKind::ClaudeCode => Some(Self {
                key_var: "ANTHROPIC_API_KEY",
                key_header: "x-api-key",
            }),
            // `Authorization: Bearer <placeholder>`: swapped in place
            DriverKind::Codex | DriverKind::Opencode => Some(Self {
                key_var: "OPENAI_API_KEY",
                key_header: "Authorization",
            }),
            DriverKind::Builtin => None,
        }
    }
}

/// The host and port a base URL names (`https://h` is `h:443`).
fn destination_of(base_url: &str) -> Result<Destination, String> {
    let url = url::Url::parse(base_url).map_err(|err| err.to_string())?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err("expected an http or https URL".to_owned());
    }
    let host = url.host_str().ok_or("the URL names no host")?;
    let port = url.port_or_known_default().ok_or("the URL names no port")?;
    format!("{host}:{port}")
        .parse()
        .map_err(|err: paddock_proto::InvalidNetworkPolicy| err.to_string())
}

#[async_trait]
impl AgentDriver for ExternalDriver {
    fn kind(&self) -> DriverKind {
        self.kind
    }

    fn capabilities(&self) -> DriverCapabilities {
        DriverCapabilities {
            steer: false,
            subagents: false,
            tool_checkpoints: true,
            memory: false,
            resume: ResumeSupport::Native,
        }
    }

    fn egress(&self) -> DriverEgress {
        self.egress.clone()
    }

    async fn drive(&self, ctx: DriveContext<'_>) -> DriveOutcome {
        let parts = ctx.agent_parts(&self.model_name());
        run::run(self, parts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(base_url: &str) -> ExternalSettings {
        ExternalSettings {
            program: ExternalDriver::program_in(DriverKind::ClaudeCode, DEFAULT_AGENTS_DIR),
            model: None,
            base_url: base_url.to_owned(),
            key: Some(SecretValue::new("sk-ant-real")),
        }
    }

    #[test]
    fn the_key_goes_only_to_the_providers_host_in_its_header() {
        let driver = ExternalDriver::new(
            DriverKind::ClaudeCode,
            settings("https://api.anthropic.com"),
        )
        .map_err(|e| e.to_string());
        let egress = driver.map(|d| d.egress()).unwrap_or_default();
        assert_eq!(
            egress.allow,
            vec![
                "api.anthropic.com:443"
                    .parse::<Destination>()
                    .unwrap_or_else(|_| unreachable!())
            ]
        );
        assert_eq!(egress.secrets.len(), 1);
        let secret = &egress.secrets[0];
        assert_eq!(secret.name, "ANTHROPIC_API_KEY");
        assert_eq!(secret.header.name.to_ascii_lowercase(), "x-api-key");
        assert_eq!(secret.hosts, egress.allow);
        assert!(!format!("{driver:?}", driver = settings("https://a")).contains("sk-ant-real"));
    }

    #[test]
    fn a_base_url_without_a_host_is_refused() {
        for url in ["not a url", "file:///etc/passwd", "https://"] {
            let refused = ExternalDriver::new(DriverKind::Codex, settings(url));
            assert!(
                matches!(refused, Err(ExternalSettingsError::BaseUrl { .. })),
                "{url}: {refused:?}"
            );
        }
        assert!(matches!(
            ExternalDriver::new(DriverKind::Builtin, settings("https://a")),
            Err(ExternalSettingsError::Builtin)
        ));
    }
}
