//! `paddock serve --config FILE`: the operator's TOML configuration, plus
//! tokens from PADDOCK_TOKENS.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::Tokens;
use paddock_api::http::{ConnectionLimits, DEFAULT_MAX_BODY_BYTES};
use paddock_api::service::{
    HostTotals, LimitsPolicy, OperatorSecret, Quota, Quotas, SecretCatalog, SecretGrant,
    ServiceConfig,
};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::{DowngradeLayer, SandboxLimits};
use paddock_sandbox::{DEFAULT_IMAGE, SlowReader, StreamLimits};

use crate::backend::BackendKind;
use paddock_proto::{NetworkBounds, NetworkPolicy};
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
    /// Bytes of disk one tenant may hold (its workspaces, checkpoint blobs,
    /// snapshot archives and an estimate of its database rows, counted in
    /// blocks), checked on every write path (default 32 GiB).
    pub tenant_disk_quota_bytes: Option<u64>,
    /// Checkpoints one session keeps; past it the oldest tool-batch ones
    /// are pruned (default 50, at least 2).
    pub max_checkpoints_per_session: Option<u32>,
    /// Largest request body in bytes (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// Hardening layers allowed to be missing on this host.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Limits of a sandbox whose request names none.
    pub default_limits: Option<SandboxLimits>,
    /// The most a request may ask for.
    pub max_limits: Option<SandboxLimits>,
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
    /// The listener's connection caps and timeouts.
    #[serde(default)]
    pub http: HttpSection,
    /// Host memory bounds of each sandbox's guest connection.
    #[serde(default)]
    pub streams: StreamsSection,
    /// Snapshot limits of runs (end snapshots, subagent workspace copies).
    #[serde(default)]
    pub snapshot: SnapshotSection,
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
}

/// `[secrets.NAME]`: `hosts` it may go to, an optional `header`, the one
/// header the value goes in (`X-Api-Key`, or a template such as
/// `Authorization: Bearer {{secret}}`; default `Authorization`), the
/// `tenants` that may name it
/// (tenant ids, or `["*"]` for all), and its value: `env = "VAR"`, read
/// from the server's environment at start (a missing one stops the
/// start), or, discouraged since a config file gets copied and committed,
/// `value = "..."`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSection {
    pub hosts: Vec<String>,
    pub header: Option<String>,
    pub env: Option<String>,
    pub value: Option<String>,
    pub tenants: Vec<String>,
}

impl std::fmt::Debug for SecretSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSection")
            .field("hosts", &self.hosts)
            .field("header", &self.header)
            .field("env", &self.env)
            .field("value", &self.value.as_ref().map(|_| "<redacted>"))
            .field("tenants", &self.tenants)
            .finish()
    }
}

impl SecretSection {
    /// The secret NAME defines, its value from `env` (through `lookup`:
    /// the server's environment) or `value`. An error names the secret and
    /// the variable, never a value.
    fn operator_secret(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<OperatorSecret> {
        let value = match (&self.env, &self.value) {
            (Some(var), None) => lookup(var).with_context(|| {
                format!("secrets.{name}: ${var} is not set in the server's environment")
            })?,
            (None, Some(value)) => {
                tracing::warn!(
                    secret = name,
                    "secrets.{name} has its value in the config file; prefer env = \"VAR\""
                );
                value.clone()
            }
            _ => bail!(
                "secrets.{name}: give env = \"VAR\" (the value from the server's environment) \
                 or value = \"...\", one of them"
            ),
        };
        let grant = match self.tenants.as_slice() {
            [] => bail!(
                "secrets.{name}: tenants is empty; list the tenants that may name it, \
                 or [\"*\"] for all"
            ),
            [all] if all == "*" => SecretGrant::AllTenants,
            listed => SecretGrant::Tenants(
                listed
                    .iter()
                    .map(|t| {
                        TenantId::parse(t).with_context(|| {
                            format!("secrets.{name}: tenants: {t:?} (\"*\" stands alone)")
                        })
                    })
                    .collect::<anyhow::Result<_>>()?,
            ),
        };
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        let spec = paddock_proto::SecretSpec::new(
            name,
            paddock_proto::SecretValue::new(value),
            &hosts,
            self.header.as_deref(),
        )
        .with_context(|| format!("secrets.{name}"))?;
        Ok(OperatorSecret { spec, grant })
    }
}

/// `[[backends]]`: one backend and image requests may name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSection {
    pub kind: BackendKind,
    /// docker and gvisor only (default paddock-sandbox:bookworm).
    pub image: Option<String>,
    /// Sandboxes of the default request kept started (default 0).
    #[serde(default)]
    pub warm_pool: usize,
}

/// The most sandboxes one warm pool may keep started.
pub const MAX_WARM_POOL: usize = 64;

