//! `paddock memory`: project memory, local or on a server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{DataDirArgs, ServerArgs};

/// `paddock memory`, on this host's data dir or on a server.
#[derive(Debug, Args)]
pub struct MemoryCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: MemoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List records, newest first.
    Ls {
        /// The tenant's records and this directory's workspace's.
        #[arg(long, short = 'w', value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Only this kind: preference, convention, pitfall, fact, rule.
        #[arg(long)]
        kind: Option<String>,
        /// Include records runs proposed and nobody approved yet.
        #[arg(long)]
        proposed: bool,
        #[command(flatten)]
        data: DataDirArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Search records by words, best first (relevance and recency).
    Search {
        /// The words to look for.
        query: String,
        /// The tenant's records and this directory's workspace's.
        #[arg(long, short = 'w', value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Most records shown [default: 10].
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        #[command(flatten)]
        data: DataDirArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Add a record (for the tenant, or with --workspace for one workspace).
    Add {
        /// What to remember, in a sentence or two.
        text: String,
        /// preference, convention, pitfall, fact or rule.
        #[arg(long, default_value = "fact")]
        kind: String,
        /// For this directory's workspace only (default: the whole tenant).
        #[arg(long, short = 'w', value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// A record (mem_...) this one replaces.
        #[arg(long, value_name = "ID")]
        supersedes: Option<String>,
        #[command(flatten)]
        data: DataDirArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a record.
    Show {
        /// The record's id (mem_...).
        id: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Make a record a run proposed active (for its own workspace, unless
    /// --tenant widens it).
    Approve {
        /// The record's id (mem_...).
        id: String,
        /// Widen it to every workspace of the tenant (a run's record is
        /// only its own workspace's).
        #[arg(long)]
        tenant: bool,
        #[command(flatten)]
        data: DataDirArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a record.
    Rm {
        /// The record's id (mem_...).
        id: String,
        #[command(flatten)]
        data: DataDirArgs,
    },
}
