//! `paddock serve --config FILE`: the operator's TOML configuration, plus
//! tokens from PADDOCK_TOKENS.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::Tokens;
use paddock_api::service::{LimitsPolicy, ServiceConfig};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::{DowngradeLayer, SandboxLimits};
use serde::Deserialize;

/// Environment variable with extra tokens: `tenant:token,tenant:token`.
pub const TOKENS_ENV: &str = "PADDOCK_TOKENS";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// This node's name; reconciliation only touches its own sandboxes.
    pub node: Option<String>,
    #[serde(default)]
    pub tokens: Vec<TokenEntry>,
    /// Seconds without API activity before a sandbox is destroyed (default 1800).
    pub idle_timeout_secs: Option<u64>,
    /// Seconds a sandbox may live at all (default 86400).
    pub max_lifetime_secs: Option<u64>,
    /// Most sandboxes running at once (default 100).
    pub max_sandboxes: Option<usize>,
    /// Largest request body in bytes (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// Hardening layers allowed to be missing on this host.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Limits of a sandbox whose request names none.
    pub default_limits: Option<SandboxLimits>,
    /// The most a request may ask for.
    pub max_limits: Option<SandboxLimits>,
    /// Model endpoints (besides each provider's public one) a run request may
    /// name as `base_url`; the server's API key for the provider is sent there.
    #[serde(default)]
    pub model_base_urls: Vec<String>,
    /// The sandbox backend ("native", "docker", "gvisor"); default: `--backend`.
    pub backend: Option<crate::backend::BackendKind>,
    /// The image of docker and gvisor sandboxes; default: `--image`.
    pub image: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    pub token: String,
    pub tenant: TenantId,
}

impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEntry")
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl ServeConfig {
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The config file's tokens and those of `env_tokens` (PADDOCK_TOKENS).
    pub fn tokens(&self, env_tokens: Option<&str>) -> anyhow::Result<Tokens> {
        let mut entries: Vec<(String, TenantId)> = self
            .tokens
            .iter()
            .map(|t| (t.token.clone(), t.tenant.clone()))
            .collect();
        for item in env_tokens.unwrap_or_default().split(',').map(str::trim) {
            if item.is_empty() {
                continue;
            }
            let Some((tenant, token)) = item.split_once(':') else {
                bail!("{TOKENS_ENV}: expected tenant:token items separated by commas");
            };
            let tenant = TenantId::parse(tenant).context(TOKENS_ENV)?;
            entries.push((token.to_owned(), tenant));
        }
        if entries.is_empty() {
            bail!(
                "no API tokens configured: add [[tokens]] to the config file or set {TOKENS_ENV}=tenant:token"
            );
        }
        Ok(Tokens::new(entries)?)
    }

    pub fn service_config(
        &self,
        node: String,
        workspaces_root: std::path::PathBuf,
    ) -> anyhow::Result<ServiceConfig> {
        let mut config = ServiceConfig::new(node, workspaces_root);
        if let Some(secs) = self.idle_timeout_secs {
            config.idle_timeout = positive_secs("idle_timeout_secs", secs)?;
        }
        if let Some(secs) = self.max_lifetime_secs {
            config.max_lifetime = positive_secs("max_lifetime_secs", secs)?;
        }
        if let Some(max) = self.max_sandboxes {
            config.max_sandboxes = max;
        }
        let defaults = LimitsPolicy::default();
        config.limits = LimitsPolicy {
            default: self.default_limits.clone().unwrap_or(defaults.default),
            max: self.max_limits.clone().unwrap_or(defaults.max),
        };
        config.allow_downgrade = self.allow_downgrade.clone();
        Ok(config)
    }
}

fn positive_secs(field: &str, secs: u64) -> anyhow::Result<Duration> {
    if secs == 0 {
        bail!("{field} must be more than 0");
    }
    Ok(Duration::from_secs(secs))
}

/// A node name fit for a cgroup path component: the hostname, lowercased,
/// with anything but letters, digits, '-' and '_' replaced by '-'.
pub fn node_name(raw: &str) -> String {
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() || name.chars().all(|c| c == '-') {
        "local".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_config_parses() {
        let config: ServeConfig = toml::from_str(
            r#"
            node = "edge-1"
            idle_timeout_secs = 60
            max_lifetime_secs = 3600
            max_sandboxes = 5
            max_body_bytes = 1048576
            allow_downgrade = ["cgroups"]

            [[tokens]]
            token = "0123456789abcdef0123"
            tenant = "acme"

            [default_limits]
            memory_bytes = 268435456
            pids = 128

            [max_limits]
            memory_bytes = 1073741824
            "#,
        )
        .unwrap();
        let service = config.service_config("edge-1".into(), "/w".into()).unwrap();
        assert_eq!(service.idle_timeout, Duration::from_secs(60));
        assert_eq!(service.max_lifetime, Duration::from_secs(3600));
        assert_eq!(service.max_sandboxes, 5);
        assert_eq!(service.limits.default.memory_bytes, Some(268435456));
        assert_eq!(service.limits.default.pids, Some(128));
        // Fields left out keep the built-in default.
        assert_eq!(
            service.limits.default.tmp_bytes,
            SandboxLimits::default().tmp_bytes
        );
        assert!(service.allow_downgrade.contains(&DowngradeLayer::Cgroups));
        let tokens = config.tokens(Some("globex:fedcba9876543210fedc")).unwrap();
        assert_eq!(
            tokens.tenants(),
            [
                TenantId::parse("acme").unwrap(),
                TenantId::parse("globex").unwrap()
            ]
        );
        assert!(!format!("{:?}", config.tokens).contains("0123456789"));
    }

    #[test]
    fn mistakes_are_refused() {
        assert!(toml::from_str::<ServeConfig>("idle_timeout = 5").is_err());
        assert!(
            toml::from_str::<ServeConfig>("[[tokens]]\ntoken = \"x\"\ntenant = \"Bad Name\"")
                .is_err()
        );
        let empty = ServeConfig::default();
        assert!(empty.tokens(None).is_err());
        assert!(empty.tokens(Some("acme")).is_err());
        assert!(empty.tokens(Some("acme:short")).is_err());
        let zero: ServeConfig = toml::from_str("idle_timeout_secs = 0").unwrap();
        assert!(zero.service_config("n".into(), "/w".into()).is_err());
    }

    #[test]
    fn node_names_are_safe_path_components() {
        assert_eq!(
            node_name("Build-Box.example.com\n"),
            "build-box-example-com"
        );
        assert_eq!(node_name(""), "local");
        assert_eq!(node_name("..."), "local");
    }
}
