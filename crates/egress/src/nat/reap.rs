//! Finding and removing what a killed server left: its sandboxes' rules
//! by their owner tag, their veths and namespaces; and, for leak checks,
//! what is left of one sandbox.

use std::path::Path;

use super::link::remove_veth;
use super::lock::HostLock;
use super::names::COMMENT;
use super::names::{chain_of, comment_of, veth_of};
use super::rules::{iptables, remove_shared_if_unused, tagged_rules};
use crate::EgressError;
use crate::netns::{Netns, run};

/// Removes everything of one sandbox (best effort, each step logged).
pub(super) async fn remove_sandbox(owner: &str, sandbox_id: &str) {
    let comment = comment_of(owner, sandbox_id);
    for (table, mut rule) in tagged_rules(&comment).await {
        if let Some(first) = rule.first_mut() {
            "-D".clone_into(first);
        }
        let mut args: Vec<&str> = vec!["-t", table];
        args.extend(rule.iter().map(String::as_str));
        if let Err(e) = iptables(&args).await {
            tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing a NAT rule");
        }
    }
    let chain = chain_of(sandbox_id);
    if iptables(&["-n", "-L", &chain]).await.is_ok() {
        for step in [["-F", chain.as_str()], ["-X", chain.as_str()]] {
            if let Err(e) = iptables(&step).await {
                tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing the sandbox's filter chain");
            }
        }
    }
    remove_veth(sandbox_id).await;
}

/// Removes the NAT of `owner`'s sandboxes not in `keep` (left behind by a
/// server that was killed), and their network namespaces. Returns their ids.
pub async fn reap(owner: &str, keep: &[&str]) -> Result<Vec<String>, EgressError> {
    let lock = HostLock::take().await?;
    let prefix = format!("{COMMENT} {owner} ");
    let mut ids: Vec<String> = tagged_rules(&prefix)
        .await
        .into_iter()
        .filter_map(|(_, w)| {
            let i = w.iter().position(|x| x == "--comment")?;
            w.get(i + 1)?.strip_prefix(&prefix).map(str::to_owned)
        })
        .filter(|id| !keep.contains(&id.as_str()))
        .collect();
    ids.sort();
    ids.dedup();
    for id in &ids {
        remove_sandbox(owner, id).await;
        let name = Netns::name_of(id);
        if Path::new("/run/netns").join(&name).exists() {
            let _ = run("ip", &["netns", "del", &name], None).await;
        }
    }
    if !ids.is_empty() {
        remove_shared_if_unused().await;
    }
    drop(lock);
    Ok(ids)
}

/// Host-side veths and tagged rules of `sandbox_id` still present (for
/// leak checks).
pub async fn leftovers(owner: &str, sandbox_id: &str) -> Vec<String> {
    let mut left: Vec<String> = tagged_rules(&comment_of(owner, sandbox_id))
        .await
        .into_iter()
        .map(|(table, w)| format!("{table}: {}", w.join(" ")))
        .collect();
    let veth = veth_of(sandbox_id);
    if Path::new("/sys/class/net").join(&veth).exists() {
        left.push(format!("veth {veth}"));
    }
    if iptables(&["-n", "-L", &chain_of(sandbox_id)]).await.is_ok() {
        left.push(format!("chain {}", chain_of(sandbox_id)));
    }
    left
}
