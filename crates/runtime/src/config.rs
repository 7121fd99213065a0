//! What a [`crate::Runtime`] is built from.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::blob::BlobStore;
use paddock_core::model::Prices;
use paddock_core::sandbox::{SandboxBackend, SandboxSpec};
use paddock_core::store::{Budgets, Store};
use paddock_snapshot::{DEFAULT_EXCLUDES, Limits};
use serde::Deserialize;

use crate::SettingsError;

/// The runtime's settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// This orchestrator node's name: lease owners and sandbox rows carry it.
    pub node: String,
    /// Where workspaces without their own root live (`<root>/<workspace id>`),
    /// forks included.
    pub workspaces_root: PathBuf,
    /// Template of every run's sandbox (limits, allowed downgrades);
    /// `workspace`, `read_only` and `network` are set per run.
    pub sandbox: SandboxSpec,
    /// The network of a run that asks none, and the most a run request
    /// over the API may ask ([`crate::StartRun::network`] is not bounded by
    /// it: a local `paddock run` asks what it wants).
    pub network: paddock_proto::NetworkBounds,
    /// The volume pool, where a workspace made with a quota keeps its
    /// files (a server's); None: every workspace is a directory under
    /// `workspaces_root` or its own root.
    pub volumes: Option<Arc<dyn paddock_core::volume::VolumeHost>>,
    /// How long a session lease lasts without renewal; a run renews it every third of this.
    pub lease_ttl: Duration,
    /// How long a run waits for space when a write finds the store's disk
    /// full (`StoreError::Full`) before it fails; cancelling ends the wait
    /// at once. See `events/store_wait.rs`.
    pub store_full_wait: Duration,
    /// How end-of-run and fork snapshots are packed.
    pub snapshot: SnapshotSettings,
    pub subagents: SubagentSettings,
    /// What each model costs: usage and `run.finished` carry the cost, and
    /// a run with a cost limit needs its model's price.
    pub prices: Prices,
    /// What the end of a run does with the memory candidates it finds.
    pub memory_review: MemoryReview,
    /// How much steering one run takes ([`crate::Runtime::steer`]).
    pub steering: SteeringSettings,
    /// The most budgets a run request over the API may ask (a local
    /// `paddock run` is not bounded by it); see `Budgets::bounded_by`.
    pub budget_max: Budgets,
    /// How many checkpoints a session keeps (docs/architecture.md, "Storage").
    pub storage: StorageSettings,
    /// Tells when the process behind a session lease's owner is gone before
    /// the lease expires (a local `paddock run` killed with SIGKILL): recovery
    /// then takes the session over at once. None: only expiry counts.
    pub owner_probe: Option<Arc<dyn OwnerProbe>>,
    /// What a root run that finds no sandbox slot does: refused (the
    /// default) or queued, and the queue's bounds (`[runs] when_full`).
    pub queue: crate::run::QueueSettings,
}

/// Knows whether the process of a lease owner still runs.
pub trait OwnerProbe: Send + Sync + std::fmt::Debug {
    /// True only when `owner` (a lease owner, `NODE/RUN`) is certainly gone.
    fn is_gone(&self, owner: &str) -> bool;
}

impl RuntimeConfig {
    pub fn new(node: impl Into<String>, workspaces_root: impl Into<PathBuf>) -> Self {
        Self {
            node: node.into(),
            workspaces_root: workspaces_root.into(),
            sandbox: SandboxSpec::default(),
            network: paddock_proto::NetworkBounds::default(),
            volumes: None,
            lease_ttl: Duration::from_secs(30),
            store_full_wait: Duration::from_secs(60),
            snapshot: SnapshotSettings::default(),
            subagents: SubagentSettings::default(),
            prices: Prices::default(),
            memory_review: MemoryReview::default(),
            steering: SteeringSettings::default(),
            budget_max: DEFAULT_BUDGET_MAX,
            storage: StorageSettings::default(),
            owner_probe: None,
            queue: crate::run::QueueSettings::default(),
        }
    }
}

