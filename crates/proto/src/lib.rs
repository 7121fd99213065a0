//! Host <-> guest wire protocol.
//!
//! One connection carries length-prefixed frames. Each frame is a JSON header
//! (the message) followed by an optional raw byte payload, so bulk data
//! (command output, file contents, stdin) travels without base64. Requests carry
//! a host-chosen id; every guest frame answering a request repeats that id, so
//! many requests run at once over one connection. A request gets zero or more
//! [`Event`] frames and then exactly one final frame: a [`Reply`] or an
//! [`ErrorInfo`].
//!
//! The first request on a connection must be [`Request::Hello`]; the guest
//! refuses everything else until the versions agree.

mod enforcement;
mod error_chain;
mod frame;
mod fs_path;
mod messages;
mod network;
mod network_change;
mod port;
mod sandbox_spec;
mod secret;
mod volume_mount;

pub use enforcement::{
    CgroupEnforcement, Enforcement, GuestIsolation, LayerState, VmEnforcement,
    WorkspaceQuotaEnforcement,
};
pub use error_chain::{ErrorChain, error_chain};
pub use frame::{
    FrameError, FrameReader, FrameWriter, MAX_HEADER_LEN, MAX_PAYLOAD_LEN, RawFrame, decode_header,
    encode_frame,
};
pub use fs_path::{FsPath, escape as escape_path};
pub use messages::{
    DirEntry, ErrorCode, ErrorInfo, Event, ExecSpec, ExitInfo, FileKind, FileStat, GuestFrame,
    GuestMessage, HostFrame, OutputStream, ProcessInfo, PtySize, Reply, Request, SearchMatch,
    SearchSpec, SnapshotPackStats, SnapshotUnpackStats, StdinMode,
};
pub use network::{
    Destination, EgressDecision, HostPattern, InvalidNetworkPolicy, MAX_DESTINATIONS,
    NetworkBounds, NetworkPolicy, NetworkRefused, PROXY_ENV, PROXY_URL, Target, WEB_PORTS,
};
pub use network_change::NetworkChangeRefused;
pub use port::{PROXY_PORT, PortRefused, check_port};
pub use sandbox_spec::{
    DowngradeLayer, InvalidSandboxSpec, MAX_WRITABLE_PATH_LEN, MAX_WRITABLE_PATHS,
    MissingScopePath, SandboxLimits, SandboxPolicy, check_writable_paths, writable_path_parts,
};
pub use secret::{
    DEFAULT_SECRET_HEADER, InvalidSecret, MAX_SECRETS, SECRET_SLOT, SecretHeader, SecretNotice,
    SecretRequest, SecretSpec, SecretValue, check_secrets_network, parse_header_template,
};
pub use volume_mount::{
    InvalidVolumeMount, MAX_MOUNT_PATH_LEN, MAX_VOLUME_MOUNTS, MOUNT_PATH_RULES, MountPathRule,
    Reach, VOLUME_OWNER_ID, VolumeMount, check_mount_path, check_volume_mounts,
};

/// Version of this protocol. Bumped on any incompatible change to framing or messages.
/// 3: pseudo-terminals (`ExecSpec::pty`, `ProcessResize`) and long-polled
/// `ProcessRead` (`wait_ms`). 4: paths and names are bytes ([`FsPath`]: a
/// string when UTF-8, else `{"bytes": base64}`), every name listed.
/// 5: port tunnels (`PortConnect`, `PortWrite`, `PortClose`).
/// 6: `Suspend` (a guest detached from its host connection waits for the next).
pub const PROTOCOL_VERSION: u32 = 6;

/// How long a suspended guest (see [`Request::Suspend`]) waits, in its own
/// time, for a new host once its transport reported an end of stream. A
/// saved VM's guest does not run while saved, so this is the gap between
/// a restored VM's start and its new host connection, not the pause.
pub const SUSPEND_RECONNECT: std::time::Duration = std::time::Duration::from_secs(60);

/// Event payload bytes the guest may send for one request before the host
/// grants more with [`Request::StreamCredit`]. The guest stops reading a
/// command's pipes while a stream has no credit left (an event may overrun
/// the credit by at most its own size), so a slow consumer on the host slows
/// that one stream down without stalling the connection's other requests.
pub const STREAM_WINDOW: u64 = 256 << 10;

/// Where the workspace is mounted inside every sandbox.
pub const WORKSPACE_MOUNT: &str = "/workspace";
