//! The command line surface.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use paddock_core::sandbox::DowngradeLayer;
use paddock_proto::NetworkPolicy;

use crate::agent::{parse_duration_ms, parse_usd_micro};
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
/// take these (sandbox create|ls|info ID|exec|rm, files, snapshot, workspace,
/// process, session, runs, run).
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
    /// lists what this host supports; default native). With --server, one
    /// the server enabled (default: the server's).
    #[arg(long, global = true, env = "PADDOCK_BACKEND", value_enum)]
    pub backend: Option<BackendKind>,
    /// The image of docker and gvisor sandboxes (default paddock-sandbox:bookworm,
    /// built by images/docker-image.sh); for microvm the directory of its
    /// kernel and initrd (default /var/lib/paddock/microvm, images/microvm-image.sh).
    #[arg(long, global = true, env = "PADDOCK_IMAGE", value_name = "IMAGE")]
    pub image: Option<String>,
    /// The DNS server (IP:PORT) the egress proxy resolves names with, for
    /// sandboxes with network (default: the host's resolver).
    #[arg(
        long,
        global = true,
        env = "PADDOCK_EGRESS_RESOLVER",
        value_name = "ADDR"
    )]
    pub egress_resolver: Option<std::net::SocketAddr>,
    /// A private address the egress guard lets through when a policy
    /// allows it (an internal registry). Repeatable.
    #[arg(long = "egress-allow-private", global = true, value_name = "IP")]
    pub egress_allow_private: Vec<std::net::IpAddr>,
    /// A PEM file of CAs the egress proxy trusts, besides the system's,
    /// when it forwards a secret's request over TLS (an internal host).
    #[arg(long = "egress-ca", global = true, value_name = "FILE")]
    pub egress_ca: Vec<std::path::PathBuf>,
    /// The private IPv4 range (default 10.217.0.0/16) whose /30s sandboxes
    /// with network full are routed (NAT) through; it must not overlap a
    /// route of this host.
    #[arg(
        long = "egress-nat-pool",
        global = true,
        env = "PADDOCK_EGRESS_NAT_POOL",
        value_name = "CIDR"
    )]
    pub egress_nat_pool: Option<paddock_egress::NatPool>,
}

impl BackendArgs {
    /// The backend of `--backend`, native when not given.
    pub fn kind(&self) -> BackendKind {
        self.backend.unwrap_or(BackendKind::Native)
    }