impl ServeConfig {
    /// The backends to enable: `[[backends]]`, or the one of
    /// `backend`/`image` (else `cli_backend`/`cli_image`), images filled in,
    /// each pool sized by `warm` (`--warm-pool`) over the file.
    pub fn backend_sections(
        &self,
        cli_backend: BackendKind,
        cli_image: Option<&str>,
        warm: &[WarmPoolArg],
    ) -> anyhow::Result<Vec<BackendSection>> {
        let mut sections = if self.backends.is_empty() {
            let kind = self.backend.unwrap_or(cli_backend);
            let image = self.image.as_deref().or(cli_image);
            vec![BackendSection {
                kind,
                image: (kind != BackendKind::Native)
                    .then(|| image.map(str::to_owned))
                    .flatten(),
                warm_pool: 0,
            }]
        } else {
            if self.image.is_some() {
                bail!("image: with [[backends]], name the image in each entry");
            }
            self.backends.clone()
        };
        for section in &mut sections {
            match section.kind {
                BackendKind::Native if section.image.is_some() => {
                    bail!("backends: the native backend takes no image")
                }
                BackendKind::Native => {}
                // its image is a directory (kernel and initramfs); none: the default one
                BackendKind::Microvm => {}
                BackendKind::Docker | BackendKind::Gvisor => {
                    section
                        .image
                        .get_or_insert_with(|| DEFAULT_IMAGE.to_owned());
                }
            }
        }
        if let Some(kind) = self.backend
            && !sections.iter().any(|s| s.kind == kind)
        {
            bail!("backend {}: not among [[backends]]", kind.name());
        }
        for arg in warm {
            let Some(section) = sections.iter_mut().find(|s| {
                s.kind == arg.kind
                    && arg
                        .image
                        .as_ref()
                        .is_none_or(|i| s.image.as_ref() == Some(i))
            }) else {
                bail!("--warm-pool {}: that backend is not enabled", arg.label());
            };
            section.warm_pool = arg.size;
        }
        for section in &sections {
            if section.warm_pool > MAX_WARM_POOL {
                bail!(
                    "warm_pool {} of {}: at most {MAX_WARM_POOL}",
                    section.warm_pool,
                    section.kind.name()
                );
            }
        }
        Ok(sections)
    }
}

/// `--warm-pool BACKEND[:IMAGE]=N`: the pool size of one enabled backend
/// (IMAGE left out: its first image).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmPoolArg {
    pub kind: BackendKind,
    pub image: Option<String>,
    pub size: usize,
}

impl WarmPoolArg {
    fn label(&self) -> String {
        match &self.image {
            Some(image) => format!("{}:{image}", self.kind.name()),
            None => self.kind.name().to_owned(),
        }
    }
}

impl std::str::FromStr for WarmPoolArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (target, size) = text
            .rsplit_once('=')
            .ok_or("expected BACKEND[:IMAGE]=N, e.g. docker=2")?;
        let size = size
            .parse::<usize>()
            .map_err(|e| format!("pool size {size:?}: {e}"))?;
        let (kind, image) = match target.split_once(':') {
            Some((kind, image)) if !image.is_empty() => (kind, Some(image.to_owned())),
            Some(_) => return Err("an empty image after ':'".to_owned()),
            None => (target, None),
        };
        let kind = <BackendKind as clap::ValueEnum>::from_str(kind, false)
            .map_err(|_| format!("unknown backend {kind:?} (native, docker, gvisor)"))?;
        Ok(Self { kind, image, size })
    }
}

/// `[http]`: every field optional, defaults in [`ConnectionLimits::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Open connections at once (default 4096).
    pub max_connections: Option<usize>,
    /// Open connections from one peer address (default 256).
    pub max_connections_per_peer: Option<usize>,
    /// Places only connections that carried a valid token may hold
    /// (default an eighth of `max_connections`).
    pub reserved_connections: Option<usize>,
    /// Connections one tenant's token keeps its place on (default a
    /// sixteenth of `max_connections`, at least 1).
    pub max_connections_per_tenant: Option<usize>,
    /// Seconds a client has to send a request's headers (default 10).
    pub header_timeout_secs: Option<u64>,
    /// Seconds to wait for the next piece of a request body, and the grace
    /// before the minimum rate counts (default 30).
    pub body_timeout_secs: Option<u64>,
    /// Bytes a second a body must average after the grace (default 16384).
    pub body_min_bytes_per_sec: Option<u64>,
    /// Seconds without a byte either way before a connection closes (default 120).
    pub idle_timeout_secs: Option<u64>,
    /// Request body bytes held at once over all requests (default 256 MiB).
    pub max_body_memory_bytes: Option<usize>,
    /// The same for one tenant's requests (default a quarter of
    /// `max_body_memory_bytes`, at least `max_body_bytes`).
    pub max_body_memory_per_tenant_bytes: Option<usize>,
    /// Event, process output and streamed exec streams open at once per
    /// tenant (default 256).
    pub max_streams_per_tenant: Option<usize>,
}

/// `[streams]`: defaults in [`StreamLimits::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamsSection {
    /// "wait" (a slow reader slows the command; default) or "drop" (output
    /// past the buffer is dropped with a marker).
    pub slow_reader: Option<SlowReaderName>,
    /// Output bytes one stream may buffer for its reader.
    pub stream_buffer_bytes: Option<usize>,
    /// The same over all streams of one sandbox (default 32 MiB).
    pub sandbox_buffer_bytes: Option<usize>,
    /// Request payload bytes in flight to one sandbox (default 32 MiB).
    pub input_budget_bytes: Option<usize>,
}

