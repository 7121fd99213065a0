//! `paddock files get|put|ls` against a server.

use std::io::Write;

use anyhow::Context;
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::Value;

use super::{ApiClient, encode_path, print_json};
use crate::cli::FilesCommand;
use crate::printable::printable;

pub async fn files(client: &ApiClient, command: FilesCommand) -> anyhow::Result<u8> {
    match command {
        FilesCommand::Get { id, path, output } => {
            let url = format!(
                "/v1/sandboxes/{}/files/{}",
                encode_path(&id),
                encode_path(&path)
            );
            let response = client.send(client.request(Method::GET, &url)).await?;
            let mut sink: Box<dyn Write> = match &output {
                Some(file) => Box::new(
                    std::fs::File::create(file)
                        .with_context(|| format!("creating {}", file.display()))?,
                ),
                None => Box::new(std::io::stdout().lock()),
            };
            let mut body = response.bytes_stream();
            while let Some(chunk) = body.next().await {
                sink.write_all(&chunk.context("reading the file from the server")?)?;
            }
            sink.flush()?;
            Ok(0)
        }
        FilesCommand::Put {
            id,
            path,
            input,
            mode,
        } => {
            let data = match &input {
                Some(file) => {
                    std::fs::read(file).with_context(|| format!("reading {}", file.display()))?
                }
                None => {
                    let mut data = Vec::new();
                    std::io::Read::read_to_end(&mut std::io::stdin(), &mut data)
                        .context("reading stdin")?;
                    data
                }
            };
            let url = format!(
                "/v1/sandboxes/{}/files/{}",
                encode_path(&id),
                encode_path(&path)
            );
            let mut request = client.request(Method::PUT, &url).body(data);
            if let Some(mode) = mode {
                request = request.query(&[("mode", mode)]);
            }
            let written = client.json(request).await?;
            eprintln!("{} bytes written to {path}", written["bytes"]);
            Ok(0)
        }
        FilesCommand::Ls { id, dir, json } => {
            let url = format!("/v1/sandboxes/{}/files", encode_path(&id));
            let mut request = client.request(Method::GET, &url);
            if let Some(dir) = &dir {
                request = request.query(&[("dir", dir)]);
            }
            let listing = client.json(request).await?;
            if json {
                return print_json(&listing).map(|()| 0);
            }
            for entry in listing["entries"].as_array().into_iter().flatten() {
                let kind = match entry["kind"].as_str() {
                    Some("dir") => "d",
                    Some("symlink") => "l",
                    Some("file") => "-",
                    _ => "?",
                };
                let mode = entry["mode"].as_u64().unwrap_or(0);
                let link = match &entry["link_target"] {
                    Value::String(target) => format!(" -> {}", printable(target)),
                    _ => String::new(),
                };
                println!(
                    "{kind}{mode:04o} {:>12} {}{link}",
                    entry["size"],
                    printable(entry["name"].as_str().unwrap_or_default())
                );
            }
            Ok(0)
        }
    }
}