    /// The operator's egress settings these flags give.
    pub fn egress(&self) -> paddock_egress::EgressConfig {
        paddock_egress::EgressConfig {
            resolver: self.egress_resolver.map_or(
                paddock_egress::Resolver::System,
                paddock_egress::Resolver::Nameserver,
            ),
            allowed_private: self.egress_allow_private.clone(),
            extra_roots: self.egress_ca.clone(),
            nat_pool: self.egress_nat_pool.unwrap_or_default(),
            ..paddock_egress::EgressConfig::default()
        }
    }
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
    /// Workspaces on the server: create (from a directory), list, download, delete (needs --server).
    Workspace(WorkspaceCli),
    /// Background processes of a server's sandbox: start, list, read output,
    /// write stdin, signal (needs --server).
    Process(ProcessCli),
    /// Run a goal with an agent, here (embedded store, native sandboxes), or
    /// on the server of --server / PADDOCK_SERVER.
    ///
    /// Streams the plan, tool calls, results and progress, then prints the
    /// review. With a server, the workspace directory is uploaded as one
    /// archive and the run happens there (never here); Ctrl-C cancels it.
    /// Exit codes: 0 the goal is met; 1 not met or unsure (or the
    /// agent asked a question); 2 usage error; 3 the run failed or a budget
    /// ran out; 125 paddock itself failed (or the server is unreachable);
    /// 130 cancelled (Ctrl-C).
    Run(Box<GoalArgs>),
    /// One run: show, cancel, list its subagent runs, print its events
    /// (local data dir, or the server of --server).
    Runs(RunsCli),
    /// Agent sessions: list, show, rename, archive, delete, fork, read events
    /// (local data dir, or the server of --server).
    Session(SessionCli),
    /// Project memory kept across sessions: list, search, add, show,
    /// approve a proposed record, remove (local data dir, or the server of
    /// --server). Exit codes: 2 bad input; 125 paddock itself failed.
    Memory(MemoryCli),
    /// List the stored rows that failed validation when read (quarantined
    /// and skipped so their sessions go on): local data dir, or the
    /// caller's own on the server of --server.
    Doctor(DoctorCli),
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

/// `paddock memory`, on this host's data dir or on a server.
#[derive(Debug, Args)]
pub struct MemoryCli {
    #[command(flatten)]
    pub backend: BackendArgs,
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

/// `paddock doctor`, on this host's data dir or on a server.
#[derive(Debug, Args)]
pub struct DoctorCli {
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub data: DataDirArgs,
    /// One JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `paddock process` and the server it talks to.
#[derive(Debug, Args)]
pub struct ProcessCli {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(subcommand)]
    pub command: ProcessCommand,
}

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
/// Where the local state lives unless --data-dir says otherwise.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/paddock";

#[derive(Debug, Clone, Args)]
pub struct DataDirArgs {
    /// State directory: paddock.db, workspaces/, blobs/, tmp/.
    #[arg(
        long,
        env = "PADDOCK_DATA_DIR",
        default_value = DEFAULT_DATA_DIR,
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct GoalArgs {
    /// What the agent should achieve (not with --resume, which continues
    /// the interrupted run's goal).
    #[arg(required_unless_present = "resume")]
    pub goal: Option<String>,
    /// Continue this interrupted run (run_...) as a new run in its session,
    /// in a fresh sandbox on the workspace restored to its last checkpoint:
    /// its goal, criteria, mode and network (--backend must be the one it
    /// ran on; its --secret values, never stored, must be given again); its
    /// calls left without results are run again when their tool is safe to
    /// repeat, and reported with an unknown outcome (or undone) when not.
    #[arg(
        long,
        value_name = "RUN",
        conflicts_with_all = ["goal", "session", "workspace", "criteria"]
    )]
    pub resume: Option<String>,
    /// With --resume: restore the last checkpoint even over changes made
    /// since it (they are checkpointed first, and the undo is printed);
    /// without it such a resume is refused, naming them.
    #[arg(long, requires = "resume")]
    pub force: bool,
    /// Run in a directory that cannot be undone without asking: the home
    /// directory, `/`, or one that cannot be checkpointed (without a
    /// terminal to ask on, such a run is refused unless --yes is given).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The directory the agent works in, mounted at /workspace (default: the
    /// current directory; with --session, the session's workspace). With
    /// --server it is uploaded; a server workspace id (ws_...) uses that one.
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
    /// The model's context window in tokens, instead of its profile's (an
    /// unknown OpenAI-compatible model is taken to have 32768); compaction
    /// starts at 90% of what it leaves for the request.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u32>,
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
    /// Most cost of the model calls in dollars (0.50), the run and its
    /// subagents together; needs the model's price (--price).
    #[arg(long, value_name = "DOLLARS", value_parser = parse_usd_micro)]
    pub max_cost: Option<u64>,
    /// The price of a model: MODEL=INPUT:OUTPUT in dollars per million
    /// tokens (openai:gpt-4o=2.5:10; a MODEL ending in * is a prefix);
    /// repeatable, or comma-separated in PADDOCK_PRICES.
    #[arg(
        long = "price",
        env = "PADDOCK_PRICES",
        value_delimiter = ',',
        value_name = "PRICE"
    )]
    pub prices: Vec<String>,
    /// Most entries (files, directories, links) the run's end snapshot and
    /// its subagents' workspace copies may hold [default: 10000].
    #[arg(long, value_name = "N")]
    pub snapshot_max_files: Option<u64>,
    /// Most bytes of file content in those snapshots (100M, 2G) [default: 100M].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub snapshot_max_bytes: Option<u64>,
    /// The network of the run's sandbox (its subagents get it or a
    /// narrower one): none; `allow:HOST[:PORT],...` (exact hosts, `*.suffix`,
    /// IP literals) through the egress proxy; full: any host through the
    /// same proxy and address guard. Default: none here, the server's
    /// default with --server (which may refuse more than it allows).
    #[arg(long, value_name = "POLICY", value_parser = parse_network)]
    pub network: Option<NetworkPolicy>,
    /// A secret injected at egress into the run's sandbox (repeatable), as
    /// for `sandbox run --secret`: `NAME@HOST[,HOST...][=HEADER]`, the value
    /// from this environment's NAME (with --server, sent as the run's own
    /// secret); or, with --server, `NAME` alone: a secret the server's
    /// config defines (`[secrets.NAME]`) and grants to your tenant.
    #[arg(long = "secret", value_name = "NAME[@HOSTS]", value_parser = parse_secret_arg)]
    pub secrets: Vec<SecretArg>,
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
    /// Show every tool result whole, not one line of it.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Run on this server instead (the workspace is uploaded first).
    #[command(flatten)]
    pub server: ServerArgs,
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

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace, empty or holding DIR's files (uploaded as one
    /// archive); prints its id.
    Create {
        /// The directory whose files the workspace starts with.
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The workspace's name (default: the directory's name, or "workspace").
        #[arg(long)]
        name: Option<String>,
        /// Print the workspace as JSON instead of its id.
        #[arg(long)]
        json: bool,
    },
    /// List workspaces, oldest first.
    Ls {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Download a workspace's files into DIR (made if missing; must be empty).
    Download {
        /// The workspace (ws_...).
        id: String,
        /// Where the files go.
        #[arg(value_name = "DIR")]
        target: PathBuf,
        /// Write the archive (tar + zstd) to the file TARGET instead of unpacking it.
        #[arg(long)]
        archive: bool,
    },
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
    /// none: loopback only; `allow:HOST[:PORT],...` (`*.suffix` allowed):
    /// only those, through the egress proxy; full: any host through the
    /// same proxy (never the host's own network or services).
    #[arg(long, value_name = "POLICY", default_value = "none", value_parser = parse_network)]
    pub network: NetworkPolicy,
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
    #[command(flatten)]
    pub backend: ServerBackendArgs,
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
    /// the default limits and a temporary workspace: BACKEND=N or BACKEND:IMAGE=N
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
    /// An interactive shell (or CMD) on a pseudo-terminal: in a server's
    /// sandbox with ID, else in a fresh sandbox on this host over
    /// --workspace, torn down after.
    ///
    /// This terminal goes raw while attached (Ctrl-C goes to the shell) and
    /// is restored on every way out; its size follows the window. Exits
    /// with the shell's exit code. Leaving the stream (the connection drops,
    /// or SIGHUP/SIGTERM here) leaves a server's shell running: `--attach
    /// HANDLE` comes back to it, replaying what it printed meanwhile.
    Shell(Box<ShellArgs>),
}

