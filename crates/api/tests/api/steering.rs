//! Steering and live output through the HTTP API, end to end: a run driven
//! by a local model server that speaks OpenAI's streaming wire format, real
//! jailed sandboxes, SQLite (and Postgres when PADDOCK_TEST_POSTGRES_URL is
//! set). A message posted to another node that shares the store reaches the
//! model's next request; deltas and a command's output arrive over SSE
//! before what they end in, without ids, and are never stored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use common::events::{EventReader, Frame};
use common::{Db, Setup, TestServer, send, unique};
use paddock_core::ids::SessionId;
use paddock_test_support::model_server::{ModelServer, Turn};
use reqwest::{Method, StatusCode};
use serde_json::json;

on_both_databases!(
    a_message_to_a_run_reaches_its_next_model_request_and_output_streams_live,
    a_message_posted_as_the_run_completes_is_answered_and_a_later_one_refused,
    a_message_a_cancelled_run_could_not_answer_is_reported_undelivered,
);

const STEER: &str = "Use the v2 API instead, and say so.";
/// Between the two lines the command prints.
const COMMAND: &str = "echo first line; sleep 1.5; echo second line";

/// One frame and when it arrived.
struct Seen {
    frame: Frame,
    at: Instant,
}

async fn read_until_finished(mut reader: EventReader) -> Result<Vec<Seen>> {
    let mut seen = Vec::new();
    while let Some(frame) = reader.next().await? {
        let last = frame.event == "run.finished";
        seen.push(Seen {
            frame,
            at: Instant::now(),
        });
        if last {
            return Ok(seen);
        }
    }
    anyhow::bail!("the stream ended before run.finished")
}

fn position(seen: &[Seen], what: impl Fn(&Frame) -> bool) -> Option<usize> {
    seen.iter().position(|s| what(&s.frame))
}

