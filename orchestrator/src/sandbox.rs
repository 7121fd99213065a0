//! `paddock sandbox ...`

pub mod exit;
mod info;
mod output;
mod run;
mod shell;
pub mod signals;
mod stdin;

use crate::cli::SandboxCommand;
use crate::client::{self, ApiClient};
use crate::owners::{self, Role};

/// `run` and `info` without an id work on this host; the rest are requests
/// to the server of `--server`.
pub async fn dispatch(command: SandboxCommand) -> anyhow::Result<u8> {
    let api = ApiClient::from_args;
    match command {
        SandboxCommand::Run(args) => {
            let placement = owners::claim(
                Role::Sandbox,
                "sandbox run",
                &args.backend,
                &std::env::temp_dir(),
            )?;
            let backend = crate::backend::connect(
                &args.backend,
                args.egress.config(),
                None,
                None,
                &placement,
            )
            .await?;
            run::run(*args, &*backend).await
        }
        SandboxCommand::Info(args) => match &args.id {
            None => info::info(&args, &args.backend).await,
            Some(id) => client::info(&api(&args.server, "sandbox info ID")?, id, args.json).await,
        },
        SandboxCommand::Create(args) => {
            client::create(&api(&args.server, "sandbox create")?, args).await
        }
        SandboxCommand::Ls(args) => client::ls(&api(&args.server, "sandbox ls")?, args).await,
        SandboxCommand::Exec(args) => client::exec(&api(&args.server, "sandbox exec")?, args).await,
        SandboxCommand::Rm(args) => client::rm(&api(&args.server, "sandbox rm")?, args.rm).await,
        SandboxCommand::Pause(args) => {
            client::pause(&api(&args.server, "sandbox pause")?, args).await
        }
        SandboxCommand::Resume(args) => {
            client::resume(&api(&args.server, "sandbox resume")?, args).await
        }
        SandboxCommand::Shell(args) => shell::shell(*args).await,
        SandboxCommand::PortForward(args) => {
            client::port_forward(&api(&args.server, "sandbox port-forward")?, args).await
        }
        SandboxCommand::Network(args) => {
            client::network(&api(&args.server, "sandbox network")?, args).await
        }
    }
}
