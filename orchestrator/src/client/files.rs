//! `paddock files get|put|ls` against a server.

use std::io::Write;

use anyhow::Context;
use futures_util::StreamExt;
use paddock_api::http::{Listing, Written};
use paddock_proto::FileKind;
use reqwest::Method;

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
            let written: Written = client.answer(request).await?;
            eprintln!("{} bytes written to {path}", written.bytes);
            Ok(0)
        }
        FilesCommand::Ls { id, dir, json } => {
            let url = format!("/v1/sandboxes/{}/files", encode_path(&id));
            let mut request = client.request(Method::GET, &url);
            if let Some(dir) = &dir {
                request = request.query(&[("dir", dir)]);
            }
            let listing: Listing = client.answer(request).await?;
            if json {
                return print_json(&listing).map(|()| 0);
            }
            for entry in &listing.entries {
                let kind = match entry.kind {
                    FileKind::Dir => "d",
                    FileKind::Symlink => "l",
                    FileKind::File => "-",
                    FileKind::Other => "?",
                };
                let mode = entry.mode;
                let link = match &entry.link_target {
                    Some(target) => format!(" -> {}", printable(target)),
                    None => String::new(),
                };
                // The size unpadded, as this line has always printed it.
                println!(
                    "{kind}{mode:04o} {} {}{link}",
                    entry.size,
                    printable(&entry.name)
                );
            }
            Ok(0)
        }
    }
}
