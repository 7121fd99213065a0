//! The command line surface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use paddock_core::sandbox::DowngradeLayer;
use paddock_proto::NetworkMode;

use crate::agent::parse_duration_ms;
use crate::backend::BackendKind;
use crate::logging::LogFormat;
use crate::size::{parse_bytes, parse_cpus_millis, parse_seconds_ms};

#[derive(Debug, Parser)]
#[command(name = "paddock", version, about = "Sandboxed agent orchestrator")]
pub struct Cli {
    /// How paddock's own warnings are printed on stderr: human sentences, or
    /// one JSON object per line.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human, env = "PADDOCK_LOG_FORMAT")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// Where a running `paddock serve` is; only the commands that talk to one
/// take these (sandbox create|ls|info ID|exec|rm, files, snapshot, session).
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Base URL of a running `paddock serve` (http://127.0.0.1:7878).
    #[arg(long, global = true, env = "PADDOCK_SERVER", value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for the server (prefer PADDOCK_TOKEN: arguments are visible to other users).
    #[arg(
        long,
        global = true,
        env = "PADDOCK_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

/// How sandboxes are made; only the commands that make sandboxes on this
/// host take these (serve, sandbox run, run, session).
#[derive(Debug, Clone, Args)]
pub struct BackendArgs {
    /// The paddock-guest binary (default: next to this executable).
    #[arg(long, global = true, env = "PADDOCK_GUEST_BIN", value_name = "PATH")]
    pub guest_bin: Option<PathBuf>,
    /// DEVELOPMENT ONLY: run the guest with no isolation at all.
    #[arg(
        long,
        global = true,
        hide = true,
        env = "PADDOCK_UNCONFINED",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub unconfined: bool,
    /// Which sandbox backend makes the sandboxes (`paddock sandbox info`
    /// lists what this host supports).
    #[arg(
        long,
        global = true,
        env = "PADDOCK_BACKEND",
        value_enum,
        default_value = "native"
    )]
    pub backend: BackendKind,
    /// The image of docker and gvisor sandboxes (default paddock-sandbox:bookworm,
    /// built by images/docker-image.sh).
    #[arg(long, global = true, env = "PADDOCK_IMAGE", value_name = "IMAGE")]
    pub image: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API server that owns long-lived sandboxes.
    Serve(ServeArgs),
    /// Create, use and inspect sandboxes.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Files of a server's sandbox (needs --server).
    Files(FilesCli),
    /// Workspace snapshots on the server: take, list, restore, fork, move archives.
    Snapshot(SnapshotCli),
    /// Workspaces on the server (needs --server).
    Workspace(WorkspaceCli),
    /// Run a goal with an agent, here (embedded store, native sandboxes; no server).
    ///
    /// Streams the plan, tool calls, results and progress, then prints the
    /// review. Exit codes: 0 the goal is met; 1 not met or unsure (or the
    /// agent asked a question); 2 usage error; 3 the run failed or a budget
    /// ran out; 125 paddock itself failed; 130 cancelled (Ctrl-C).
    Run(Box<GoalArgs>),
    /// Agent sessions: list, show, rename, archive, fork, read events
    /// (local data dir, or the server of --server).
    Session(SessionCli),
}

/// `paddock files` and the server it talks to.
#[derive(Debug, Args)]
pub struct FilesCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: FilesCommand,
}

/// `paddock snapshot` and the server it talks to.
#[derive(Debug, Args)]
pub struct SnapshotCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: SnapshotCommand,
}

/// `paddock workspace` and the server it talks to.
#[derive(Debug, Args)]
pub struct WorkspaceCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

/// `paddock session`: on this host (its sandboxes' guest) or on a server.
#[derive(Debug, Args)]
pub struct SessionCli {
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: SessionCommand,
}

