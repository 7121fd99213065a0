//! `paddock sandbox ...`

mod info;
mod output;
mod run;
pub mod signals;
mod stdin;

use crate::backend::Placement;
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
        SandboxCommand::Run(args) => {
            let backend =
                crate::backend::connect(backend, None, None, &Placement::standalone()).await?;
            run::run(*args, &*backend).await
        }
        SandboxCommand::Info(args) => match &args.id {
            None => info::info(&args, backend).await,
            Some(id) => client::info(&api("sandbox info ID")?, id, args.json).await,
        },
        SandboxCommand::Create(args) => client::create(&api("sandbox create")?, args).await,
        SandboxCommand::Ls(args) => client::ls(&api("sandbox ls")?, args).await,
        SandboxCommand::Exec(args) => client::exec(&api("sandbox exec")?, args).await,
        SandboxCommand::Rm(args) => client::rm(&api("sandbox rm")?, args).await,
    }
}
