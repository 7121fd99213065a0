//! `paddock volume create|ls|rm` against a server.

use anyhow::Context;
use paddock_api::http::VolumeList;
use paddock_api::service::{CreateVolume, VolumeView};
use paddock_core::volume::VolumeName;
use reqwest::Method;

use super::{ApiClient, encode_path, print_json};
use crate::cli::VolumeCommand;

pub async fn volume(client: &ApiClient, command: VolumeCommand) -> anyhow::Result<u8> {
    match command {
        VolumeCommand::Create { name, size, json } => {
            let body = CreateVolume {
                name: VolumeName::parse(&name).context("the volume's name")?,
                quota_bytes: size,
            };
            let volume: VolumeView = client
                .answer(client.request(Method::POST, "/v1/volumes").json(&body))
                .await?;
            if json {
                print_json(&volume)?;
            } else {
                println!("{}", volume.name);
            }
            Ok(0)
        }
        VolumeCommand::Ls { json } => ls(client, json).await,
        VolumeCommand::Rm(args) => {
            super::delete_each(client, &args, volume_path, |name, _: &VolumeView| {
                format!("{name} deleted")
            })
            .await
        }
    }
}

fn volume_path(name: &str) -> String {
    format!("/v1/volumes/{}", encode_path(name))
}

async fn ls(client: &ApiClient, json: bool) -> anyhow::Result<u8> {
    let mut all: Vec<VolumeView> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: VolumeList = client
            .answer(client.request(Method::GET, "/v1/volumes").query(&query))
            .await?;
        all.extend(page.volumes);
        match page.next_after {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    if json {
        return print_json(&all).map(|()| 0);
    }
    println!("{:<40}  {:>12}  CREATED", "NAME", "QUOTA");
    for v in &all {
        println!(
            "{:<40}  {:>12}  {}",
            v.name.to_string(),
            indicatif::HumanBytes(v.quota_bytes).to_string(),
            v.created_at
        );
    }
    Ok(0)
}
