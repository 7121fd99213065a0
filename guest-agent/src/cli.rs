//! Command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::processes::DEFAULT_RING_BYTES;

#[derive(Debug, Parser)]
#[command(
    name = "paddock-guest",
    version,
    about = "Paddock's guest agent: serves the host over the connection on fd 0"
)]
pub struct Cli {
    /// Log filter for stderr, in tracing's env-filter syntax.
    #[arg(long, global = true, default_value = "info")]
    pub log: String,
    /// Output bytes kept per background process for reattaching readers.
    #[arg(long, global = true, default_value_t = DEFAULT_RING_BYTES)]
    pub process_buffer_bytes: usize,
    #[command(subcommand)]
    pub mode: Mode,
}

#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Serve without any confinement (development and tests).
    Serve(ServeArgs),
    /// Enter the sandbox described by the spec frame on fd 0, then serve as
    /// its PID 1.
    Jail(JailArgs),
    /// PID 1 of a container (docker, gVisor): check what the engine set up,
    /// apply landlock, seccomp and rlimits, then serve on stdin/stdout.
    Container(ContainerArgs),
    /// Init (PID 1) of a microVM: read the spec from the host's
    /// virtio-serial port, mount the workspace and /tmp, drop to the
    /// workspace owner, apply the usual layers, then serve on that port.
    Microvm,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Workspace root; every file path and working directory stays below it.
    #[arg(long, default_value = paddock_proto::WORKSPACE_MOUNT)]
    pub workspace: PathBuf,
}

/// The spec itself (`paddock_jail::GuestSpec`, its tier `jail`) is the first frame on fd 0,
/// never an argument: the sandbox's PID 1 shares this command line, and the
/// spec names host paths.
#[derive(Debug, Args)]
pub struct JailArgs {
    /// The sandbox id; must match the spec's (the host's reaper finds
    /// monitors by it).
    #[arg(long)]
    pub sandbox: String,
    /// An opaque tag of the owner (a hash of its cgroup parent), for the
    /// host's reaper; ignored here.
    #[arg(long)]
    pub owner: Option<String>,
}

/// The spec (`paddock_jail::GuestSpec`, its tier `container`) is the first frame on the
/// attached stdin, never an argument, as for `jail`.
#[derive(Debug, Args)]
pub struct ContainerArgs {
    /// The sandbox id; must match the spec's.
    #[arg(long)]
    pub sandbox: String,
    /// Serve on this unix socket, which the host listens on (its directory
    /// bound in), instead of the attached stdio; connected once the guest
    /// has confined itself.
    #[arg(long)]
    pub connect: Option<PathBuf>,
}
