//! `paddock-guest`: the agent inside every sandbox.
//!
//! Start-up order matters: the jail (when asked) is entered first, while the
//! process has one thread; then the host connection is moved off fds 0 and
//! 1 to close-on-exec fds; then the init makes itself not dumpable, forks
//! the agent off and stays behind as the reaper, keeping none of the fds it
//! had; only the agent builds the async runtime and serves.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod agent;
mod cli;
mod conn;
mod error;
mod exec;
mod files;
mod isolation;
mod microvm;
mod ports;
mod processes;
mod server;
mod snapshot;
mod startup;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use paddock_proto::{Enforcement, error_chain};
use tracing::Instrument;

use crate::agent::Agent;
use crate::cli::{Cli, Mode};
use crate::exec::child::ChildExits;
use crate::exec::spawner::Spawner;
use crate::files::Workspace;

/// sysexits: bad command line / input data.
pub(crate) const EXIT_USAGE: u8 = 64;
/// sysexits: the workspace directory is missing.
pub(crate) const EXIT_NO_INPUT: u8 = 66;
/// sysexits: internal software error (jail setup, start-up).
pub(crate) const EXIT_SOFTWARE: u8 = 70;

/// Threads for blocking file work.
const MAX_FILE_THREADS: usize = 8;

pub(crate) struct Startup {
    pub(crate) root: PathBuf,
    pub(crate) enforcement: Enforcement,
    pub(crate) command_filter: Option<paddock_jail::CommandFilter>,
    pub(crate) sandbox_id: Option<String>,
    /// The host connection, already off fds 0, 1 and 2 (see [`conn`]),
    /// taken before the init forks the agent so that the init (PID 1)
    /// keeps none of it.
    pub(crate) connection: conn::Connection,
    /// Variables every command of a sandbox with egress gets (secrets'
    /// placeholders, the CA bundle's paths).
    pub(crate) egress_env: Vec<(String, String)>,
    /// What the guest reports of its isolation from its commands.
    pub(crate) tier: isolation::Tier,
    /// The connection's fds have mode 0 (`conn::Seal::ModeZero`).
    pub(crate) connection_sealed: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let startup = match &cli.mode {
        Mode::Serve(args) => startup::serve(args),
        mode => startup::confined(mode),
    };
    let mut startup = match startup {
        Ok(startup) => startup,
        Err(code) => return ExitCode::from(code),
    };
    // The caller stays behind as PID 1 (the reaper); we continue as the agent.
    if let Err(e) = paddock_jail::fork_reaper() {
        eprintln!("paddock-guest: starting the agent: {}", error_chain(&e));
        return ExitCode::from(EXIT_SOFTWARE);
    }
    startup.enforcement.guest = Some(isolation::report(startup.tier, startup.connection_sealed));
    init_logging(&cli.log);
    match run_agent(startup, cli.process_buffer_bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "guest agent failed");
            ExitCode::from(EXIT_SOFTWARE)
        }
    }
}

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// The most freed memory the agent's heap keeps for reuse (see
/// `paddock_jail::heap`), and where allocations get their own mapping.
const KEPT_FREE_HEAP: usize = 8 << 20;
const OWN_MAPPING_FROM: usize = 1 << 20;

fn run_agent(startup: Startup, ring_bytes: usize) -> anyhow::Result<()> {
    // Before any other thread exists, so that every thread inherits it.
    ChildExits::block().context("blocking SIGCHLD (it is read from a signalfd)")?;
    if let Err(e) = paddock_jail::heap::keep_freed_heap(KEPT_FREE_HEAP, OWN_MAPPING_FROM) {
        // Only slower: every command then grows and trims the heap again.
        tracing::warn!(error = %e, "keeping freed heap memory");
    }
    let workspace = Workspace::open_root(startup.root.clone())
        .with_context(|| format!("opening workspace {}", startup.root.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // File requests run here; a sandbox's pids limit also counts threads.
        .max_blocking_threads(MAX_FILE_THREADS)
        .build()
        .context("building the async runtime")?;
    let root = workspace
        .root_fd()
        .try_clone()
        .context("duplicating the workspace root for the spawner")?;
    let conn = startup.connection;
    let spawner = Spawner::start(runtime.handle().clone(), startup.command_filter, root)?;
    let mut agent = Agent::new(workspace, startup.enforcement, spawner, ring_bytes);
    agent.egress_env = startup.egress_env;
    let agent = Arc::new(agent);
    let span = tracing::info_span!("guest", sandbox_id = startup.sandbox_id.as_deref());
    let served = runtime.block_on(
        async move {
            let (reader, writer) = conn.into_async().context("registering the connection")?;
            tracing::info!(workspace = %startup.root.display(), "serving");
            server::serve(agent, reader, writer).await;
            Ok(())
        }
        .instrument(span),
    );
    // Do not wait for blocking file work still in flight.
    runtime.shutdown_background();
    served
}
