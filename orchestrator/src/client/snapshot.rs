//! `paddock snapshot create|ls|info|restore|fork|export|import|rm` against a server.

use anyhow::Context;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

use super::{ApiClient, encode_path, print_json};
use crate::cli::{Network, RestoreArgs, RmArgs, SnapshotCommand};

pub async fn snapshot(client: &ApiClient, command: SnapshotCommand) -> anyhow::Result<u8> {
    match command {
        SnapshotCommand::Create {
            sandbox,
            excludes,
            max_files,
            max_bytes,
            json,
        } => {
            let body = json!({
                "excludes": excludes,
                "max_files": max_files,
                "max_bytes": max_bytes,
            });
            let path = format!("/v1/sandboxes/{}/snapshots", encode_path(&sandbox));
            let snapshot = client
                .json(client.request(Method::POST, &path).json(&body))
                .await?;
            print_id(&snapshot, json)
        }
        SnapshotCommand::Ls { json } => ls(client, json).await,
        SnapshotCommand::Info { id, json } => {
            let snapshot = client
                .json(client.request(Method::GET, &snapshot_path(&id)))
                .await?;
            if json {
                return print_json(&snapshot).map(|()| 0);
            }
            if let Some(fields) = snapshot.as_object() {
                for (key, value) in fields {
                    println!("{key:<18}  {}", text(value));
                }
            }
            Ok(0)
        }
        SnapshotCommand::Restore(args) => restore(client, args, 1).await,
        SnapshotCommand::Fork {
            restore: args,
            count,
        } => restore(client, args, count).await,
        SnapshotCommand::Export { id, file, json } => {
            let path = format!("{}/archive", snapshot_path(&id));
            let response = client.send(client.request(Method::GET, &path)).await?;
            let mut out = tokio::fs::File::create(&file)
                .await
                .with_context(|| format!("creating {}", file.display()))?;
            let mut body = response.bytes_stream();
            let mut bytes = 0u64;
            while let Some(chunk) = body.next().await {
                let chunk = chunk.context("downloading the archive")?;
                out.write_all(&chunk)
                    .await
                    .with_context(|| format!("writing {}", file.display()))?;
                bytes += chunk.len() as u64;
            }
            out.flush().await?;
            if json {
                print_json(&json!({"id": id, "file": file, "bytes": bytes}))?;
            } else {
                eprintln!("wrote {bytes} bytes to {}", file.display());
            }
            Ok(0)
        }
        SnapshotCommand::Import { file, json } => {
            let input = tokio::fs::File::open(&file)
                .await
                .with_context(|| format!("opening {}", file.display()))?;
            let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::new(input));
            let request = client
                .request(Method::POST, "/v1/snapshots")
                .header("content-type", "application/zstd")
                .body(body);
            let snapshot = client.json(request).await?;
            print_id(&snapshot, json)
        }
        SnapshotCommand::Rm(args) => rm(client, args).await,
    }
}

fn snapshot_path(id: &str) -> String {
    format!("/v1/snapshots/{}", encode_path(id))
}

fn print_id(value: &Value, json: bool) -> anyhow::Result<u8> {
    if json {
        print_json(value)?;
    } else {
        println!("{}", value["id"].as_str().unwrap_or_default());
    }
    Ok(0)
}

async fn ls(client: &ApiClient, json: bool) -> anyhow::Result<u8> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page = client
            .json(client.request(Method::GET, "/v1/snapshots").query(&query))
            .await?;
        all.extend(page["snapshots"].as_array().cloned().unwrap_or_default());
        match page["next_after"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
    }
    if json {
        return print_json(&Value::Array(all)).map(|()| 0);
    }
    println!(
        "{:<38}  {:>7}  {:>12}  {:<24}  SOURCE",
        "ID", "FILES", "BYTES", "CREATED"
    );
    for s in &all {
        println!(
            "{:<38}  {:>7}  {:>12}  {:<24}  {}",
            text(&s["id"]),
            text(&s["file_count"]),
            text(&s["bytes_compressed"]),
            text(&s["created_at"]),
            text(&s["source_sandbox"]),
        );
    }
    Ok(0)
}

async fn restore(client: &ApiClient, args: RestoreArgs, count: u32) -> anyhow::Result<u8> {
    let mut limits = Map::new();
    for (key, value) in [("memory_bytes", args.memory), ("pids", args.pids)] {
        if let Some(v) = value {
            limits.insert(key.to_owned(), json!(v));
        }
    }
    let body = json!({
        "count": count,
        "network": match args.network { Network::None => "none", Network::Full => "full" },
        "limits": limits,
    });
    let path = format!("{}/restore", snapshot_path(&args.id));
    if !args.json {
        eprintln!("restoring {} into {count} sandbox(es)...", args.id);
    }
    let restored = client
        .json(client.request(Method::POST, &path).json(&body))
        .await?;
    if args.json {
        return print_json(&restored).map(|()| 0);
    }
    for sandbox in restored["sandboxes"].as_array().into_iter().flatten() {
        println!("{}", text(&sandbox["id"]));
    }
    Ok(0)
}

async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    let mut results = Vec::new();
    let mut failed = false;
    for id in &args.ids {
        match client
            .json(client.request(Method::DELETE, &snapshot_path(id)))
            .await
        {
            Ok(snapshot) => {
                if !args.json {
                    println!("{id} deleted");
                }
                results.push(snapshot);
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

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
