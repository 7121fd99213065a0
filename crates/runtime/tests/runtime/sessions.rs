//! Sessions over several runs: asking the user and resuming, forking from an
//! earlier run's end or from now, cancelling a run mid-command, and crash
//! recovery of runs whose driver died.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use paddock_core::ids::RunId;
use paddock_core::model::{Message, Role, ToolCall};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    EndReason, Lease, Run, RunState, SandboxState, SessionStatus, StoredMessage, Verdict,
};
use paddock_runtime::{RuntimeError, StartRun};
use serde_json::json;
use support::{Harness, call, complete_met, turn};

#[tokio::test]
async fn ask_user_waits_and_a_new_run_continues_with_the_whole_history() {
    let h = Harness::new().await;
    let session = h.session("greeting").await;
    let first = h.script(
        "ask",
        json!([turn(
            "I need to know.",
            vec![call("ask_user", json!({"question": "Which greeting?"}))]
        )]),
    );
    let run = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Write a greeting file", first),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(
        (run.state, run.end_reason),
        (RunState::AwaitingUser, Some(EndReason::AwaitingUser)),
        "{run:?}"
    );
    let review = run.review.clone().unwrap();
    assert_eq!(review.remaining, vec!["Which greeting?"]);
    let finished = h.payloads(&session.id, "run.finished").await;
    assert_eq!(finished[0]["question"], "Which greeting?");
    assert_eq!(finished[0]["state"], "awaiting_user");

    let second = h.script(
        "answer",
        json!([
            turn(
                "",
                vec![call(
                    "write_file",
                    json!({"path": "greeting.txt", "content": "hello\n"})
                )]
            ),
            turn(
                "",
                vec![call(
                    "run_command",
                    json!({"command": "grep -qx hello greeting.txt"})
                )]
            ),
            turn("", vec![complete_met(vec![])]),
        ]),
    );
    let resumed = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Use 'hello'", second.clone()),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(resumed.state, RunState::Completed, "{resumed:?}");
    assert_eq!(resumed.review.unwrap().verdict, Verdict::Met);
    assert_eq!(h.read(&h.project, "greeting.txt").unwrap(), "hello\n");

    // the resumed run's first request carried the first run's exchange
    let request = &second.requests()[0];
    let texts: Vec<(Role, String)> = request
        .messages
        .iter()
        .map(|m| (m.role, serde_json::to_string(&m.content).unwrap()))
        .collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[0].0, Role::User);
    assert!(texts[0].1.contains("Goal: Write a greeting file"));
    assert!(texts[1].1.contains("Which greeting?"), "{texts:?}");
    assert_eq!(texts[2].0, Role::Tool);
    assert!(texts[3].1.contains("Goal: Use 'hello'"));

    let runs = h.runtime.list_runs(&h.tenant, &session.id).await.unwrap();
    assert_eq!(
        runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        [run.id, resumed.id]
    );
}

async fn write_and_complete(
    h: &Harness,
    session: &paddock_core::ids::SessionId,
    name: &str,
    files: &[(&str, &str)],
) -> Run {
    let mut calls: Vec<_> = files
        .iter()
        .map(|(path, content)| call("write_file", json!({"path": path, "content": content})))
        .collect();
    calls.push(call("run_command", json!({"command": "true"})));
    let model = h.script(
        name,
        json!([turn("", calls), turn("", vec![complete_met(vec![])])]),
    );
    h.runtime
        .start_run(
            &h.tenant,
            session,
            StartRun::new(format!("Write {name}"), model),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap()
}

fn message_goals(messages: &[paddock_core::store::StoredMessage]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.message.role == Role::User)
        .map(|m| m.message.joined_text())
        .collect()
}

