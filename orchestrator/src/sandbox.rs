//! `paddock sandbox ...`

pub mod exit;
mod info;
mod output;
mod run;
pub mod signals;
mod stdin;

use anyhow::Context;
use paddock_core::sandbox::SandboxBackend;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};

use crate::cli::{BackendArgs, SandboxCommand, ServerArgs};
use crate::client::{self, ApiClient};

/// `run` and `info` without an id work on this host; the rest are requests
/// to the server of `--server`.
pub async fn dispatch(
    command: SandboxCommand,
    backend: &BackendArgs,
    server: &ServerArgs,
) -> anyhow::Result<u8> {
    let api = |name| ApiClient::from_args(server, name);
    match command {
        SandboxCommand::Run(args) => run::run(*args, &*native_backend(backend)?).await,
        SandboxCommand::Info(args) => match &args.id {
            None => info::info(&args),
            Some(id) => client::info(&api("sandbox info ID")?, id, args.json).await,
        },
        SandboxCommand::Create(args) => client::create(&api("sandbox create")?, args).await,
        SandboxCommand::Ls(args) => client::ls(&api("sandbox ls")?, args).await,
        SandboxCommand::Exec(args) => client::exec(&api("sandbox exec")?, args).await,
        SandboxCommand::Rm(args) => client::rm(&api("sandbox rm")?, args).await,
    }
}

fn native_backend(args: &BackendArgs) -> anyhow::Result<Box<dyn SandboxBackend>> {
    let guest_bin =
        locate_guest_bin(args.guest_bin.as_deref()).context("locating the paddock-guest binary")?;
    let mut config = NativeConfig::new(guest_bin);
    config.unconfined = args.unconfined;
    Ok(Box::new(NativeBackend::new(config)))
}