/// `paddock sandbox shell`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// A server's sandbox (sb-...); without it, a fresh sandbox here.
    pub id: Option<String>,
    /// Attach to this running terminal process of the sandbox (the handle
    /// `paddock process ls` shows) instead of starting one.
    #[arg(long, value_name = "HANDLE", requires = "id")]
    pub attach: Option<u64>,
    /// Without ID: the directory mounted at /workspace (default: an empty one).
    #[arg(long, short = 'w', value_name = "DIR", conflicts_with = "id")]
    pub workspace: Option<PathBuf>,
    /// Extra environment variable for the shell (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Working directory inside the workspace.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// What to run (after `--`); default bash where the sandbox has it, else sh.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// Which of a server's enabled backends makes the sandboxes of a request.
#[derive(Debug, Clone, Args)]
pub struct ServerBackendArgs {
    /// The server's sandbox backend (native, docker, gvisor, microvm), one
    /// it enabled (`GET /v1/health` lists them). Default: the server's.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<BackendKind>,
    /// The container image, one the server enabled for that backend.
    /// Default: the backend's first.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
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
    /// none: loopback only; `allow:HOST[:PORT],...` (`*.suffix` allowed):
    /// only those, through the egress proxy; full: any host through the
    /// same proxy (never the host's own network or services).
    #[arg(long, value_name = "POLICY", default_value = "none", value_parser = parse_network)]
    pub network: NetworkPolicy,
    /// A secret injected at egress (repeatable): `NAME`, a secret the
    /// server's config defines and grants to your tenant, or
    /// `NAME@HOST[,HOST...][=HEADER]` with the value from this
    /// environment's NAME (sent write-only). Needs --network allowing its hosts.
    #[arg(long = "secret", value_name = "NAME[@HOSTS]", value_parser = parse_secret_arg)]
    pub secrets: Vec<SecretArg>,
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
    pub backend: ServerBackendArgs,
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
    /// root; a directory or file; a missing one is created: as an empty file
    /// when its last name has an extension (src/new.rs), else as a
    /// directory; a trailing '/' always means a directory). Repeatable.
    #[arg(long = "writable", value_name = "PATH")]
    pub writable: Vec<String>,
    /// none: loopback only; `allow:HOST[:PORT],...` (`*.suffix` allowed):
    /// only those, through the egress proxy; full: any host through the
    /// same proxy (never the host's own network or services).
    #[arg(long, value_name = "POLICY", default_value = "none", value_parser = parse_network)]
    pub network: NetworkPolicy,
    /// A secret injected at egress (repeatable): NAME@HOST[,HOST...] with
    /// an optional =HEADER, the one header the value goes in: a name
    /// ("X-Api-Key") or a template ("Authorization: Bearer {{secret}}");
    /// default Authorization. Its value is this environment's NAME; the
    /// sandbox's NAME holds only a placeholder, which the egress proxy
    /// swaps for the value in that header of HTTPS requests to those hosts
    /// (it terminates their TLS with the sandbox's own CA, which the
    /// sandbox trusts) and refuses anywhere else.
    #[arg(long = "secret", value_name = "NAME@HOSTS", value_parser = parse_secret)]
    pub secrets: Vec<paddock_proto::SecretSpec>,
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

/// `--secret` of `paddock run` and `paddock sandbox create`: a server's
/// secret by name, or one of this environment's.
#[derive(Debug, Clone)]
pub enum SecretArg {
    /// `NAME`: defined by the server's config.
    Server(String),
    /// `NAME@HOSTS[=HEADER]`: the value from this environment's NAME.
    Local(paddock_proto::SecretSpec),
}

fn parse_secret_arg(raw: &str) -> Result<SecretArg, String> {
    if raw.contains('@') {
        return parse_secret(raw).map(SecretArg::Local);
    }
    let name = raw.trim();
    let valid = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        return Err(format!(
            "secret {raw:?}: expected NAME (a server's secret, [A-Z_][A-Z0-9_]*) or \
             NAME@HOST[,HOST...][=HEADER]"
        ));
    }
    Ok(SecretArg::Server(name.to_owned()))
}

