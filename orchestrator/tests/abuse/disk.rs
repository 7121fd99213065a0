//! A full disk under a running server: the data directory (SQLite, blobs,
//! workspaces) on a small loop-mounted file system that fills while a run
//! waits for its model. Another tenant's health says the store cannot write
//! within a second, the run holds instead of failing, and once space is
//! freed the same server (no restart) writes again, the run goes on to its
//! end, health is ok, and every event is there. Needs root and loop
//! devices: otherwise SKIPPED, a failure with `PADDOCK_REQUIRE_LOOP=1`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_test_support::loop_fs::LoopFs;
use paddock_test_support::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::*;

async fn victim_health(server: &Server) -> Result<(u16, Value, Duration)> {
    let started = Instant::now();
    let (status, body) = server
        .request_as(&server.victim, local(9), "GET", "/v1/health", "")
        .await?;
    let body: Value = serde_json::from_str(&body).with_context(|| body.clone())?;
    Ok((status, body, started.elapsed()))
}

async fn post(server: &Server, path: &str, body: Value) -> Result<Value> {
    let (status, answer) = server.request("POST", path, &body.to_string()).await?;
    if !(200..300).contains(&status) {
        bail!("POST {path}: {status} {answer}");
    }
    Ok(serde_json::from_str(&answer)?)
}

async fn run_state(server: &Server, run: &str) -> Result<Value> {
    let (status, answer) = server
        .request("GET", &format!("/v1/runs/{run}"), "")
        .await?;
    if status != 200 {
        bail!("GET run: {status} {answer}");
    }
    Ok(serde_json::from_str(&answer)?)
}

