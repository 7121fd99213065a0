//! `paddock memory ls|search|add|show|approve|rm`: project memory on the
//! local data dir, or with --server on a server's (same output). Bad input
//! (an unknown kind, a malformed or unknown id, an empty text, a directory
//! that is no workspace) exits 2, as usage errors do elsewhere.

use std::path::PathBuf;

use paddock_api::http::MemoryList;
use paddock_api::service::{AddMemory, AgentError, MemoryView, WidenMemory};
use paddock_core::ids::{MemoryId, WorkspaceId};
use paddock_core::model::Prices;
use paddock_core::store::{MemoryFilter, MemoryKind, StoreError};
use paddock_runtime::RuntimeError;
use reqwest::Method;

use super::exit::EXIT_USAGE;
use super::local::{Local, Sandboxes};
use super::remote::segment;
use super::session::registered_workspace;
use crate::cli::{MemoryCommand, ServerArgs};
use crate::client::{ApiClient, ServerError, print_json};
use crate::printable::printable;

/// A mistake in what the user typed (exit 2).
#[derive(Debug)]
struct BadInput(String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

fn bad(message: impl Into<String>) -> anyhow::Error {
    BadInput(message.into()).into()
}

/// Whether `err` is the user's mistake rather than paddock's failure: bad
/// input found here, a request the runtime or the server refused as
/// invalid, or a record or workspace that does not exist.
fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        if cause.is::<BadInput>() {
            return true;
        }
        if let Some(e) = cause.downcast_ref::<AgentError>() {
            return matches!(e, AgentError::Invalid { .. });
        }
        if let Some(e) = cause.downcast_ref::<RuntimeError>() {
            return matches!(
                e,
                RuntimeError::NotFound { .. }
                    | RuntimeError::Invalid { .. }
                    | RuntimeError::Store {
                        source: StoreError::Invalid { .. },
                        ..
                    }
            );
        }
        if let Some(e) = cause.downcast_ref::<ServerError>() {
            return matches!(e.status, Some(400 | 404 | 422));
        }
        false
    })
}

pub async fn memory(command: MemoryCommand, server: &ServerArgs) -> anyhow::Result<u8> {
    let result = if server.server.is_some() {
        match ApiClient::from_args(server, "memory") {
            Ok(api) => remote_command(&api, command).await,
            Err(err) => Err(err),
        }
    } else {
        let data = match &command {
            MemoryCommand::Ls { data, .. }
            | MemoryCommand::Search { data, .. }
            | MemoryCommand::Add { data, .. }
            | MemoryCommand::Show { data, .. }
            | MemoryCommand::Approve { data, .. }
            | MemoryCommand::Rm { data, .. } => data.clone(),
        };
        let local = Local::open(&data, Sandboxes::NotNeeded, Prices::default()).await?;
        let result = local_command(&local, command).await;
        local.close().await;
        result
    };
    match result {
        Err(err) if is_bad_input(&err) => {
            eprintln!("paddock: {}", printable(&format!("{err:#}")));
            Ok(EXIT_USAGE)
        }
        other => other,
    }
}

fn parse_kind(kind: Option<&str>) -> anyhow::Result<Option<MemoryKind>> {
    kind.map(|k| {
        MemoryKind::parse(k).ok_or_else(|| {
            bad(format!(
                "--kind {k:?}: expected preference, convention, pitfall, fact or rule"
            ))
        })
    })
    .transpose()
}

fn memory_id(raw: &str) -> anyhow::Result<MemoryId> {
    MemoryId::parse(raw).map_err(|e| bad(format!("the memory id {raw:?}: {e}")))
}

fn limit(limit: Option<u32>, default: u32) -> anyhow::Result<u32> {
    match limit.unwrap_or(default) {
        n @ 1..=200 => Ok(n),
        n => Err(bad(format!("--limit {n}: expected 1 to 200"))),
    }
}