#[tokio::test]
async fn a_fork_from_an_earlier_run_gets_that_runs_history_and_workspace() {
    let h = Harness::new().await;
    let session = h.session("original").await;
    let first = write_and_complete(&h, &session.id, "one", &[("a.txt", "one\n")]).await;
    assert_eq!(first.state, RunState::Completed, "{first:?}");
    let second = write_and_complete(
        &h,
        &session.id,
        "two",
        &[("a.txt", "two\n"), ("b.txt", "b\n")],
    )
    .await;
    assert_eq!(second.state, RunState::Completed, "{second:?}");

    let fork = h
        .runtime
        .fork_session(&h.tenant, &session.id, Some(&first.id), "fork at one")
        .await
        .unwrap();
    assert_eq!(fork.forked_from.as_ref(), Some(&session.id));
    assert_eq!(fork.forked_at_run.as_ref(), Some(&first.id));
    assert_ne!(fork.workspace, session.workspace);
    let fork_dir = h.workspaces_root().join(fork.workspace.as_str());
    assert_eq!(h.read(&fork_dir, "a.txt").unwrap(), "one\n");
    assert!(
        !fork_dir.join("b.txt").exists(),
        "a later write leaked into the fork"
    );

    let history = h
        .store
        .list_messages(&h.tenant, &fork.id, None)
        .await
        .unwrap();
    assert_eq!(message_goals(&history), ["Goal: Write one"]);
    assert!(history.iter().all(|m| m.run == first.id));
    assert_eq!(
        h.store.list_goals(&h.tenant, &fork.id).await.unwrap().len(),
        1
    );

    // the fork's own run works in the fork's directory only
    let own = write_and_complete(
        &h,
        &fork.id,
        "three",
        &[("c.txt", "c\n"), ("a.txt", "fork\n")],
    )
    .await;
    assert_eq!(own.state, RunState::Completed, "{own:?}");
    assert_eq!(h.read(&fork_dir, "c.txt").unwrap(), "c\n");
    assert!(!h.project.join("c.txt").exists());
    assert_eq!(h.read(&h.project, "a.txt").unwrap(), "two\n");
    let fork_history = h
        .store
        .list_messages(&h.tenant, &fork.id, None)
        .await
        .unwrap();
    assert_eq!(
        message_goals(&fork_history),
        ["Goal: Write one", "Goal: Write three"]
    );

    // a fork from now copies the current workspace and the whole history
    let now = h
        .runtime
        .fork_session(&h.tenant, &session.id, None, "fork now")
        .await
        .unwrap();
    let now_dir = h.workspaces_root().join(now.workspace.as_str());
    assert_eq!(h.read(&now_dir, "a.txt").unwrap(), "two\n");
    assert_eq!(h.read(&now_dir, "b.txt").unwrap(), "b\n");
    let now_history = h
        .store
        .list_messages(&h.tenant, &now.id, None)
        .await
        .unwrap();
    assert_eq!(
        message_goals(&now_history),
        ["Goal: Write one", "Goal: Write two"]
    );

    // a run of another session cannot be forked from here
    let err = h
        .runtime
        .fork_session(&h.tenant, &session.id, Some(&own.id), "bad")
        .await
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::RunNotInSession { .. }),
        "{err:?}"
    );

    let renamed = h
        .runtime
        .rename_session(&h.tenant, &fork.id, "renamed")
        .await
        .unwrap();
    assert_eq!(renamed.title, "renamed");
    let archived = h
        .runtime
        .archive_session(&h.tenant, &fork.id)
        .await
        .unwrap();
    assert_eq!(archived.status, SessionStatus::Archived);
    let err = h
        .runtime
        .start_run(
            &h.tenant,
            &fork.id,
            StartRun::new("more", h.script("x", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::SessionArchived { .. }),
        "{err:?}"
    );
    let listed = h
        .runtime
        .list_sessions(&h.tenant, Some(&h.workspace.id), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        listed.len(),
        1,
        "only the original lives in the original workspace"
    );
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn cancelling_mid_command_stops_it_and_tears_the_sandbox_down() {
    let h = Harness::new().await;
    let session = h.session("cancel").await;
    let model = h.script(
        "sleep",
        json!([turn(
            "",
            vec![call("run_command", json!({"command": "sleep 60"}))]
        )]),
    );
    let mut events = h
        .runtime
        .event_stream(&h.tenant, &session.id, 0)
        .await
        .unwrap();
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, StartRun::new("Sleep", model))
        .await
        .unwrap();
    let mut sandbox = None;
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if event.kind == "sandbox.ready" {
            let payload: serde_json::Value = serde_json::from_str(&event.payload).unwrap();
            sandbox = Some(SandboxId::parse(payload["sandbox_id"].as_str().unwrap()).unwrap());
        }
        if event.kind == "tool.call" {
            break;
        }
    }
    let sandbox = sandbox.unwrap();
    let record = h.store.get_sandbox(&h.tenant, &sandbox).await.unwrap();
    assert_eq!(record.state, SandboxState::Running);
    let pid = record.pid.unwrap();
    assert!(alive(pid));
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    let cancelled = h
        .runtime
        .cancel_run(&h.tenant, &handle.run.id)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (cancelled.state, cancelled.end_reason),
        (RunState::Cancelled, Some(EndReason::Cancelled)),
        "{cancelled:?}"
    );
    assert_eq!(handle.wait().await.unwrap().state, RunState::Cancelled);
    assert!(
        !alive(pid),
        "sandbox process {pid} survived the cancellation"
    );
    let record = h.store.get_sandbox(&h.tenant, &sandbox).await.unwrap();
    assert_eq!(record.state, SandboxState::Stopped);

    let states: Vec<String> = h
        .payloads(&session.id, "run.state")
        .await
        .into_iter()
        .map(|p| p["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(states, ["planning", "acting", "cancelling"]);
    let results = h.payloads(&session.id, "tool.result").await;
    assert_eq!(results[0]["status"], "failed");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled")
    );
    let invocations = h
        .store
        .list_tool_invocations(&h.tenant, &cancelled.id)
        .await
        .unwrap();
    assert!(invocations[0].output.is_some());
    // cancelling again answers with the ended run
    let again = h
        .runtime
        .cancel_run(&h.tenant, &cancelled.id)
        .await
        .unwrap();
    assert_eq!(again.state, RunState::Cancelled);
}

