//! What the operator decides for every sandbox the service makes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use paddock_core::blob::BlobStore;
use paddock_core::sandbox::{DowngradeLayer, SandboxLimits, SandboxPolicy, SandboxSpec};
pub use paddock_core::store::OnIdle;
use paddock_core::volume::VolumeHost;
use paddock_proto::NetworkPolicy;
use serde::Deserialize;

use super::quota::Quotas;

/// Most bytes of output a non-streamed exec returns by default.
pub const DEFAULT_EXEC_OUTPUT_CAP: u64 = 1 << 20;
/// Most bytes of output a non-streamed exec may ask for.
pub const MAX_EXEC_OUTPUT_CAP: u64 = 16 << 20;
/// Bytes a tenant's workspaces may hold on disk unless the operator says otherwise.
pub const DEFAULT_TENANT_DISK_QUOTA: u64 = 32 << 30;

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This orchestrator node: recorded on its sandboxes; reconciliation only
    /// touches the rows of its own node.
    pub node: String,
    /// Where workspaces live: `<root>/<workspace id>` is mounted at /workspace.
    pub workspaces_root: PathBuf,
    /// Where `full` pauses keep the saved sandboxes (one file each, named
    /// in its record); by default `paused` beside the workspaces.
    pub saved_states_root: PathBuf,
    /// A sandbox with no API activity for this long is destroyed (or
    /// paused: `on_idle`).
    pub idle_timeout: Duration,
    /// What becomes of an idle sandbox that did not choose (its own
    /// `on_idle` at create).
    pub on_idle: OnIdle,
    /// Every sandbox is destroyed this long after it was created.
    pub max_lifetime: Duration,
    /// How often the expiry task looks; None: derived from the two timeouts.
    pub expiry_interval: Option<Duration>,
    pub limits: LimitsPolicy,
    /// Hardening layers the operator allows to be missing (never a tenant's choice).
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Most sandboxes running at once on this node.
    pub max_sandboxes: usize,
    /// Ceilings on the sum of granted limits, per tenant and node-wide.
    pub quotas: Quotas,
    /// Where snapshot archives are kept; None: snapshots are unavailable.
    pub blobs: Option<Arc<dyn BlobStore>>,
    /// Where named volumes keep their bytes; None: volumes are unavailable.
    pub volumes: Option<Arc<dyn VolumeHost>>,
    /// A blob no snapshot row names is removed once it was last written this
    /// long ago (a snapshot of the same content being recorded refreshes
    /// it); the sweep runs this often too. See docs/architecture.md.
    pub blob_grace: Duration,
    /// Bytes the server-managed workspaces of one tenant may hold on disk:
    /// a snapshot import or restore that would go over is refused before it
    /// writes (see `service::quota`).
    pub tenant_disk_quota: u64,
    /// The most network a sandbox request may ask for (its `default` is
    /// what agent runs get; a sandbox request names its own, none by
    /// default).
    pub network: paddock_proto::NetworkBounds,
    /// The operator's secrets a sandbox or run request may name (each
    /// granted to some tenants).
    pub secrets: super::secrets::SecretCatalog,
}

impl ServiceConfig {
    pub fn new(node: impl Into<String>, workspaces_root: PathBuf) -> Self {
        Self {
            node: node.into(),
            saved_states_root: workspaces_root.with_file_name("paused"),
            workspaces_root,
            idle_timeout: Duration::from_secs(30 * 60),
            on_idle: OnIdle::Stop,
            max_lifetime: Duration::from_secs(24 * 60 * 60),
            expiry_interval: None,
            limits: LimitsPolicy::default(),
            allow_downgrade: BTreeSet::new(),
            max_sandboxes: 100,
            quotas: Quotas::default(),
            blobs: None,
            volumes: None,
            blob_grace: Duration::from_secs(10 * 60),
            tenant_disk_quota: DEFAULT_TENANT_DISK_QUOTA,
            network: paddock_proto::NetworkBounds::default(),
            secrets: super::secrets::SecretCatalog::default(),
        }
    }

    /// The spec of a sandbox the service starts: no write scope, the
    /// operator's downgrades.
    pub fn sandbox_spec(
        &self,
        workspace: Option<PathBuf>,
        read_only: bool,
        network: NetworkPolicy,
        limits: SandboxLimits,
    ) -> SandboxSpec {
        SandboxSpec {
            workspace,
            policy: SandboxPolicy {
                read_only,
                writable_paths: Vec::new(),
                network,
                limits,
                allow_downgrade: self.allow_downgrade.clone(),
                volumes: Vec::new(),
            },
            secrets: Vec::new(),
            volume_dirs: Vec::new(),
            workspace_quota: None,
        }
    }

    /// What a request naming nothing gets (a temporary workspace, the
    /// default limits): the profile a warm pool keeps started, since only
    /// that request is served from a pool.
    pub fn default_sandbox_spec(&self) -> SandboxSpec {
        self.default_sandbox_spec_on(NetworkPolicy::None)
    }

