//! What the service answers: plain data every front end can print or send as JSON.

use paddock_core::ids::{RunId, SnapshotId, WorkspaceId};
use paddock_core::sandbox::{SandboxId, SandboxLimits};
use paddock_core::store::{
    OnIdle, PauseMode, SandboxPause, SandboxRecord, SandboxState, Timestamp, Workspace,
};
use paddock_proto::{
    DirEntry, ExitInfo, FileKind, FsPath, NetworkPolicy, ProcessInfo, SearchMatch,
};
use serde::{Deserialize, Serialize};

use crate::text::Encoding;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceView {
    pub id: WorkspaceId,
    pub name: String,
    /// The quota the kernel holds the workspace to (a btrfs qgroup of the
    /// volume pool); only creating and `GET /v1/workspaces/{id}` read it,
    /// and it is left out for a workspace without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_bytes: Option<u64>,
    pub created_at: String,
}

impl From<&Workspace> for WorkspaceView {
    fn from(w: &Workspace) -> Self {
        Self {
            id: w.id.clone(),
            name: w.name.clone(),
            quota_bytes: None,
            created_at: w.created_at.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SandboxView {
    pub id: SandboxId,
    pub workspace: Option<WorkspaceId>,
    pub state: SandboxState,
    pub backend: String,
    /// The container image of a docker or gvisor sandbox.
    pub image: Option<String>,
    pub node: String,
    pub read_only: bool,
    pub network: NetworkPolicy,
    pub limits: SandboxLimits,
    /// The snapshot its workspace was restored from, if any.
    pub restored_from: Option<SnapshotId>,
    /// RFC 3339 times (UTC).
    pub created_at: String,
    pub last_active_at: String,
    /// The end of the sandbox's maximum lifetime.
    pub expires_at: Option<String>,
    /// When it will be destroyed if nothing uses it before (running sandboxes
    /// of the sandbox API only: a run's sandbox lives as long as its run).
    pub idle_expires_at: Option<String>,
    /// What happens to it at `idle_expires_at`: `stop` or `pause`, its
    /// own choice at create or else the server's `on_idle`.
    pub on_idle: OnIdle,
    /// The agent run that owns it; null for a sandbox started through this
    /// API. Such a sandbox ends with its run: it cannot be deleted, nor
    /// driven through the sandbox routes, while the run goes on (409
    /// `sandbox_owned_by_run`); cancel the run instead.
    pub run: Option<RunId>,
    /// A console sandbox: it ends once `keepalive_until` passes while
    /// nothing uses it, and a run may take its workspace over while idle.
    #[serde(default)]
    pub console: bool,
    /// A running console sandbox's keep-alive deadline (RFC 3339, UTC).
    #[serde(default)]
    pub keepalive_until: Option<String>,
    /// Set while it is paused (state `paused`): what the pause kept.
    #[serde(default)]
    pub pause: Option<PauseView>,
    /// The named volumes it mounts (a paused one mounts them again when
    /// resumed).
    #[serde(default)]
    pub volumes: Vec<paddock_proto::VolumeMount>,
    /// The labels it was created with.
    #[serde(default)]
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// What a paused sandbox kept, and why it was paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PauseView {
    pub mode: PauseMode,
    /// Whether its processes (and memory) were kept: false in `filesystem`
    /// mode, where a resume starts a fresh sandbox on the same files.
    pub processes_kept: bool,
    /// `requested` (the pause route) or `idle` (`on_idle: pause`).
    pub reason: String,
    /// RFC 3339 (UTC).
    pub paused_at: String,
}

impl From<&SandboxPause> for PauseView {
    fn from(p: &SandboxPause) -> Self {
        Self {
            mode: p.mode,
            processes_kept: p.mode == PauseMode::Full,
            reason: p.reason.clone(),
            paused_at: p.paused_at.to_string(),
        }
    }
}

impl SandboxView {
    /// `last_active` overrides the record's (live sandboxes keep it in
    /// memory), as `keepalive_until` does for a live console sandbox.
    pub(crate) fn new(
        record: &SandboxRecord,
        last_active: Option<Timestamp>,
        keepalive_until: Option<Timestamp>,
        idle_timeout: std::time::Duration,
        server_on_idle: OnIdle,
    ) -> Self {
        let spec = &record.spec;
        let last_active = last_active.unwrap_or(record.last_active_at);
        Self {
            id: record.id.clone(),
            workspace: record.workspace.clone(),
            state: record.state,
            backend: record.backend.clone(),
            image: spec.image.clone(),
            node: record.node.clone(),
            read_only: spec.policy.read_only,
            network: spec.policy.network.clone(),
            restored_from: spec.restored_from.clone(),
            limits: spec.policy.limits.clone(),
            volumes: spec.policy.volumes.clone(),
            metadata: spec.metadata.clone(),
            created_at: record.created_at.to_string(),
            last_active_at: last_active.to_string(),
            expires_at: record.expires_at.map(|t| t.to_string()),
            idle_expires_at: (record.state == SandboxState::Running && record.run.is_none())
                .then(|| last_active.saturating_add(idle_timeout).to_string()),
            on_idle: spec.on_idle.unwrap_or(server_on_idle),
            run: record.run.clone(),
            console: spec.console,
            keepalive_until: keepalive_until
                .filter(|_| record.state == SandboxState::Running)
                .map(|t| t.to_string()),
            pause: record
                .pause
                .as_ref()
                .filter(|_| record.state == SandboxState::Paused)
                .map(PauseView::from),
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExitView {
    /// The exit code; None when a signal ended it.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Output went past the cap and was dropped from there on.
    pub truncated: bool,
    pub duration_ms: u64,
    /// The out-of-memory killer ended it: the sandbox's memory limit was
    /// reached (raise `limits.memory_bytes`).
    #[serde(default)]
    pub oom_killed: bool,
}

impl From<&ExitInfo> for ExitView {
    fn from(e: &ExitInfo) -> Self {
        Self {
            exit_code: e.code,
            signal: e.signal,
            timed_out: e.timed_out,
            truncated: e.truncated,
            duration_ms: e.duration_ms,
            oom_killed: e.oom_killed,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecResult {
    #[serde(flatten)]
    pub exit: ExitView,
    pub stdout: String,
    pub stderr: String,
    /// How `stdout` and `stderr` are written.
    pub encoding: Encoding,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProcessView {
    /// Names the process in later requests.
    pub handle: u64,
    /// Its pid inside the sandbox.
    pub pid: u32,
    pub command: Vec<String>,
    pub running: bool,
    pub exit: Option<ExitView>,
    pub output_bytes: u64,
    /// Runs on a pseudo-terminal.
    #[serde(default)]
    pub pty: bool,
}

impl From<&ProcessInfo> for ProcessView {
    fn from(p: &ProcessInfo) -> Self {
        Self {
            handle: p.handle,
            pid: p.pid,
            command: p.command.clone(),
            running: p.running,
            exit: p.exit.as_ref().map(ExitView::from),
            output_bytes: p.output_bytes,
            pty: p.pty,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProcessOutputView {
    /// Offset of the first byte of `data`.
    pub offset: u64,
    /// Offset to ask for next.
    pub next_offset: u64,
    /// Bytes before `offset` that the bounded buffer no longer holds.
    pub dropped: u64,
    pub running: bool,
    pub exit: Option<ExitView>,
    pub data: String,
    pub encoding: Encoding,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FileEntry {
    /// For display: bytes not in UTF-8 as `\xNN` (docs/api.md, "Paths not
    /// in UTF-8").
    pub name: String,
    /// The name's raw bytes in standard base64, only when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_bytes: Option<String>,
    pub kind: FileKind,
    pub size: u64,
    pub mode: u32,
    pub mtime_ms: i64,
    /// A symlink's target, for display as `name` is.
    pub link_target: Option<String>,
    /// The target's raw bytes in standard base64, only when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target_bytes: Option<String>,
}

impl From<&DirEntry> for FileEntry {
    fn from(e: &DirEntry) -> Self {
        let target = e.stat.link_target.as_ref();
        Self {
            name: e.name.display(),
            name_bytes: e.name.bytes_b64(),
            kind: e.stat.kind,
            size: e.stat.size,
            mode: e.stat.mode,
            mtime_ms: e.stat.mtime_ms,
            link_target: target.map(FsPath::display),
            link_target_bytes: target.and_then(FsPath::bytes_b64),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SearchView {
    pub matches: Vec<SearchMatch>,
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok`: the database answers reads.
    pub database: ComponentHealth,
    /// Whether it took a write just now (see `write_probe.rs`).
    pub database_writes: StoreWrites,
    /// The default backend; ok when every enabled backend is.
    pub backend: ComponentHealth,
    /// Each backend (`name` or `name:image`) a sandbox request may pick.
    pub backends: Vec<BackendHealth>,
    /// The tenant's sandboxes running on this node (never the node's total).
    pub sandboxes: usize,
}

impl Health {
    pub fn is_ok(&self) -> bool {
        self.database.ok && self.database_writes == StoreWrites::Ok && self.backend.ok
    }
}

/// What the store's write probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreWrites {
    /// A write committed.
    Ok,
    /// No space left on the database's file system.
    Full,
    /// The write failed otherwise, or did not commit in time.
    Failed,
}

/// One enabled backend: whether it can make sandboxes. How full its warm
/// pool is stays out: that is node-wide, and dips when any tenant takes a
/// pooled sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendHealth {
    /// `native`, or `docker:IMAGE`.
    pub name: String,
    pub ok: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentHealth {
    /// `sqlite`, `postgres`, `native`, ...
    pub name: String,
    pub ok: bool,
}
