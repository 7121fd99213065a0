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
    /// Enter the sandbox described by --spec, then serve as its PID 1.
    Jail(JailArgs),
    /// PID 1 of a container (docker, gVisor): check what the engine set up,
    /// apply landlock, seccomp and rlimits, then serve on stdin/stdout.
    Container(ContainerArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Workspace root; every file path and working directory stays below it.
    #[arg(long, default_value = paddock_proto::WORKSPACE_MOUNT)]
    pub workspace: PathBuf,
}

#[derive(Debug, Args)]
pub struct JailArgs {
    /// The sandbox to build, as the JSON form of `paddock_jail::JailSpec`.
    #[arg(long)]
    pub spec: String,
}

#[derive(Debug, Args)]
pub struct ContainerArgs {
    /// The container, as the JSON form of `paddock_jail::ContainerSpec`.
    #[arg(long)]
    pub spec: String,
}
