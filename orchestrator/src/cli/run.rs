//! `paddock run`: a goal run by an agent, here or on a server.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use paddock_core::store::DriverKind;
use paddock_proto::NetworkPolicy;

use super::common::Layer;
use super::common::{parse_network, parse_secret_arg};
use super::{BackendArgs, DataDirArgs, EgressArgs, SecretArg, ServerArgs};
use crate::agent::{parse_duration_ms, parse_usd_micro};
use crate::size::parse_bytes;

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
    /// What drives the agent: builtin (Paddock's own loop), or claude-code,
    /// codex or opencode run inside the sandbox (where enabled).
    #[arg(long, value_name = "DRIVER", default_value = "builtin", value_parser = parse_driver)]
    pub driver: DriverKind,
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
    /// Hardening layers the run's sandbox may lack on this host (repeatable
    /// or comma separated; gVisor has no landlock, say): the sandbox
    /// reports what it enforces.
    #[arg(long, value_enum, value_name = "LAYER", num_args = 1.., value_delimiter = ',')]
    pub allow_downgrade: Vec<Layer>,
    #[command(flatten)]
    pub egress: EgressArgs,
    /// Run on this server instead (the workspace is uploaded first).
    #[command(flatten)]
    pub server: ServerArgs,
}

fn parse_driver(text: &str) -> Result<DriverKind, String> {
    DriverKind::parse(text).ok_or_else(|| {
        let known: Vec<&str> = DriverKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("expected one of {}", known.join(", "))
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Build,
    Plan,
}
