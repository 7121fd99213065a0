//! `paddock volume`: named volumes on a server.

use super::{RmArgs, ServerArgs};
use crate::size::parse_bytes;
use clap::{Args, Subcommand};

/// `paddock volume` and the server it talks to.
#[derive(Debug, Args)]
pub struct VolumeCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: VolumeCommand,
}

#[derive(Debug, Subcommand)]
pub enum VolumeCommand {
    /// Create a named volume; prints its name.
    Create {
        /// Its name: a-z, 0-9, '.', '_', '-', starting with a letter or digit.
        name: String,
        /// Bytes it may hold (64M, 1G); the kernel refuses the write past it.
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
        size: u64,
        /// Start as a copy of a snapshot: VOLUME/SNAPSHOT.
        #[arg(long, value_name = "VOLUME/SNAPSHOT")]
        from_snapshot: Option<String>,
        /// Print the volume as JSON instead of its name.
        #[arg(long)]
        json: bool,
    },
    /// List volumes.
    Ls {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete volumes and their data (a volume with snapshots is refused).
    Rm(RmArgs),
    /// A volume's read-only snapshots: take, list, delete.
    #[command(subcommand)]
    Snapshot(VolumeSnapshotCommand),
}

#[derive(Debug, Subcommand)]
pub enum VolumeSnapshotCommand {
    /// Take a read-only snapshot of VOLUME named NAME; prints VOLUME/NAME.
    Create {
        /// The volume to snapshot.
        volume: String,
        /// The snapshot's name, unique per volume (a volume name's rules).
        name: String,
        /// Print the snapshot as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List VOLUME's snapshots with the bytes each holds alone.
    Ls {
        /// The volume whose snapshots to list.
        volume: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete snapshots of VOLUME and their data.
    Rm {
        /// The volume the snapshots are of.
        volume: String,
        #[command(flatten)]
        names: RmArgs,
    },
}