/// A run row as a dead process would have left it.
async fn orphan_run(h: &Harness, owner: &str, ttl: Duration) -> (Run, Lease) {
    let session = h.session("orphan").await;
    let lease = h
        .store
        .acquire_lease(&Lease::session_resource(&session.id), owner, ttl)
        .await
        .unwrap();
    let mut run = Run::new(h.tenant.clone(), session.id.clone(), "crash", h.store.now());
    run.state = RunState::Acting;
    h.store.create_run(&lease, &run).await.unwrap();
    (run, lease)
}

#[tokio::test]
async fn recover_interrupts_runs_whose_driver_died() {
    let h = Harness::new().await;
    // another node's lease that expired
    let (expired, lease) = orphan_run(&h, "node-b/run_x", Duration::from_millis(1)).await;
    // it died after the model asked for a tool, before the result was stored
    for message in [
        Message::user("Goal: crash"),
        Message::assistant(
            "",
            vec![ToolCall {
                id: "call_1_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "x"}),
            }],
        ),
    ] {
        let stored = StoredMessage {
            tenant: h.tenant.clone(),
            session: expired.session.clone(),
            run: expired.id.clone(),
            seq: 0,
            message,
            created_at: h.store.now(),
        };
        h.store.append_message(&lease, &stored).await.unwrap();
    }
    // this node's own lease from before a restart, still unexpired
    let (restarted, _) = orphan_run(
        &h,
        &format!("{}/{}", support::NODE, RunId::generate()),
        Duration::from_secs(60),
    )
    .await;
    // another node's live lease: it may still be driving its run
    let (live, _) = orphan_run(&h, "node-c/run_y", Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    let report = h.runtime.recover().await.unwrap();
    let mut interrupted = report.interrupted.clone();
    interrupted.sort();
    let mut expected = vec![expired.id.clone(), restarted.id.clone()];
    expected.sort();
    assert_eq!(interrupted, expected);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].run, live.id);
    assert!(report.skipped[0].reason.contains("node-c/run_y"));

    for id in [&expired.id, &restarted.id] {
        let run = h.runtime.get_run(&h.tenant, id).await.unwrap();
        assert_eq!(
            (run.state, run.end_reason),
            (RunState::Interrupted, Some(EndReason::Interrupted))
        );
        assert_eq!(
            run.error.as_deref(),
            Some("the process driving this run stopped while it was acting")
        );
        let finished = h.payloads(&run.session, "run.finished").await;
        assert_eq!(finished[0]["state"], "interrupted");
    }
    assert_eq!(
        h.runtime.get_run(&h.tenant, &live.id).await.unwrap().state,
        RunState::Acting
    );
    // nothing left to recover the second time
    assert!(h.runtime.recover().await.unwrap().interrupted.is_empty());
    // and the recovered session takes new runs
    let session = h
        .runtime
        .get_run(&h.tenant, &expired.id)
        .await
        .unwrap()
        .session;
    let next = h
        .runtime
        .start_run(
            &h.tenant,
            &session,
            StartRun::new(
                "again",
                h.script("again", json!([turn("", vec![complete_met(vec![])])])),
            ),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(next.state, RunState::Completed);
    // the dangling call got a result before the new goal, so the history stays valid
    let roles: Vec<(Role, String)> = h
        .store
        .list_messages(&h.tenant, &session, None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| {
            (
                m.message.role,
                serde_json::to_string(&m.message.content).unwrap(),
            )
        })
        .collect();
    let order: Vec<Role> = roles.iter().map(|(r, _)| *r).collect();
    assert_eq!(
        order,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert!(
        roles[2].1.contains("call_1_1") && roles[2].1.contains("No result"),
        "{roles:?}"
    );
}

#[tokio::test]
async fn a_session_drives_one_run_at_a_time() {
    let h = Harness::new().await;
    let session = h.session("busy").await;
    let slow = h.script(
        "slow",
        json!([turn(
            "",
            vec![call("run_command", json!({"command": "sleep 60"}))]
        )]),
    );
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, StartRun::new("slow", slow))
        .await
        .unwrap();
    let err = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("second", h.script("none", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::SessionBusy { .. }), "{err:?}");
    let err = h
        .runtime
        .archive_session(&h.tenant, &session.id)
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::SessionBusy { .. }), "{err:?}");
    let run = h
        .runtime
        .cancel_run(&h.tenant, &handle.run.id)
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Cancelled);
}

/// A recovery (here another node's) holds a session's lease only while it
/// ends the dead run: a new run waits for it instead of answering busy. Any
/// other holder still makes the session busy.
#[tokio::test]
async fn a_new_run_waits_out_a_recovery_holding_its_session() {
    let h = Harness::new().await;
    let session = h.session("recovering").await;
    let resource = Lease::session_resource(&session.id);
    let recovery = h
        .store
        .acquire_lease(&resource, "other-node/recover", Duration::from_secs(30))
        .await
        .unwrap();
    let store = h.store.clone();
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        store.release_lease(&recovery).await.unwrap();
    });
    let started = Instant::now();
    let handle = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new(
                "after the recovery",
                h.script("done", json!([turn("", vec![complete_met(vec![])])])),
            ),
        )
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
    release.await.unwrap();
    assert_eq!(handle.wait().await.unwrap().state, RunState::Completed);

    let other = h.session("driven elsewhere").await;
    h.store
        .acquire_lease(
            &Lease::session_resource(&other.id),
            "other-node/run_live",
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let err = h
        .runtime
        .start_run(
            &h.tenant,
            &other.id,
            StartRun::new("busy", h.script("none", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::SessionBusy { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}
