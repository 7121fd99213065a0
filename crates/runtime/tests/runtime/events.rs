//! The session event stream: a client that disconnects and reconnects with
//! the last sequence it saw receives every event exactly once, in order,
//! while a run is still producing them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use futures_util::StreamExt;
use paddock_core::store::RunState;
use paddock_runtime::StartRun;
use serde_json::json;
use support::{Harness, call, complete_met, turn};

#[tokio::test]
async fn reconnecting_with_the_last_seq_gets_every_event_once_and_in_order() {
    let h = Harness::new().await;
    for n in 0..40 {
        std::fs::write(h.project.join(format!("f{n}")), format!("{n}\n")).unwrap();
    }
    let session = h.session("stream").await;
    let mut turns: Vec<_> = (0..40)
        .map(|n| {
            turn(
                "",
                vec![call("read_file", json!({"path": format!("f{n}")}))],
            )
        })
        .collect();
    turns.push(turn(
        "",
        vec![call("run_command", json!({"command": "true"}))],
    ));
    turns.push(turn("", vec![complete_met(vec![])]));
    let model = h.script("long", json!(turns));

    // connect before the run starts, then drop and reconnect every few events
    let mut received = Vec::new();
    let mut stream = h
        .runtime
        .event_stream(&h.tenant, &session.id, 0)
        .await
        .unwrap();
    let handle = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Read everything", model),
        )
        .await
        .unwrap();
    let mut reconnects = 0;
    let mut live_reconnects = 0;
    'outer: loop {
        // read a varying number of events, then disconnect
        for _ in 0..(3 + reconnects % 7) {
            let event = stream.next().await.unwrap().unwrap();
            if event.is_transient() {
                // live only (model.delta), outside the sequence
                assert_eq!(event.seq, 0);
                continue;
            }
            let done = event.kind == "run.finished";
            received.push(event);
            if done {
                break 'outer;
            }
        }
        drop(stream);
        reconnects += 1;
        if reconnects % 3 == 0 {
            // stay away a while: events pile up in the store meanwhile
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
        }
        let last = received.last().map_or(0, |e| e.seq);
        if h.runtime
            .get_run(&h.tenant, &handle.run.id)
            .await
            .unwrap()
            .state
            != RunState::Completed
        {
            live_reconnects += 1;
        }
        stream = h
            .runtime
            .event_stream(&h.tenant, &session.id, last)
            .await
            .unwrap();
    }
    let run = handle.wait().await.unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    assert!(reconnects > 20, "only {reconnects} reconnects");
    assert!(
        live_reconnects > 10,
        "only {live_reconnects} reconnects while the run ran"
    );

    let stored = h.events(&session.id).await;
    let seqs: Vec<u64> = received.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=stored.len() as u64).collect();
    assert_eq!(seqs, expected, "gaps, repeats or disorder");
    assert_eq!(received, stored);

    // a late client starting from the middle gets exactly the rest
    let middle = stored.len() as u64 / 2;
    let late: Vec<_> = h
        .runtime
        .event_stream(&h.tenant, &session.id, middle)
        .await
        .unwrap()
        .take(stored.len() - middle as usize)
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(late, stored[middle as usize..]);
}

#[tokio::test]
async fn a_stream_of_an_unknown_session_is_refused() {
    let h = Harness::new().await;
    let err = h
        .runtime
        .event_stream(&h.tenant, &paddock_core::ids::SessionId::generate(), 0)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            paddock_runtime::RuntimeError::NotFound {
                entity: "session",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_the_bus_catches_up_from_the_store() {
    let h = Harness::new().await;
    let session = h.session("lag").await;
    let mut turns: Vec<_> = (0..200)
        .map(|n| {
            turn(
                "",
                vec![call(
                    "report_progress",
                    json!({"message": format!("step {n}")}),
                )],
            )
        })
        .collect();
    turns.push(turn(
        "",
        vec![call("run_command", json!({"command": "true"}))],
    ));
    turns.push(turn("", vec![complete_met(vec![])]));
    let model = h.script("lag", json!(turns));
    // subscribed, but not reading while the run writes well over the bus's capacity
    let stream = h
        .runtime
        .event_stream(&h.tenant, &session.id, 0)
        .await
        .unwrap();
    let mut request = StartRun::new("Report", model);
    request.budgets.max_turns = 1_000;
    request.budgets.max_tool_calls = 1_000;
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let stored = h.events(&session.id).await;
    assert!(stored.len() > 1_100, "{} events", stored.len());
    let received: Vec<_> = stream
        .take(stored.len())
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(received, stored);
}
