//! `paddock workspace create|ls|download|rm` against a server, and the
//! directory upload `paddock run --server` shares: a directory goes up as one
//! tar.zst (`POST /v1/workspaces/import`), packed by the same code as a
//! snapshot, and comes down the same way, unpacked with every check.

use std::path::Path;

use anyhow::{Context, bail};
use futures_util::StreamExt;
use paddock_api::http::WorkspaceList;
use paddock_api::service::WorkspaceView;
use paddock_api::service::commands::CreateWorkspace;
use paddock_snapshot::{PackOptions, SnapshotError, UnpackOptions};
use reqwest::Method;
use tokio::io::AsyncWriteExt;

use super::{ApiClient, encode_path, print_json};
use crate::cli::{RmArgs, WorkspaceCommand};

pub async fn workspace(client: &ApiClient, command: WorkspaceCommand) -> anyhow::Result<u8> {
    match command {
        WorkspaceCommand::Create {
            dir,
            name,
            size,
            json,
        } => {
            let view = match dir {
                Some(dir) => {
                    let dir = dir
                        .canonicalize()
                        .with_context(|| format!("{}", dir.display()))?;
                    upload_dir(client, &dir, name.as_deref()).await?
                }
                None => {
                    let body = CreateWorkspace {
                        name: name.unwrap_or_else(|| "workspace".to_owned()),
                        quota_bytes: size,
                    };
                    let request = client.request(Method::POST, "/v1/workspaces").json(&body);
                    client.answer(request).await?
                }
            };
            if json {
                print_json(&view)?;
            } else {
                println!("{}", view.id);
            }
            Ok(0)
        }
        WorkspaceCommand::Ls { json } => ls(client, json).await,
        WorkspaceCommand::Download {
            id,
            target,
            archive,
        } => download(client, &id, &target, archive).await,
        WorkspaceCommand::Rm(args) => rm(client, args).await,
    }
}

/// The directory could not be packed within the upload's limits (the
/// caller's to fix: exclude files, or raise the limits).
#[derive(Debug)]
pub struct PackRefused(String);

impl std::fmt::Display for PackRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PackRefused {}

/// Packs `dir` (the snapshot excludes and limits) into a temporary file and
/// uploads it as a new workspace on the server.
pub async fn upload_dir(
    client: &ApiClient,
    dir: &Path,
    name: Option<&str>,
) -> anyhow::Result<WorkspaceView> {
    let options = PackOptions::default();
    let limits = options.limits;
    let source = dir.to_path_buf();
    let packed = tokio::task::spawn_blocking(move || -> anyhow::Result<std::fs::File> {
        let mut file = tempfile::tempfile().context("creating a temporary file for the upload")?;
        match paddock_snapshot::pack(&source, &options, &mut file) {
            Ok(_) => {}
            Err(err @ (SnapshotError::OverLimit { .. } | SnapshotError::TooDeep { .. })) => {
                return Err(PackRefused(format!(
                    "--workspace {}: {} (an upload holds at most {} entries and {} bytes; \
                     node_modules, target, dist and caches are left out)",
                    source.display(),
                    paddock_proto::error_chain(&err),
                    limits.max_files,
                    limits.max_bytes
                ))
                .into());
            }
            Err(err) => {
                return Err(err).with_context(|| format!("packing {}", source.display()));
            }
        }
        std::io::Seek::rewind(&mut file).context("rewinding the upload")?;
        Ok(file)
    })
    .await
    .context("the packing task")??;
    let size = packed.metadata().context("the upload's size")?.len();
    let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(packed));
    let name = name
        .map(str::to_owned)
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "workspace".to_owned());
    let query = [
        ("name", name),
        ("max_files", limits.max_files.to_string()),
        ("max_bytes", limits.max_bytes.to_string()),
    ];
    let request = client
        .request(Method::POST, "/v1/workspaces/import")
        .query(&query)
        .header("content-type", "application/zstd")
        .header("content-length", size)
        .body(reqwest::Body::wrap_stream(stream));
    client.answer(request).await.context("the new workspace")
}

async fn ls(client: &ApiClient, json: bool) -> anyhow::Result<u8> {
    let mut all: Vec<WorkspaceView> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: WorkspaceList = client
            .answer(client.request(Method::GET, "/v1/workspaces").query(&query))
            .await?;
        all.extend(page.workspaces);
        match page.next_after {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    if json {
        /// What `--json` prints: every page's workspaces in one list.
        #[derive(serde::Serialize)]
        struct All {
            workspaces: Vec<WorkspaceView>,
        }
        print_json(&All { workspaces: all })?;
        return Ok(0);
    }
    if all.is_empty() {
        println!("no workspaces");
        return Ok(0);
    }
    println!("{:<36}  {:<24}  NAME", "ID", "CREATED");
    for w in &all {
        println!(
            "{:<36}  {:<24}  {}",
            w.id.as_str(),
            w.created_at,
            crate::printable::printable(&w.name)
        );
    }
    Ok(0)
}

/// Fetches the workspace's archive into a temporary file, then writes it to
/// `target` (`archive`) or unpacks it there with the restore checks.
async fn download(
    client: &ApiClient,
    id: &str,
    target: &Path,
    archive: bool,
) -> anyhow::Result<u8> {
    if !archive
        && target.exists()
        && std::fs::read_dir(target)
            .with_context(|| format!("{}", target.display()))?
            .next()
            .is_some()
    {
        bail!("{}: not an empty directory", target.display());
    }
    let path = format!("/v1/workspaces/{}/archive", encode_path(id));
    let response = client.send(client.request(Method::GET, &path)).await?;
    let file = if archive {
        tokio::fs::File::create(target)
            .await
            .with_context(|| format!("creating {}", target.display()))?
    } else {
        tokio::fs::File::from_std(tempfile::tempfile().context("a temporary file")?)
    };
    let mut out = file;
    let mut body = response.bytes_stream();
    let mut bytes = 0u64;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.context("downloading the workspace")?;
        out.write_all(&chunk).await.context("writing the archive")?;
        bytes += chunk.len() as u64;
    }
    out.flush().await.context("writing the archive")?;
    if archive {
        eprintln!("paddock: wrote {bytes} bytes to {}", target.display());
        return Ok(0);
    }
    let mut file = out.into_std().await;
    let target = target.to_path_buf();
    let stats = tokio::task::spawn_blocking(move || {
        std::io::Seek::rewind(&mut file).context("rewinding the archive")?;
        paddock_snapshot::unpack(file, &target, &UnpackOptions::default())
            .with_context(|| format!("unpacking into {}", target.display()))
    })
    .await
    .context("the unpacking task")??;
    eprintln!(
        "paddock: {} entries ({} bytes) written",
        stats.files, stats.bytes
    );
    Ok(0)
}

async fn rm(client: &ApiClient, args: RmArgs) -> anyhow::Result<u8> {
    super::delete_each(
        client,
        &args,
        |id| format!("/v1/workspaces/{}", encode_path(id)),
        |id, _: &WorkspaceView| format!("{id} deleted"),
    )
    .await
}
