//! `paddock doctor`: quarantined rows, local or on a server.

use clap::Args;

use super::{DataDirArgs, ServerArgs};

/// `paddock doctor`, on this host's data dir or on a server.
#[derive(Debug, Args)]
pub struct DoctorCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// One JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}
