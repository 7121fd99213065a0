//! `paddock snapshot`: workspace snapshots on a server.

use std::path::PathBuf;

use super::{LimitArgs, NetworkArgs, RmArgs, ServerArgs, ServerBackendArgs};
use crate::size::parse_bytes;
use clap::{Args, Subcommand};

/// `paddock snapshot` and the server it talks to.
#[derive(Debug, Args)]
pub struct SnapshotCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: SnapshotCommand,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Snapshot a sandbox's workspace; prints the snapshot id.
    Create {
        /// The sandbox (sb-...).
        sandbox: String,
        /// Leave out paths matching PATTERN (added to node_modules, target, dist, ...).
        #[arg(long = "exclude", value_name = "PATTERN")]
        excludes: Vec<String>,
        /// Most entries the snapshot may hold.
        #[arg(long, value_name = "N")]
        max_files: Option<u64>,
        /// Most file bytes before compression (512M, 1G).
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
        max_bytes: Option<u64>,
        /// The agent session the snapshot belongs to (recorded on it).
        #[arg(long, value_name = "SESSION")]
        session: Option<String>,
        /// Print the snapshot as JSON instead of its id.
        #[arg(long)]
        json: bool,
    },
    /// List snapshots.
    Ls {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show one snapshot.
    Info {
        /// The snapshot (snap_...).
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Restore a snapshot into a fresh sandbox; prints its id.
    Restore(RestoreArgs),
    /// Restore a snapshot into COUNT fresh sandboxes at once; prints their ids.
    Fork {
        #[command(flatten)]
        restore: RestoreArgs,
        /// How many sandboxes to restore it into.
        #[arg(long, short = 'n', value_name = "COUNT")]
        count: u32,
    },
    /// Download a snapshot's archive (tar + zstd) to FILE.
    Export {
        /// The snapshot (snap_...).
        id: String,
        /// Where to write the archive.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Upload an archive (tar + zstd) as a new snapshot; prints its id.
    Import {
        /// The archive to upload.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Most entries the archive may hold (default 10000).
        #[arg(long, value_name = "N")]
        max_files: Option<u64>,
        /// Most file bytes before compression (default 100M).
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
        max_bytes: Option<u64>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete snapshots.
    Rm(RmArgs),
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The snapshot (snap_...).
    pub id: String,
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The sandboxes' workspaces are read-only (files restored first).
    #[arg(long)]
    pub read_only: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: ServerBackendArgs,
}
