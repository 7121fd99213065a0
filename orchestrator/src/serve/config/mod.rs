//! `paddock serve --config FILE`: the operator's TOML configuration, plus
//! tokens from PADDOCK_TOKENS. A section is its subsystem's own settings
//! type where one exists (`[http]` is `ConnectionLimits`, `[streams]`
//! `StreamLimits`, `[snapshot]` `SnapshotSettings`, ...), deserialised and
//! validated by that type; the files here keep the sections that need more
//! than the file (the environment, the command line) or have no such type.
//! [`ServeConfig::check`] runs every check at start, before anything is
//! opened, so every mistake in the file is a usage error naming its key.

mod backends;
mod network;
mod quotas;
mod runs;
mod secrets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::Tokens;
use paddock_api::http::{ConnectionLimits, DEFAULT_MAX_BODY_BYTES};
use paddock_api::service::{HostTotals, LimitsPolicy, SecretCatalog, ServiceConfig};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::DowngradeLayer;
use paddock_runtime::{SnapshotSettings, StorageSettings};
use paddock_sandbox::StreamLimits;

use serde::Deserialize;

use crate::backend::BackendKind;
pub use backends::{BackendSection, WarmPoolArg};
pub use network::NetworkSection;
pub use quotas::QuotasConfig;
pub use runs::RunsSection;
pub use secrets::SecretSection;

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
    /// What becomes of an idle sandbox: `stop` (default) or `pause` (its
    /// next request resumes it).
    #[serde(default)]
    pub on_idle: paddock_api::service::OnIdle,
    /// Seconds a sandbox may live at all (default 86400).
    pub max_lifetime_secs: Option<u64>,
    /// Most sandboxes running at once (default 100).
    pub max_sandboxes: Option<usize>,
    /// Bytes of disk one tenant may hold (its workspaces, checkpoint blobs,
    /// snapshot archives and an estimate of its database rows, counted in
    /// blocks), checked on every write path (default 32 GiB).
    pub tenant_disk_quota_bytes: Option<u64>,
    /// Size of the named volumes' pool, a sparse btrfs image under the data
    /// directory (`volumes/pool.img`; default 16 GiB). Fixed when the pool
    /// is first made.
    pub volume_pool_bytes: Option<u64>,
    /// `max_checkpoints_per_session`: checkpoints one session keeps; past
    /// it the oldest tool-batch ones are pruned (default 50, at least 2).
    #[serde(flatten)]
    pub storage: StorageSettings,
    /// Largest request body in bytes (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// Hardening layers allowed to be missing on this host.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// `[default_limits]`: limits of a sandbox whose request names none;
    /// `[max_limits]`: the most a request may ask for;
    /// `temporary_workspace_bytes`: the size cap of a writable temporary
    /// workspace whose request asks no workspace quota (default 1 GiB; 0: none).
    #[serde(flatten)]
    pub limits: LimitsPolicy,
    /// Ceilings on the sum of granted sandbox limits: `[quotas.tenant]` for
    /// every tenant, `[quotas.node]` for the whole node.
    #[serde(default)]
    pub quotas: QuotasConfig,
    /// Host ids for sandboxes, one block of 65536 per sandbox (`base`,
    /// `blocks`); default 1024 blocks from 100000.
    pub id_pool: Option<paddock_jail::IdPool>,
    /// Model endpoints (besides each provider's public one) a run request may
    /// name as `base_url`; the server's API key for the provider is sent there.
    #[serde(default)]
    pub model_base_urls: Vec<String>,
    /// Model prices, `MODEL=INPUT:OUTPUT` in dollars per million tokens (a
    /// MODEL ending in `*` is a prefix): runs report their cost, and a run
    /// with a cost limit needs its model's price.
    #[serde(default)]
    pub prices: Vec<String>,
    /// The context window (tokens) of every model a run request gives none
    /// for, instead of the model's profile (an unknown OpenAI-compatible
    /// model is taken to have 32768).
    pub model_context_window: Option<u32>,
    /// `[http]`: the listener's connection caps and timeouts.
    #[serde(default)]
    pub http: ConnectionLimits,
    /// `[streams]`: host memory bounds of each sandbox's guest connection.
    #[serde(default)]
    pub streams: StreamLimits,
    /// `[ports]`: how a sandbox's ports are reached through the server.
    #[serde(default)]
    pub ports: paddock_api::http::PortsSettings,
    /// `[snapshot]`: snapshot limits of runs (end snapshots, subagent
    /// workspace copies) and the most a run request may ask.
    #[serde(default)]
    pub snapshot: SnapshotSettings,
    /// `[runs]`: the bound on a run request's budgets and the caps on a
    /// run's steering messages.
    #[serde(default)]
    pub runs: RunsSection,
    /// `[network]`: what a run naming no network gets (`default`, none
    /// unless set) and the most a run or sandbox request may ask for
    /// (`max`, full unless set; `none` forbids egress, `allow:HOST,...`
    /// allows only those destinations). Each is `none`, `full` or
    /// `allow:HOST[:PORT],...`.
    #[serde(default)]
    pub network: NetworkSection,
    /// The backend a sandbox request naming none gets ("native", "docker",
    /// "gvisor", "microvm"); default: the first of `[[backends]]`, else `--backend`.
    pub backend: Option<BackendKind>,
    /// The image of docker and gvisor sandboxes when there is no
    /// `[[backends]]`; default: `--image`.
    pub image: Option<String>,
    /// The backends (and images) a sandbox request may pick, each with its
    /// warm pool; empty: the one of `backend`/`image`.
    #[serde(default)]
    pub backends: Vec<BackendSection>,
    /// `[secrets.NAME]`: secrets a sandbox or run request of the tenants
    /// they are granted to may name; injected at egress, the sandbox's
    /// NAME holding only a placeholder.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretSection>,
    /// `[drivers]`: the agent CLIs a run may name as its driver besides
    /// the built-in loop (`enabled = ["claude-code", "codex", "opencode"]`),
    /// installed under `agents_dir` in every sandbox (default
    /// /usr/local/lib/paddock-agents, as images/agents-image.sh installs them).
    #[serde(default)]
    pub drivers: DriversSection,
}