#[test]
fn a_full_disk_mid_run_holds_the_run_and_the_same_server_recovers() -> Result<()> {
    let Some(fs) = LoopFs::mount_or_skip("the full-disk abuse test", 128)? else {
        return Ok(());
    };
    let rt = runtime();
    let model = rt.block_on(ModelServer::start(vec![
        Turn::call("run_command", json!({"command": "echo before the fill"})).held(),
        Turn::text("Done."),
    ]))?;
    let data = fs.path().join("data");
    std::fs::create_dir(&data)?;
    let server = Server::start(
        &data,
        &format!("model_base_urls = [{:?}]\n", model.base_url),
    )?;
    rt.block_on(async {
        let (status, health, _) = victim_health(&server).await?;
        assert_eq!(status, 200, "{health}");
        assert_eq!(health["database"]["writable"], true, "{health}");

        let workspace = post(&server, "/v1/workspaces", json!({"name": "disk"})).await?;
        let session = post(
            &server,
            "/v1/sessions",
            json!({"workspace": workspace["id"], "title": "full disk"}),
        )
        .await?;
        let session_id = session["id"].as_str().context("session id")?.to_owned();
        let run = post(
            &server,
            &format!("/v1/sessions/{session_id}/runs"),
            json!({"goal": "say hello", "model": {"spec": "openai:scripted", "base_url": model.base_url}}),
        )
        .await?;
        let run_id = run["id"].as_str().context("run id")?.to_owned();
        model.wait_requests(1, Duration::from_secs(60)).await?;

        // the disk fills while the model thinks
        let filled = fs.fill()?;
        let full_at = Instant::now();
        println!("filled {filled} bytes; {} left", fs.free_bytes()?);
        let mut seen_full = None;
        while full_at.elapsed() < Duration::from_secs(5) {
            let (status, health, took) = victim_health(&server).await?;
            assert!(took < Duration::from_secs(1), "health took {took:?}");
            if status == 503 {
                assert_eq!(health["status"], "degraded", "{health}");
                assert_eq!(health["database"]["status"], "full", "{health}");
                assert_eq!(health["database"]["writable"], false, "{health}");
                seen_full = Some(full_at.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen_full = seen_full.context("health never said the store cannot write")?;
        println!("another tenant's health said `full` {seen_full:?} after the fill");
        assert!(seen_full < Duration::from_secs(1), "{seen_full:?}");

        // the run's next writes find the disk full: it holds, not fails
        model.release(0);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let held = run_state(&server, &run_id).await?;
        assert!(
            held["finished_at"].is_null() && held["error"].is_null(),
            "the run ended on the full disk: {held}"
        );
        // a write of the other tenant is refused cleanly meanwhile
        let (status, answer) = server
            .request_as(&server.victim, local(9), "POST", "/v1/workspaces", r#"{"name":"v"}"#)
            .await?;
        assert!(status >= 500, "a write on the full disk: {status} {answer}");
        let rss = server.rss_bytes();
        assert!(rss < 512 << 20, "server RSS {rss}");

        // space is back: the same process writes again, the run goes on
        fs.free()?;
        let freed_at = Instant::now();
        let finished = loop {
            let run = run_state(&server, &run_id).await?;
            if !run["finished_at"].is_null() {
                break run;
            }
            if freed_at.elapsed() > Duration::from_secs(30) {
                bail!("the run did not end after space was freed: {run}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        println!(
            "the run ended {:?} after space was freed: {} ({})",
            freed_at.elapsed(),
            finished["state"],
            finished["end_reason"]
        );
        assert_eq!(finished["state"], "completed", "{finished}");
        // health is ok again within 2.5 s of the last refused write (the
        // probe counts one for 2 s, its answer stands for 0.5 s)
        let ok_again = loop {
            let (status, health, took) = victim_health(&server).await?;
            assert!(took < Duration::from_secs(1), "health took {took:?}");
            if status == 200 {
                assert_eq!(health["database"]["status"], "ok", "{health}");
                assert_eq!(health["database"]["writable"], true, "{health}");
                break freed_at.elapsed();
            }
            if freed_at.elapsed() > Duration::from_secs(10) {
                bail!("health still degraded 10 s after space was freed: {health}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        println!("health ok again {ok_again:?} after space was freed");
        let (status, answer) = server
            .request_as(&server.victim, local(9), "POST", "/v1/workspaces", r#"{"name":"v"}"#)
            .await?;
        assert_eq!(status, 201, "{answer}");

        // nothing lost: the run's events are all there, in order, from
        // run.started to run.finished, the command's result among them
        let url = format!("sqlite://{}/paddock.db", data.display());
        let store = paddock_store::SqlStore::open(&url).await?;
        let tenant = paddock_core::ids::TenantId::parse("abuse")?;
        let run = paddock_core::ids::RunId::parse(&run_id)?;
        use paddock_core::store::Store;
        let events = store.list_run_events(&tenant, &run, 0, 1000).await?;
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        println!("the run's events: {kinds:?}");
        assert_eq!(kinds.first(), Some(&"run.started"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"run.finished"), "{kinds:?}");
        for kind in ["tool.call", "tool.result", "model.message", "run.review"] {
            assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
        }
        let result = events
            .iter()
            .find(|e| e.kind == "tool.result")
            .context("tool.result")?;
        assert!(result.payload.contains("before the fill"), "{}", result.payload);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        store.close().await;
        Ok::<_, anyhow::Error>(())
    })?;
    drop(server);
    Ok(())
}

/// Cancelling a run that waits for space: the wait ends at once, and the
/// run's end (cancelled) is recorded as soon as space
/// returns, on the same server; the cancel answers then, with the run as it
/// ended, and the session takes a new run.
#[test]
fn a_run_waiting_for_space_is_cancelled_and_its_end_recorded_once_space_returns() -> Result<()> {
    let Some(fs) = LoopFs::mount_or_skip("the full-disk cancel test", 128)? else {
        return Ok(());
    };
    let rt = runtime();
    let model = rt.block_on(ModelServer::start(vec![
        Turn::call("run_command", json!({"command": "echo never"})).held(),
        Turn::text("Done."),
    ]))?;
    let data = fs.path().join("data");
    std::fs::create_dir(&data)?;
    let server = Server::start(
        &data,
        &format!("model_base_urls = [{:?}]\n", model.base_url),
    )?;
    rt.block_on(async {
        let workspace = post(&server, "/v1/workspaces", json!({"name": "disk"})).await?;
        let session = post(&server, "/v1/sessions", json!({"workspace": workspace["id"]})).await?;
        let session_id = session["id"].as_str().context("session id")?.to_owned();
        let run = post(
            &server,
            &format!("/v1/sessions/{session_id}/runs"),
            json!({"goal": "say hello", "model": {"spec": "openai:scripted", "base_url": model.base_url}}),
        )
        .await?;
        let run_id = run["id"].as_str().context("run id")?.to_owned();
        model.wait_requests(1, Duration::from_secs(60)).await?;
        fs.fill()?;
        model.release(0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(run_state(&server, &run_id).await?["finished_at"].is_null());

        let cancel = {
            let path = format!("/v1/runs/{run_id}/cancel");
            let started = Instant::now();
            let request = server.request("POST", &path, "");
            let freeing = async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                fs.free()
            };
            let (answer, freed) = tokio::join!(request, freeing);
            freed?;
            let (status, body) = answer?;
            println!("cancel answered {status} after {:?}", started.elapsed());
            assert_eq!(status, 200, "{body}");
            serde_json::from_str::<Value>(&body)?
        };
        // the write the cancel cut short was dropped: the run ends
        // cancelled, as asked (see runtime/src/events/store_wait.rs), and
        // that end is what is stored
        assert_eq!(cancel["state"], "cancelled", "{cancel}");
        assert_eq!(cancel["end_reason"], "cancelled", "{cancel}");
        let stored = run_state(&server, &run_id).await?;
        assert_eq!(stored["state"], "cancelled", "{stored}");
        assert!(!stored["finished_at"].is_null(), "{stored}");
        // the session takes a new run: nothing stuck
        let (status, body) = server
            .request(
                "POST",
                &format!("/v1/sessions/{session_id}/runs"),
                &json!({"goal": "again", "model": {"scripted": {"turns": [{"text": "ok"}]}}}).to_string(),
            )
            .await?;
        assert_eq!(status, 202, "{body}");
        Ok::<_, anyhow::Error>(())
    })?;
    drop(server);
    Ok(())
}