async fn a_message_to_a_run_reaches_its_next_model_request_and_output_streams_live(
    db: Db,
) -> Result<()> {
    let model = ModelServer::start(vec![
        Turn::call("run_command", json!({"command": COMMAND}))
            .with_text("Running it.")
            .held(),
        Turn::text("Understood: switching to the v2 API as you asked.")
            .paced(Duration::from_millis(40)),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.model_base_urls = vec![model.base_url.clone()];
    // two nodes on one store: the run is driven by `a`, steered through `b`
    let mut other = setup.clone();
    other.node = unique("node");
    let a = TestServer::start(setup).await?;
    let b = TestServer::start(other).await?;

    let (status, ws) = send(
        a.a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": "steer"})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let (status, session) = send(a.a(Method::POST, "/v1/sessions").json(&json!({
        "workspace": ws["id"], "title": "steering"
    })))
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    let session_id = session["id"].as_str().context("session id")?.to_owned();
    let (status, run) = send(
        a.a(Method::POST, &format!("/v1/sessions/{session_id}/runs"))
            .json(&json!({
                "goal": "Call the API",
                "model": {"spec": "openai:scripted", "base_url": model.base_url},
            })),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    let run_id = run["id"].as_str().context("run id")?.to_owned();
    let reader = EventReader::open(a.a(Method::GET, &format!("/v1/runs/{run_id}/events"))).await?;
    let events = tokio::spawn(read_until_finished(reader));

    // the first model call is under way; the message is posted to node b
    model.wait_requests(1, Duration::from_secs(60)).await?;
    let messages = format!("/v1/runs/{run_id}/messages");
    let (status, bad) = send(b.a(Method::POST, &messages).json(&json!({"text": "  "}))).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    let (status, foreign) =
        send(b.b(Method::POST, &messages).json(&json!({"text": STEER}))).await?;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's run: {foreign}"
    );
    let (status, queued) = send(b.a(Method::POST, &messages).json(&json!({"text": STEER}))).await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert_eq!(queued["run"], run_id.as_str());
    assert_eq!(queued["text"], STEER);
    model.release(0);

    let seen = tokio::time::timeout(Duration::from_secs(120), events).await???;
    let requests = model.wait_requests(2, Duration::from_secs(5)).await?;
    assert!(
        !requests[0].user_texts().iter().any(|t| t.contains(STEER)),
        "the first request had the message already"
    );
    let second = requests[1].user_texts();
    assert_eq!(
        second.last().map(String::as_str),
        Some(STEER),
        "the next request ends with the user's message: {second:?}"
    );

    // the message is an event of the run, stored, before the turn it steered
    let user = position(&seen, |f| f.event == "user.message").context("no user.message")?;
    assert_eq!(seen[user].frame.data["payload"]["message"], STEER);
    assert!(seen[user].frame.id.is_some());
    let answer = position(&seen, |f| {
        f.event == "model.message" && f.data["payload"]["turn"] == 2
    })
    .context("no second model.message")?;
    assert!(user < answer);

    // the answer's text streamed in pieces before its model.message, without ids
    let deltas: Vec<&Seen> = seen[user..answer]
        .iter()
        .filter(|s| s.frame.event == "model.delta" && s.frame.data["payload"]["part"] == "text")
        .collect();
    assert!(deltas.len() >= 5, "{} text deltas", deltas.len());
    assert!(
        deltas
            .iter()
            .all(|s| s.frame.id.is_none() && s.frame.data["seq"] == 0)
    );
    let streamed: String = deltas
        .iter()
        .filter_map(|s| s.frame.data["payload"]["text"].as_str())
        .collect();
    assert_eq!(
        streamed,
        "Understood: switching to the v2 API as you asked."
    );
    let first_delta = deltas.first().map(|s| s.at).context("no delta")?;
    assert!(
        seen[answer].at.duration_since(first_delta) >= Duration::from_millis(150),
        "the deltas came with the final message, not before it"
    );
    // the first turn's call arguments streamed too
    assert!(
        position(&seen, |f| f.event == "model.delta"
            && f.data["payload"]["part"] == "tool_arguments")
        .is_some()
    );

    // the command's first line arrived while it still slept
    let first_line = position(&seen, |f| {
        f.event == "tool.output"
            && f.data["payload"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("first line"))
    })
    .context("no tool.output with the first line")?;
    let second_line = position(&seen, |f| {
        f.event == "tool.output"
            && f.data["payload"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("second line"))
    })
    .context("no tool.output with the second line")?;
    let result = position(&seen, |f| f.event == "tool.result").context("no tool.result")?;
    assert!(first_line < second_line && second_line < result);
    assert!(seen[first_line].frame.id.is_none());
    assert!(
        seen[result].at.duration_since(seen[first_line].at) >= Duration::from_millis(1000),
        "the first line came only when the command ended"
    );

    // stored: everything with an id, nothing transient
    let tenant = a.setup.tenants.a.clone();
    let session = SessionId::parse(&session_id)?;
    let stored = a.store.list_events(&tenant, &session, 0, 1000).await?;
    let kinds: Vec<&str> = stored.iter().map(|e| e.kind.as_str()).collect();
    assert!(
        !kinds.contains(&"model.delta") && !kinds.contains(&"tool.output"),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"user.message"));
    let ids: Vec<u64> = seen.iter().filter_map(|s| s.frame.id).collect();
    let seqs: Vec<u64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(ids, seqs, "SSE ids are exactly the stored events");

    // resuming after a stored event gives exactly the stored ones after it
    let resume_at = seen[user].frame.id.context("user.message id")?;
    let resumed = read_until_finished(
        EventReader::open(
            a.a(Method::GET, &format!("/v1/runs/{run_id}/events"))
                .header("last-event-id", resume_at.to_string()),
        )
        .await?,
    )
    .await?;
    let resumed_ids: Vec<Option<u64>> = resumed.iter().map(|s| s.frame.id).collect();
    let expected: Vec<Option<u64>> = seqs
        .iter()
        .filter(|&&s| s > resume_at)
        .map(|&s| Some(s))
        .collect();
    assert_eq!(resumed_ids, expected);

    // a finished run takes no more messages, on either node; an unknown run is 404
    for server in [&a, &b] {
        let (status, late) = send(
            server
                .a(Method::POST, &messages)
                .json(&json!({"text": "more"})),
        )
        .await?;
        assert_eq!(status, StatusCode::CONFLICT, "{late}");
        assert_eq!(late["error"]["code"], "run_finished", "{late}");
    }
    let (status, unknown) = send(
        a.a(
            Method::POST,
            "/v1/runs/run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b/messages",
        )
        .json(&json!({"text": "hello"})),
    )
    .await?;
    assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");
    assert_eq!(
        model.requests().len(),
        2,
        "a refused message started no model call"
    );
    b.stop().await?;
    a.stop().await?;
    Ok(())
}

/// A workspace, a session in it and a run of `model` on it, through `server`;
/// answers the run id and an open reader of its events.
async fn start_run(server: &TestServer, model: &ModelServer, goal: &str) -> Result<String> {
    let (status, ws) = send(
        server
            .a(Method::POST, "/v1/workspaces")
            .json(&json!({"name": unique("steer")})),
    )
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {ws}");
    let (status, session) = send(server.a(Method::POST, "/v1/sessions").json(&json!({
        "workspace": ws["id"], "title": goal
    })))
    .await?;
    ensure!(status == StatusCode::CREATED, "{status} {session}");
    let session_id = session["id"].as_str().context("session id")?.to_owned();
    let (status, run) = send(
        server
            .a(Method::POST, &format!("/v1/sessions/{session_id}/runs"))
            .json(&json!({
                "goal": goal,
                "model": {"spec": "openai:scripted", "base_url": model.base_url},
            })),
    )
    .await?;
    ensure!(status == StatusCode::ACCEPTED, "{status} {run}");
    Ok(run["id"].as_str().context("run id")?.to_owned())
}

