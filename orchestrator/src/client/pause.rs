//! `paddock sandbox pause|resume ID` against a server.

use paddock_api::service::{PauseSandbox, SandboxView};
use paddock_core::store::PauseMode;
use reqwest::Method;

use super::{ApiClient, encode_path, print_json};
use crate::cli::{PauseArgs, ResumeArgs};

pub async fn pause(client: &ApiClient, args: PauseArgs) -> anyhow::Result<u8> {
    let body = PauseSandbox {
        mode: args.mode.map(|m| match m {
            crate::cli::PauseModeArg::Full => PauseMode::Full,
            crate::cli::PauseModeArg::Filesystem => PauseMode::Filesystem,
        }),
    };
    let path = format!("/v1/sandboxes/{}/pause", encode_path(&args.id));
    let sandbox: SandboxView = client
        .answer(client.request(Method::POST, &path).json(&body))
        .await?;
    if args.json {
        print_json(&sandbox)?;
        return Ok(0);
    }
    match &sandbox.pause {
        Some(pause) if !pause.processes_kept => println!(
            "{} paused ({}): files kept, processes not kept (they start anew on resume)",
            sandbox.id, pause.mode
        ),
        Some(pause) => println!(
            "{} paused ({}): memory and processes kept",
            sandbox.id, pause.mode
        ),
        None => println!("{} {}", sandbox.id, sandbox.state),
    }
    Ok(0)
}

pub async fn resume(client: &ApiClient, args: ResumeArgs) -> anyhow::Result<u8> {
    let path = format!("/v1/sandboxes/{}/resume", encode_path(&args.id));
    let sandbox: SandboxView = client.answer(client.request(Method::POST, &path)).await?;
    if args.json {
        print_json(&sandbox)?;
    } else {
        println!("{} {}", sandbox.id, sandbox.state);
    }
    Ok(0)
}
