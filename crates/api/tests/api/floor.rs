//! The floor: 200 concurrent exec requests across 20 sandboxes complete with
//! no error and no leaked process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use anyhow::Result;
use common::{Db, Setup, TestServer, cgroups_under, eventually, guest_processes, send};
use reqwest::{Method, StatusCode};
use serde_json::json;

const SANDBOXES: usize = 20;
const EXECS: usize = 200;

on_both_databases!(two_hundred_concurrent_execs_across_twenty_sandboxes);

/// Processes inside a sandbox, counted by shell builtins only (so the count
/// is the sandbox's own processes plus the counting shell).
async fn count_processes(server: &TestServer, id: &str) -> Result<u32> {
    let (_, out) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(&json!({
                "shell": "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n"
            })),
    )
    .await?;
    Ok(out["stdout"].as_str().unwrap_or_default().trim().parse()?)
}

async fn two_hundred_concurrent_execs_across_twenty_sandboxes(db: Db) -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    // more than the default tenant cap: this test is about the node's floor
    setup.quotas = Some(paddock_api::service::Quotas {
        tenant: paddock_api::service::Quota {
            sandboxes: Some(SANDBOXES as u64),
            ..paddock_api::service::Quota::tenant_default()
        },
        ..paddock_api::service::Quotas::default()
    });
    let server = TestServer::start(setup).await?;
    let parent = server.setup.cgroup_parent();

    let mut ids = Vec::new();
    for _ in 0..SANDBOXES {
        ids.push(
            server
                .create_sandbox(json!({"limits": {"memory_bytes": 134217728u64}}))
                .await?,
        );
    }
    let host_baseline = guest_processes(&parent).len();
    assert_eq!(
        host_baseline % SANDBOXES,
        0,
        "the same host processes for every sandbox"
    );
    let mut inside_baseline = Vec::new();
    for id in &ids {
        inside_baseline.push(count_processes(&server, id).await?);
    }

    let started = Instant::now();
    let requests = (0..EXECS).map(|i| {
        let id = ids[i % SANDBOXES].clone();
        let request = server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/exec"))
            .json(
                &json!({"shell": format!("echo req-{i}; echo err-{i} >&2; exit $(( {i} % 7 ))")}),
            );
        async move { (i, send(request).await) }
    });
    let answers = futures_util::future::join_all(requests).await;
    let elapsed = started.elapsed();
    let mut failures = Vec::new();
    for (i, answer) in answers {
        match answer {
            Ok((StatusCode::OK, out))
                if out["stdout"] == format!("req-{i}\n")
                    && out["stderr"] == format!("err-{i}\n")
                    && out["exit_code"] == json!(i % 7) => {}
            other => failures.push(format!("request {i}: {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {EXECS} failed: {failures:#?}",
        failures.len()
    );
    eprintln!("{EXECS} concurrent execs over {SANDBOXES} sandboxes in {elapsed:?}");

    // No process outlived its request: inside each sandbox as many processes
    // as before the flood, no background process tracked by the guest, and
    // on the host the same sandbox processes as before.
    for (id, before) in ids.iter().zip(&inside_baseline) {
        let after = count_processes(&server, id).await?;
        assert_eq!(
            after, *before,
            "sandbox {id}: {before} processes before, {after} after"
        );
        let (status, ps) =
            send(server.a(Method::GET, &format!("/v1/sandboxes/{id}/processes"))).await?;
        assert_eq!((status, &ps["processes"]), (StatusCode::OK, &json!([])));
    }
    assert_eq!(guest_processes(&parent).len(), host_baseline);

    for id in &ids {
        let (status, _) = send(server.a(Method::DELETE, &format!("/v1/sandboxes/{id}"))).await?;
        assert_eq!(status, StatusCode::OK);
    }
    assert!(
        eventually(Duration::from_secs(5), || guest_processes(&parent)
            .is_empty())
        .await
    );
    assert!(
        cgroups_under(&parent).is_empty(),
        "{:?}",
        cgroups_under(&parent)
    );
    server.stop().await?;
    Ok(())
}