/// Default of [`RuntimeConfig::budget_max`]: ten times the default
/// budgets' turns, tokens and tool calls, six hours, no cost bound.
pub const DEFAULT_BUDGET_MAX: Budgets = Budgets {
    max_turns: 500,
    max_tokens: 20_000_000,
    max_tool_calls: 2_000,
    max_wall_clock_ms: 6 * 60 * 60 * 1000,
    max_cost_micro_usd: None,
};

/// Caps on the steering messages of one run; `[runs]`'s
/// `max_steering_*` keys of the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SteeringSettings {
    /// Messages one run takes in all (delivered or not).
    #[serde(rename = "max_steering_messages")]
    pub max_messages: u32,
    /// Characters of one message (at most `STEERING_TEXT_MAX`).
    #[serde(rename = "max_steering_message_chars")]
    pub max_message_chars: usize,
    /// Characters of all of one run's messages together.
    #[serde(rename = "max_steering_total_chars")]
    pub max_total_chars: u64,
}

impl Default for SteeringSettings {
    /// 50 messages, each up to 32,000 characters, 100,000 in all (about
    /// 25,000 tokens in every later model request).
    fn default() -> Self {
        Self {
            max_messages: 50,
            max_message_chars: paddock_core::store::STEERING_TEXT_MAX,
            max_total_chars: 100_000,
        }
    }
}

/// Retention of checkpoints; the config's top-level
/// `max_checkpoints_per_session`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// Checkpoints one session keeps: past it, after each new checkpoint,
    /// the oldest tool-batch checkpoints are pruned (a run's start, a
    /// rewind's and the latest are kept), with a `checkpoints.pruned`
    /// event, and blobs no checkpoint of the tenant names are removed.
    pub max_checkpoints_per_session: u32,
}

/// Default of [`StorageSettings::max_checkpoints_per_session`].
pub const DEFAULT_MAX_CHECKPOINTS_PER_SESSION: u32 = 50;

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            max_checkpoints_per_session: DEFAULT_MAX_CHECKPOINTS_PER_SESSION,
        }
    }
}

impl StorageSettings {
    /// At least 2 checkpoints: a session keeps its latest and a run's start.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let value = self.max_checkpoints_per_session;
        if value < 2 {
            return Err(SettingsError::BelowLeast {
                setting: "max_checkpoints_per_session",
                least: 2,
                value: value.into(),
            });
        }
        Ok(())
    }
}

impl SteeringSettings {
    /// Every cap above 0, the message size within `STEERING_TEXT_MAX`.
    pub fn validate(&self) -> Result<(), SettingsError> {
        for (setting, value) in [
            ("max_steering_messages", u64::from(self.max_messages)),
            ("max_steering_message_chars", self.max_message_chars as u64),
            ("max_steering_total_chars", self.max_total_chars),
        ] {
            if value == 0 {
                return Err(SettingsError::Zero { setting });
            }
        }
        let most = paddock_core::store::STEERING_TEXT_MAX;
        SettingsError::check_range(
            "max_steering_message_chars",
            self.max_message_chars as u64,
            1,
            most as u64,
        )
    }

    pub fn store_caps(&self) -> paddock_core::store::SteeringCaps {
        paddock_core::store::SteeringCaps {
            max_messages: self.max_messages,
            max_total_chars: self.max_total_chars,
        }
    }
}

/// The tenant disk quota as the runtime sees it: what is left before a
/// checkpoint stores its blobs. The API's storage accounting implements it
/// (one measure of everything the tenant holds); without one, checkpoints
/// are bounded by retention only.
#[async_trait::async_trait]
pub trait DiskGuard: Send + Sync + std::fmt::Debug {
    /// The tenant's quota and what it uses now (measured, not cached).
    async fn disk_use(&self, tenant: &paddock_core::ids::TenantId) -> Result<DiskUse, String>;
    /// The tenant's files changed outside the API's own writes (blobs
    /// stored or removed): a cached figure is stale.
    fn changed(&self, tenant: &paddock_core::ids::TenantId);
}

