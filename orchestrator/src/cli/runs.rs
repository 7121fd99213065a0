//! `paddock runs`: one run, local or on a server.

use clap::{Args, Subcommand};

use super::{DataDirArgs, ServerArgs};

/// `paddock runs`: the local data dir, or a server.
#[derive(Debug, Args)]
pub struct RunsCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: RunsCommand,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Show a run: state, usage, review.
    Show(RunIdArgs),
    /// Cancel a run and wait (a bounded time) until it ended.
    Cancel(RunIdArgs),
    /// List the subagent runs a run spawned, oldest first.
    Children(RunIdArgs),
    /// Print a run's events (one per line).
    Events {
        #[command(flatten)]
        run: RunIdArgs,
        /// Only events after this sequence number.
        #[arg(long, value_name = "N", default_value_t = 0)]
        after: u64,
        /// Keep waiting for new events until the run finished (Ctrl-C stops).
        #[arg(long)]
        follow: bool,
    },
}

#[derive(Debug, Args)]
pub struct RunIdArgs {
    /// The run (run_...).
    pub id: String,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
