//! Resuming an interrupted run: a new run linked by `resumed_from`, in a
//! fresh sandbox, whose first step answers the calls the dead process left
//! without results by each tool's replay policy; and the runs that cannot be
//! resumed, refused with why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use paddock_core::ids::{GoalId, ToolInvocationId};
use paddock_core::model::{ContentPart, Message, Role, ToolCall};
use paddock_core::store::{
    Budgets, Checkpoint, CheckpointReason, Goal, GoalStatus, Lease, NewEvent, Run, RunMode,
    RunState, Session, StoredMessage, ToolInvocation, ToolStatus,
};
use paddock_proto::{NetworkPolicy, SecretSpec, SecretValue};
use paddock_runtime::events::{
    CallStatus, CheckpointFailed, EventPayload, RunStarted, ToolCallEvent, ToolResultEvent,
};
use paddock_runtime::{ResumeRun, RuntimeError, StartRun};
use serde::Serialize;
use serde_json::json;
use support::{Harness, call, complete_met, turn};

struct Orphan {
    run: Run,
    lease: Lease,
}

impl Orphan {
    /// A run a process that died while it was acting left behind (its lease
    /// expires at once), with its goal row.
    async fn new(h: &Harness) -> Self {
        let session = h.session("orphan").await;
        Self::in_session(h, &session).await
    }

    /// The same, in `session` (whose lease is free).
    async fn in_session(h: &Harness, session: &Session) -> Self {
        Self::shaped(h, session, |_| {}).await
    }

    /// The same, with the run as `shape` leaves it (its budgets, its usage).
    async fn shaped(h: &Harness, session: &Session, shape: impl FnOnce(&mut Run)) -> Self {
        let lease = h
            .store
            .acquire_lease(
                &Lease::session_resource(&session.id),
                "node-b/run_dead",
                Duration::from_millis(1),
            )
            .await
            .unwrap();
        let mut run = Run::new(
            h.tenant.clone(),
            session.id.clone(),
            "log twice",
            h.store.now(),
        );
        run.state = RunState::Acting;
        shape(&mut run);
        h.store.create_run(&lease, &run).await.unwrap();
        let goal = Goal {
            id: GoalId::generate(),
            tenant: h.tenant.clone(),
            session: session.id.clone(),
            run: run.id.clone(),
            description: run.goal.clone(),
            success_criteria: vec!["log has two lines".into()],
            status: GoalStatus::Open,
            created_at: h.store.now(),
            updated_at: h.store.now(),
        };
        h.store.create_goal(&lease, &goal).await.unwrap();
        Self { run, lease }
    }

    async fn message(&self, h: &Harness, message: Message) {
        let stored = StoredMessage {
            tenant: h.tenant.clone(),
            session: self.run.session.clone(),
            run: self.run.id.clone(),
            seq: 0,
            message,
            created_at: h.store.now(),
        };
        h.store.append_message(&self.lease, &stored).await.unwrap();
    }

    async fn event<P: EventPayload + Serialize>(&self, h: &Harness, payload: &P) {
        let event = NewEvent {
            session: self.run.session.clone(),
            run: Some(self.run.id.clone()),
            kind: P::KIND.to_owned(),
            payload: serde_json::to_string(payload).unwrap(),
        };
        h.store
            .append_event(&self.lease, &h.tenant, &event)
            .await
            .unwrap();
    }

    /// The call was admitted: its invocation row and `tool.call` event.
    async fn admitted(&self, h: &Harness, call: &ToolCall) -> ToolInvocationId {
        let invocation = ToolInvocation::start(
            &self.run,
            call.name.as_str(),
            call.arguments.to_string(),
            h.store.now(),
        );
        h.store
            .record_tool_invocation(&self.lease, &invocation)
            .await
            .unwrap();
        self.event(
            h,
            &ToolCallEvent {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                invocation_id: invocation.id.clone(),
                idempotency_key: None,
            },
        )
        .await;
        invocation.id
    }
}

