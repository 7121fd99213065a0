//! `paddock sandbox`: sandboxes here (run, shell, info) or on a server.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use paddock_core::store::OnIdle;

use super::common::{parse_env, parse_secret, parse_secret_arg, parse_volume_arg};
use super::{
    BackendArgs, EgressArgs, Layer, LimitArgs, NetworkArgs, RmArgs, SecretArg, ServerArgs,
    ServerBackendArgs,
};
use crate::size::{parse_bytes, parse_seconds_ms};

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
    /// Pause a server's sandbox: it holds nothing on the host until resumed
    /// (here, by any request that needs it, or after a server restart).
    /// `filesystem` keeps its files, not its processes; `full` keeps memory
    /// and processes where the sandbox's tier can (refused otherwise).
    Pause(PauseArgs),
    /// Resume a paused sandbox on the server (same id, same files).
    Resume(ResumeArgs),
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
    /// Reach a port of a server's sandbox from this host: listens on
    /// 127.0.0.1 (the same port number, or --local-port) and carries each
    /// connection to 127.0.0.1:PORT inside the sandbox, through the server
    /// and the sandbox's guest (any TCP protocol; network `none` too).
    /// Runs until Ctrl-C.
    PortForward(PortForwardArgs),
    /// The network of a server's sandbox: with --allow, replace its
    /// allowlist while it runs (open connections to hosts left out are
    /// cut); without, print it and its changes.
    Network(NetworkChangeArgs),
}

/// `paddock sandbox network`.
#[derive(Debug, Args)]
pub struct NetworkChangeArgs {
    /// The sandbox (sb-...).
    pub id: String,
    /// A destination of the new allowlist (repeatable): `HOST[:PORT]`,
    /// `*.suffix` or an IP literal, as in `--network allow:...`.
    #[arg(long = "allow", value_name = "HOST[:PORT]")]
    pub allow: Vec<paddock_proto::Destination>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `paddock sandbox port-forward`.
#[derive(Debug, Args)]
pub struct PortForwardArgs {
    /// The sandbox (sb-...).
    pub id: String,
    /// The port a server listens on inside the sandbox.
    pub port: u64,
    /// The port to listen on here (127.0.0.1); default PORT; 0 picks a free one.
    #[arg(long)]
    pub local_port: Option<u16>,
    #[command(flatten)]
    pub server: ServerArgs,
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

/// `paddock sandbox rm` and the server it talks to.
#[derive(Debug, Args)]
pub struct SandboxRmArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    #[command(flatten)]
    pub rm: RmArgs,
}

/// `paddock sandbox pause`.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The sandbox (sb_...).
    pub id: String,
    /// What to keep (default: the most the sandbox's tier can keep).
    #[arg(long, value_enum)]
    pub mode: Option<PauseModeArg>,
    /// Print the sandbox as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// `--mode` of `paddock sandbox pause`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PauseModeArg {
    /// Memory and processes too.
    Full,
    /// The workspace's files; processes are stopped.
    Filesystem,
}

/// `paddock sandbox resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The sandbox (sb_...).
    pub id: String,
    /// Print the sandbox as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Workspace id (ws_...) mounted at /workspace (default: an empty one).
    #[arg(long, short = 'w', value_name = "ID")]
    pub workspace: Option<String>,
    /// Mount the workspace read-only.
    #[arg(long)]
    pub read_only: bool,
    /// What the server does to the sandbox once idle for its idle timeout:
    /// `stop` it, or `pause` it (its next request resumes it). Default:
    /// the server's `on_idle`.
    #[arg(long, value_name = "ACTION", value_parser = parse_on_idle)]
    pub on_idle: Option<OnIdle>,
    #[command(flatten)]
    pub network: NetworkArgs,
    /// A secret injected at egress (repeatable): `NAME`, a secret the
    /// server's config defines and grants to your tenant, or
    /// `NAME@HOST[,HOST...][=HEADER]` with the value from this
    /// environment's NAME (sent write-only). Needs --network allowing its hosts.
    #[arg(long = "secret", value_name = "NAME[@HOSTS]", value_parser = parse_secret_arg)]
    pub secrets: Vec<SecretArg>,
    /// A named volume of yours (`paddock volume create`) mounted at PATH
    /// (repeatable); `:ro` mounts it read-only. One sandbox at a time may
    /// mount a volume read-write, any number read-only.
    #[arg(long = "volume", value_name = "NAME:PATH[:ro]", value_parser = parse_volume_arg)]
    pub volumes: Vec<paddock_proto::VolumeMount>,
    /// A label of yours shown in the sandbox's view (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub labels: Vec<(String, String)>,
    /// An environment variable every command in the sandbox starts with
    /// (repeatable); a command's own `--env` overrides it.
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    #[command(flatten)]
    pub limits: LimitArgs,
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
    #[command(flatten)]
    pub network: NetworkArgs,
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
    #[command(flatten)]
    pub limits: LimitArgs,
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
    #[command(flatten)]
    pub egress: EgressArgs,
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

fn parse_on_idle(text: &str) -> Result<OnIdle, String> {
    OnIdle::parse(text).ok_or_else(|| format!("`{text}` is not `stop` or `pause`"))
}