/// `[runs]`: the most budgets a run request may ask (`max_turns`, default
/// 500; `max_tokens`, 20,000,000; `max_tool_calls`, 2,000;
/// `max_wall_clock_secs`, 21,600; `max_cost_micro_usd`, none), a request
/// over one refused with 400 and a budget left at its default lowered to
/// the bound; and the caps on one run's steering messages
/// (`max_steering_messages`, default 50; `max_steering_message_chars`,
/// 32,000, the most there is; `max_steering_total_chars`, 100,000), a
/// message over one refused (429 `steering_limit`, or 400 for one
/// message's size). `when_full`: what a run whose sandbox finds no slot
/// does, `refuse` (429, the default) or `queue` (recorded `queued`, started
/// first in first out per tenant when a slot frees), with
/// `max_queued_per_tenant` (default 16, at most 10,000; past it 429
/// `queue_full`) and `max_queue_wait_secs` (default 900, 1 to 86,400;
/// past it the run fails, `queue_timeout`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsSection {
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_tool_calls: Option<u32>,
    pub max_wall_clock_secs: Option<u64>,
    pub max_cost_micro_usd: Option<u64>,
    pub max_steering_messages: Option<u32>,
    pub max_steering_message_chars: Option<usize>,
    pub max_steering_total_chars: Option<u64>,
    pub when_full: Option<WhenFullName>,
    pub max_queued_per_tenant: Option<usize>,
    pub max_queue_wait_secs: Option<u64>,
}

/// `[runs] when_full`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFullName {
    Refuse,
    Queue,
}

impl RunsSection {
    /// The bound on a run request's budgets; every field above 0.
    pub fn budget_max(&self) -> anyhow::Result<paddock_core::store::Budgets> {
        let d = paddock_runtime::DEFAULT_BUDGET_MAX;
        for (field, value) in [
            ("max_turns", self.max_turns.map(u64::from)),
            ("max_tokens", self.max_tokens),
            ("max_tool_calls", self.max_tool_calls.map(u64::from)),
            ("max_wall_clock_secs", self.max_wall_clock_secs),
            ("max_cost_micro_usd", self.max_cost_micro_usd),
        ] {
            if value == Some(0) {
                bail!("runs.{field} must be more than 0");
            }
        }
        Ok(paddock_core::store::Budgets {
            max_turns: self.max_turns.unwrap_or(d.max_turns),
            max_tokens: self.max_tokens.unwrap_or(d.max_tokens),
            max_tool_calls: self.max_tool_calls.unwrap_or(d.max_tool_calls),
            max_wall_clock_ms: self
                .max_wall_clock_secs
                .map_or(d.max_wall_clock_ms, |s| s.saturating_mul(1000)),
            max_cost_micro_usd: self.max_cost_micro_usd.or(d.max_cost_micro_usd),
        })
    }

    /// What a run that finds no slot does, and the queue's bounds, checked.
    pub fn queue(&self) -> anyhow::Result<paddock_runtime::QueueSettings> {
        let d = paddock_runtime::QueueSettings::default();
        let settings = paddock_runtime::QueueSettings {
            when_full: match self.when_full {
                None => d.when_full,
                Some(WhenFullName::Refuse) => paddock_runtime::WhenFull::Refuse,
                Some(WhenFullName::Queue) => paddock_runtime::WhenFull::Queue,
            },
            max_queued_per_tenant: self
                .max_queued_per_tenant
                .unwrap_or(d.max_queued_per_tenant),
            max_wait: self
                .max_queue_wait_secs
                .map_or(d.max_wait, std::time::Duration::from_secs),
        };
        settings
            .validate()
            .map_err(|reason| anyhow::anyhow!("runs.{reason}"))?;
        Ok(settings)
    }

    /// The caps on one run's steering, checked.
    pub fn steering(&self) -> anyhow::Result<paddock_runtime::SteeringSettings> {
        let d = paddock_runtime::SteeringSettings::default();
        let settings = paddock_runtime::SteeringSettings {
            max_messages: self.max_steering_messages.unwrap_or(d.max_messages),
            max_message_chars: self
                .max_steering_message_chars
                .unwrap_or(d.max_message_chars),
            max_total_chars: self.max_steering_total_chars.unwrap_or(d.max_total_chars),
        };
        settings
            .validate()
            .map_err(|reason| anyhow::anyhow!("runs: {reason}"))?;
        Ok(settings)
    }
}

/// `[snapshot]`: the snapshot limits of a run that asks none (`max_files`,
/// default 10000; `max_bytes`, default 100 MiB) and the most a run request
/// may ask (`request_max_files`, `request_max_bytes`, default a million and
/// 8 GiB, the sandbox snapshot routes' bounds).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSection {
    pub max_files: Option<u64>,
    pub max_bytes: Option<u64>,
    pub request_max_files: Option<u64>,
    pub request_max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowReaderName {
    Wait,
    Drop,
}

/// `[network]`: `default` and `max`, each `none`, `full` or `allow:HOST,...`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    pub default: Option<String>,
    pub max: Option<String>,
}