fn tool_call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn results_of(message: &Message) -> Vec<(String, String, bool)> {
    message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::ToolResult(r) => Some((r.call_id.clone(), r.content.clone(), r.is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_resumed_run_answers_the_dead_runs_calls_by_their_replay_policy() {
    let h = Harness::new().await;
    let dead = Orphan::new(&h).await;
    // the dead process wrote line 1 of the log before it died, and was in
    // the middle of its second turn's calls
    std::fs::write(h.project.join("log"), "one\n").unwrap();
    let calls = vec![
        // finished: its result was recorded, only the results message was lost
        tool_call("c1", "run_command", json!({"command": "echo one >> log"})),
        // safe to repeat, admitted: run again
        tool_call(
            "c2",
            "write_file",
            json!({"path": "note.txt", "content": "hi\n"}),
        ),
        // not safe, admitted: it may have run
        tool_call("c3", "run_command", json!({"command": "echo two >> log"})),
        // not safe, never admitted: it did not start
        tool_call("c4", "run_command", json!({"command": "echo three >> log"})),
    ];
    dead.message(&h, Message::user("Goal: log twice")).await;
    dead.message(&h, Message::assistant("", calls.clone()))
        .await;
    let first = dead.admitted(&h, &calls[0]).await;
    dead.event(
        &h,
        &ToolResultEvent {
            call_id: "c1".into(),
            tool: "run_command".into(),
            invocation_id: Some(first),
            status: CallStatus::Succeeded,
            is_error: false,
            content: "exit 0".into(),
            truncated: false,
            duration_ms: 4,
        },
    )
    .await;
    dead.admitted(&h, &calls[1]).await;
    let in_flight = dead.admitted(&h, &calls[2]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    let model = h.script(
        "resumed",
        json!([turn(
            "",
            vec![
                call("run_command", json!({"command": "cat log note.txt"})),
                complete_met(vec![("c1", "cat log")]),
            ]
        )]),
    );
    let handle = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap();
    assert_eq!(handle.run.resumed_from.as_ref(), Some(&dead.run.id));
    assert_eq!(handle.run.session, dead.run.session);
    let resumed = handle.wait().await.unwrap();
    assert_eq!(resumed.state, RunState::Completed, "{resumed:?}");
    assert_eq!(resumed.resumed_from.as_ref(), Some(&dead.run.id));
    // the dead run was recorded interrupted on the way, and stays so
    let old = h.runtime.get_run(&h.tenant, &dead.run.id).await.unwrap();
    assert_eq!(old.state, RunState::Interrupted);
    // and its calls in flight were closed: none shows as running
    let statuses: Vec<(String, ToolStatus)> = h
        .store
        .list_tool_invocations(&h.tenant, &dead.run.id)
        .await
        .unwrap()
        .into_iter()
        .map(|i| (i.id.to_string(), i.status))
        .collect();
    assert_eq!(statuses.len(), 3, "{statuses:?}");
    assert!(
        statuses.iter().all(|(_, s)| *s == ToolStatus::Failed),
        "{statuses:?}"
    );

    // c2 ran again in the new sandbox; c3 and c4 did not
    assert_eq!(h.read(&h.project, "note.txt").as_deref(), Some("hi\n"));
    assert_eq!(h.read(&h.project, "log").as_deref(), Some("one\n"));

    // the first request already carries every answer, in call order
    let requests = model.requests();
    let history = &requests[0].messages;
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
    let results = results_of(&history[2]);
    let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    assert_eq!(results[0].1, "exit 0");
    assert!(!results[0].2);
    assert!(!results[1].2, "{results:?}");
    assert!(results[1].1.contains("note.txt"), "{results:?}");
    assert!(results[2].2);
    assert!(
        results[2].1.starts_with("Outcome unknown")
            && results[2]
                .1
                .contains(&format!("idempotency key {in_flight}")),
        "{results:?}"
    );
    assert!(results[3].1.starts_with("Not run"), "{results:?}");

    // run.started names the run it resumes, and the goal's criteria came along
    let started: Vec<RunStarted> = h
        .payloads(&dead.run.session, RunStarted::KIND)
        .await
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].resumed_from.as_ref(), Some(&dead.run.id));
    assert_eq!(started[0].success_criteria, ["log has two lines"]);
    // the not-rerun calls are reported as results of the new run's log
    let reported: Vec<(String, String)> = h
        .payloads(&dead.run.session, ToolResultEvent::KIND)
        .await
        .into_iter()
        .filter(|p| p["call_id"] == "c3" || p["call_id"] == "c4")
        .map(|p| {
            (
                p["call_id"].as_str().unwrap().to_owned(),
                p["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        reported,
        [
            ("c3".to_owned(), "failed".to_owned()),
            ("c4".to_owned(), "skipped".to_owned())
        ]
    );

    // a run is resumed once; a finished run is not resumed at all
    let again = h
        .runtime
        .resume_run(
            &h.tenant,
            &dead.run.id,
            ResumeRun::new(h.script("again", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&again, RuntimeError::NotResumable { reason, .. } if reason.contains("already resumed")),
        "{again}"
    );
    let finished = h
        .runtime
        .resume_run(
            &h.tenant,
            &resumed.id,
            ResumeRun::new(h.script("finished", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&finished, RuntimeError::NotResumable { reason, .. } if reason.contains("ended completed")),
        "{finished}"
    );
}

#[tokio::test]
async fn a_run_killed_between_turns_resumes_with_the_next_model_call() {
    let h = Harness::new().await;
    let dead = Orphan::new(&h).await;
    let calls = vec![tool_call("c1", "read_file", json!({"path": "a"}))];
    dead.message(&h, Message::user("Goal: log twice")).await;
    dead.message(&h, Message::assistant("", calls)).await;
    dead.message(
        &h,
        Message::tool_results(vec![paddock_core::model::ToolResult {
            call_id: "c1".into(),
            content: "no such file".into(),
            is_error: true,
        }]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let model = h.script("next", json!([turn("", vec![complete_met(vec![])])]));
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(resumed.state.is_terminal(), "{resumed:?}");
    // nothing added before the model's next turn: the history was complete
    let roles: Vec<Role> = model.requests()[0]
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
}

/// A run that wrote a.txt and finished (its checkpoints record it), then a
/// run that died in the middle of a batch: it wrote b.txt and appended two
/// lines to the log; only the first command's result was recorded, the
/// second was in flight. Answers the last checkpoint and the dead run.
async fn checkpointed_then_dead(h: &Harness) -> (Session, Checkpoint, Orphan, Vec<ToolCall>) {
    let session = h.session("checkpointed").await;
    let model = h.script(
        "first",
        json!([
            turn(
                "",
                vec![call(
                    "write_file",
                    json!({"path": "a.txt", "content": "alpha\n"})
                )]
            ),
            turn("", vec![complete_met(vec![])]),
        ]),
    );
    let first = h
        .runtime
        .start_run(&h.tenant, &session.id, StartRun::new("write a", model))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(first.state, RunState::Completed, "{first:?}");
    let last = h
        .store
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(last.reason, CheckpointReason::ToolBatch);

    let dead = Orphan::in_session(h, &session).await;
    let calls = vec![
        tool_call(
            "d1",
            "write_file",
            json!({"path": "b.txt", "content": "bravo\n"}),
        ),
        tool_call("d2", "run_command", json!({"command": "echo x >> log"})),
        tool_call("d3", "run_command", json!({"command": "echo y >> log"})),
    ];
    dead.message(h, Message::user("Goal: write b")).await;
    dead.message(h, Message::assistant("", calls.clone())).await;
    for (call, content) in [(&calls[0], "Wrote b.txt"), (&calls[1], "exit 0")] {
        let key = dead.admitted(h, call).await;
        dead.event(
            h,
            &ToolResultEvent {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                invocation_id: Some(key),
                status: CallStatus::Succeeded,
                is_error: false,
                content: content.into(),
                truncated: false,
                duration_ms: 2,
            },
        )
        .await;
    }
    dead.admitted(h, &calls[2]).await;
    // what the dead process did to the workspace before it died
    std::fs::write(h.project.join("b.txt"), "bravo\n").unwrap();
    std::fs::write(h.project.join("log"), "x\ny\n").unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    (session, last, dead, calls)
}

fn resumed_started(started: &[RunStarted], dead: &Orphan) -> RunStarted {
    started
        .iter()
        .find(|s| s.resumed_from.as_ref() == Some(&dead.run.id))
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn a_resumed_run_starts_from_the_last_checkpoint_and_answers_what_the_restore_undid() {
    let h = Harness::new().await;
    let (session, last, dead, _) = checkpointed_then_dead(&h).await;
    let model = h.script("resumed", json!([turn("", vec![complete_met(vec![])])]));

    // what the restore would overwrite is named, and nothing is written
    let err = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap_err();
    match &err {
        RuntimeError::WorkspaceChanged {
            checkpoint, paths, ..
        } => assert_eq!(
            (checkpoint, paths.as_slice()),
            (&last.id, &["b.txt".to_owned(), "log".to_owned()][..])
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.read(&h.project, "log").as_deref(), Some("x\ny\n"));

    // forced: the workspace as it was is kept in a checkpoint first
    let handle = h
        .runtime
        .resume_run(
            &h.tenant,
            &dead.run.id,
            ResumeRun {
                force: true,
                ..ResumeRun::new(model.clone())
            },
        )
        .await
        .unwrap();
    let safety = handle.safety_checkpoint.clone().unwrap();
    let resumed = handle.wait().await.unwrap();
    assert_eq!(resumed.state, RunState::Completed, "{resumed:?}");
    let kept = h
        .runtime
        .diff_checkpoints(&h.tenant, &session.id, Some(&last.id), Some(&safety))
        .await
        .unwrap();
    let kept: Vec<&str> = kept.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(kept, ["b.txt", "log"], "the overwritten files are kept");

    // the workspace: the checkpoint (a.txt, no log) plus the safe call redone
    assert_eq!(h.read(&h.project, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(h.read(&h.project, "b.txt").as_deref(), Some("bravo\n"));
    assert_eq!(
        h.read(&h.project, "log"),
        None,
        "the restore undid the commands"
    );

    // run.started names the checkpoint; the resumed run's start checkpoint is it
    let started: Vec<RunStarted> = h
        .payloads(&session.id, RunStarted::KIND)
        .await
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    assert_eq!(
        resumed_started(&started, &dead)
            .restored_checkpoint
            .as_ref(),
        Some(&last.id)
    );
    let start = h
        .store
        .list_checkpoints(&h.tenant, &session.id)
        .await
        .unwrap()
        .into_iter()
        .rfind(|c| c.run == resumed.id && c.reason == CheckpointReason::RunStart)
        .unwrap();
    let diff = h
        .runtime
        .diff_checkpoints(&h.tenant, &session.id, Some(&last.id), Some(&start.id))
        .await
        .unwrap();
    assert!(diff.changes.is_empty(), "{:?}", diff.changes);

    // the answers: d1 redone; d2 finished but undone, with its old result;
    // d3 unknown, and the model is told the workspace was restored
    let requests = model.requests();
    let history = &requests[0].messages;
    let results = results_of(history.last().unwrap());
    let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["d1", "d2", "d3"]);
    assert!(!results[0].2, "{results:?}");
    assert!(results[0].1.contains("b.txt"), "{results:?}");
    assert!(
        results[1].2 && results[1].1.starts_with("Undone") && results[1].1.contains("exit 0"),
        "{results:?}"
    );
    assert!(
        results[2].2
            && results[2].1.starts_with("Outcome unknown")
            && results[2].1.contains("restored"),
        "{results:?}"
    );
}

#[tokio::test]
async fn after_a_failed_checkpoint_a_resume_keeps_the_workspace_as_it_is() {
    let h = Harness::new().await;
    let (session, _, dead, _) = checkpointed_then_dead(&h).await;
    // the dead run's checkpoint after an earlier batch failed: the last
    // checkpoint is behind the history, so restoring it would undo work
    dead.event(
        &h,
        &CheckpointFailed {
            reason: CheckpointReason::ToolBatch,
            error: "checkpoint of /ws: over max_files".into(),
        },
    )
    .await;
    let model = h.script("resumed", json!([turn("", vec![complete_met(vec![])])]));
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(resumed.state, RunState::Completed, "{resumed:?}");
    assert_eq!(h.read(&h.project, "log").as_deref(), Some("x\ny\n"));
    let started: Vec<RunStarted> = h
        .payloads(&session.id, RunStarted::KIND)
        .await
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    assert_eq!(resumed_started(&started, &dead).restored_checkpoint, None);
    // the recorded results hold: nothing was undone
    let requests = model.requests();
    let results = results_of(requests[0].messages.last().unwrap());
    assert_eq!(results[1].1, "exit 0", "{results:?}");
    assert!(results[2].1.starts_with("Outcome unknown"), "{results:?}");
    assert!(!results[2].1.contains("restored"), "{results:?}");
}

/// The `run.started` a dead run's process wrote.
fn started_with(
    dead: &Orphan,
    backend: &str,
    image: Option<&str>,
    network: NetworkPolicy,
    secrets: &[&str],
) -> RunStarted {
    RunStarted {
        goal: dead.run.goal.clone(),
        success_criteria: vec![],
        mode: RunMode::Build,
        budgets: Budgets::default(),
        model: "scripted:dead".into(),
        driver: None,
        parent_run: None,
        profile: None,
        task_key: None,
        backend: Some(backend.into()),
        image: image.map(str::to_owned),
        network: Some(network),
        resumed_from: None,
        restored_checkpoint: None,
        resume_budget: None,
        secrets: secrets
            .iter()
            .map(|s| paddock_proto::SecretNotice {
                name: (*s).to_owned(),
                hosts: vec!["api.test".parse().unwrap()],
            })
            .collect(),
    }
}

#[tokio::test]
async fn a_resume_keeps_the_interrupted_run_s_sandbox_or_says_why_it_cannot() {
    let h = Harness::new().await;
    let native = "native";

    // a run on another backend is not resumed on this runtime's
    let docker = Orphan::new(&h).await;
    docker
        .event(
            &h,
            &started_with(
                &docker,
                "docker",
                Some("paddock-sandbox:bookworm"),
                NetworkPolicy::None,
                &[],
            ),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let refused = h
        .runtime
        .resume_run(
            &h.tenant,
            &docker.run.id,
            ResumeRun::new(h.script("docker", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, RuntimeError::NotResumable { reason, .. }
            if reason.contains("docker backend (image paddock-sandbox:bookworm)")
                && reason.contains(native)),
        "{refused}"
    );

    // secrets were never stored: refused unless they are given again
    let dead = Orphan::new(&h).await;
    let network: NetworkPolicy = "allow:pypi.org".parse().unwrap();
    dead.event(
        &h,
        &started_with(&dead, native, None, network.clone(), &["API_TOKEN"]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let refused = h
        .runtime
        .resume_run(
            &h.tenant,
            &dead.run.id,
            ResumeRun::new(h.script("no-secret", json!([]))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, RuntimeError::NotResumable { reason, .. }
            if reason.contains("API_TOKEN") && reason.contains("never stored")),
        "{refused}"
    );
    let mut request = ResumeRun::new(h.script("with-secret", json!([turn("", vec![])])));
    request.secrets = vec![
        SecretSpec::new(
            "API_TOKEN",
            SecretValue::new("s3cret"),
            &["api.example.com"],
            None,
        )
        .unwrap(),
    ];
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, request)
        .await
        .unwrap();
    let resumed = resumed.wait().await.unwrap();
    // its run.started: the same backend and network, the secret's name only
    let started: Vec<RunStarted> = h
        .payloads(&dead.run.session, RunStarted::KIND)
        .await
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    let again = resumed_started(&started, &dead);
    assert_eq!(again.backend.as_deref(), Some(native), "{resumed:?}");
    assert_eq!(again.network, Some(network));
    let names: Vec<&str> = again.secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["API_TOKEN"]);
}

/// The dead run's history ends with a batch answered: the resumed run's
/// next step is a model call.
async fn between_turns(h: &Harness, dead: &Orphan) {
    let calls = vec![tool_call("c1", "read_file", json!({"path": "a"}))];
    dead.message(h, Message::user("Goal: log twice")).await;
    dead.message(h, Message::assistant("", calls)).await;
    dead.message(
        h,
        Message::tool_results(vec![paddock_core::model::ToolResult {
            call_id: "c1".into(),
            content: "no such file".into(),
            is_error: true,
        }]),
    )
    .await;
}

fn user_texts(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn steering_accepted_before_the_crash_reaches_the_resumed_run_s_first_request() {
    let h = Harness::new().await;
    let dead = Orphan::new(&h).await;
    between_turns(&h, &dead).await;
    // accepted while the run was going, never delivered: its process died
    let first = h
        .runtime
        .steer(&h.tenant, &dead.run.id, "use v2")
        .await
        .unwrap();
    let second = h
        .runtime
        .steer(&h.tenant, &dead.run.id, "and add a test")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    let model = h.script("resumed", json!([turn("", vec![complete_met(vec![])])]));
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(resumed.state.is_terminal(), "{resumed:?}");

    // the first request has both, after the history, in their order
    let requests = model.requests();
    let history = &requests[0].messages;
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::User
        ]
    );
    assert_eq!(user_texts(&history[3]), ["use v2"]);
    assert_eq!(user_texts(&history[4]), ["and add a test"]);
    // delivered once, by the resumed run; the dead run's queue is closed
    let events: Vec<(String, u64)> = h
        .payloads(&dead.run.session, "user.message")
        .await
        .into_iter()
        .map(|p| {
            (
                p["message"].as_str().unwrap().to_owned(),
                p["steering_id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("use v2".to_owned(), first.id),
            ("and add a test".to_owned(), second.id)
        ]
    );
    let stored = h
        .store
        .list_messages(&h.tenant, &dead.run.session, None)
        .await
        .unwrap();
    let copies = stored
        .iter()
        .filter(|m| user_texts(&m.message) == ["use v2"])
        .count();
    assert_eq!(copies, 1, "{stored:?}");
    assert!(
        h.store
            .list_steering_messages(&h.tenant, &dead.run.id)
            .await
            .unwrap()
            .is_empty()
    );
    let carried = h
        .store
        .list_steering_messages(&h.tenant, &resumed.id)
        .await
        .unwrap();
    assert_eq!(carried.len(), 2);
    assert!(carried.iter().all(|m| m.delivered_at.is_some()));
    let late = h.runtime.steer(&h.tenant, &dead.run.id, "too late").await;
    assert!(
        matches!(late, Err(RuntimeError::RunFinished { .. })),
        "{late:?}"
    );
}

fn resumed_run_started(h_started: Vec<serde_json::Value>) -> RunStarted {
    let started: Vec<RunStarted> = h_started
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    assert_eq!(started.len(), 1, "{started:?}");
    started.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_resume_draws_from_what_the_dead_family_left_unless_given_new_budgets() {
    let h = Harness::new().await;
    let limits = Budgets {
        max_turns: 3,
        max_tokens: 1_000_000,
        max_tool_calls: 50,
        max_wall_clock_ms: 600_000,
        max_cost_micro_usd: None,
    };
    let spent = paddock_core::store::RunUsage {
        turns: 1,
        tool_calls: 1,
        input_tokens: 100,
        output_tokens: 10,
        ..Default::default()
    };
    let session = h.session("budgets").await;
    let dead = Orphan::shaped(&h, &session, |run| {
        run.budgets = limits;
        run.usage = spent;
    })
    .await;
    // a subagent of the dead run spent a turn of the family's too
    let mut child = Run::new(
        h.tenant.clone(),
        session.id.clone(),
        "look around",
        h.store.now(),
    );
    child.parent_run = Some(dead.run.id.clone());
    child.state = RunState::Completed;
    child.budgets = limits;
    child.usage = paddock_core::store::RunUsage {
        turns: 1,
        input_tokens: 50,
        ..Default::default()
    };
    h.store.create_run(&dead.lease, &child).await.unwrap();
    between_turns(&h, &dead).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    // one turn is left of three: the second model turn is refused
    let model = h.script(
        "left",
        json!([
            turn("", vec![call("read_file", json!({"path": "a"}))]),
            turn("", vec![complete_met(vec![])]),
        ]),
    );
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(resumed.state, RunState::Failed, "{resumed:?}");
    assert_eq!(
        resumed.end_reason,
        Some(paddock_core::store::EndReason::BudgetExceeded)
    );
    assert_eq!(model.requests().len(), 1);
    assert_eq!(resumed.budgets.max_turns, 1);
    assert_eq!(resumed.budgets.max_tool_calls, 49);
    assert_eq!(resumed.budgets.max_tokens, 1_000_000 - 160);
    // no more wall clock than the run had left
    assert!(resumed.budgets.max_wall_clock_ms <= 600_000, "{resumed:?}");
    // usage stays the run's own
    assert_eq!(resumed.usage.turns, 1);
    let started = resumed_run_started(h.payloads(&session.id, RunStarted::KIND).await);
    let budget = started.resume_budget.unwrap();
    assert_eq!(budget.source, paddock_runtime::events::BudgetSource::Left);
    assert_eq!((budget.spent.turns, budget.spent.tokens()), (2, 160));

    // a caller that passes budgets raises the limit, and run.started says so
    let session = h.session("raised").await;
    let dead = Orphan::shaped(&h, &session, |run| {
        run.budgets = limits;
        run.usage = paddock_core::store::RunUsage {
            turns: 3,
            ..Default::default()
        };
    })
    .await;
    between_turns(&h, &dead).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let model = h.script("raised", json!([turn("", vec![complete_met(vec![])])]));
    let mut request = ResumeRun::new(model.clone());
    request.budgets = Some(limits);
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(resumed.budgets, limits);
    assert_eq!(model.requests().len(), 1, "{resumed:?}");
    let started = resumed_run_started(h.payloads(&session.id, RunStarted::KIND).await);
    assert_eq!(
        started.resume_budget.map(|b| b.source),
        Some(paddock_runtime::events::BudgetSource::Given)
    );
}

#[tokio::test]
async fn a_command_sees_its_idempotency_key_and_a_re_run_keeps_the_one_it_had() {
    let h = Harness::new().await;
    let dead = Orphan::new(&h).await;
    let calls = vec![tool_call(
        "c1",
        "write_file",
        json!({"path": "note.txt", "content": "hi\n"}),
    )];
    dead.message(&h, Message::user("Goal: log twice")).await;
    dead.message(&h, Message::assistant("", calls.clone()))
        .await;
    let admitted = dead.admitted(&h, &calls[0]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    let model = h.script(
        "keys",
        json!([
            turn(
                "",
                vec![call(
                    "run_command",
                    json!({"command": "echo \"key=$PADDOCK_IDEMPOTENCY_KEY\""})
                )]
            ),
            turn("", vec![complete_met(vec![])]),
        ]),
    );
    let resumed = h
        .runtime
        .resume_run(&h.tenant, &dead.run.id, ResumeRun::new(model.clone()))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert!(resumed.state.is_terminal(), "{resumed:?}");
    let call_events: Vec<ToolCallEvent> = h
        .payloads(&dead.run.session, ToolCallEvent::KIND)
        .await
        .into_iter()
        .map(|p| serde_json::from_value(p).unwrap())
        .collect();
    // the dead run's c1, its re-run, the command, complete_task
    let rerun = &call_events[1];
    assert_eq!(rerun.call_id, "c1");
    assert_ne!(rerun.invocation_id, admitted);
    assert_eq!(rerun.idempotency_key.as_ref(), Some(&admitted));
    // the command's environment held its own invocation's key
    let command = call_events
        .iter()
        .find(|c| c.tool == "run_command")
        .unwrap();
    assert_eq!(command.idempotency_key, None);
    let requests = model.requests();
    let results = results_of(requests[1].messages.last().unwrap());
    assert!(
        results[0]
            .1
            .contains(&format!("key={}", command.invocation_id)),
        "{results:?}"
    );
}
