//! `paddock workspace rm ID...` against a server.

use super::ApiClient;
use crate::cli::{RmArgs, WorkspaceCommand};

pub async fn workspace(client: &ApiClient, command: WorkspaceCommand) -> anyhow::Result<u8> {
    match command {
        WorkspaceCommand::Rm(args) => rm(client, args).await,
    }
}

async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    super::delete_each(
        client,
        &args,
        |id| format!("/v1/workspaces/{}", super::encode_path(id)),
        |id, _| format!("{id} deleted"),
    )
    .await
}