impl NetworkSection {
    pub fn bounds(&self) -> anyhow::Result<NetworkBounds> {
        let defaults = NetworkBounds::default();
        let parse = |field: &str, value: &Option<String>, default: NetworkPolicy| match value {
            Some(raw) => raw
                .parse::<NetworkPolicy>()
                .with_context(|| format!("network.{field}")),
            None => Ok(default),
        };
        let default = parse("default", &self.default, defaults.default)?;
        let max = parse("max", &self.max, defaults.max)?;
        NetworkBounds::new(default, max).context("network.default must be within network.max")
    }
}

/// `[quotas.tenant]` and `[quotas.node]`: `sandboxes`, `runs`,
/// `memory_bytes`, `pids`, `cpu_millis`. A node field left out defaults from
/// the host (pid_max less a margin, MemTotal, the CPUs times the
/// overcommit; no node-wide `sandboxes` or `runs` beyond `max_sandboxes`);
/// a tenant's `sandboxes` and `runs` left out are the defaults
/// (`Quota::tenant_default`: 8 and 4), its other fields no ceiling.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotasConfig {
    #[serde(default)]
    pub tenant: Quota,
    #[serde(default)]
    pub node: Quota,
}

impl QuotasConfig {
    pub fn quotas(&self, host: &HostTotals) -> Quotas {
        let from_host = host.quota();
        let n = &self.node;
        let t = &self.tenant;
        let tenant_default = Quota::tenant_default();
        Quotas {
            tenant: Quota {
                sandboxes: t.sandboxes.or(tenant_default.sandboxes),
                runs: t.runs.or(tenant_default.runs),
                ..*t
            },
            node: Quota {
                sandboxes: n.sandboxes.or(from_host.sandboxes),
                runs: n.runs.or(from_host.runs),
                memory_bytes: n.memory_bytes.or(from_host.memory_bytes),
                pids: n.pids.or(from_host.pids),
                cpu_millis: n.cpu_millis.or(from_host.cpu_millis),
            },
        }
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
        if let Some(secs) = self.max_lifetime_secs {
            config.max_lifetime = positive_secs("max_lifetime_secs", secs)?;
        }
        if let Some(max) = self.max_sandboxes {
            config.max_sandboxes = max;
        }
        if let Some(quota) = self.tenant_disk_quota_bytes {
            config.tenant_disk_quota = quota;
        }
        let defaults = LimitsPolicy::default();
        config.limits = LimitsPolicy {
            default: self.default_limits.clone().unwrap_or(defaults.default),
            max: self.max_limits.clone().unwrap_or(defaults.max),
        };
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

impl ServeConfig {
    pub fn connection_limits(&self) -> anyhow::Result<ConnectionLimits> {
        let http = &self.http;
        let mut limits = ConnectionLimits::default();
        if let Some(max) = http.max_connections {
            limits.max_connections = positive("http.max_connections", max)?;
        }
        if let Some(max) = http.max_connections_per_peer {
            limits.max_connections_per_peer = positive("http.max_connections_per_peer", max)?;
        }
        let total = limits.max_connections;
        limits.reserved_connections = http.reserved_connections.unwrap_or(total / 8);
        if limits.reserved_connections >= total {
            bail!(
                "http.reserved_connections ({}) must be below http.max_connections ({total})",
                limits.reserved_connections
            );
        }
        limits.max_connections_per_tenant = match http.max_connections_per_tenant {
            Some(max) => positive("http.max_connections_per_tenant", max)?,
            None => (total / 16).max(1),
        };
        if let Some(secs) = http.header_timeout_secs {
            limits.header_read_timeout = positive_secs("http.header_timeout_secs", secs)?;
        }
        if let Some(secs) = http.body_timeout_secs {
            limits.body_read_timeout = positive_secs("http.body_timeout_secs", secs)?;
        }
        if let Some(secs) = http.idle_timeout_secs {
            limits.idle_timeout = positive_secs("http.idle_timeout_secs", secs)?;
        }
        if let Some(rate) = http.body_min_bytes_per_sec {
            if rate == 0 {
                bail!("http.body_min_bytes_per_sec must be above 0");
            }
            limits.body_min_bytes_per_sec = rate;
        }
        if let Some(bytes) = http.max_body_memory_bytes {
            limits.max_body_memory_bytes = positive("http.max_body_memory_bytes", bytes)?;
        }
        let total = limits.max_body_memory_bytes;
        let largest = self.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        limits.max_body_memory_per_tenant_bytes = match http.max_body_memory_per_tenant_bytes {
            Some(share) => positive("http.max_body_memory_per_tenant_bytes", share)?,
            None => (total / 4).max(largest).min(total),
        };
        let share = limits.max_body_memory_per_tenant_bytes;
        if share > total {
            bail!(
                "http.max_body_memory_per_tenant_bytes ({share}) is above \
                 http.max_body_memory_bytes ({total})"
            );
        }
        if share < largest.min(total) {
            bail!(
                "http.max_body_memory_per_tenant_bytes ({share}) is below max_body_bytes \
                 ({largest}): a body of the largest size allowed could never be held"
            );
        }
        if let Some(max) = http.max_streams_per_tenant {
            limits.max_streams_per_tenant = positive("http.max_streams_per_tenant", max)?;
        }
        Ok(limits)
    }

    pub fn stream_limits(&self) -> anyhow::Result<StreamLimits> {
        let streams = &self.streams;
        let mut limits = StreamLimits::default();
        if let Some(policy) = streams.slow_reader {
            limits.slow_reader = match policy {
                SlowReaderName::Wait => SlowReader::Wait,
                SlowReaderName::Drop => SlowReader::Drop,
            };
        }
        if let Some(bytes) = streams.stream_buffer_bytes {
            limits.stream_buffer_bytes = positive("streams.stream_buffer_bytes", bytes)?;
        }
        if let Some(bytes) = streams.sandbox_buffer_bytes {
            limits.sandbox_buffer_bytes = positive("streams.sandbox_buffer_bytes", bytes)?;
        }
        if let Some(bytes) = streams.input_budget_bytes {
            limits.input_budget_bytes = positive("streams.input_budget_bytes", bytes)?;
        }
        Ok(limits)
    }
}

impl ServeConfig {
    /// The runtime's checkpoint retention: `max_checkpoints_per_session`
    /// over the default; fewer than 2 is refused (a session keeps its latest
    /// and a run's start).
    pub fn storage_settings(&self) -> anyhow::Result<paddock_runtime::StorageSettings> {
        let mut settings = paddock_runtime::StorageSettings::default();
        if let Some(max) = self.max_checkpoints_per_session {
            if max < 2 {
                bail!("max_checkpoints_per_session must be at least 2, not {max}");
            }
            settings.max_checkpoints_per_session = max;
        }
        Ok(settings)
    }

    /// The runtime's snapshot settings: `[snapshot]` over the defaults.
    pub fn snapshot_settings(&self) -> anyhow::Result<paddock_runtime::SnapshotSettings> {
        let section = &self.snapshot;
        let mut settings = paddock_runtime::SnapshotSettings::default();
        let pick = |field: &str, value: Option<u64>, default: u64| match value {
            Some(0) => bail!("snapshot.{field} must be more than 0"),
            Some(n) => Ok(n),
            None => Ok(default),
        };
        settings.limits.max_files =
            pick("max_files", section.max_files, settings.limits.max_files)?;
        settings.limits.max_bytes =
            pick("max_bytes", section.max_bytes, settings.limits.max_bytes)?;
        settings.request_max.max_files = pick(
            "request_max_files",
            section.request_max_files,
            settings
                .request_max
                .max_files
                .max(settings.limits.max_files),
        )?;
        settings.request_max.max_bytes = pick(
            "request_max_bytes",
            section.request_max_bytes,
            settings
                .request_max
                .max_bytes
                .max(settings.limits.max_bytes),
        )?;
        if settings.request_max.max_files < settings.limits.max_files
            || settings.request_max.max_bytes < settings.limits.max_bytes
        {
            bail!(
                "snapshot.request_max_files and request_max_bytes must be at least max_files and max_bytes"
            );
        }
        Ok(settings)
    }
}

fn positive(field: &str, value: usize) -> anyhow::Result<usize> {
    if value == 0 {
        bail!("{field} must be more than 0");
    }
    Ok(value)
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
            tenant_disk_quota_bytes = 1073741824
            max_checkpoints_per_session = 7
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

            [http]
            max_connections = 100
            max_connections_per_peer = 10
            header_timeout_secs = 3
            reserved_connections = 20
            max_streams_per_tenant = 8

            [streams]
            slow_reader = "drop"
            sandbox_buffer_bytes = 1048576

            [quotas.tenant]
            sandboxes = 3
            pids = 1024

            [quotas.node]
            memory_bytes = 4294967296

            [id_pool]
            base = 200000
            blocks = 16
            "#,
        )
        .unwrap();
        let service = config.service_config("edge-1".into(), "/w".into()).unwrap();
        assert_eq!(service.idle_timeout, Duration::from_secs(60));
        assert_eq!(service.max_lifetime, Duration::from_secs(3600));
        assert_eq!(service.max_sandboxes, 5);
        assert_eq!(service.tenant_disk_quota, 1 << 30);
        assert_eq!(
            config
                .storage_settings()
                .unwrap()
                .max_checkpoints_per_session,
            7
        );
        let one: ServeConfig = toml::from_str("max_checkpoints_per_session = 1").unwrap();
        assert!(one.storage_settings().is_err());
        assert_eq!(
            ServeConfig::default()
                .storage_settings()
                .unwrap()
                .max_checkpoints_per_session,
            paddock_runtime::DEFAULT_MAX_CHECKPOINTS_PER_SESSION
        );
        assert_eq!(service.limits.default.memory_bytes, Some(268435456));
        assert_eq!(service.limits.default.pids, Some(128));
        // Fields left out keep the built-in default.
        assert_eq!(
            service.limits.default.tmp_bytes,
            SandboxLimits::default().tmp_bytes
        );
        assert!(service.allow_downgrade.contains(&DowngradeLayer::Cgroups));
        assert_eq!(service.quotas.tenant.sandboxes, Some(3));
        assert_eq!(service.quotas.tenant.pids, Some(1024));
        assert_eq!(service.quotas.tenant.memory_bytes, None);
        // A tenant's runs left out: the default cap.
        assert_eq!(
            service.quotas.tenant.runs,
            Some(paddock_api::service::DEFAULT_TENANT_RUNS)
        );
        assert_eq!(service.quotas.node.memory_bytes, Some(4 << 30));
        // Node fields left out come from the host.
        assert_eq!(service.quotas.node.pids, HostTotals::read().quota().pids);
        assert!(service.quotas.node.cpu_millis.is_some());
        assert_eq!(
            config.id_pool,
            Some(paddock_jail::IdPool {
                base: 200_000,
                blocks: 16
            })
        );
        let tokens = config.tokens(Some("globex:fedcba9876543210fedc")).unwrap();
        assert_eq!(
            tokens.tenants(),
            [
                TenantId::parse("acme").unwrap(),
                TenantId::parse("globex").unwrap()
            ]
        );
        assert!(!format!("{:?}", config.tokens).contains("0123456789"));
        let http = config.connection_limits().unwrap();
        assert_eq!(http.max_connections, 100);
        assert_eq!(http.max_connections_per_peer, 10);
        assert_eq!(http.header_read_timeout, Duration::from_secs(3));
        assert_eq!(http.reserved_connections, 20);
        assert_eq!(http.max_streams_per_tenant, 8);
        assert_eq!(http.max_connections_per_tenant, 6, "a sixteenth of 100");
        // The body share defaults to a quarter of the budget, at least one
        // body of max_body_bytes (1 MiB here).
        assert_eq!(http.max_body_memory_per_tenant_bytes, 64 << 20);
        assert_eq!(
            http.idle_timeout,
            ConnectionLimits::default().idle_timeout,
            "fields left out keep their default"
        );
        let streams = config.stream_limits().unwrap();
        assert_eq!(streams.slow_reader, SlowReader::Drop);
        assert_eq!(streams.sandbox_buffer_bytes, 1 << 20);
    }

