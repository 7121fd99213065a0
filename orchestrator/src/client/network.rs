//! `paddock sandbox network ID [--allow HOST ...]` against a server.

use paddock_api::http::NetworkChangeList;
use paddock_api::service::{NetworkChanged, NetworkView, SetNetwork};
use paddock_proto::NetworkPolicy;
use reqwest::Method;

use super::{ApiClient, print_json};
use crate::cli::NetworkChangeArgs;

pub async fn network(client: &ApiClient, args: NetworkChangeArgs) -> anyhow::Result<u8> {
    let path = format!("/v1/sandboxes/{}/network", super::encode_path(&args.id));
    if args.allow.is_empty() {
        // the changes are kept once the sandbox stopped; its network now is
        // known only while it runs
        let changes = all_changes(client, &path).await?;
        let now: anyhow::Result<NetworkView> =
            client.answer(client.request(Method::GET, &path)).await;
        if args.json {
            let network = now.ok().map(|view| view.network);
            let answer = serde_json::json!({"network": network, "changes": changes});
            return print_json(&answer).map(|()| 0);
        }
        match now {
            Ok(view) => println!("network  {}", view.network.label()),
            Err(e) => println!("network  unknown: {e:#}"),
        }
        for change in &changes {
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

/// Every page of the sandbox's `network.changed` events, oldest first.
async fn all_changes(client: &ApiClient, path: &str) -> anyhow::Result<Vec<NetworkChanged>> {
    let path = format!("{path}/changes");
    let mut all = Vec::new();
    let mut after: Option<u64> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![("limit", "1000".to_owned())];
        if let Some(after) = after {
            query.push(("after", after.to_string()));
        }
        let page: NetworkChangeList = client
            .answer(client.request(Method::GET, &path).query(&query))
            .await?;
        all.extend(page.changes);
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(all),
        }
    }
}

fn print_change(change: &NetworkChanged) {
    let cut = if change.cut.is_empty() {
        String::new()
    } else {
        format!(" (cut {})", change.cut.join(", "))
    };
    println!(
        "#{}  {}  {} -> {}  by {}{cut}",
        change.seq,
        change.at,
        change.old.label(),
        change.new.label(),
        change.by
    );
}
