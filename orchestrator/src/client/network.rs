//! `paddock sandbox network ID [--allow HOST ...]` against a server.

use paddock_api::service::{NetworkChanged, NetworkView, SetNetwork};
use paddock_proto::NetworkPolicy;
use reqwest::Method;

use super::{ApiClient, print_json};
use crate::cli::NetworkChangeArgs;

pub async fn network(client: &ApiClient, args: NetworkChangeArgs) -> anyhow::Result<u8> {
    let path = format!("/v1/sandboxes/{}/network", super::encode_path(&args.id));
    if args.allow.is_empty() {
        let view: NetworkView = client.answer(client.request(Method::GET, &path)).await?;
        if args.json {
            return print_json(&view).map(|()| 0);
        }
        println!("network  {}", view.network.label());
        for change in &view.changes {
            print_change(change);
        }
        return Ok(0);
    }
    let body = SetNetwork {
        network: NetworkPolicy::Allowlist(args.allow),
    };
    let changed: NetworkChanged = client
        .answer(client.request(Method::PUT, &path).json(&body))
        .await?;
    if args.json {
        return print_json(&changed).map(|()| 0);
    }
    print_change(&changed);
    Ok(0)
}

fn print_change(change: &NetworkChanged) {
    let cut = if change.cut.is_empty() {
        String::new()
    } else {
        format!(" (cut {})", change.cut.join(", "))
    };
    println!(
        "{}  {} -> {}  by {}{cut}",
        change.at,
        change.old.label(),
        change.new.label(),
        change.by
    );
}