    /// The sample's `[http]` shows the defaults, and they hold together.
    #[test]
    fn the_sample_http_section_is_the_defaults() {
        let sample = include_str!("../../../deploy/paddock.toml");
        let config: ServeConfig = toml::from_str(sample).unwrap();
        let http = config.connection_limits().unwrap();
        let built_in = ConnectionLimits::default();
        assert_eq!(format!("{http:?}"), format!("{built_in:?}"));
    }

    #[test]
    fn mistakes_are_refused() {
        assert!(toml::from_str::<ServeConfig>("idle_timeout = 5").is_err());
        assert!(toml::from_str::<ServeConfig>("[quotas.tenant]\nmemory = 5").is_err());
        assert!(
            toml::from_str::<ServeConfig>("[[tokens]]\ntoken = \"x\"\ntenant = \"Bad Name\"")
                .is_err()
        );
        let empty = ServeConfig::default();
        assert!(empty.tokens(None).is_err());
        assert!(empty.tokens(Some("acme")).is_err());
        assert!(empty.tokens(Some("acme:short")).is_err());
        assert!(toml::from_str::<ServeConfig>("[streams]\nslow_reader = \"later\"").is_err());
        let no_peers: ServeConfig = toml::from_str("[http]\nmax_connections_per_peer = 0").unwrap();
        assert!(no_peers.connection_limits().is_err());
        for bad in [
            "[http]\nmax_connections = 10\nreserved_connections = 10",
            "[http]\nbody_min_bytes_per_sec = 0",
            "[http]\nmax_streams_per_tenant = 0",
            "[http]\nmax_body_memory_per_tenant_bytes = 1048576",
            "[http]\nmax_body_memory_bytes = 1048576\nmax_body_memory_per_tenant_bytes = 2097152",
        ] {
            let config: ServeConfig = toml::from_str(bad).unwrap();
            assert!(config.connection_limits().is_err(), "{bad}");
        }
        let defaults = ServeConfig::default().connection_limits().unwrap();
        let built_in = ConnectionLimits::default();
        assert_eq!(
            (
                defaults.reserved_connections,
                defaults.max_connections_per_tenant,
                defaults.max_body_memory_per_tenant_bytes
            ),
            (
                built_in.reserved_connections,
                built_in.max_connections_per_tenant,
                built_in.max_body_memory_per_tenant_bytes
            ),
            "the derived defaults are the built-in ones"
        );
        let zero: ServeConfig = toml::from_str("idle_timeout_secs = 0").unwrap();
        assert!(zero.service_config("n".into(), "/w".into()).is_err());
        assert!(
            toml::from_str::<ServeConfig>(
                "[snapshot]
files = 5"
            )
            .is_err()
        );
        for bad in [
            "[snapshot]
max_files = 0",
            "[snapshot]
max_bytes = 10
request_max_bytes = 5",
        ] {
            let config: ServeConfig = toml::from_str(bad).unwrap();
            assert!(config.snapshot_settings().is_err(), "{bad}");
        }
    }