    /// [`Self::default_sandbox_spec`] with `network`: the profile of a pool
    /// that serves requests naming only a network (E2B's creates ask for
    /// internet access, `full`).
    pub fn default_sandbox_spec_on(&self, network: NetworkPolicy) -> SandboxSpec {
        self.sandbox_spec(
            None,
            false,
            network,
            self.limits.for_workspace(self.limits.default.clone(), true),
        )
    }

    /// A quarter of the shorter timeout, between 50 ms and 10 s.
    pub fn effective_expiry_interval(&self) -> Duration {
        self.expiry_interval.unwrap_or_else(|| {
            (self.idle_timeout.min(self.max_lifetime) / 4)
                .clamp(Duration::from_millis(50), Duration::from_secs(10))
        })
    }
}

/// Limits a sandbox gets when its request names none, and the most it may
/// ask for: the config's top-level `[default_limits]`, `[max_limits]` and
/// `temporary_workspace_bytes` (0: none), each left out keeping its default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct LimitsPolicy {
    #[serde(rename = "default_limits")]
    pub default: SandboxLimits,
    /// Ceilings; `None` in an optional field means no ceiling of that kind.
    #[serde(rename = "max_limits")]
    pub max: SandboxLimits,
    /// The size cap a writable temporary workspace gets when its request
    /// asks no workspace quota (None: none, the host's disk is the limit).
    /// It makes the workspace a tmpfs charged to the sandbox's memory on
    /// every tier, so no tenant fills the host's disk through a sandbox.
    #[serde(deserialize_with = "paddock_core::settings::zero_is_none")]
    pub temporary_workspace_bytes: Option<u64>,
}

/// The default [`LimitsPolicy::temporary_workspace_bytes`]: 1 GiB.
pub const DEFAULT_TEMPORARY_WORKSPACE_BYTES: u64 = 1 << 30;

impl LimitsPolicy {
    /// `limits` with the temporary-workspace cap when the workspace is a
    /// writable temporary one whose request asked no quota, within the
    /// `workspace_bytes` ceiling.
    pub fn for_workspace(
        &self,
        mut limits: SandboxLimits,
        temporary_writable: bool,
    ) -> SandboxLimits {
        if temporary_writable
            && limits.workspace_bytes.is_none()
            && limits.workspace_inodes.is_none()
        {
            limits.workspace_bytes = self
                .temporary_workspace_bytes
                .map(|cap| self.max.workspace_bytes.map_or(cap, |max| cap.min(max)));
        }
        limits
    }
}

/// CPU a sandbox gets when neither the request nor the operator names any:
/// one core.
pub const DEFAULT_CPU_MILLIS: u64 = 1000;

impl Default for LimitsPolicy {
    fn default() -> Self {
        Self {
            default: SandboxLimits {
                cpu_millis: Some(DEFAULT_CPU_MILLIS),
                ..SandboxLimits::default()
            },
            max: SandboxLimits {
                memory_bytes: Some(8 << 30),
                pids: Some(4096),
                cpu_millis: None,
                tmp_bytes: 4 << 30,
                open_files: 65_536,
                workspace_bytes: None,
                workspace_inodes: None,
            },
            temporary_workspace_bytes: Some(DEFAULT_TEMPORARY_WORKSPACE_BYTES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_temporary_workspace_gets_the_cap_within_the_ceiling() {
        let mut policy = LimitsPolicy::default();
        let none = SandboxLimits::default();
        let capped = policy.for_workspace(none.clone(), true);
        assert_eq!(
            capped.workspace_bytes,
            Some(DEFAULT_TEMPORARY_WORKSPACE_BYTES)
        );
        // a named, read-only or write-scoped workspace keeps what it asked
        assert_eq!(policy.for_workspace(none.clone(), false), none);
        // a request's own quota wins
        let own = SandboxLimits {
            workspace_inodes: Some(100),
            ..none.clone()
        };
        assert_eq!(policy.for_workspace(own.clone(), true), own);
        // within the ceiling
        policy.max.workspace_bytes = Some(1 << 20);
        assert_eq!(
            policy.for_workspace(none.clone(), true).workspace_bytes,
            Some(1 << 20)
        );
        // off
        policy.temporary_workspace_bytes = None;
        assert_eq!(policy.for_workspace(none.clone(), true), none);
    }

    #[test]
    fn the_policy_reads_the_config_keys_and_zero_turns_the_temporary_cap_off() {
        let parse = |text: &str| serde_json::from_str::<LimitsPolicy>(text).unwrap();
        let defaults = LimitsPolicy::default();
        assert_eq!(parse("{}"), defaults);
        let off = parse(r#"{"temporary_workspace_bytes": 0}"#);
        assert_eq!(off.temporary_workspace_bytes, None);
        assert_eq!(
            parse(r#"{"temporary_workspace_bytes": 4096}"#).temporary_workspace_bytes,
            Some(4096)
        );
        let max = parse(r#"{"max_limits": {"memory_bytes": 5}}"#);
        assert_eq!(max.max.memory_bytes, Some(5));
        assert_eq!(max.default, defaults.default);
        assert_eq!(
            max.temporary_workspace_bytes,
            defaults.temporary_workspace_bytes
        );
    }
}
