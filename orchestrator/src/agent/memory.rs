//! `paddock memory ls|search|add|show|approve|rm`: project memory on the
//! local data dir.

use std::path::PathBuf;

use anyhow::Context;
use paddock_api::service::{AddMemory, MemoryView};
use paddock_core::ids::{MemoryId, WorkspaceId};
use paddock_core::model::Prices;
use paddock_core::store::{MemoryFilter, MemoryKind};
use serde_json::json;

use super::local::{Local, Sandboxes};
use super::session::registered_workspace;
use crate::cli::{BackendArgs, MemoryCommand};
use crate::client::print_json;
use crate::printable::printable;

pub async fn memory(command: MemoryCommand, backend: &BackendArgs) -> anyhow::Result<u8> {
    let data = match &command {
        MemoryCommand::Ls { data, .. }
        | MemoryCommand::Search { data, .. }
        | MemoryCommand::Add { data, .. }
        | MemoryCommand::Show { data, .. }
        | MemoryCommand::Approve { data, .. }
        | MemoryCommand::Rm { data, .. } => data.clone(),
    };
    let local = Local::open(&data, backend, Sandboxes::NotNeeded, Prices::default()).await?;
    let result = local_command(&local, command).await;
    local.close().await;
    result
}

fn parse_kind(kind: Option<&str>) -> anyhow::Result<Option<MemoryKind>> {
    kind.map(|k| {
        MemoryKind::parse(k).with_context(|| {
            format!("--kind {k:?}: expected preference, convention, pitfall, fact or rule")
        })
    })
    .transpose()
}

async fn workspace(local: &Local, dir: Option<PathBuf>) -> anyhow::Result<Option<WorkspaceId>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let dir = dir
        .canonicalize()
        .with_context(|| format!("--workspace {}", dir.display()))?;
    registered_workspace(local, &dir)
        .await?
        .with_context(|| format!("{} is no workspace yet (no run used it)", dir.display()))
        .map(Some)
}

async fn local_command(local: &Local, command: MemoryCommand) -> anyhow::Result<u8> {
    let runtime = &local.runtime;
    let tenant = &local.tenant;
    match command {
        MemoryCommand::Ls {
            workspace: dir,
            kind,
            proposed,
            json,
            ..
        } => {
            let filter = MemoryFilter {
                workspace: workspace(local, dir).await?,
                kind: parse_kind(kind.as_deref())?,
                include_proposed: proposed,
                limit: 200,
                ..MemoryFilter::default()
            };
            let records = runtime.memories(tenant, &filter).await?;
            print_list(
                &records.iter().map(MemoryView::from).collect::<Vec<_>>(),
                json,
            )?;
        }
        MemoryCommand::Search {
            query,
            workspace: dir,
            limit,
            json,
            ..
        } => {
            let filter = MemoryFilter {
                workspace: workspace(local, dir).await?,
                limit: limit.unwrap_or(10).clamp(1, 200),
                ..MemoryFilter::default()
            };
            let records = runtime.search_memories(tenant, &query, &filter).await?;
            print_list(
                &records.iter().map(MemoryView::from).collect::<Vec<_>>(),
                json,
            )?;
        }
        MemoryCommand::Add {
            text,
            kind,
            workspace: dir,
            supersedes,
            json,
            ..
        } => {
            let kind = parse_kind(Some(&kind))?.unwrap_or(MemoryKind::Fact);
            let supersedes = supersedes
                .as_deref()
                .map(MemoryId::parse)
                .transpose()
                .context("--supersedes")?;
            let command = AddMemory {
                kind,
                text,
                scope: None,
                workspace: workspace(local, dir).await?,
                project: None,
                supersedes,
            };
            let new = command.validate()?;
            let record = runtime.add_memory(tenant, new).await?;
            print_one(&MemoryView::from(&record), json)?;
        }
        MemoryCommand::Show { id, json, .. } => {
            let id = MemoryId::parse(&id).context("the memory id")?;
            print_one(&MemoryView::from(&runtime.memory(tenant, &id).await?), json)?;
        }
        MemoryCommand::Approve { id, json, .. } => {
            let id = MemoryId::parse(&id).context("the memory id")?;
            print_one(
                &MemoryView::from(&runtime.approve_memory(tenant, &id).await?),
                json,
            )?;
        }
        MemoryCommand::Rm { id, .. } => {
            let id = MemoryId::parse(&id).context("the memory id")?;
            runtime.forget(tenant, &id).await?;
            println!("removed {id}");
        }
    }
    Ok(0)
}

fn print_list(records: &[MemoryView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&json!({ "memories": records }));
    }
    if records.is_empty() {
        println!("no memory");
        return Ok(());
    }
    for r in records {
        let status = if r.status.as_str() == "active" {
            String::new()
        } else {
            format!(" ({})", r.status)
        };
        println!(
            "{}  {:<10}  {:<9}{status}  {}",
            r.id,
            r.kind.as_str(),
            r.scope.as_str(),
            printable(&r.text)
        );
    }
    Ok(())
}

fn print_one(r: &MemoryView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(r)?);
    }
    println!("memory     {}", r.id);
    println!("kind       {}", r.kind);
    println!("scope      {}", r.scope);
    if let Some(ws) = &r.workspace {
        println!("workspace  {ws}");
    }
    println!("status     {}", r.status);
    println!("text       {}", printable(&r.text));
    if let Some(run) = &r.source_run {
        println!("from run   {run}");
    }
    println!("updated    {}", r.updated_at);
    if let Some(by) = &r.superseded_by {
        println!("replaced   by {by}");
    }
    Ok(())
}