    #[test]
    fn network_bounds_default_and_are_settable() {
        let defaults = ServeConfig::default().network.bounds().unwrap();
        assert_eq!(defaults, NetworkBounds::default());
        let config: ServeConfig = toml::from_str(
            "[network]
default = \"allow:pypi.org\"
max = \"allow:pypi.org,*.example.com\"",
        )
        .unwrap();
        let bounds = config.network.bounds().unwrap();
        assert_eq!(bounds.default.label(), "allow:pypi.org");
        assert_eq!(bounds.max.label(), "allow:pypi.org,*.example.com");
        for bad in [
            "[network]\nmax = \"none\"\ndefault = \"full\"",
            "[network]\nmax = \"allow:\"",
            "[network]\ndefault = \"host\"",
        ] {
            let config: ServeConfig = toml::from_str(bad).unwrap();
            assert!(config.network.bounds().is_err(), "{bad}");
        }
    }

    #[test]
    fn snapshot_limits_default_and_are_settable() {
        let defaults = ServeConfig::default().snapshot_settings().unwrap();
        assert_eq!(defaults, paddock_runtime::SnapshotSettings::default());
        let config: ServeConfig = toml::from_str(
            "[snapshot]
max_files = 50000
request_max_bytes = 1073741824",
        )
        .unwrap();
        let settings = config.snapshot_settings().unwrap();
        assert_eq!(settings.limits.max_files, 50_000);
        assert_eq!(
            settings.limits.max_bytes,
            paddock_snapshot::DEFAULT_MAX_BYTES
        );
        assert_eq!(
            settings.request_max.max_files,
            paddock_snapshot::MAX_REQUEST_FILES
        );
        assert_eq!(settings.request_max.max_bytes, 1 << 30);
    }

