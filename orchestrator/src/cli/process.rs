//! `paddock process`: background processes of a server's sandbox.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ServerArgs;
use super::common::parse_env;
use crate::size::parse_seconds_ms;

/// `paddock process` and the server it talks to.
#[derive(Debug, Args)]
pub struct ProcessCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: ProcessCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProcessCommand {
    /// Start a background process in the sandbox; prints its handle.
    Start {
        /// The sandbox (sb-...).
        id: String,
        /// Working directory inside the workspace.
        #[arg(long, value_name = "DIR")]
        cwd: Option<String>,
        /// Extra environment variable for the process (repeatable).
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
        env: Vec<(String, String)>,
        /// Kill the process after this many seconds.
        #[arg(long, value_name = "SECS", value_parser = parse_seconds_ms)]
        timeout: Option<u64>,
        /// Print the process as JSON instead of its handle.
        #[arg(long)]
        json: bool,
        /// The command and its arguments (after `--`).
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// List the sandbox's background processes.
    Ls {
        /// The sandbox (sb-...).
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a process's output (stdout and stderr as it captured them).
    Output {
        /// The sandbox (sb-...).
        id: String,
        /// The handle `process start` printed.
        handle: u64,
        /// Start at this byte of the output.
        #[arg(long, value_name = "BYTES", default_value_t = 0)]
        offset: u64,
        /// Keep printing new output until the process exits; exits with its code.
        #[arg(long)]
        follow: bool,
    },
    /// Write FILE (default: stdin) to a process's stdin.
    Stdin {
        /// The sandbox (sb-...).
        id: String,
        /// The handle `process start` printed.
        handle: u64,
        /// The local file to send (default: this process's stdin).
        #[arg(value_name = "FILE")]
        input: Option<PathBuf>,
        /// Close the process's stdin after the data.
        #[arg(long)]
        eof: bool,
    },
    /// Send a process a signal (TERM, KILL, INT, ... or a number).
    Signal {
        /// The sandbox (sb-...).
        id: String,
        /// The handle `process start` printed.
        handle: u64,
        /// The signal, by name or number.
        #[arg(default_value = "TERM")]
        signal: String,
    },
}
