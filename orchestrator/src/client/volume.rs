//! `paddock volume create|ls|rm|snapshot` against a server.

use anyhow::Context;
use paddock_api::http::{VolumeList, VolumeSnapshotList};
use paddock_api::service::{
    CreateVolume, CreateVolumeSnapshot, SnapshotSource, VolumeSnapshotView, VolumeView,
};
use paddock_core::volume::VolumeName;
use reqwest::Method;

use super::{ApiClient, encode_path, print_json};
use crate::cli::{VolumeCommand, VolumeSnapshotCommand};

pub async fn volume(client: &ApiClient, command: VolumeCommand) -> anyhow::Result<u8> {
    match command {
        VolumeCommand::Create {
            name,
            size,
            from_snapshot,
            json,
        } => {
            let body = CreateVolume {
                name: VolumeName::parse(&name).context("the volume's name")?,
                quota_bytes: size,
                from_snapshot: from_snapshot.as_deref().map(snapshot_source).transpose()?,
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
        VolumeCommand::Snapshot(command) => snapshot(client, command).await,
    }
}

fn volume_path(name: &str) -> String {
    format!("/v1/volumes/{}", encode_path(name))
}

fn snapshots_path(volume: &str) -> String {
    format!("{}/snapshots", volume_path(volume))
}

/// `VOLUME/SNAPSHOT` of `--from-snapshot`.
fn snapshot_source(text: &str) -> anyhow::Result<SnapshotSource> {
    let (volume, snapshot) = text
        .split_once('/')
        .with_context(|| format!("--from-snapshot {text:?}: expected VOLUME/SNAPSHOT"))?;
    Ok(SnapshotSource {
        volume: VolumeName::parse(volume).context("the snapshot's volume")?,
        snapshot: VolumeName::parse(snapshot).context("the snapshot's name")?,
    })
}

async fn snapshot(client: &ApiClient, command: VolumeSnapshotCommand) -> anyhow::Result<u8> {
    match command {
        VolumeSnapshotCommand::Create { volume, name, json } => {
            let body = CreateVolumeSnapshot {
                name: VolumeName::parse(&name).context("the snapshot's name")?,
            };
            let view: VolumeSnapshotView = client
                .answer(
                    client
                        .request(Method::POST, &snapshots_path(&volume))
                        .json(&body),
                )
                .await?;
            if json {
                print_json(&view)?;
            } else {
                println!("{}/{}", view.volume, view.name);
            }
            Ok(0)
        }
        VolumeSnapshotCommand::Ls { volume, json } => snapshot_ls(client, &volume, json).await,
        VolumeSnapshotCommand::Rm { volume, names } => {
            let path = |name: &str| format!("{}/{}", snapshots_path(&volume), encode_path(name));
            super::delete_each(client, &names, path, |name, _: &VolumeSnapshotView| {
                format!("{volume}/{name} deleted")
            })
            .await
        }
    }
}

async fn snapshot_ls(client: &ApiClient, volume: &str, json: bool) -> anyhow::Result<u8> {
    let mut all: Vec<VolumeSnapshotView> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: VolumeSnapshotList = client
            .answer(
                client
                    .request(Method::GET, &snapshots_path(volume))
                    .query(&query),
            )
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
    println!("{:<40}  {:>12}  CREATED", "NAME", "ALONE");
    for s in &all {
        println!(
            "{:<40}  {:>12}  {}",
            s.name.to_string(),
            indicatif::HumanBytes(s.exclusive_bytes.unwrap_or(0)).to_string(),
            s.created_at
        );
    }
    Ok(0)
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