/// `NAME@HOSTS[=HEADER]`, the value from this process's environment.
fn parse_secret(raw: &str) -> Result<paddock_proto::SecretSpec, String> {
    let request: paddock_proto::SecretRequest = raw.parse().map_err(|e| format!("{e}"))?;
    let value = std::env::var(&request.name)
        .map_err(|_| format!("secret {}: ${} is not set here", request.name, request.name))?;
    request
        .with_value(paddock_proto::SecretValue::new(value))
        .map_err(|e| e.to_string())
}

fn parse_network(raw: &str) -> Result<NetworkPolicy, String> {
    raw.parse()
        .map_err(|e: paddock_proto::InvalidNetworkPolicy| e.to_string())
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
        assert_eq!(args.network, NetworkPolicy::Full);
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
        assert_eq!(args.network, NetworkPolicy::None);
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
            &["paddock", "runs", "show", "--server", "http://h:1", "run_1"],
            &["paddock", "workspace", "ls", "--server", "http://h:1"],
            &["paddock", "process", "ls", "--server", "http://h:1", "sb-1"],
            // `paddock run` runs on a named server.
            &[
                "paddock",
                "run",
                "goal",
                "--model",
                "scripted:x",
                "--server",
                "http://h:1",
            ],
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
            &["paddock", "serve", "--server", "http://h:1"][..],
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
            &["paddock", "runs", "show", "--guest-bin", "/g", "run_1"],
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