/// Where the embedded store and workspaces live (as for `paddock serve`).
#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// State directory: paddock.db, workspaces/, blobs/, tmp/.
    #[arg(
        long,
        env = "PADDOCK_DATA_DIR",
        default_value = "/var/lib/paddock",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct GoalArgs {
    /// What the agent should achieve.
    pub goal: String,
    /// The directory the agent works in, mounted at /workspace (default: the
    /// current directory; with --session, the session's workspace).
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// build: every tool; plan: read-only tools and a read-only workspace.
    #[arg(long, value_enum, default_value_t = Mode::Build)]
    pub mode: Mode,
    /// scripted:FILE, openai:MODEL or anthropic:MODEL (keys from OPENAI_API_KEY,
    /// ANTHROPIC_API_KEY).
    #[arg(long, env = "PADDOCK_MODEL", value_name = "SPEC")]
    pub model: String,
    /// Another endpoint of the provider, with or without /v1 (a local OpenAI- or
    /// Anthropic-compatible server); its key variable is sent only if set.
    /// Applies to --subagent-model specs of the same provider too.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model of some subagents (repeatable): KEY is a task id or a
    /// profile (explore, plan, review, build), a task id winning; SPEC as
    /// for --model. Other subagents use --model. Each child replays a
    /// scripted model from its first turn.
    #[arg(long = "subagent-model", value_name = "KEY=SPEC")]
    pub subagent_models: Vec<String>,
    /// Most model calls.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Most tool calls.
    #[arg(long, value_name = "N")]
    pub max_tool_calls: Option<u32>,
    /// Most input plus output tokens over all model calls.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Wall-clock budget: seconds, or with a unit (90s, 10m, 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms)]
    pub timeout: Option<u64>,
    /// A success criterion the review judges (repeatable).
    #[arg(long = "criteria", value_name = "TEXT")]
    pub criteria: Vec<String>,
    /// Continue this session (ses_...) instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// One JSON object per event, then a result line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Build,
    Plan,
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
    /// Fork a session: a copy of its history and of its workspace, as it is
    /// now or as one of its runs left it; prints the new session's id.
    Fork {
        /// The session to fork (ses_...).
        id: String,
        /// Fork from the end of this run (run_...) instead of the latest state.
        #[arg(long, value_name = "RUN")]
        at_run: Option<String>,
        /// Title of the new session (default: the old one's with " (fork)").
        #[arg(long)]
        title: Option<String>,
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

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Delete workspaces (a restore's, or any no session or running sandbox
    /// uses): the row and the files the server keeps for it.
    Rm(RmArgs),
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
    /// none: loopback only; full: the host's network.
    #[arg(long, value_enum, default_value_t = Network::None)]
    pub network: Network,
    /// Memory limit of each sandbox (512M, 1G). Default: the server's.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Most processes at once in each sandbox. Default: the server's.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// The sandboxes' workspaces are read-only (files restored first).
    #[arg(long)]
    pub read_only: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

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
    /// State directory: database, workspaces/, tmp/.
    #[arg(
        long,
        env = "PADDOCK_DATA_DIR",
        default_value = "/var/lib/paddock",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
    /// TOML configuration: tokens, timeouts, limits (see docs/api.md).
    #[arg(long, env = "PADDOCK_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// This node's name (default: from the config file, else the hostname).
    #[arg(long, env = "PADDOCK_NODE", value_name = "NAME")]
    pub node: Option<String>,
    /// Sandboxes kept started for one enabled backend, for requests with
    /// the default limits and a temporary workspace: BACKEND[:IMAGE]=N
    /// (repeatable; over the config file's `warm_pool`).
    #[arg(long = "warm-pool", value_name = "BACKEND[:IMAGE]=N")]
    pub warm_pool: Vec<crate::serve::WarmPoolArg>,
    #[command(flatten)]
    pub backend: BackendArgs,
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

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Run one command in a fresh sandbox, then tear the sandbox down.
    ///
    /// Exits with the command's exit code, 128+N when signal N ended it, 124
    /// when --timeout passed, 125 when paddock itself failed, 126/127 when the
    /// command could not be started.
    Run(Box<RunArgs>),
    /// Without ID: print what this host can enforce. With ID: a server's sandbox.
    Info(InfoArgs),
    /// Create a long-lived sandbox on the server; prints its id.
    Create(CreateArgs),
    /// List the server's sandboxes.
    Ls(LsArgs),
    /// Run a command in a server's sandbox, streaming its output; exits with its code.
    Exec(ExecArgs),
    /// Destroy sandboxes on the server.
    Rm(SandboxRmArgs),
}

/// `paddock sandbox rm` and the server it talks to.
#[derive(Debug, Args)]
pub struct SandboxRmArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub rm: RmArgs,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Workspace id (ws_...) mounted at /workspace (default: an empty one).
    #[arg(long, short = 'w', value_name = "ID")]
    pub workspace: Option<String>,
    /// Mount the workspace read-only.
    #[arg(long)]
    pub read_only: bool,
    /// none: loopback only; full: the host's network.
    #[arg(long, value_enum, default_value_t = Network::None)]
    pub network: Network,
    /// Memory limit: bytes, or with a suffix (512M, 1G). Default: the server's.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Most processes at once. Default: the server's.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU quota in CPUs (fractions allowed: 0.5).
    #[arg(long, value_name = "N", value_parser = parse_cpus_millis)]
    pub cpus: Option<u64>,
    /// Size of the sandbox's /tmp (bytes or with a suffix). Default: the server's.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub tmp_size: Option<u64>,
    /// Print the sandbox as JSON instead of its id.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only sandboxes in this state.
    #[arg(long, value_parser = ["running", "stopped", "lost"])]
    pub state: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The sandbox (sb-...).
    pub id: String,
    /// Kill the command after this many seconds; exit code 124.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds_ms)]
    pub timeout: Option<u64>,
    /// Extra environment variable for the command (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Working directory inside the workspace; a missing one exits 2.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Send this process's stdin (read to its end first) as the command's stdin.
    #[arg(long, short = 'i')]
    pub stdin: bool,
    /// Print one JSON result instead of streaming the output.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// The ids to remove.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Host directory mounted at /workspace (default: a fresh temporary directory).
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Mount the workspace read-only.
    #[arg(long)]
    pub read_only: bool,
    /// Make the workspace read-only except PATH (relative to the workspace
    /// root; a directory or file; a missing one is created as a directory).
    /// Repeatable.
    #[arg(long = "writable", value_name = "PATH")]
    pub writable: Vec<String>,
    /// none: loopback only; full: the host's network.
    #[arg(long, value_enum, default_value_t = Network::None)]
    pub network: Network,
    /// Memory limit: bytes, or with a suffix (512M, 1G); 0 = no limit. Default 1G.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub memory: Option<u64>,
    /// Most processes at once; 0 = no limit. Default 512.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU quota in CPUs (fractions allowed: 0.5). Default: no limit.
    #[arg(long, value_name = "N", value_parser = parse_cpus_millis)]
    pub cpus: Option<u64>,
    /// Size of the sandbox's /tmp (bytes or with a suffix). Default 256M.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub tmp_size: Option<u64>,
    /// Most bytes the workspace may hold (a kernel quota; see docs/security.md).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub workspace_size: Option<u64>,
    /// Most files and directories the workspace may hold.
    #[arg(long, value_name = "N")]
    pub workspace_inodes: Option<u64>,
    /// Kill the command after this many seconds (fractions allowed); exit code 124.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds_ms)]
    pub timeout: Option<u64>,
    /// Most bytes of output kept; the rest is dropped.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub output_cap: Option<u64>,
    /// Extra environment variable for the command (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Working directory inside the workspace.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Do not read stdin: the command gets an empty stdin.
    #[arg(long, short = 'n')]
    pub no_stdin: bool,
    /// Hardening layers allowed to be missing on this host (repeatable or comma separated).
    #[arg(long, value_enum, value_name = "LAYER", num_args = 1.., value_delimiter = ',')]
    pub allow_downgrade: Vec<Layer>,
    /// Print one JSON object (exit status, enforcement, captured output) instead
    /// of passing the output through.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A sandbox on the server (needs --server); without it, this host's capabilities.
    pub id: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Without an id: the backends checked for whether this host can run them.
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Network {
    /// Own network namespace, loopback only.
    None,
    /// The host's network.
    Full,
}

impl From<Network> for NetworkMode {
    fn from(network: Network) -> Self {
        match network {
            Network::None => NetworkMode::None,
            Network::Full => NetworkMode::Full,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Layer {
    Cgroups,
    Landlock,
    Seccomp,
    IdmappedWorkspace,
    WorkspaceQuota,
}

impl From<Layer> for DowngradeLayer {
    fn from(layer: Layer) -> Self {
        match layer {
            Layer::Cgroups => DowngradeLayer::Cgroups,
            Layer::Landlock => DowngradeLayer::Landlock,
            Layer::Seccomp => DowngradeLayer::Seccomp,
            Layer::IdmappedWorkspace => DowngradeLayer::IdmappedWorkspace,
            Layer::WorkspaceQuota => DowngradeLayer::WorkspaceQuota,
        }
    }
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{s:?}: expected KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn run_args(argv: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(argv).unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Run(args)) => *args,
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn writable_is_repeatable_and_one_path_each() {
        let args = run_args(&[
            "paddock",
            "sandbox",
            "run",
            "--writable",
            "src",
            "--writable",
            "docs/a.md",
            "--",
            "true",
        ]);
        assert_eq!(args.writable, ["src", "docs/a.md"]);
        assert_eq!(args.command, ["true"]);
        assert!(!args.read_only);
    }

    #[test]
    fn run_parses_every_option_and_keeps_the_command_verbatim() {
        let args = run_args(&[
            "paddock",
            "sandbox",
            "run",
            "--workspace",
            "/w",
            "--read-only",
            "--network",
            "full",
            "--memory",
            "512M",
            "--pids",
            "64",
            "--cpus",
            "1.5",
            "--timeout",
            "2",
            "--allow-downgrade",
            "landlock",
            "seccomp",
            "--json",
            "--",
            "sh",
            "-c",
            "echo --json",
        ]);
        assert_eq!(args.workspace, Some(PathBuf::from("/w")));
        assert!(args.read_only && args.json);
        assert_eq!(args.network, Network::Full);
        assert_eq!(
            (args.memory, args.pids, args.cpus, args.timeout),
            (Some(512 << 20), Some(64), Some(1500), Some(2000))
        );
        assert_eq!(args.allow_downgrade, vec![Layer::Landlock, Layer::Seccomp]);
        assert_eq!(args.command, ["sh", "-c", "echo --json"]);
    }

    #[test]
    fn the_command_may_follow_without_a_separator() {
        let args = run_args(&["paddock", "sandbox", "run", "-e", "A=b=c", "ls", "-la"]);
        assert_eq!(args.command, ["ls", "-la"]);
        assert_eq!(args.env, [("A".to_owned(), "b=c".to_owned())]);
        assert_eq!(args.network, Network::None);
    }

    #[test]
    fn client_commands_parse_with_a_server() {
        let cli = Cli::try_parse_from([
            "paddock",
            "sandbox",
            "exec",
            "--server",
            "http://127.0.0.1:1",
            "sb-1",
            "-e",
            "A=1",
            "--",
            "sh",
            "-c",
            "echo --json",
        ])
        .unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Exec(args)) => {
                assert_eq!(args.server.server.as_deref(), Some("http://127.0.0.1:1"));
                assert_eq!(args.id, "sb-1");
                assert_eq!(args.command, ["sh", "-c", "echo --json"]);
                assert!(!args.json);
            }
            other => panic!("not an exec: {other:?}"),
        }
        let cli = Cli::try_parse_from(["paddock", "sandbox", "info", "sb-1", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Sandbox(SandboxCommand::Info(InfoArgs {
                id: Some(_),
                json: true,
                ..
            }))
        ));
        let cli = Cli::try_parse_from(["paddock", "serve", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(
            matches!(cli.command, Command::Serve(ServeArgs { ref listen, .. }) if listen == "127.0.0.1:0")
        );
    }

    #[test]
    fn options_are_taken_only_by_the_commands_they_apply_to() {
        let parses = |args: &[&str]| Cli::try_parse_from(args).is_ok();
        // A server for the commands that talk to one.
        for args in [
            &["paddock", "sandbox", "ls", "--server", "http://h:1"][..],
            &["paddock", "files", "ls", "--server", "http://h:1", "sb-1"],
            &["paddock", "snapshot", "ls", "--server", "http://h:1"],
            &["paddock", "session", "ls", "--server", "http://h:1"],
        ] {
            assert!(parses(args), "{args:?}");
        }
        // A guest binary for the commands that make sandboxes here.
        for args in [
            &["paddock", "serve", "--guest-bin", "/g"][..],
            &["paddock", "sandbox", "run", "--guest-bin", "/g", "true"],
            // info checks each backend, which needs the guest binary.
            &["paddock", "sandbox", "info", "--guest-bin", "/g"],
            &[
                "paddock",
                "run",
                "goal",
                "--model",
                "scripted:x",
                "--guest-bin",
                "/g",
            ],
        ] {
            assert!(parses(args), "{args:?}");
        }
        for args in [
            &[
                "paddock",
                "run",
                "goal",
                "--model",
                "scripted:x",
                "--server",
                "http://h:1",
            ][..],
            &["paddock", "serve", "--server", "http://h:1"],
            &[
                "paddock",
                "sandbox",
                "exec",
                "--guest-bin",
                "/g",
                "sb-1",
                "true",
            ],
            &["paddock", "files", "ls", "--guest-bin", "/g", "sb-1"],
        ] {
            assert!(!parses(args), "{args:?} should be refused");
        }
        // --log-format is everyone's.
        assert!(parses(&[
            "paddock",
            "sandbox",
            "info",
            "--log-format",
            "json"
        ]));
    }

    #[test]
    fn every_argument_has_a_help_line() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                if arg.is_hide_set() || ["help", "version"].contains(&arg.get_id().as_str()) {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(
            &<Cli as clap::CommandFactory>::command(),
            "paddock",
            &mut missing,
        );
        assert!(missing.is_empty(), "no help line: {missing:#?}");
    }

    #[test]
    fn a_command_is_required() {
        assert!(Cli::try_parse_from(["paddock", "sandbox", "run"]).is_err());
        assert!(
            Cli::try_parse_from(["paddock", "sandbox", "run", "--memory", "12Q", "true"]).is_err()
        );
    }
}