const LATE: &str = "Before you finish: mention the README too.";

/// The message arrives while the model gives its final answer
/// (`complete_task`): after the loop's last look at the queue, before the
/// run ends. The run answers it instead of dropping it; a message after the
/// run finished is refused.
async fn a_message_posted_as_the_run_completes_is_answered_and_a_later_one_refused(
    db: Db,
) -> Result<()> {
    let model = ModelServer::start(vec![
        Turn::call(
            "complete_task",
            json!({"verdict": "met", "summary": "Nothing to change.", "evidence": []}),
        )
        .held(),
        Turn::text("Noted: the README needs no change either."),
    ])
    .await?;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.model_base_urls = vec![model.base_url.clone()];
    let server = TestServer::start(setup).await?;
    let run_id = start_run(&server, &model, "Check the docs").await?;
    let reader =
        EventReader::open(server.a(Method::GET, &format!("/v1/runs/{run_id}/events"))).await?;
    let events = tokio::spawn(read_until_finished(reader));

    // the final answer is being given: the message comes now
    model.wait_requests(1, Duration::from_secs(60)).await?;
    let messages = format!("/v1/runs/{run_id}/messages");
    let (status, queued) = send(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": LATE})),
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    model.release(0);

    let seen = tokio::time::timeout(Duration::from_secs(120), events).await???;
    // the model was asked again, with the message last, and answered it
    let requests = model.wait_requests(2, Duration::from_secs(5)).await?;
    let second = requests[1].user_texts();
    assert_eq!(second.last().map(String::as_str), Some(LATE), "{second:?}");
    let user = position(&seen, |f| f.event == "user.message").context("no user.message")?;
    assert_eq!(seen[user].frame.data["payload"]["message"], LATE);
    // it was taken as the run completed (after complete_task's review began)
    let verifying = position(&seen, |f| {
        f.event == "run.state" && f.data["payload"]["state"] == "verifying"
    })
    .context("complete_task did not complete")?;
    assert!(verifying < user);
    let answer = position(&seen, |f| {
        f.event == "model.message" && f.data["payload"]["turn"] == 2
    })
    .context("the message was not answered")?;
    assert!(user < answer);
    let finished = &seen.last().context("no events")?.frame.data["payload"];
    assert_eq!(finished["state"], "completed", "{finished}");
    assert!(finished.get("undelivered").is_none(), "{finished}");

    // after the run finished: refused, and nothing more asked of the model
    let (status, late) = send(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": "and one more thing"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{late}");
    assert_eq!(late["error"]["code"], "run_finished", "{late}");
    assert_eq!(model.requests().len(), 2);
    server.stop().await?;
    Ok(())
}

/// A run cancelled while a message waits cannot answer it: `run.finished`
/// lists it as undelivered, so an accepted message is never silently lost.
async fn a_message_a_cancelled_run_could_not_answer_is_reported_undelivered(db: Db) -> Result<()> {
    let model = ModelServer::start(vec![Turn::text("Thinking...").held()]).await?;
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(db, data.path());
    setup.model_base_urls = vec![model.base_url.clone()];
    let server = TestServer::start(setup).await?;
    let run_id = start_run(&server, &model, "Think long").await?;
    let reader =
        EventReader::open(server.a(Method::GET, &format!("/v1/runs/{run_id}/events"))).await?;
    let events = tokio::spawn(read_until_finished(reader));
    model.wait_requests(1, Duration::from_secs(60)).await?;
    let messages = format!("/v1/runs/{run_id}/messages");
    let (status, queued) = send(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": LATE})),
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    let (status, cancelled) =
        send(server.a(Method::POST, &format!("/v1/runs/{run_id}/cancel"))).await?;
    ensure!(status.is_success(), "{status} {cancelled}");

    let seen = tokio::time::timeout(Duration::from_secs(120), events).await???;
    let finished = &seen.last().context("no events")?.frame.data["payload"];
    assert_eq!(finished["state"], "cancelled", "{finished}");
    assert_eq!(
        finished["undelivered"],
        json!([{"message": LATE, "steering_id": queued["id"]}]),
        "{finished}"
    );
    assert!(position(&seen, |f| f.event == "user.message").is_none());
    let (status, late) = send(
        server
            .a(Method::POST, &messages)
            .json(&json!({"text": "hello?"})),
    )
    .await?;
    assert_eq!(status, StatusCode::CONFLICT, "{late}");
    server.stop().await?;
    Ok(())
}
