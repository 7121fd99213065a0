//! E2B's sandbox metrics (`GET /sandboxes/{id}/metrics`, `GET
//! /sandboxes/metrics`): one sample of now, since Paddock keeps no series
//! (E2B's come from its guest agent every few seconds). A paused sandbox
//! has none.
//!
//! The sandbox service measures nothing of a sandbox's use, so CPU and
//! memory are read here from what the kernel counts for the sandbox's own
//! cgroup (`cgroup.rs`), found from the host pid its record holds; CPU use
//! is measured over [`CPU_WINDOW`]. Memory used leaves out the page cache
//! (`memCache`); the total is the cgroup's limit, else the sandbox's, else
//! the host's. Where no cgroup of its own can be read, CPU and memory used
//! are 0. Disk is what `df` in the sandbox says of its home (`/workspace`),
//! as E2B's guest agent reports its own disk: for a temporary workspace
//! the sandbox's own tmpfs, sized by its workspace limit; 0 where `df`
//! cannot tell.

use std::collections::BTreeMap;
use std::path::Path as FsPath;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{SandboxState, Timestamp};
use serde::{Deserialize, Serialize};

use super::auth::ApiKey;
use super::envd::paths::WORKSPACE;
use super::error::E2bError;
use super::sandboxes::shown_sandbox;
use crate::http::AppState;
use crate::service::SandboxView;
use crate::service::commands::ExecCommand;

mod cgroup;

use cgroup::{CgroupSample, HostFiles, RealFiles, sample};

/// How long CPU use is measured over.
pub const CPU_WINDOW: Duration = Duration::from_millis(250);
/// Most sandboxes one `GET /sandboxes/metrics` names (E2B's limit).
const MAX_IDS: usize = 100;

/// `SandboxMetric` of E2B's spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxMetric {
    timestamp: String,
    timestamp_unix: i64,
    cpu_count: u64,
    cpu_used_pct: f64,
    mem_used: u64,
    mem_total: u64,
    mem_cache: u64,
    disk_used: u64,
    disk_total: u64,
}

/// `SandboxesWithMetrics`.
#[derive(Debug, Serialize)]
pub struct SandboxesWithMetrics {
    sandboxes: BTreeMap<String, SandboxMetric>,
}

#[derive(Debug, Default, Deserialize)]
pub struct MetricsQuery {
    /// Unix seconds: the sample is answered only within [start, end].
    start: Option<i64>,
    end: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    sandbox_ids: Option<String>,
}

/// `GET /sandboxes/{id}/metrics`: one sample of a running sandbox (none
/// when paused, or when now is outside `start`..`end`).
pub async fn sandbox_metrics(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    Query(query): Query<MetricsQuery>,
) -> Result<Json<Vec<SandboxMetric>>, E2bError> {
    if let (Some(start), Some(end)) = (query.start, query.end)
        && start > end
    {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "start must not be after end",
        ));
    }
    let (_, view) = shown_sandbox(&state, &tenant, &id).await?;
    let now_secs = state.service.now().as_millis() / 1000;
    let within =
        query.start.is_none_or(|s| s <= now_secs) && query.end.is_none_or(|e| now_secs <= e);
    if view.state != SandboxState::Running || !within {
        return Ok(Json(Vec::new()));
    }
    let mut measured = measure(&state, &tenant, &[view]).await;
    Ok(Json(measured.pop().map(|(_, m)| m).into_iter().collect()))
}

/// `GET /sandboxes/metrics?sandbox_ids=a,b`: a sample of each named
/// sandbox of the tenant that runs; the others are left out.
pub async fn list_metrics(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Query(query): Query<ListQuery>,
) -> Result<Json<SandboxesWithMetrics>, E2bError> {
    let raw = query.sandbox_ids.unwrap_or_default();
    let mut ids: Vec<&str> = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            format!("sandbox_ids: name 1 to {MAX_IDS} sandboxes, comma-separated"),
        ));
    }
    let mut running = Vec::new();
    for id in ids {
        let Ok(sandbox) = SandboxId::parse(id) else {
            continue;
        };
        if let Ok(view) = state.service.get_sandbox(&tenant, &sandbox).await
            && view.state == SandboxState::Running
        {
            running.push(view);
        }
    }
    let sandboxes = measure(&state, &tenant, &running)
        .await
        .into_iter()
        .map(|(id, metric)| (id.to_string(), metric))
        .collect();
    Ok(Json(SandboxesWithMetrics { sandboxes }))
}

