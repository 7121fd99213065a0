//! `paddock workspace rm ID...` against a server.

use reqwest::Method;
use serde_json::Value;

use super::{ApiClient, print_json};
use crate::cli::{RmArgs, WorkspaceCommand};

pub async fn workspace(client: &ApiClient, command: WorkspaceCommand) -> anyhow::Result<u8> {
    match command {
        WorkspaceCommand::Rm(args) => rm(client, args).await,
    }
}

async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    let mut results = Vec::new();
    let mut failed = false;
    for id in &args.ids {
        let request = client.request(
            Method::DELETE,
            &format!("/v1/workspaces/{}", super::encode_path(id)),
        );
        match client.json(request).await {
            Ok(workspace) => {
                if !args.json {
                    println!("{id} deleted");
                }
                results.push(workspace);
            }
            Err(err) => {
                eprintln!("paddock: {id}: {err:#}");
                failed = true;
            }
        }
    }
    if args.json {
        print_json(&Value::Array(results))?;
    }
    Ok(if failed {
        crate::EXIT_PADDOCK_FAILED
    } else {
        0
    })
}