async fn workspace(local: &Local, dir: Option<PathBuf>) -> anyhow::Result<Option<WorkspaceId>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let Ok(dir) = dir.canonicalize() else {
        return Err(bad(format!(
            "--workspace {}: no such directory",
            dir.display()
        )));
    };
    registered_workspace(local, &dir)
        .await?
        .ok_or_else(|| {
            bad(format!(
                "{} is no workspace yet (no run used it)",
                dir.display()
            ))
        })
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
            limit: most,
            json,
            ..
        } => {
            if query.trim().is_empty() {
                return Err(bad("the search words are empty"));
            }
            let filter = MemoryFilter {
                workspace: workspace(local, dir).await?,
                limit: limit(most, 10)?,
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
            let supersedes = supersedes.as_deref().map(memory_id).transpose()?;
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
            let id = memory_id(&id)?;
            print_one(&MemoryView::from(&runtime.memory(tenant, &id).await?), json)?;
        }
        MemoryCommand::Approve {
            id,
            tenant: widen,
            json,
            ..
        } => {
            let id = memory_id(&id)?;
            let approval = WidenMemory::approval(widen.then_some(WidenMemory::Tenant));
            print_one(
                &MemoryView::from(&runtime.approve_memory(tenant, &id, approval).await?),
                json,
            )?;
        }
        MemoryCommand::Rm { id, .. } => {
            let id = memory_id(&id)?;
            runtime.forget(tenant, &id).await?;
            println!("removed {id}");
        }
    }
    Ok(0)
}

/// With --server, --workspace names the server's workspace by id.
fn remote_workspace(dir: Option<PathBuf>) -> anyhow::Result<Option<WorkspaceId>> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let id = dir.to_string_lossy().into_owned();
    match WorkspaceId::parse(&id) {
        Ok(id) => Ok(Some(id)),
        Err(_) => Err(bad(format!(
            "with --server, --workspace takes a workspace id (ws_...), not a directory: {id:?}"
        ))),
    }
}

async fn remote_command(api: &ApiClient, command: MemoryCommand) -> anyhow::Result<u8> {
    match command {
        MemoryCommand::Ls {
            workspace,
            kind,
            proposed,
            json,
            ..
        } => {
            let mut query: Vec<(&str, String)> = vec![("limit", "200".to_owned())];
            if let Some(ws) = remote_workspace(workspace)? {
                query.push(("workspace", ws.to_string()));
            }
            if let Some(kind) = parse_kind(kind.as_deref())? {
                query.push(("kind", kind.as_str().to_owned()));
            }
            if proposed {
                query.push(("proposed", "true".to_owned()));
            }
            let list: MemoryList = api
                .answer(api.request(Method::GET, "/v1/memory").query(&query))
                .await?;
            print_list(&list.memories, json)?;
        }
        MemoryCommand::Search {
            query: words,
            workspace,
            limit: most,
            json,
            ..
        } => {
            if words.trim().is_empty() {
                return Err(bad("the search words are empty"));
            }
            let mut query: Vec<(&str, String)> =
                vec![("q", words), ("limit", limit(most, 10)?.to_string())];
            if let Some(ws) = remote_workspace(workspace)? {
                query.push(("workspace", ws.to_string()));
            }
            let list: MemoryList = api
                .answer(api.request(Method::GET, "/v1/memory").query(&query))
                .await?;
            print_list(&list.memories, json)?;
        }
        MemoryCommand::Add {
            text,
            kind,
            workspace,
            supersedes,
            json,
            ..
        } => {
            let kind = parse_kind(Some(&kind))?.unwrap_or(MemoryKind::Fact);
            let supersedes = supersedes.as_deref().map(memory_id).transpose()?;
            let body = AddMemory {
                kind,
                text,
                scope: None,
                workspace: remote_workspace(workspace)?,
                project: None,
                supersedes,
            };
            let view: MemoryView = api
                .answer(api.request(Method::POST, "/v1/memory").json(&body))
                .await?;
            print_one(&view, json)?;
        }
        MemoryCommand::Show { id, json, .. } => {
            let id = memory_id(&id)?;
            let path = format!("/v1/memory/{}", segment(id.as_str()));
            let view: MemoryView = api.answer(api.request(Method::GET, &path)).await?;
            print_one(&view, json)?;
        }
        MemoryCommand::Approve {
            id, tenant, json, ..
        } => {
            let id = memory_id(&id)?;
            let path = format!("/v1/memory/{}/approve", segment(id.as_str()));
            let mut request = api.request(Method::POST, &path);
            if tenant {
                request = request.query(&[("widen", WidenMemory::Tenant)]);
            }
            let view: MemoryView = api.answer(request).await?;
            print_one(&view, json)?;
        }
        MemoryCommand::Rm { id, .. } => {
            let id = memory_id(&id)?;
            let path = format!("/v1/memory/{}", segment(id.as_str()));
            api.send(api.request(Method::DELETE, &path)).await?;
            println!("removed {id}");
        }
    }
    Ok(0)
}

fn print_list(records: &[MemoryView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&MemoryList {
            memories: records.to_vec(),
        });
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
