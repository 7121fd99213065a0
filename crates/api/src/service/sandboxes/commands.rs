//! The typed requests every front end builds (the HTTP API decodes them from
//! JSON bodies; unknown fields are refused) and their validation into the
//! guest protocol's types.

use std::collections::BTreeMap;

use paddock_core::ids::WorkspaceId;
use paddock_core::sandbox::SandboxLimits;
use paddock_core::store::OnIdle;
use paddock_proto::{ExecSpec, FsPath, NetworkPolicy, PtySize, SearchSpec, StdinMode};
use serde::{Deserialize, Serialize};

use super::ServiceError;
use super::config::{DEFAULT_EXEC_OUTPUT_CAP, LimitsPolicy, MAX_EXEC_OUTPUT_CAP};
use crate::text::{Encoding, decode_base64};

/// Longest path accepted in a file or search request.
const MAX_PATH_LEN: usize = 4096;
/// Most search results one request may ask for.
pub const MAX_SEARCH_RESULTS: u32 = 10_000;
const DEFAULT_SEARCH_RESULTS: u32 = 100;
/// Most bytes of process output one read returns.
pub const MAX_PROCESS_READ: u64 = 4 << 20;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspace {
    pub name: String,
    /// Bytes the workspace may hold (at least 1 MiB, at most the tenant's
    /// disk quota): the workspace is then a btrfs subvolume with a qgroup
    /// limit in the server's volume pool, and the kernel refuses the write
    /// past it ("Disk quota exceeded") from any sandbox on any backend.
    /// 503 where the server has no volume pool. Left out: a plain directory
    /// without a quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1048576)]
    pub quota_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSandbox {
    /// The workspace mounted at /workspace; None: an empty one that goes
    /// away with the sandbox.
    #[serde(default)]
    pub workspace: Option<WorkspaceId>,
    #[serde(default)]
    pub limits: LimitsRequest,
    #[serde(default)]
    pub network: NetworkPolicy,
    #[serde(default)]
    pub read_only: bool,
    /// The sandbox backend (`native`, `docker`, `gvisor`) among those this
    /// server enabled (`GET /v1/health` lists them); None: the server's default.
    #[serde(default)]
    #[schema(example = "docker")]
    pub backend: Option<String>,
    /// The container image of a docker or gvisor sandbox, among those the
    /// server enabled for that backend; None: the backend's first.
    #[serde(default)]
    #[schema(example = "paddock-sandbox:bookworm")]
    pub image: Option<String>,
    /// Secrets injected at egress (the sandbox sees only a placeholder in
    /// each one's variable): names of secrets this server defines and
    /// grants to the tenant, or the caller's own (whose value is
    /// write-only). They need a network that allows their hosts.
    #[serde(default)]
    pub secrets: Vec<super::secrets::SecretRef>,
    /// A console sandbox (the web console's Files and Terminal): it lives
    /// while its page keeps it alive (`POST /v1/sandboxes/{id}/keepalive`
    /// at least every 120 s; a page that goes away asks for a few seconds
    /// more), and a run that needs its workspace takes the workspace over
    /// from it while nothing uses it (no request, command or terminal
    /// stream under way).
    #[serde(default)]
    pub console: bool,
    /// Named volumes of the tenant mounted into the sandbox (at most 8):
    /// one sandbox at a time may mount a volume read-write (a second is
    /// refused, 409), any number read-only. Paths follow the mount rule of
    /// docs/security.md (not over /, /workspace, /tmp, nor under /proc,
    /// /sys, /dev, /etc, /usr, /bin, /sbin, /lib, /lib64, /run).
    #[serde(default)]
    pub volumes: Vec<paddock_proto::VolumeMount>,
    /// What the server does once the sandbox has been idle for its idle
    /// timeout: `stop` (destroy it) or `pause` (pause it, in the strongest
    /// mode its tier can do; its next request resumes it). None: the
    /// server's `on_idle`. `pause` is refused (400) for a console sandbox
    /// and for one with secrets, which cannot be paused.
    #[serde(default)]
    pub on_idle: Option<OnIdle>,
    /// Labels of the caller's own, shown in the sandbox's view (at most
    /// 64; keys up to 128 bytes, values up to 1024).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Environment every command in the sandbox starts with, beneath the
    /// command's own `env` (at most 128 variables; names of letters,
    /// digits and `_`, values up to 32 KiB).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// The most labels a sandbox carries, and their sizes.
const MAX_METADATA: usize = 64;
const MAX_METADATA_KEY: usize = 128;
const MAX_METADATA_VALUE: usize = 1024;
/// The most default variables a sandbox carries, and their value size.
const MAX_ENV: usize = 128;
const MAX_ENV_VALUE: usize = 32 * 1024;

impl CreateSandbox {
    /// Refuses labels and default environment past their bounds.
    pub fn check_labels(&self) -> Result<(), ServiceError> {
        if self.metadata.len() > MAX_METADATA {
            return Err(ServiceError::invalid(
                "metadata",
                format!("at most {MAX_METADATA} entries"),
            ));
        }
        if let Some((key, _)) = self.metadata.iter().find(|(k, v)| {
            k.is_empty() || k.len() > MAX_METADATA_KEY || v.len() > MAX_METADATA_VALUE
        }) {
            return Err(ServiceError::invalid(
                "metadata",
                format!(
                    "entry {key:?}: keys are 1 to {MAX_METADATA_KEY} bytes, values up to {MAX_METADATA_VALUE}"
                ),
            ));
        }
        if self.env.len() > MAX_ENV {
            return Err(ServiceError::invalid(
                "env",
                format!("at most {MAX_ENV} variables"),
            ));
        }
        let bad_name = |k: &str| {
            k.is_empty()
                || k.starts_with(|c: char| c.is_ascii_digit())
                || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if let Some((key, _)) = self
            .env
            .iter()
            .find(|(k, v)| bad_name(k) || v.len() > MAX_ENV_VALUE || v.contains('\0'))
        {
            return Err(ServiceError::invalid(
                "env",
                format!(
                    "variable {key:?}: names are letters, digits and _ (not first a digit), values up to {MAX_ENV_VALUE} bytes without NUL"
                ),
            ));
        }
        Ok(())
    }

    /// Refuses an `on_idle` the sandbox could not have.
    pub fn check_on_idle(&self) -> Result<(), ServiceError> {
        if self.on_idle != Some(OnIdle::Pause) {
            return Ok(());
        }
        let why = if self.console {
            "a console sandbox lives while its page keeps it alive: it is not paused"
        } else if !self.secrets.is_empty() {
            "a sandbox with secrets cannot be paused (their values are not kept to inject \
             them again on resume)"
        } else {
            return Ok(());
        };
        Err(ServiceError::Invalid {
            field: "on_idle".to_owned(),
            reason: why.to_owned(),
        })
    }
}

/// Limits asked for; each missing one takes the operator's default. Each has
/// a floor below which no sandbox could start (the guest, a shell and a
/// command need that much): asking for less is a 400, never a sandbox that
/// dies starting.
// The schema minimums are the LIMIT_FLOORS (a test keeps them equal).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsRequest {
    #[schema(minimum = 33554432)]
    pub memory_bytes: Option<u64>,
    #[schema(minimum = 16)]
    pub pids: Option<u64>,
    /// CPU quota in millicpus (1000 = one core), at most 1024 cores.
    #[schema(minimum = 50, maximum = 1024000)]
    pub cpu_millis: Option<u64>,
    #[schema(minimum = 1048576)]
    pub tmp_bytes: Option<u64>,
    #[schema(minimum = 64)]
    pub open_files: Option<u64>,
    /// A kernel-enforced quota on the workspace (see docs/security.md).
    pub workspace_bytes: Option<u64>,
    pub workspace_inodes: Option<u64>,
}

/// The most CPU a request may ask for even when the operator sets no
/// ceiling: 1024 cores (the kernel refuses quotas far past any real machine).
pub const MAX_CPU_MILLIS: u64 = 1024 * 1000;

/// The least of each limit a request may ask for.
pub const LIMIT_FLOORS: &[(&str, u64)] = &[
    ("memory_bytes", 32 << 20),
    ("pids", 16),
    ("cpu_millis", 50),
    ("tmp_bytes", 1 << 20),
    ("open_files", 64),
];

impl LimitsRequest {
    pub(crate) fn resolve(&self, policy: &LimitsPolicy) -> Result<SandboxLimits, ServiceError> {
        for (field, asked) in [
            ("memory_bytes", self.memory_bytes),
            ("pids", self.pids),
            ("cpu_millis", self.cpu_millis),
            ("tmp_bytes", self.tmp_bytes),
            ("open_files", self.open_files),
        ] {
            let floor = LIMIT_FLOORS
                .iter()
                .find(|(name, _)| *name == field)
                .map_or(1, |(_, floor)| *floor);
            if let Some(value) = asked
                && value < floor
            {
                return Err(ServiceError::invalid(
                    format!("limits.{field}"),
                    format!("{value} is under the least a sandbox can start with, {floor}"),
                ));
            }
        }
        if let Some(cpu) = self.cpu_millis
            && cpu > MAX_CPU_MILLIS
        {
            return Err(ServiceError::invalid(
                "limits.cpu_millis",
                format!("{cpu} is over the most any sandbox may have, {MAX_CPU_MILLIS}"),
            ));
        }
        let d = &policy.default;
        let m = &policy.max;
        Ok(SandboxLimits {
            memory_bytes: optional(
                "memory_bytes",
                self.memory_bytes,
                d.memory_bytes,
                m.memory_bytes,
            )?,
            pids: optional("pids", self.pids, d.pids, m.pids)?,
            cpu_millis: optional("cpu_millis", self.cpu_millis, d.cpu_millis, m.cpu_millis)?,
            tmp_bytes: bounded(
                "tmp_bytes",
                self.tmp_bytes.unwrap_or(d.tmp_bytes),
                Some(m.tmp_bytes),
            )?,
            open_files: bounded(
                "open_files",
                self.open_files.unwrap_or(d.open_files),
                Some(m.open_files),
            )?,
            workspace_bytes: optional(
                "workspace_bytes",
                self.workspace_bytes,
                d.workspace_bytes,
                m.workspace_bytes,
            )?,
            workspace_inodes: optional(
                "workspace_inodes",
                self.workspace_inodes,
                d.workspace_inodes,
                m.workspace_inodes,
            )?,
        })
    }
}

fn optional(
    field: &str,
    asked: Option<u64>,
    default: Option<u64>,
    max: Option<u64>,
) -> Result<Option<u64>, ServiceError> {
    match asked {
        Some(value) => bounded(field, value, max).map(Some),
        None => Ok(default),
    }
}

fn bounded(field: &str, value: u64, max: Option<u64>) -> Result<u64, ServiceError> {
    let field = format!("limits.{field}");
    if value == 0 {
        return Err(ServiceError::invalid(field, "must be greater than 0"));
    }
    match max {
        Some(max) if value > max => Err(ServiceError::invalid(
            field,
            format!("{value} is over this server's maximum of {max}"),
        )),
        _ => Ok(value),
    }
}

/// A command to run: exactly one of `argv` and `shell`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecCommand {
    #[serde(default)]
    pub argv: Vec<String>,
    /// A script for `/bin/sh -c`.
    #[serde(default)]
    pub shell: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The command's whole stdin, as text.
    #[serde(default)]
    pub stdin: Option<String>,
    /// The command's whole stdin, base64.
    #[serde(default)]
    pub stdin_base64: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Most bytes of stdout+stderr kept. Default 1 MiB (at most 16 MiB) for a
    /// JSON answer; no cap for a stream.
    #[serde(default)]
    pub output_cap: Option<u64>,
    /// How output is written into JSON.
    #[serde(default)]
    pub output_encoding: Encoding,
}

impl ExecCommand {
    /// The guest's spec and the stdin bytes.
    pub(crate) fn validate(&self, streamed: bool) -> Result<(ExecSpec, Vec<u8>), ServiceError> {
        let (argv, shell) = command(&self.argv, self.shell.as_deref())?;
        let stdin = match (&self.stdin, &self.stdin_base64) {
            (Some(_), Some(_)) => {
                return Err(ServiceError::invalid(
                    "stdin",
                    "give stdin or stdin_base64, not both",
                ));
            }
            (Some(text), None) => Some(text.clone().into_bytes()),
            (None, Some(b64)) => Some(
                decode_base64(b64)
                    .map_err(|e| ServiceError::invalid("stdin_base64", e.to_string()))?,
            ),
            (None, None) => None,
        };
        let output_cap = match (self.output_cap, streamed) {
            (Some(0), _) => {
                return Err(ServiceError::invalid(
                    "output_cap",
                    "must be greater than 0",
                ));
            }
            (Some(cap), false) if cap > MAX_EXEC_OUTPUT_CAP => {
                return Err(ServiceError::invalid(
                    "output_cap",
                    format!("at most {MAX_EXEC_OUTPUT_CAP} bytes without streaming"),
                ));
            }
            (Some(cap), _) => Some(cap),
            (None, false) => Some(DEFAULT_EXEC_OUTPUT_CAP),
            (None, true) => None,
        };
        let spec = ExecSpec {
            argv,
            shell,
            cwd: self.cwd.as_deref().map(|c| path("cwd", c)).transpose()?,
            env: env(&self.env)?,
            stdin: if stdin.is_some() {
                StdinMode::Payload
            } else {
                StdinMode::Null
            },
            timeout_ms: timeout(self.timeout_ms)?,
            output_cap,
            pty: None,
        };
        Ok((spec, stdin.unwrap_or_default()))
    }
}

/// A background process: its stdin stays open for later writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartProcess {
    #[serde(default)]
    pub argv: Vec<String>,
    #[serde(default)]
    pub shell: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Run on a pseudo-terminal of this size (a shell for a person): the
    /// output is the terminal's screen, input goes through `stdin`, and
    /// `resize` changes the size.
    #[serde(default)]
    pub pty: Option<PtySize>,
}