/// `[drivers]` of the config.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriversSection {
    #[serde(default)]
    pub enabled: Vec<paddock_core::store::DriverKind>,
    pub agents_dir: Option<String>,
}

impl DriversSection {
    /// The drivers a run may name.
    pub fn drivers(&self) -> paddock_runtime::Drivers {
        let dir = self
            .agents_dir
            .as_deref()
            .unwrap_or(paddock_runtime::DEFAULT_AGENTS_DIR);
        let mut drivers = paddock_runtime::Drivers::default();
        for kind in &self.enabled {
            drivers.enable(*kind, dir);
        }
        drivers
    }
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
        config.on_idle = self.on_idle;
        if let Some(secs) = self.max_lifetime_secs {
            config.max_lifetime = positive_secs("max_lifetime_secs", secs)?;
        }
        if let Some(max) = self.max_sandboxes {
            config.max_sandboxes = max;
        }
        if let Some(quota) = self.tenant_disk_quota_bytes {
            config.tenant_disk_quota = quota;
        }
        config.limits = self.limits.clone();
        config.allow_downgrade = self.allow_downgrade.clone();
        config.quotas = self.quotas.quotas(&HostTotals::read());
        config.network = self.network.bounds()?;
        config.secrets = self.secret_catalog(&|var| std::env::var(var).ok())?;
        Ok(config)
    }

    /// `[secrets.NAME]`, each value from `lookup` (the server's
    /// environment) or the file.
    pub fn secret_catalog(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<SecretCatalog> {
        let secrets = self
            .secrets
            .iter()
            .map(|(name, section)| section.operator_secret(name, lookup))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(SecretCatalog::new(secrets)?)
    }
}

/// The file's settings checked and turned into the settings of each part
/// they belong to ([`ServeConfig::check`]).
pub struct Checked {
    pub connections: ConnectionLimits,
    pub max_body_bytes: usize,
    pub streams: StreamLimits,
    pub storage: paddock_runtime::StorageSettings,
    pub snapshot: paddock_runtime::SnapshotSettings,
    pub budget_max: paddock_core::store::Budgets,
    pub steering: paddock_runtime::SteeringSettings,
    pub queue: paddock_runtime::QueueSettings,
    pub prices: paddock_core::model::Prices,
    pub ports_domain: Option<paddock_api::http::PortsDomain>,
}

impl ServeConfig {
    /// Every section's check, at start: the first mistake, naming its key.
    /// What needs more than the file (the node name, the server's
    /// environment, the command line) is checked by
    /// [`ServeConfig::service_config`] and [`ServeConfig::backend_sections`].
    pub fn check(&self) -> anyhow::Result<Checked> {
        Ok(Checked {
            connections: self.connection_limits()?,
            max_body_bytes: self.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES),
            streams: self.stream_limits()?,
            storage: self.storage_settings()?,
            snapshot: self.snapshot_settings()?,
            budget_max: self.runs.budget_max()?,
            steering: self.runs.steering()?,
            queue: self.runs.queue()?,
            ports_domain: self.ports.domain.clone(),
            prices: crate::agent::parse_prices(&self.prices)
                .map_err(|err| anyhow::anyhow!("prices: {err}"))?,
        })
    }
}

impl ServeConfig {
    /// The runtime's checkpoint retention (`max_checkpoints_per_session`),
    /// checked.
    pub fn storage_settings(&self) -> anyhow::Result<StorageSettings> {
        self.storage.validate()?;
        Ok(self.storage)
    }

    /// The listener's limits (`[http]`), checked against each other and
    /// against `max_body_bytes`, the caps left out filled in.
    pub fn connection_limits(&self) -> anyhow::Result<ConnectionLimits> {
        let max_body_bytes = self.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        self.http
            .validate(max_body_bytes)
            .map_err(in_section("http"))?;
        Ok(self.http.resolved(max_body_bytes))
    }

    /// The guest connections' memory bounds (`[streams]`), checked.
    pub fn stream_limits(&self) -> anyhow::Result<StreamLimits> {
        self.streams.validate().map_err(in_section("streams"))?;
        Ok(self.streams.clone())
    }

    /// The runtime's snapshot settings (`[snapshot]`), checked.
    pub fn snapshot_settings(&self) -> anyhow::Result<SnapshotSettings> {
        self.snapshot.validate().map_err(in_section("snapshot"))?;
        Ok(self.snapshot.clone())
    }
}

/// A section's refusal with the section's name before its key
/// (`streams.input_budget_bytes must be more than 0`).
fn in_section<E: std::fmt::Display>(section: &'static str) -> impl Fn(E) -> anyhow::Error {
    move |err| anyhow::anyhow!("{section}.{err}")
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
mod tests;
