//! `paddock workspace`: workspaces on a server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{RmArgs, ServerArgs};

/// `paddock workspace` and the server it talks to.
#[derive(Debug, Args)]
pub struct WorkspaceCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace, empty or holding DIR's files (uploaded as one
    /// archive); prints its id.
    Create {
        /// The directory whose files the workspace starts with.
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The workspace's name (default: the directory's name, or "workspace").
        #[arg(long)]
        name: Option<String>,
        /// Bytes it may hold (64M, 1G): an empty workspace in the server's
        /// volume pool whose quota the kernel enforces for every sandbox on it.
        #[arg(long, value_name = "BYTES", value_parser = crate::size::parse_bytes, conflicts_with = "dir")]
        size: Option<u64>,
        /// Print the workspace as JSON instead of its id.
        #[arg(long)]
        json: bool,
    },
    /// List workspaces, oldest first.
    Ls {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Download a workspace's files into DIR (made if missing; must be empty).
    Download {
        /// The workspace (ws_...).
        id: String,
        /// Where the files go.
        #[arg(value_name = "DIR")]
        target: PathBuf,
        /// Write the archive (tar + zstd) to the file TARGET instead of unpacking it.
        #[arg(long)]
        archive: bool,
    },
    /// Delete workspaces (a restore's, or any no session or running sandbox
    /// uses): the row and the files the server keeps for it.
    Rm(RmArgs),
}