/// A terminal's new size, in character cells (1 to 1000 each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResizeTerminal {
    #[schema(minimum = 1, maximum = 1000)]
    pub rows: u16,
    #[schema(minimum = 1, maximum = 1000)]
    pub cols: u16,
}

impl ResizeTerminal {
    pub(crate) fn validate(self) -> Result<PtySize, ServiceError> {
        super::terminal::check_size(
            "rows",
            PtySize {
                rows: self.rows,
                cols: self.cols,
            },
        )
    }
}

impl StartProcess {
    pub(crate) fn validate(&self) -> Result<ExecSpec, ServiceError> {
        let (argv, shell) = command(&self.argv, self.shell.as_deref())?;
        Ok(ExecSpec {
            argv,
            shell,
            cwd: self.cwd.as_deref().map(|c| path("cwd", c)).transpose()?,
            env: env(&self.env)?,
            stdin: StdinMode::Stream,
            timeout_ms: timeout(self.timeout_ms)?,
            output_cap: None,
            pty: self
                .pty
                .map(|size| super::terminal::check_size("pty", size))
                .transpose()?,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStdin {
    #[serde(default)]
    pub data: Option<String>,
    #[serde(default)]
    pub data_base64: Option<String>,
    /// Close the process's stdin after the data.
    #[serde(default)]
    pub eof: bool,
}

impl WriteStdin {
    pub(crate) fn bytes(&self) -> Result<Vec<u8>, ServiceError> {
        match (&self.data, &self.data_base64) {
            (Some(_), Some(_)) => Err(ServiceError::invalid(
                "data",
                "give data or data_base64, not both",
            )),
            (Some(text), None) => Ok(text.clone().into_bytes()),
            (None, Some(b64)) => {
                decode_base64(b64).map_err(|e| ServiceError::invalid("data_base64", e.to_string()))
            }
            (None, None) => Ok(Vec::new()),
        }
    }
}

/// A signal by number (15) or name (`TERM`, `SIGTERM`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum SignalName {
    Number(i32),
    Name(String),
}

const SIGNALS: &[(&str, i32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("KILL", 9),
    ("USR1", 10),
    ("USR2", 12),
    ("ALRM", 14),
    ("TERM", 15),
    ("CONT", 18),
    ("STOP", 19),
];

impl SignalName {
    pub(crate) fn number(&self) -> Result<i32, ServiceError> {
        let number = match self {
            SignalName::Number(n) => Some(*n).filter(|n| (1..=64).contains(n)),
            SignalName::Name(name) => {
                let upper = name.to_ascii_uppercase();
                let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
                SIGNALS.iter().find(|(n, _)| *n == bare).map(|(_, s)| *s)
            }
        };
        number.ok_or_else(|| {
            ServiceError::invalid("signal", "expected 1 to 64 or a name such as TERM or KILL")
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendSignal {
    pub signal: SignalName,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchCommand {
    /// Directory to search under (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// Glob on file names (`*.rs`).
    #[serde(default)]
    pub name_glob: Option<String>,
    /// Literal text to find in file contents.
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub max_results: Option<u32>,
    #[serde(default)]
    pub max_file_bytes: Option<u64>,
}

impl SearchCommand {
    pub(crate) fn validate(&self) -> Result<SearchSpec, ServiceError> {
        if self.name_glob.is_none() && self.content.is_none() {
            return Err(ServiceError::invalid(
                "search",
                "give name_glob, content or both",
            ));
        }
        let max_results = self.max_results.unwrap_or(DEFAULT_SEARCH_RESULTS);
        if max_results == 0 || max_results > MAX_SEARCH_RESULTS {
            return Err(ServiceError::invalid(
                "max_results",
                format!("expected 1 to {MAX_SEARCH_RESULTS}"),
            ));
        }
        Ok(SearchSpec {
            path: self.path.as_deref().map(|p| path("path", p)).transpose()?,
            name_glob: self.name_glob.clone(),
            content: self.content.clone(),
            max_results,
            max_file_bytes: self.max_file_bytes,
        })
    }
}

fn command(
    argv: &[String],
    shell: Option<&str>,
) -> Result<(Vec<String>, Option<String>), ServiceError> {
    match (argv.is_empty(), shell) {
        (false, None) => {
            if argv.iter().any(|a| a.contains('\0')) {
                return Err(ServiceError::invalid(
                    "argv",
                    "arguments may not contain NUL",
                ));
            }
            Ok((argv.to_vec(), None))
        }
        (true, Some(script)) if !script.contains('\0') => Ok((Vec::new(), Some(script.to_owned()))),
        (true, Some(_)) => Err(ServiceError::invalid("shell", "may not contain NUL")),
        (true, None) => Err(ServiceError::invalid("argv", "give argv or shell")),
        (false, Some(_)) => Err(ServiceError::invalid(
            "argv",
            "give argv or shell, not both",
        )),
    }
}

fn env(env: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, ServiceError> {
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
            return Err(ServiceError::invalid(
                format!("env.{key}"),
                "names are non-empty without '=' or NUL; values have no NUL",
            ));
        }
    }
    Ok(env.clone())
}

fn timeout(ms: Option<u64>) -> Result<Option<u64>, ServiceError> {
    match ms {
        Some(0) => Err(ServiceError::invalid(
            "timeout_ms",
            "must be greater than 0",
        )),
        other => Ok(other),
    }
}

/// A workspace path as the guest will resolve it; only shape is checked
/// here, the guest refuses any path that leaves the workspace.
pub(crate) fn path(field: &str, path: &str) -> Result<String, ServiceError> {
    check_path(field, path.as_bytes())?;
    Ok(path.to_owned())
}

/// A file's path: any bytes but NUL (UTF-8 or not), as [`path`] checks them.
pub(crate) fn file_path(field: &str, path: &FsPath) -> Result<FsPath, ServiceError> {
    check_path(field, path.as_bytes())?;
    Ok(path.clone())
}

/// 1 to [`MAX_PATH_LEN`] bytes without NUL.
fn check_path(field: &str, bytes: &[u8]) -> Result<(), ServiceError> {
    if bytes.is_empty() || bytes.len() > MAX_PATH_LEN || bytes.contains(&0) {
        return Err(ServiceError::invalid(
            field,
            format!("expected 1 to {MAX_PATH_LEN} bytes without NUL"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_floors_are_the_schema_minimums_and_refused_below() {
        let schema = serde_json::to_value(<LimitsRequest as utoipa::PartialSchema>::schema())
            .unwrap_or_default();
        for (field, floor) in LIMIT_FLOORS {
            assert_eq!(
                schema["properties"][field]["minimum"].as_f64(),
                Some(*floor as f64),
                "{field}: {schema}"
            );
            let mut asked = serde_json::Map::new();
            asked.insert((*field).to_owned(), serde_json::json!(floor - 1));
            let below: LimitsRequest =
                serde_json::from_value(serde_json::Value::Object(asked.clone()))
                    .unwrap_or_default();
            let err = below.resolve(&LimitsPolicy::default());
            assert!(
                matches!(&err, Err(ServiceError::Invalid { field: f, .. }) if f == &format!("limits.{field}")),
                "{field}: {err:?}"
            );
            asked.insert((*field).to_owned(), serde_json::json!(floor));
            let at: LimitsRequest =
                serde_json::from_value(serde_json::Value::Object(asked)).unwrap_or_default();
            assert!(at.resolve(&LimitsPolicy::default()).is_ok(), "{field}");
        }
        assert_eq!(
            schema["properties"]["cpu_millis"]["maximum"].as_f64(),
            Some(MAX_CPU_MILLIS as f64)
        );
        let over = LimitsRequest {
            cpu_millis: Some(MAX_CPU_MILLIS + 1),
            ..LimitsRequest::default()
        };
        assert!(over.resolve(&LimitsPolicy::default()).is_err());
    }

    #[test]
    fn limits_take_defaults_and_refuse_zero_or_over_the_maximum() {
        let policy = LimitsPolicy::default();
        let asked = LimitsRequest {
            pids: Some(64),
            ..LimitsRequest::default()
        };
        let limits = asked.resolve(&policy);
        assert!(
            matches!(&limits, Ok(l) if l.pids == Some(64) && l.memory_bytes == policy.default.memory_bytes),
            "{limits:?}"
        );
        for bad in [
            LimitsRequest {
                memory_bytes: Some(0),
                ..LimitsRequest::default()
            },
            LimitsRequest {
                open_files: Some(1 << 40),
                ..LimitsRequest::default()
            },
        ] {
            assert!(
                matches!(bad.resolve(&policy), Err(ServiceError::Invalid { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn exec_needs_exactly_one_of_argv_and_shell() {
        let neither = ExecCommand::default();
        assert!(neither.validate(false).is_err());
        let both = ExecCommand {
            argv: vec!["ls".into()],
            shell: Some("ls".into()),
            ..ExecCommand::default()
        };
        assert!(both.validate(false).is_err());
        let shell = ExecCommand {
            shell: Some("echo hi".into()),
            stdin: Some("x".into()),
            ..ExecCommand::default()
        };
        let (spec, stdin) = shell
            .validate(false)
            .map_err(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(spec.shell.as_deref(), Some("echo hi"));
        assert_eq!(spec.stdin, StdinMode::Payload);
        assert_eq!(spec.output_cap, Some(DEFAULT_EXEC_OUTPUT_CAP));
        assert_eq!(stdin, b"x");
    }

    #[test]
    fn streamed_exec_has_no_default_cap_and_json_exec_a_bounded_one() {
        let cmd = ExecCommand {
            argv: vec!["true".into()],
            ..ExecCommand::default()
        };
        assert_eq!(
            cmd.validate(true).map(|(s, _)| s.output_cap).ok(),
            Some(None)
        );
        let huge = ExecCommand {
            output_cap: Some(MAX_EXEC_OUTPUT_CAP + 1),
            ..cmd
        };
        assert!(huge.validate(false).is_err());
        assert!(huge.validate(true).is_ok());
    }

    #[test]
    fn signals_by_name_or_number() {
        let n = |s: SignalName| s.number().ok();
        assert_eq!(n(SignalName::Name("term".into())), Some(15));
        assert_eq!(n(SignalName::Name("SIGKILL".into())), Some(9));
        assert_eq!(n(SignalName::Number(2)), Some(2));
        assert_eq!(n(SignalName::Number(0)), None);
        assert_eq!(n(SignalName::Name("NOPE".into())), None);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let parsed =
            serde_json::from_str::<CreateSandbox>(r#"{"read_only":true,"privileged":true}"#);
        assert!(parsed.is_err());
        let parsed = serde_json::from_str::<CreateSandbox>(r#"{"limits":{"pids":8}}"#);
        assert_eq!(parsed.ok().and_then(|c| c.limits.pids), Some(8));
    }

    #[test]
    fn env_names_and_paths_are_checked() {
        let bad_env = BTreeMap::from([("A=B".to_owned(), "x".to_owned())]);
        assert!(env(&bad_env).is_err());
        assert!(path("path", "a\0b").is_err());
        assert!(path("path", "").is_err());
        assert_eq!(
            path("path", "src/main.rs").ok().as_deref(),
            Some("src/main.rs")
        );
    }
}

/// Snapshot limits of one run: its end snapshot and its subagents'
/// workspace copies and change sets. A missing field keeps the server's
/// (`[snapshot]` in its config); a value is at least 1 and at most the
/// server's `request_max_files` / `request_max_bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotLimitsRequest {
    /// Most entries (files, directories, links) a snapshot may hold.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub max_files: Option<u64>,
    /// Most bytes of file content, all files together.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub max_bytes: Option<u64>,
}

impl SnapshotLimitsRequest {
    /// `base` with the asked values, each within 1..=`ceiling`'s; the error
    /// names the field and its bound.
    pub fn resolve(
        self,
        base: paddock_snapshot::Limits,
        ceiling: paddock_snapshot::Limits,
    ) -> Result<paddock_snapshot::Limits, (&'static str, String)> {
        let pick = |field: &'static str, asked: Option<u64>, base: u64, max: u64| match asked {
            None => Ok(base),
            Some(n) if (1..=max).contains(&n) => Ok(n),
            Some(n) => Err((
                field,
                format!("{n} is not between 1 and this server's maximum of {max}"),
            )),
        };
        Ok(paddock_snapshot::Limits {
            max_files: pick(
                "snapshot_limits.max_files",
                self.max_files,
                base.max_files,
                ceiling.max_files,
            )?,
            max_bytes: pick(
                "snapshot_limits.max_bytes",
                self.max_bytes,
                base.max_bytes,
                ceiling.max_bytes,
            )?,
        })
    }
}
