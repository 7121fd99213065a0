//! Removing the containers that sandboxes of this node left behind when
//! their owner died without destroying them, with their network: the
//! named namespace (found by the sandbox's marker under temp_root, as a
//! temporary workspace) and a `full` sandbox's host-side NAT (found by
//! this backend's owner tag in its rules).

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptions;
use paddock_core::sandbox::{BoxError, OrphanReport, SandboxId};

use super::config::{DockerConfig, LABEL_BACKEND, LABEL_NODE, LABEL_SANDBOX};
use super::sandbox::remove_container;

/// The containers labelled with this node and backend, running or not, as
/// (container id, sandbox id).
pub(super) async fn labelled(
    docker: &Docker,
    config: &DockerConfig,
) -> Result<Vec<(String, String)>, BoxError> {
    let filters = HashMap::from([(
        "label".to_owned(),
        vec![
            format!("{LABEL_NODE}={}", config.node),
            format!("{LABEL_BACKEND}={}", config.engine.backend_name()),
        ],
    )]);
    let options = ListContainersOptions {
        all: true,
        filters: Some(filters),
        ..ListContainersOptions::default()
    };
    let containers = docker.list_containers(Some(options)).await?;
    Ok(containers
        .into_iter()
        .filter_map(|c| {
            let sandbox = c.labels.as_ref()?.get(LABEL_SANDBOX)?.clone();
            Some((c.id?, sandbox))
        })
        .collect())
}

pub(super) async fn reap(
    docker: &Docker,
    config: &DockerConfig,
    keep: &[SandboxId],
) -> Result<OrphanReport, BoxError> {
    let mut report = OrphanReport::default();
    for (container, sandbox) in labelled(docker, config).await? {
        if keep.iter().any(|k| k.as_str() == sandbox) {
            continue;
        }
        tracing::info!(sandbox_id = %sandbox, container, "removing an orphaned container");
        remove_container(docker, &container, config.stop_timeout).await?;
        if let Ok(id) = SandboxId::parse(&sandbox) {
            report.sandboxes_removed.push(id);
        }
    }
    // Temporary workspaces whose owner died before removing them (the
    // container itself went with its stdin).
    if let Some(root) = &config.temp_root {
        let root = root.clone();
        let found =
            tokio::task::spawn_blocking(move || crate::shared::host::temp_workspaces(&root))
                .await??;
        for (sandbox, dir) in found {
            if keep.iter().any(|k| k.as_str() == sandbox) {
                continue;
            }
            tokio::fs::remove_dir_all(&dir)
                .await
                .map_err(|e| format!("removing {}: {e}", dir.display()))?;
            if let Ok(id) = SandboxId::parse(&sandbox)
                && !report.sandboxes_removed.contains(&id)
            {
                report.sandboxes_removed.push(id);
            }
        }
    }
    let keep_ids: Vec<&str> = keep.iter().map(SandboxId::as_str).collect();
    for id in paddock_egress::nat::reap(&super::network::owner(config), &keep_ids).await? {
        if let Ok(id) = SandboxId::parse(&id)
            && !report.sandboxes_removed.contains(&id)
        {
            report.sandboxes_removed.push(id);
        }
    }
    // The names of the reaped sandboxes' namespaces (the namespace itself
    // went with its container).
    for id in &report.sandboxes_removed {
        paddock_egress::Netns::remove_stale(id.as_str()).await;
    }
    report.sandboxes_removed.sort();
    Ok(report)
}
