//! `paddock`: the command line and the server. The composition root: the
//! only place that names concrete backends and stores.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod agent;
mod backend;
mod cli;
mod client;
mod logging;
mod owners;
mod printable;
mod sandbox;
mod serve;
mod size;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};

/// Exit code when paddock itself failed (as `timeout` and `env` use 125).
pub const EXIT_PADDOCK_FAILED: u8 = 125;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let audience = if matches!(cli.command, Command::Serve(_)) {
        logging::Audience::Server
    } else {
        logging::Audience::Cli
    };
    logging::init(cli.log_format, audience);
    // The server serves many requests at once; a CLI call needs one thread.
    let mut builder = if matches!(cli.command, Command::Serve(_)) {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            logging::note(format_args!("paddock: starting the async runtime: {err}"));
            return ExitCode::from(EXIT_PADDOCK_FAILED);
        }
    };
    // Every command first removes what dead paddock processes left on this
    // host (bounded in time; never fails the command).
    let code = match runtime.block_on(async {
        owners::reap_dead().await;
        dispatch(cli).await
    }) {
        Ok(code) => code,
        Err(err) => {
            logging::note(format_args!("paddock: {err:#}"));
            EXIT_PADDOCK_FAILED
        }
    };
    owners::retire();
    let _ = std::io::stdout().flush();
    // A thread may still be blocked reading our stdin for the sandbox; do not
    // wait for it (dropping the runtime would).
    std::process::exit(i32::from(code));
}

async fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Serve(args) => {
            let backend = args.backend.clone();
            serve::serve(args, &backend).await
        }
        Command::Sandbox(command) => sandbox::dispatch(command).await,
        Command::Files(files) => {
            let api = client::ApiClient::from_args(&files.server, "files")?;
            client::files(&api, files.command).await
        }
        Command::Snapshot(snapshot) => {
            let api = client::ApiClient::from_args(&snapshot.server, "snapshot")?;
            client::snapshot(&api, snapshot.command).await
        }
        Command::Run(args) => {
            let backend = args.backend.clone();
            agent::run(*args, &backend).await
        }
        Command::Session(session) => agent::session(session.command, &session.server).await,
        Command::Memory(memory) => agent::memory(memory.command, &memory.server).await,
        Command::Doctor(doctor) => agent::doctor(doctor).await,
        Command::Runs(runs) => agent::runs(runs).await,
        Command::Process(process) => {
            let api = client::ApiClient::from_args(&process.server, "process")?;
            client::process(&api, process.command).await
        }
        Command::Workspace(workspace) => {
            let api = client::ApiClient::from_args(&workspace.server, "workspace")?;
            client::workspace(&api, workspace.command).await
        }
        Command::Volume(volume) => {
            let api = client::ApiClient::from_args(&volume.server, "volume")?;
            client::volume(&api, volume.command).await
        }
    }
}
