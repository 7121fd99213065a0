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
    /// Delete volumes and their data.
    Rm(RmArgs),
}
