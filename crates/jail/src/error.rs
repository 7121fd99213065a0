//! The jail's one error type: each variant names the step that failed.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error("invalid jail spec field {field}: {reason}")]
    InvalidSpec { field: &'static str, reason: String },
    #[error("joining the egress network namespace {path}")]
    JoinNetns {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("invalid jail spec field writable_paths")]
    InvalidWritablePaths(#[source] paddock_proto::InvalidSandboxSpec),
    #[error("counting the threads of the calling process")]
    CountThreads(#[source] io::Error),
    #[error("enter() needs a single-threaded process, this one has {threads} threads")]
    NotSingleThreaded { threads: u64 },
    #[error("resolving {path}")]
    ResolvePath {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("writable path {path:?} refused: {reason}")]
    WritablePathRefused { path: String, reason: String },
    #[error("resolving writable path {path:?} in the workspace")]
    ResolveWritablePath {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("creating the missing writable path {path:?} in the workspace")]
    CreateWritablePath {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "writable path {path:?} below {under} is not what it was when the sandbox was \
         prepared (the workspace changed during setup)"
    )]
    WritablePathChanged { path: String, under: PathBuf },
    #[error("creating the idmapped mount of the workspace {path}")]
    IdmapWorkspace {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "the workspace {path} is owned by host uid/gid 0 and cannot be shown as sandbox root \
         without an idmapped mount; chown it to an unprivileged user"
    )]
    WorkspaceOwnedByRoot { path: PathBuf },
    #[error("reading the cgroup mounts")]
    DetectCgroups(#[source] io::Error),
    #[error("no cgroup hierarchy offers the {controller} controller")]
    MissingCgroupController { controller: &'static str },
    #[error("creating cgroup {path}")]
    CreateCgroup {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("writing {path}")]
    WriteCgroup {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("removing cgroup {path}")]
    RemoveCgroup {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("creating the monitor/init socket pair")]
    SyncSocket(#[source] io::Error),
    #[error("cloning the sandbox init")]
    Clone(#[source] io::Error),
    #[error("the workspace quota cannot be enforced: {reason}")]
    WorkspaceQuotaUnavailable { reason: String },
    #[error("locking a host id block at {path}")]
    IdPoolLock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("host id block {host_base} is held by another sandbox")]
    IdBlockTaken { host_base: u32 },
    #[error("every one of the {blocks} host id blocks from {base} is in use")]
    IdPoolExhausted { blocks: u32, base: u32 },
    #[error("switching the effective ids to {uid}:{gid} to create the user namespace")]
    NamespaceOwner {
        uid: u32,
        gid: u32,
        #[source]
        source: io::Error,
    },
    #[error("writing {path}")]
    WriteIdMap {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("telling the sandbox init to start")]
    SendStart(#[source] io::Error),
    #[error("waiting for the monitor's start message")]
    ReceiveStart(#[source] io::Error),
    #[error("the monitor exited before the sandbox was set up")]
    MonitorGone,
    #[error("setting the parent-death signal")]
    ParentDeathSignal(#[source] io::Error),
    #[error("becoming uid/gid 0 inside the user namespace")]
    BecomeRoot(#[source] io::Error),
    #[error("setting the hostname {name}")]
    SetHostname {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("bringing up the loopback interface")]
    LoopbackUp(#[source] io::Error),
    #[error("mount step {step} on {path}")]
    Mount {
        step: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("setting rlimit {resource}")]
    SetRlimit {
        resource: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("dropping capabilities")]
    DropCapabilities(#[source] io::Error),
    #[error("clearing the {set} capability set")]
    ClearCapabilities {
        set: &'static str,
        #[source]
        source: caps::errors::CapsError,
    },
    #[error("capability {cap} is still in the {set} set after dropping")]
    CapabilityRemains { set: &'static str, cap: u32 },
    #[error("setting no_new_privs")]
    NoNewPrivs(#[source] io::Error),
    #[error("opening the landlock rule path {path}")]
    LandlockPath {
        path: PathBuf,
        #[source]
        source: landlock::PathFdError,
    },
    #[error("applying the landlock ruleset")]
    Landlock(#[source] landlock::RulesetError),
    #[error("landlock is not fully enforced: {reason}")]
    LandlockNotEnforced { reason: String },
    #[error("compiling the seccomp filter")]
    SeccompCompile(#[source] seccompiler::BackendError),
    #[error("installing the seccomp filter")]
    SeccompInstall(#[source] seccompiler::Error),
    #[error("telling the monitor the sandbox is ready")]
    ReportReady(#[source] io::Error),
    #[error("closing inherited file descriptors")]
    CloseFds(#[source] io::Error),
    /// A layer the container engine should have set up is not there.
    #[error("the container engine did not give layer {layer}: {detail}")]
    EngineLayerMissing { layer: &'static str, detail: String },
}

impl JailError {
    pub(crate) fn mount(step: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Mount {
            step,
            path: path.into(),
            source,
        }
    }
}