    #[test]
    fn backends_are_enabled_from_the_file_or_the_flags() {
        let config: ServeConfig = toml::from_str(
            r#"
            backend = "docker"
            [[backends]]
            kind = "native"
            [[backends]]
            kind = "docker"
            warm_pool = 2
            [[backends]]
            kind = "docker"
            image = "other:1"
            "#,
        )
        .unwrap();
        let warm: WarmPoolArg = "docker:other:1=3".parse().unwrap();
        let sections = config
            .backend_sections(BackendKind::Native, None, &[warm])
            .unwrap();
        let got: Vec<(BackendKind, Option<&str>, usize)> = sections
            .iter()
            .map(|s| (s.kind, s.image.as_deref(), s.warm_pool))
            .collect();
        assert_eq!(
            got,
            [
                (BackendKind::Native, None, 0),
                (BackendKind::Docker, Some(DEFAULT_IMAGE), 2),
                (BackendKind::Docker, Some("other:1"), 3),
            ]
        );
        // No [[backends]]: the one the flags (or `backend`/`image`) name.
        let flags = ServeConfig::default()
            .backend_sections(
                BackendKind::Gvisor,
                Some("img:2"),
                &["gvisor=1".parse().unwrap()],
            )
            .unwrap();
        assert_eq!(
            flags,
            [BackendSection {
                kind: BackendKind::Gvisor,
                image: Some("img:2".to_owned()),
                warm_pool: 1
            }]
        );
    }

    #[test]
    fn bad_backend_settings_are_refused() {
        let refused = |toml_text: &str, warm: &[&str]| {
            let config: ServeConfig = toml::from_str(toml_text).unwrap();
            let warm: Vec<WarmPoolArg> = warm.iter().map(|w| w.parse().unwrap()).collect();
            config
                .backend_sections(BackendKind::Native, None, &warm)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused("[[backends]]\nkind = \"native\"\nimage = \"x\"", &[]),
            "backends: the native backend takes no image"
        );
        assert_eq!(
            refused("backend = \"gvisor\"\n[[backends]]\nkind = \"native\"", &[]),
            "backend gvisor: not among [[backends]]"
        );
        assert_eq!(
            refused("", &["docker=2"]),
            "--warm-pool docker: that backend is not enabled"
        );
        assert!(
            refused("[[backends]]\nkind = \"docker\"\nwarm_pool = 65", &[]).contains("at most 64")
        );
        assert!(
            refused("image = \"a\"\n[[backends]]\nkind = \"docker\"", &[]).contains("each entry")
        );
        assert!("docker".parse::<WarmPoolArg>().is_err());
        assert!("kvm=1".parse::<WarmPoolArg>().is_err());
        assert!("docker:=1".parse::<WarmPoolArg>().is_err());
        assert!("docker=-1".parse::<WarmPoolArg>().is_err());
    }

    #[test]
    fn secrets_take_their_value_from_the_servers_environment() {
        let config: ServeConfig = toml::from_str(
            r#"
            [secrets.GITHUB_TOKEN]
            hosts = ["api.github.com"]
            header = "Authorization: Bearer {{secret}}"
            env = "PADDOCK_TEST_GH"
            tenants = ["*"]

            [secrets.PYPI]
            hosts = ["upload.pypi.org", "*.pypi.org:8443"]
            value = "pypi-in-the-file"
            tenants = ["acme", "globex"]
            "#,
        )
        .unwrap();
        let env = |var: &str| (var == "PADDOCK_TEST_GH").then(|| "gh-value-1".to_owned());
        let catalog = config.secret_catalog(&env).unwrap();
        assert_eq!(
            catalog.names().collect::<Vec<_>>(),
            ["GITHUB_TOKEN", "PYPI"]
        );
        let acme = TenantId::parse("acme").unwrap();
        let other = TenantId::parse("other").unwrap();
        let network: NetworkPolicy = "full".parse().unwrap();
        let named = |n: &str| paddock_api::service::SecretRef::Named(n.to_owned());
        let got = catalog
            .resolve(&acme, &[named("GITHUB_TOKEN"), named("PYPI")], &network)
            .unwrap();
        assert_eq!(got[0].value.expose(), "gh-value-1");
        assert_eq!(
            got[0].header.to_string(),
            "Authorization: Bearer {{secret}}"
        );
        assert_eq!(got[1].value.expose(), "pypi-in-the-file");
        assert_eq!(got[1].hosts.len(), 2);
        assert!(
            catalog
                .resolve(&other, &[named("GITHUB_TOKEN")], &network)
                .is_ok()
        );
        assert!(catalog.resolve(&other, &[named("PYPI")], &network).is_err());
        assert!(!format!("{config:?}").contains("pypi-in-the-file"));
    }

