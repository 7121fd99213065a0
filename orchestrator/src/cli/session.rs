//! `paddock session`: agent sessions, local or on a server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{DataDirArgs, ServerArgs};

/// `paddock session`: on this host's data dir or on a server.
#[derive(Debug, Args)]
pub struct SessionCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: SessionCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List sessions, oldest first.
    Ls {
        /// Only the sessions of this directory's workspace.
        #[arg(long, short = 'w', value_name = "DIR")]
        workspace: Option<PathBuf>,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a session and its runs.
    Show {
        /// The session (ses_...).
        id: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Give a session a new title.
    Rename {
        /// The session (ses_...).
        id: String,
        /// The new title.
        title: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Archive a session (its history stays readable).
    Archive {
        /// The session (ses_...).
        id: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session for good: its runs, events, history, checkpoints and
    /// the checkpoint files no other session uses (its workspace stays).
    /// Refused while a session was forked from it or a run of it has not ended.
    Delete {
        /// The session (ses_...).
        id: String,
        /// With --server: cancel its unfinished runs first.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Fork a session: its workspace as it is now or as one of its runs
    /// left it, sharing its history; prints the new session's id.
    Fork {
        /// The session to fork (ses_...).
        id: String,
        /// Fork from the end of this run (run_...) instead of the latest state.
        #[arg(long, value_name = "RUN", conflicts_with = "at")]
        at_run: Option<String>,
        /// Fork at this checkpoint (ckpt_..., see `session checkpoints`).
        #[arg(long, value_name = "CHECKPOINT")]
        at: Option<String>,
        /// Title of the new session (default: the old one's with " (fork)").
        #[arg(long)]
        title: Option<String>,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List a session's checkpoints: the workspace and history before each
    /// run and after every tool batch that changed the workspace.
    Checkpoints {
        /// The session (ses_...).
        id: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Put a session's workspace and history back to a checkpoint, as a new
    /// run (only what differs is written; later runs do not see what came
    /// after it).
    Rewind {
        /// The session (ses_...).
        id: String,
        /// The checkpoint to go back to (ckpt_...).
        #[arg(long, value_name = "CHECKPOINT")]
        to: String,
        /// Go on although the workspace changed since the session's last
        /// checkpoint (without it such a rewind is refused, naming the
        /// paths); the workspace as it is is checkpointed first either way.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What changed between two checkpoints: paths added, removed or
    /// changed, and the unified diff of each text file.
    Diff {
        /// The session (ses_...).
        id: String,
        /// From this checkpoint (default: the one before --to, or the latest).
        #[arg(long, value_name = "CHECKPOINT")]
        from: Option<String>,
        /// To this checkpoint (default: the workspace as it is now).
        #[arg(long, value_name = "CHECKPOINT")]
        to: Option<String>,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Send a message to the session's run in progress: it joins the run's
    /// history before the model's next turn (a `user.message` event).
    Say {
        /// The session (ses_...), or one of its runs (run_...).
        id: String,
        /// What to tell the agent.
        text: String,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's events (one per line).
    Events {
        /// The session (ses_...).
        id: String,
        /// Only events after this sequence number.
        #[arg(long, value_name = "N", default_value_t = 0)]
        after: u64,
        /// Keep waiting for new events (Ctrl-C stops).
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        data: DataDirArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}
