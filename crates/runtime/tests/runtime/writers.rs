//! One writer per workspace, end to end with scripted models, a real SQLite
//! store and real native sandboxes: while a build run works in a workspace,
//! a build run of another session on it is refused naming the holder, a
//! plan-mode run reads it, and the lease is free once the run ended.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use paddock_core::store::{Lease, RunMode, RunState};
use paddock_runtime::{RuntimeError, StartRun};
use serde_json::json;
use support::{Harness, call, turn};

fn done() -> serde_json::Value {
    call(
        "complete_task",
        json!({"verdict": "met", "summary": "done", "evidence": ["scripted"]}),
    )
}

#[tokio::test]
async fn a_second_writer_is_refused_naming_the_first_and_readers_go_on() {
    let h = Harness::new().await;
    let first = h.session("writer").await;
    let second = h.session("other").await;
    let slow = h.script(
        "slow",
        json!([
            turn("", vec![call("run_command", json!({"command": "sleep 2"}))]),
            turn("", vec![done()]),
        ]),
    );
    let writer = h
        .runtime
        .start_run(&h.tenant, &first.id, StartRun::new("Work", slow))
        .await
        .unwrap();
    let holder = writer.run.id.clone();

    let quick = h.script("quick", json!([turn("", vec![done()])]));
    let err = h
        .runtime
        .start_run(
            &h.tenant,
            &second.id,
            StartRun::new("Also work", quick.clone()),
        )
        .await
        .unwrap_err();
    let RuntimeError::WorkspaceBusy {
        workspace,
        holder: who,
        ..
    } = &err
    else {
        panic!("a second writer got {err:?}");
    };
    assert_eq!(workspace, &h.workspace.id);
    assert!(who.ends_with(holder.as_str()), "{who}");
    assert!(err.to_string().contains(holder.as_str()), "{err}");
    // the refused run left nothing behind: the other session is free
    assert!(
        h.runtime
            .list_runs(&h.tenant, &second.id)
            .await
            .unwrap()
            .is_empty()
    );

    let mut look = StartRun::new("Look", quick);
    look.mode = RunMode::Plan;
    let reader = h
        .runtime
        .start_run(&h.tenant, &second.id, look)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(reader.state, RunState::Completed, "{reader:?}");

    let ended = tokio::time::timeout(Duration::from_secs(60), writer.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.state, RunState::Completed, "{ended:?}");
    let lease = h
        .store
        .get_lease(&Lease::workspace_resource(&h.workspace.id))
        .await
        .unwrap();
    assert!(
        lease.as_ref().is_none_or(|l| l.expires_at <= h.store.now()),
        "the writer lease outlived its run: {lease:?}"
    );
    let after = h.script("after", json!([turn("", vec![done()])]));
    let next = h
        .runtime
        .start_run(&h.tenant, &second.id, StartRun::new("Now work", after))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(next.state, RunState::Completed, "{next:?}");
}