    #[test]
    fn a_bad_secret_stops_the_start_naming_it_never_its_value() {
        let none = |_: &str| -> Option<String> { None };
        let refused = |text: &str| {
            let config: ServeConfig = toml::from_str(text).unwrap();
            format!("{:#}", config.secret_catalog(&none).unwrap_err())
        };
        let missing = refused(
            "[secrets.API_KEY]\nhosts = [\"a.test\"]\nenv = \"NOT_SET_HERE\"\ntenants = [\"*\"]",
        );
        assert_eq!(
            missing,
            "secrets.API_KEY: $NOT_SET_HERE is not set in the server's environment"
        );
        let both = refused(
            "[secrets.K]\nhosts = [\"a.test\"]\nenv = \"V\"\nvalue = \"v-secret\"\ntenants = [\"*\"]",
        );
        assert!(both.contains("secrets.K: give env"), "{both}");
        assert!(!both.contains("v-secret"), "{both}");
        let no_tenants =
            refused("[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v-secret\"\ntenants = []");
        assert!(no_tenants.contains("tenants is empty"), "{no_tenants}");
        let bad_header = refused(
            "[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v-secret\"\nheader = \"X: no slot\"\ntenants = [\"*\"]",
        );
        assert!(bad_header.starts_with("secrets.K: "), "{bad_header}");
        assert!(!bad_header.contains("v-secret"), "{bad_header}");
        let bad_name =
            refused("[secrets.api-key]\nhosts = [\"a.test\"]\nvalue = \"v\"\ntenants = [\"*\"]");
        assert!(bad_name.contains("api-key"), "{bad_name}");
        assert!(
            toml::from_str::<ServeConfig>(
                "[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v\"\ntenants = [\"*\"]\nport = 1"
            )
            .is_err()
        );
        assert!(
            toml::from_str::<ServeConfig>("[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v\"")
                .is_err(),
            "tenants is required"
        );
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

    /// `[runs]`: the budget bound and the steering caps, each checked.
    #[test]
    fn runs_bounds_and_steering_caps_are_read_and_checked() {
        let config: ServeConfig = toml::from_str(
            "[runs]\nmax_turns = 20\nmax_steering_messages = 5\nmax_steering_total_chars = 900\n",
        )
        .unwrap();
        let max = config.runs.budget_max().unwrap();
        assert_eq!(max.max_turns, 20);
        assert_eq!(
            max.max_tokens,
            paddock_runtime::DEFAULT_BUDGET_MAX.max_tokens
        );
        let steering = config.runs.steering().unwrap();
        assert_eq!((steering.max_messages, steering.max_total_chars), (5, 900));
        for bad in [
            "[runs]\nmax_turns = 0\n",
            "[runs]\nmax_steering_messages = 0\n",
            "[runs]\nmax_steering_message_chars = 32001\n",
        ] {
            let config: ServeConfig = toml::from_str(bad).unwrap();
            assert!(
                config.runs.budget_max().is_err() || config.runs.steering().is_err(),
                "{bad}"
            );
        }
        assert!(toml::from_str::<ServeConfig>("[runs]\nmax_turnz = 3\n").is_err());
    }

    /// `[runs]`: queueing is off unless asked for; its bounds are checked.
    #[test]
    fn runs_queue_when_asked_within_bounds() {
        let config: ServeConfig = toml::from_str("").unwrap();
        assert_eq!(
            config.runs.queue().unwrap(),
            paddock_runtime::QueueSettings::default()
        );
        assert_eq!(
            config.runs.queue().unwrap().when_full,
            paddock_runtime::WhenFull::Refuse
        );
        let config: ServeConfig = toml::from_str(
            "[runs]\nwhen_full = \"queue\"\nmax_queued_per_tenant = 3\nmax_queue_wait_secs = 60\n",
        )
        .unwrap();
        let queue = config.runs.queue().unwrap();
        assert_eq!(queue.when_full, paddock_runtime::WhenFull::Queue);
        assert_eq!(queue.max_queued_per_tenant, 3);
        assert_eq!(queue.max_wait, std::time::Duration::from_secs(60));
        for bad in [
            "[runs]\nmax_queued_per_tenant = 0\n",
            "[runs]\nmax_queued_per_tenant = 10001\n",
            "[runs]\nmax_queue_wait_secs = 0\n",
            "[runs]\nmax_queue_wait_secs = 86401\n",
        ] {
            let config: ServeConfig = toml::from_str(bad).unwrap();
            assert!(config.runs.queue().is_err(), "{bad}");
        }
        assert!(toml::from_str::<ServeConfig>("[runs]\nwhen_full = \"wait\"\n").is_err());
    }
}