/// A sample of each sandbox: their disks first (a `df` is CPU the window
/// must not count), then their cgroups twice, [`CPU_WINDOW`] apart.
async fn measure(
    state: &AppState,
    tenant: &TenantId,
    views: &[SandboxView],
) -> Vec<(SandboxId, SandboxMetric)> {
    let disks =
        futures_util::future::join_all(views.iter().map(|v| disk(state, tenant, &v.id))).await;
    let mut pids = Vec::with_capacity(views.len());
    for view in views {
        let pid = match state.service.store().get_sandbox(tenant, &view.id).await {
            Ok(record) => record.pid,
            Err(_) => None,
        };
        pids.push(pid);
    }
    let first = sample_all(pids.clone()).await;
    let started = Instant::now();
    tokio::time::sleep(CPU_WINDOW).await;
    let second = sample_all(pids).await;
    let window_ns = u64::try_from(started.elapsed().as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    let now = state.service.now();
    let host_memory = host_memory().await;
    views
        .iter()
        .zip(disks)
        .zip(first.into_iter().zip(second))
        .map(|((view, (disk_used, disk_total)), (before, after))| {
            let cpu_count = view
                .limits
                .cpu_millis
                .map_or(1, |m| m.div_ceil(1000).max(1));
            let metric = metric_of(MetricInputs {
                now,
                cpu_count,
                before,
                after,
                window_ns,
                memory_limit: view.limits.memory_bytes.or(host_memory),
                disk_used,
                disk_total,
            });
            (view.id.clone(), metric)
        })
        .collect()
}

struct MetricInputs {
    now: Timestamp,
    cpu_count: u64,
    before: CgroupSample,
    after: CgroupSample,
    window_ns: u64,
    /// The memory the sandbox may use when its cgroup says no limit.
    memory_limit: Option<u64>,
    disk_used: u64,
    disk_total: u64,
}

fn metric_of(inputs: MetricInputs) -> SandboxMetric {
    let MetricInputs {
        now,
        cpu_count,
        before,
        after,
        window_ns,
        memory_limit,
        disk_used,
        disk_total,
    } = inputs;
    let cpu_used_pct = match (before.cpu_ns, after.cpu_ns) {
        (Some(a), Some(b)) => {
            let used = b.saturating_sub(a) as f64;
            let pct = used * 100.0 / (window_ns as f64 * cpu_count as f64);
            (pct.clamp(0.0, 100.0) * 100.0).round() / 100.0
        }
        _ => 0.0,
    };
    let cache = after.mem_cache.unwrap_or(0);
    SandboxMetric {
        timestamp: now.to_string(),
        timestamp_unix: now.as_millis() / 1000,
        cpu_count,
        cpu_used_pct,
        mem_used: after.mem_usage.unwrap_or(0).saturating_sub(cache),
        mem_total: after.mem_limit.or(memory_limit).unwrap_or(0),
        mem_cache: cache,
        disk_used,
        disk_total,
    }
}

/// `df` of the sandbox's home, in bytes (used, total); zeros when it
/// cannot say.
async fn disk(state: &AppState, tenant: &TenantId, id: &SandboxId) -> (u64, u64) {
    let command = ExecCommand {
        shell: Some(format!("df -Pk {WORKSPACE}")),
        timeout_ms: Some(10_000),
        ..ExecCommand::default()
    };
    match state.service.exec(tenant, id, command).await {
        Ok(out) if out.exit.exit_code == Some(0) => parse_df(&out.stdout).unwrap_or_default(),
        Ok(out) => {
            tracing::debug!(sandbox_id = %id, stderr = %out.stderr, "df in the sandbox failed");
            (0, 0)
        }
        Err(err) => {
            tracing::debug!(sandbox_id = %id, error = %err, "df in the sandbox failed");
            (0, 0)
        }
    }
}

/// Used and total bytes from `df -Pk` output (fields counted from the end
/// of its last line: a device name may hold spaces).
fn parse_df(out: &str) -> Option<(u64, u64)> {
    let line = out.lines().rev().find(|l| !l.trim().is_empty())?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let n = fields.len();
    if n < 6 {
        return None;
    }
    let total: u64 = fields[n - 5].parse().ok()?;
    let used: u64 = fields[n - 4].parse().ok()?;
    Some((used.saturating_mul(1024), total.saturating_mul(1024)))
}

/// The host's memory (`MemTotal`), for a sandbox without a limit.
async fn host_memory() -> Option<u64> {
    let text = tokio::task::spawn_blocking(|| RealFiles.read(FsPath::new("/proc/meminfo")))
        .await
        .ok()
        .flatten()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

async fn sample_all(pids: Vec<Option<u32>>) -> Vec<CgroupSample> {
    let count = pids.len();
    tokio::task::spawn_blocking(move || {
        pids.into_iter()
            .map(|pid| pid.map(|pid| sample(&RealFiles, pid)).unwrap_or_default())
            .collect()
    })
    .await
    .unwrap_or_else(|_| vec![CgroupSample::default(); count])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cpu_use_is_a_share_of_the_sandboxs_cpus_over_the_window() {
        let sampled = |cpu_ns| CgroupSample {
            cpu_ns: Some(cpu_ns),
            mem_usage: Some(10 << 20),
            mem_cache: Some(4 << 20),
            mem_limit: None,
        };
        let metric = metric_of(MetricInputs {
            now: Timestamp::from_millis(1_700_000_000_123),
            cpu_count: 2,
            before: sampled(1_000),
            after: sampled(1_000 + 250_000_000),
            window_ns: 250_000_000,
            memory_limit: Some(1 << 30),
            disk_used: 5,
            disk_total: 10,
        });
        assert_eq!(
            metric,
            SandboxMetric {
                timestamp: "2023-11-14T22:13:20.123Z".to_owned(),
                timestamp_unix: 1_700_000_000,
                cpu_count: 2,
                cpu_used_pct: 50.0,
                mem_used: 6 << 20,
                mem_total: 1 << 30,
                mem_cache: 4 << 20,
                disk_used: 5,
                disk_total: 10,
            }
        );
    }

    #[test]
    fn df_output_is_read_from_the_end_of_its_last_line() {
        let out = "Filesystem     1024-blocks  Used Available Capacity Mounted on\n\
                   my disk            1048576   512   1048064       1% /workspace\n";
        assert_eq!(parse_df(out), Some((512 * 1024, 1048576 * 1024)));
        assert_eq!(parse_df("df: /workspace: No such file\n"), None);
    }
}
