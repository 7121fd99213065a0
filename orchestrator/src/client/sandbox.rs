//! `paddock sandbox create|ls|info ID|rm ID` against a server.

use anyhow::Context;
use paddock_api::http::SandboxList;
use paddock_api::service::SandboxView;
use paddock_api::service::commands::CreateSandbox;
use paddock_core::ids::WorkspaceId;
use reqwest::Method;
use serde_json::Value;

use super::{ApiClient, cell, print_json};
use crate::cli::{CreateArgs, LsArgs, RmArgs};

pub async fn create(client: &ApiClient, args: CreateArgs) -> anyhow::Result<u8> {
    // the server's rule, checked before asking it
    if let Err(err) = paddock_proto::check_secrets_network(args.secrets.len(), &args.network.policy)
    {
        eprintln!("paddock: --secret: {err}");
        return Ok(crate::agent::EXIT_USAGE);
    }
    let workspace = args
        .workspace
        .as_deref()
        .map(|id| WorkspaceId::parse(id).with_context(|| format!("--workspace {id}")))
        .transpose()?;
    let (backend, image) =
        super::backend_choice(args.backend.backend, args.backend.image.as_deref());
    let body = CreateSandbox {
        workspace,
        limits: args.limits.request(),
        network: args.network.policy,
        read_only: args.read_only,
        backend,
        image,
        secrets: super::secret_refs(&args.secrets),
        console: false,
        volumes: args.volumes,
        on_idle: args.on_idle,
        metadata: args.labels.into_iter().collect(),
        env: args.env.into_iter().collect(),
    };
    let sandbox: SandboxView = client
        .answer(client.request(Method::POST, "/v1/sandboxes").json(&body))
        .await?;
    if args.json {
        print_json(&sandbox)?;
    } else {
        println!("{}", sandbox.id);
    }
    Ok(0)
}

pub async fn ls(client: &ApiClient, args: LsArgs) -> anyhow::Result<u8> {
    let mut all: Vec<SandboxView> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(state) = &args.state {
            query.push(("state", state.clone()));
        }
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: SandboxList = client
            .answer(client.request(Method::GET, "/v1/sandboxes").query(&query))
            .await?;
        all.extend(page.sandboxes);
        match page.next_after {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    if args.json {
        return print_json(&all).map(|()| 0);
    }
    println!(
        "{:<35}  {:<8}  {:<24}  {:<36}  RUN",
        "ID", "STATE", "CREATED", "WORKSPACE"
    );
    for sandbox in &all {
        println!(
            "{:<35}  {:<8}  {:<24}  {:<36}  {}",
            sandbox.id.to_string(),
            sandbox.state.as_str(),
            sandbox.created_at,
            cell(sandbox.workspace.as_ref()),
            cell(sandbox.run.as_ref()),
        );
    }
    Ok(0)
}

pub async fn info(client: &ApiClient, id: &str, json: bool) -> anyhow::Result<u8> {
    let sandbox: SandboxView = client
        .answer(client.request(
            Method::GET,
            &format!("/v1/sandboxes/{}", super::encode_path(id)),
        ))
        .await?;
    if json {
        return print_json(&sandbox).map(|()| 0);
    }
    // Every field of the answer, one a line (an object's fields as
    // `name.field`), in the order `--json` prints them.
    let Value::Object(fields) = serde_json::to_value(&sandbox)? else {
        return print_json(&sandbox).map(|()| 0);
    };
    let width = fields.keys().map(String::len).max().unwrap_or(0);
    for (key, value) in &fields {
        match value {
            Value::Object(inner) => {
                for (k, v) in inner {
                    let name = format!("{key}.{k}");
                    println!("{name:<w$}  {}", text(v), w = width + 14);
                }
            }
            other => println!("{key:<w$}  {}", text(other), w = width + 14),
        }
    }
    Ok(0)
}

pub async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    super::delete_each(
        client,
        &args,
        |id| format!("/v1/sandboxes/{}", super::encode_path(id)),
        |id, sandbox: &SandboxView| format!("{id} {}", sandbox.state.as_str()),
    )
    .await
}

/// One value of the document `info` prints: `-` for null, a string bare.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
