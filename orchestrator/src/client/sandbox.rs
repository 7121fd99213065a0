//! `paddock sandbox create|ls|info ID|rm ID` against a server.

use reqwest::Method;
use serde_json::{Map, Value, json};

use super::{ApiClient, print_json};
use crate::cli::{CreateArgs, LsArgs, RmArgs};

pub async fn create(client: &ApiClient, args: CreateArgs) -> anyhow::Result<u8> {
    // the server's rule, checked before asking it
    if let Err(err) = paddock_proto::check_secrets_network(args.secrets.len(), &args.network.policy)
    {
        eprintln!("paddock: --secret: {err}");
        return Ok(crate::agent::EXIT_USAGE);
    }
    let mut limits = Map::new();
    for (key, value) in args.limits.request_fields() {
        if let Some(v) = value {
            limits.insert(key.to_owned(), json!(v));
        }
    }
    let mut body = json!({
        "workspace": args.workspace,
        "read_only": args.read_only,
        "network": args.network.policy,
        "limits": limits,
    });
    if !args.secrets.is_empty() {
        body["secrets"] = super::secrets_field(&args.secrets);
    }
    if let Value::Object(fields) = &mut body {
        fields.extend(super::backend_fields(
            args.backend.backend,
            args.backend.image.as_deref(),
        ));
    }
    let sandbox = client
        .json(client.request(Method::POST, "/v1/sandboxes").json(&body))
        .await?;
    if args.json {
        print_json(&sandbox)?;
    } else {
        println!("{}", sandbox["id"].as_str().unwrap_or_default());
    }
    Ok(0)
}

pub async fn ls(client: &ApiClient, args: LsArgs) -> anyhow::Result<u8> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(state) = &args.state {
            query.push(("state", state.clone()));
        }
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page = client
            .json(client.request(Method::GET, "/v1/sandboxes").query(&query))
            .await?;
        all.extend(page["sandboxes"].as_array().cloned().unwrap_or_default());
        match page["next_after"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
    }
    if args.json {
        return print_json(&Value::Array(all)).map(|()| 0);
    }
    println!(
        "{:<35}  {:<8}  {:<24}  {:<36}  RUN",
        "ID", "STATE", "CREATED", "WORKSPACE"
    );
    for sandbox in &all {
        println!(
            "{:<35}  {:<8}  {:<24}  {:<36}  {}",
            text(&sandbox["id"]),
            text(&sandbox["state"]),
            text(&sandbox["created_at"]),
            text(&sandbox["workspace"]),
            text(&sandbox["run"]),
        );
    }
    Ok(0)
}

pub async fn info(client: &ApiClient, id: &str, json: bool) -> anyhow::Result<u8> {
    let sandbox = client
        .json(client.request(
            Method::GET,
            &format!("/v1/sandboxes/{}", super::encode_path(id)),
        ))
        .await?;
    if json {
        return print_json(&sandbox).map(|()| 0);
    }
    let Some(fields) = sandbox.as_object() else {
        return print_json(&sandbox).map(|()| 0);
    };
    let width = fields.keys().map(String::len).max().unwrap_or(0);
    for (key, value) in fields {
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
        |id, sandbox| format!("{id} {}", text(&sandbox["state"])),
    )
    .await
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
