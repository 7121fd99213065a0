//! `paddock snapshot create|ls|info|restore|fork|export|import|rm` against a
//! server, with progress on stderr for the long ones (see [`progress`]).

mod progress;

use std::path::Path;

use anyhow::Context;
use futures_util::StreamExt;
use paddock_api::http::{Restored, SnapshotList};
use paddock_api::service::{CreateSnapshot, RestoreSnapshot, SnapshotView};
use paddock_core::ids::SessionId;
use reqwest::Method;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::sandbox::text;
use super::{ApiClient, cell, encode_path, print_json};
use crate::cli::{RestoreArgs, RmArgs, SnapshotCommand};
use progress::{Progress, amount};

pub async fn snapshot(client: &ApiClient, command: SnapshotCommand) -> anyhow::Result<u8> {
    match command {
        SnapshotCommand::Create {
            sandbox,
            excludes,
            max_files,
            max_bytes,
            session,
            json,
        } => {
            let session = session
                .as_deref()
                .map(|id| SessionId::parse(id).with_context(|| format!("--session {id}")))
                .transpose()?;
            let body = CreateSnapshot {
                excludes,
                max_files,
                max_bytes,
                session,
            };
            let path = format!("/v1/sandboxes/{}/snapshots", encode_path(&sandbox));
            let progress = Progress::spinner(format!("snapshotting {sandbox}"), json);
            let snapshot: SnapshotView = match client
                .answer(client.request(Method::POST, &path).json(&body))
                .await
            {
                Ok(snapshot) => snapshot,
                Err(err) => {
                    progress.abandon();
                    return Err(err);
                }
            };
            let elapsed = progress.elapsed();
            progress.finish(format!(
                "snapshot {}: {} entries, {}, packed to {}",
                snapshot.id,
                snapshot.file_count,
                amount(snapshot.bytes_raw, elapsed),
                indicatif::HumanBytes(snapshot.bytes_compressed),
            ));
            print_id(&snapshot, json)
        }
        SnapshotCommand::Ls { json } => ls(client, json).await,
        SnapshotCommand::Info { id, json } => {
            let snapshot: SnapshotView = client
                .answer(client.request(Method::GET, &snapshot_path(&id)))
                .await?;
            if json {
                return print_json(&snapshot).map(|()| 0);
            }
            // Every field of the answer, one a line, in the order `--json` prints them.
            if let Value::Object(fields) = serde_json::to_value(&snapshot)? {
                for (key, value) in &fields {
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
        SnapshotCommand::Export { id, file, json } => export(client, &id, &file, json).await,
        SnapshotCommand::Import {
            file,
            max_files,
            max_bytes,
            json,
        } => import(client, &file, max_files, max_bytes, json).await,
        SnapshotCommand::Rm(args) => rm(client, args).await,
    }
}

async fn export(client: &ApiClient, id: &str, file: &Path, json: bool) -> anyhow::Result<u8> {
    let path = format!("{}/archive", snapshot_path(id));
    let response = client.send(client.request(Method::GET, &path)).await?;
    let mut out = tokio::fs::File::create(file)
        .await
        .with_context(|| format!("creating {}", file.display()))?;
    let progress = Progress::bytes(format!("exporting {id}"), response.content_length(), json);
    let mut body = response.bytes_stream();
    let mut bytes = 0u64;
    let written: anyhow::Result<()> = async {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.context("downloading the archive")?;
            out.write_all(&chunk)
                .await
                .with_context(|| format!("writing {}", file.display()))?;
            bytes += chunk.len() as u64;
            progress.inc(chunk.len() as u64);
        }
        out.flush()
            .await
            .with_context(|| format!("writing {}", file.display()))
    }
    .await;
    if let Err(err) = written {
        progress.abandon();
        return Err(err);
    }
    let elapsed = progress.elapsed();
    progress.finish(format!(
        "wrote {} to {}",
        amount(bytes, elapsed),
        file.display()
    ));
    if json {
        print_json(&Exported { bytes, file, id })?;
    }
    Ok(0)
}

async fn import(
    client: &ApiClient,
    file: &Path,
    max_files: Option<u64>,
    max_bytes: Option<u64>,
    json: bool,
) -> anyhow::Result<u8> {
    let input = tokio::fs::File::open(file)
        .await
        .with_context(|| format!("opening {}", file.display()))?;
    let size = input
        .metadata()
        .await
        .with_context(|| format!("reading the size of {}", file.display()))?
        .len();
    let progress = Progress::bytes(format!("importing {}", file.display()), Some(size), json);
    let counter = progress.counter();
    let stream = tokio_util::io::ReaderStream::new(input).inspect(move |chunk| {
        if let Ok(chunk) = chunk {
            counter.inc(chunk.len() as u64);
        }
    });
    let mut query: Vec<(&str, u64)> = Vec::new();
    query.extend(max_files.map(|n| ("max_files", n)));
    query.extend(max_bytes.map(|n| ("max_bytes", n)));
    let request = client
        .request(Method::POST, "/v1/snapshots")
        .query(&query)
        .header("content-type", "application/zstd")
        .header("content-length", size)
        .body(reqwest::Body::wrap_stream(stream));
    let snapshot: SnapshotView = match client.answer(request).await {
        Ok(snapshot) => snapshot,
        Err(err) => {
            progress.abandon();
            return Err(err);
        }
    };
    let elapsed = progress.elapsed();
    progress.finish(format!(
        "imported {} as {} ({} entries)",
        amount(size, elapsed),
        snapshot.id,
        snapshot.file_count,
    ));
    print_id(&snapshot, json)
}

fn snapshot_path(id: &str) -> String {
    format!("/v1/snapshots/{}", encode_path(id))
}

fn print_id(snapshot: &SnapshotView, json: bool) -> anyhow::Result<u8> {
    if json {
        print_json(snapshot)?;
    } else {
        println!("{}", snapshot.id);
    }
    Ok(0)
}

/// What `snapshot export --json` prints (the client's own, not an answer).
#[derive(serde::Serialize)]
struct Exported<'a> {
    bytes: u64,
    file: &'a Path,
    id: &'a str,
}

async fn ls(client: &ApiClient, json: bool) -> anyhow::Result<u8> {
    let mut all: Vec<SnapshotView> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: SnapshotList = client
            .answer(client.request(Method::GET, "/v1/snapshots").query(&query))
            .await?;
        all.extend(page.snapshots);
        match page.next_after {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    if json {
        return print_json(&all).map(|()| 0);
    }
    println!(
        "{:<38}  {:>7}  {:>12}  {:<24}  {:<38}  PARENT",
        "ID", "ENTRIES", "BYTES", "CREATED", "SOURCE"
    );
    for s in &all {
        println!(
            "{:<38}  {:>7}  {:>12}  {:<24}  {:<38}  {}",
            s.id.to_string(),
            s.file_count,
            s.bytes_compressed,
            s.created_at,
            cell(s.source_sandbox.as_ref()),
            cell(s.parent.as_ref()),
        );
    }
    Ok(0)
}

async fn restore(client: &ApiClient, args: RestoreArgs, count: u32) -> anyhow::Result<u8> {
    let (backend, image) =
        super::backend_choice(args.backend.backend, args.backend.image.as_deref());
    let body = RestoreSnapshot {
        count,
        limits: args.limits.request(),
        network: args.network.policy,
        read_only: args.read_only,
        backend,
        image,
    };
    let path = format!("{}/restore", snapshot_path(&args.id));
    // The size, for the summary (and an early "not found").
    let snapshot: SnapshotView = client
        .answer(client.request(Method::GET, &snapshot_path(&args.id)))
        .await?;
    let raw = snapshot.bytes_raw;
    let progress = Progress::spinner(
        format!(
            "restoring {} ({}) into {count} sandbox{}",
            args.id,
            indicatif::HumanBytes(raw),
            if count == 1 { "" } else { "es" }
        ),
        args.json,
    );
    let restored: Restored = match client
        .answer(client.request(Method::POST, &path).json(&body))
        .await
    {
        Ok(restored) => restored,
        Err(err) => {
            progress.abandon();
            return Err(err);
        }
    };
    let elapsed = progress.elapsed();
    progress.finish(format!(
        "restored {count} sandbox{}: {}",
        if count == 1 { "" } else { "es" },
        amount(raw.saturating_mul(u64::from(count)), elapsed)
    ));
    if args.json {
        return print_json(&restored).map(|()| 0);
    }
    for sandbox in &restored.sandboxes {
        println!("{}", sandbox.id);
    }
    Ok(0)
}

async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    super::delete_each(client, &args, snapshot_path, |id, _: &SnapshotView| {
        format!("{id} deleted")
    })
    .await
}