/// A tenant's quota and use, in bytes of disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUse {
    pub quota: u64,
    pub usage: u64,
}

impl DiskUse {
    pub fn left(&self) -> u64 {
        self.quota.saturating_sub(self.usage)
    }
}

/// Snapshot packing options of the runtime; `[snapshot]` of the config
/// (`max_files`, `max_bytes`, `request_max_files`, `request_max_bytes`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SnapshotSettings {
    /// Exclude patterns (they replace the packer's defaults).
    #[serde(skip)]
    pub excludes: Vec<String>,
    /// The limits of a run that asks none of its own.
    #[serde(flatten)]
    pub limits: Limits,
    /// The most entries a run request over the API may ask; None: the
    /// sandbox snapshot routes' bound, or `limits` where that is higher.
    pub request_max_files: Option<u64>,
    /// The same for bytes.
    pub request_max_bytes: Option<u64>,
}

/// What the sandbox API's snapshot routes allow (a million entries, 8 GiB):
/// the least default of [`SnapshotSettings::request_max`].
const REQUEST_MAX_SNAPSHOT_LIMITS: Limits = Limits {
    max_files: paddock_snapshot::MAX_REQUEST_FILES,
    max_bytes: paddock_snapshot::MAX_REQUEST_BYTES,
};

impl Default for SnapshotSettings {
    fn default() -> Self {
        Self {
            excludes: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect(),
            limits: Limits::default(),
            request_max_files: None,
            request_max_bytes: None,
        }
    }
}

impl SnapshotSettings {
    /// The most a run request over the API may ask
    /// ([`crate::StartRun::snapshot_limits`] is not bounded by it: a local
    /// `paddock run` asks what it wants).
    pub fn request_max(&self) -> Limits {
        let least = REQUEST_MAX_SNAPSHOT_LIMITS;
        Limits {
            max_files: self
                .request_max_files
                .unwrap_or(least.max_files.max(self.limits.max_files)),
            max_bytes: self
                .request_max_bytes
                .unwrap_or(least.max_bytes.max(self.limits.max_bytes)),
        }
    }

    /// Every limit above 0; the request bounds at least the limits.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let request_max = self.request_max();
        for (setting, value) in [
            ("max_files", self.limits.max_files),
            ("max_bytes", self.limits.max_bytes),
            ("request_max_files", request_max.max_files),
            ("request_max_bytes", request_max.max_bytes),
        ] {
            if value == 0 {
                return Err(SettingsError::Zero { setting });
            }
        }
        for (setting, value, least) in [
            (
                "request_max_files",
                request_max.max_files,
                self.limits.max_files,
            ),
            (
                "request_max_bytes",
                request_max.max_bytes,
                self.limits.max_bytes,
            ),
        ] {
            if value < least {
                return Err(SettingsError::BelowLeast {
                    setting,
                    least,
                    value,
                });
            }
        }
        Ok(())
    }
}

/// What the end of a root run does with the project memory it proposes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemoryReview {
    /// Stored as active records at once.
    Auto,
    /// Stored as proposed records, for a person to approve
    /// (`paddock memory approve`); not recalled before.
    #[default]
    Proposed,
    /// Not stored.
    Off,
}

/// Limits of the subagents a root run may spawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentSettings {
    /// Subagents one root run may spawn in all; 0 offers no subagent tools.
    pub max_per_run: u32,
    /// Subagents of one root run running at once; the others wait their turn.
    pub max_running: u32,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        Self {
            max_per_run: 6,
            max_running: 3,
        }
    }
}

/// The ports a runtime works through; only the composition root names the
/// concrete adapters.
#[derive(Debug, Clone)]
pub struct RuntimeDeps {
    pub store: Arc<dyn Store>,
    pub backend: Arc<dyn SandboxBackend>,
    pub blobs: Arc<dyn BlobStore>,
    pub config: RuntimeConfig,
}
