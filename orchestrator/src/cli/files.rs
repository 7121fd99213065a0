//! `paddock files`: files of a server's sandbox.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ServerArgs;

/// `paddock files` and the server it talks to.
#[derive(Debug, Args)]
pub struct FilesCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: FilesCommand,
}

#[derive(Debug, Subcommand)]
pub enum FilesCommand {
    /// Print a file of the sandbox (or write it to --output).
    Get {
        /// The sandbox (sb-...).
        id: String,
        /// The file, relative to the workspace (or absolute inside the sandbox).
        path: String,
        /// Write the file here instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a file into the sandbox from FILE (default: stdin).
    Put {
        /// The sandbox (sb-...).
        id: String,
        /// Where to write it, relative to the workspace.
        path: String,
        /// The local file to upload (default: stdin).
        #[arg(value_name = "FILE")]
        input: Option<PathBuf>,
        /// Permission bits in octal (644).
        #[arg(long)]
        mode: Option<String>,
    },
    /// List a directory of the sandbox (default: the workspace root).
    Ls {
        /// The sandbox (sb-...).
        id: String,
        /// The directory, relative to the workspace (default: its root).
        dir: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
