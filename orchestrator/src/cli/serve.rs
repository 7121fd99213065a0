//! `paddock serve`: the HTTP API server.

use std::path::PathBuf;

use clap::Args;

use super::{BackendArgs, DataDirArgs, EgressArgs};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free one; the address is printed).
    #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDR")]
    pub listen: String,
    /// Database URL (sqlite://PATH or postgres://...). Default: SQLite at DATA/paddock.db.
    #[arg(
        long,
        env = "PADDOCK_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub database: Option<String>,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// TOML configuration: tokens, timeouts, limits (see docs/api.md).
    #[arg(long, env = "PADDOCK_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// This node's name (default: from the config file, else the hostname).
    #[arg(long, env = "PADDOCK_NODE", value_name = "NAME")]
    pub node: Option<String>,
    /// Sandboxes kept started for one enabled backend, for requests with
    /// the default limits and a temporary workspace: BACKEND=N or BACKEND:IMAGE=N
    /// (repeatable; over the config file's `warm_pool`).
    #[arg(long = "warm-pool", value_name = "BACKEND[:IMAGE]=N")]
    pub warm_pool: Vec<crate::serve::WarmPoolArg>,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub egress: EgressArgs,
}
