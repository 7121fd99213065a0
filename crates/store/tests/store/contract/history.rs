//! Contract cases for a session's goals, plan, message history and per-run events.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::{GoalId, RunId, TenantId};
use paddock_core::model::{Message, ToolCall, ToolResult};
use paddock_core::store::{
    Goal, GoalStatus, Lease, NewEvent, Plan, Run, Session, Store, StoredMessage, Task, TaskStatus,
};

use super::{
    Fixture, StoreFactory, assert_conflict, assert_invalid, assert_not_found, clock, fixture,
    lease_session, snapshot,
};

pub fn goal(run: &Run, description: &str, store: &dyn Store) -> Goal {
    Goal {
        id: GoalId::generate(),
        tenant: run.tenant.clone(),
        session: run.session.clone(),
        run: run.id.clone(),
        description: description.into(),
        success_criteria: vec!["cargo test passes".into(), "no new warnings".into()],
        status: GoalStatus::Open,
        created_at: store.now(),
        updated_at: store.now(),
    }
}

pub fn task(key: &str, status: TaskStatus, run: &Run, store: &dyn Store) -> Task {
    Task {
        key: key.into(),
        title: format!("step {key}"),
        status,
        run: run.id.clone(),
        updated_at: store.now(),
    }
}

pub fn plan(run: &Run, tasks: Vec<Task>, store: &dyn Store) -> Plan {
    Plan {
        tenant: run.tenant.clone(),
        session: run.session.clone(),
        run: run.id.clone(),
        version: 0,
        explanation: Some(format!("{} tasks", tasks.len())),
        tasks,
        created_at: store.now(),
    }
}

/// `message` said in `run`, to be appended to `session`.
pub fn said(session: &Session, run: &Run, message: Message, store: &dyn Store) -> StoredMessage {
    StoredMessage {
        tenant: session.tenant.clone(),
        session: session.id.clone(),
        run: run.id.clone(),
        seq: 0,
        message,
        created_at: store.now(),
    }
}

async fn started_run(
    store: &dyn Store,
    fx: &Fixture,
    lease: &Lease,
    goal: &str,
) -> anyhow::Result<Run> {
    let run = Run::new(fx.tenant.clone(), fx.session.id.clone(), goal, store.now());
    store.create_run(lease, &run).await?;
    Ok(run)
}

pub async fn goals(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = started_run(&*store, &fx, &lease, "fix the build").await?;

    assert!(store.list_goals(t, &fx.session.id).await?.is_empty());
    let first = goal(&run, "fix the build", &*store);
    store.create_goal(&lease, &first).await?;
    assert_eq!(
        store.list_goals(t, &fx.session.id).await?,
        std::slice::from_ref(&first)
    );
    assert_conflict(store.create_goal(&lease, &first).await, "goal");

    clock.advance(Duration::from_secs(3));
    let met = store
        .set_goal_status(&lease, t, &first.id, GoalStatus::Met)
        .await?;
    assert_eq!(
        met,
        Goal {
            status: GoalStatus::Met,
            updated_at: store.now(),
            ..first.clone()
        }
    );
    let second = goal(&run, "and keep it green", &*store);
    store.create_goal(&lease, &second).await?;
    assert_eq!(
        store.list_goals(t, &fx.session.id).await?,
        [met.clone(), second.clone()]
    );

    let missing = GoalId::generate();
    assert_not_found(
        store
            .set_goal_status(&lease, t, &missing, GoalStatus::NotMet)
            .await,
        "goal",
        missing.as_str(),
    );
    let ghost_run = RunId::generate();
    let orphan = Goal {
        run: ghost_run.clone(),
        ..goal(&run, "orphan", &*store)
    };
    assert_not_found(
        store.create_goal(&lease, &orphan).await,
        "run",
        ghost_run.as_str(),
    );
    assert_eq!(store.list_goals(t, &fx.session.id).await?, [met, second]);
    Ok(())
}

pub async fn plans_are_versioned_and_replace_tasks(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = started_run(&*store, &fx, &lease, "goal").await?;
    assert_eq!(store.get_plan(t, &fx.session.id).await?, None);

    let s = &*store;
    let first = plan(
        &run,
        vec![
            task("1", TaskStatus::Pending, &run, s),
            task("2", TaskStatus::Pending, &run, s),
            task("3", TaskStatus::Pending, &run, s),
        ],
        s,
    );
    let saved = store.save_plan(&lease, &first).await?;
    assert_eq!(
        saved,
        Plan {
            version: 1,
            ..first.clone()
        }
    );
    assert_eq!(store.get_plan(t, &fx.session.id).await?, Some(saved));

    // a later run reorders, drops "2", adds "tests"; the version it is given is ignored
    clock.advance(Duration::from_secs(2));
    let next_run = started_run(s, &fx, &lease, "goal, continued").await?;
    let second = Plan {
        version: 99,
        explanation: None,
        ..plan(
            &next_run,
            vec![
                task("3", TaskStatus::Done, &next_run, s),
                task("1", TaskStatus::InProgress, &next_run, s),
                Task {
                    title: "run the tests".into(),
                    ..task("tests", TaskStatus::Blocked, &next_run, s)
                },
            ],
            s,
        )
    };
    let saved = store.save_plan(&lease, &second).await?;
    let expected = Plan {
        version: 2,
        ..second.clone()
    };
    assert_eq!(saved, expected);
    assert_eq!(store.get_plan(t, &fx.session.id).await?, Some(expected));

    // refused saves write nothing and use up no version
    let repeated = plan(
        &run,
        vec![
            task("a", TaskStatus::Pending, &run, s),
            task("a", TaskStatus::Done, &run, s),
        ],
        s,
    );
    assert_invalid(store.save_plan(&lease, &repeated).await, "tasks.key");
    let unnamed = plan(&run, vec![task("", TaskStatus::Pending, &run, s)], s);
    assert_invalid(store.save_plan(&lease, &unnamed).await, "tasks.key");
    let ghost = RunId::generate();
    let ghostly = plan(
        &run,
        vec![Task {
            run: ghost.clone(),
            ..task("x", TaskStatus::Pending, &run, s)
        }],
        s,
    );
    assert_not_found(
        store.save_plan(&lease, &ghostly).await,
        "run",
        ghost.as_str(),
    );
    assert_eq!(
        store.get_plan(t, &fx.session.id).await?.map(|p| p.version),
        Some(2)
    );

    // an empty plan clears the task list
    let cleared = store.save_plan(&lease, &plan(&run, vec![], s)).await?;
    assert_eq!(cleared.version, 3);
    assert_eq!(store.get_plan(t, &fx.session.id).await?, Some(cleared));

    // another session counts its versions on its own
    let other = Session::new(t.clone(), fx.workspace.id.clone(), "other", store.now());
    store.create_session(&other).await?;
    let other_lease = lease_session(s, &other, "node-a").await?;
    let other_run = Run::new(t.clone(), other.id.clone(), "other goal", store.now());
    store.create_run(&other_lease, &other_run).await?;
    let theirs = store
        .save_plan(
            &other_lease,
            &plan(
                &other_run,
                vec![task("1", TaskStatus::Pending, &other_run, s)],
                s,
            ),
        )
        .await?;
    assert_eq!(theirs.version, 1);
    assert_eq!(
        store
            .get_plan(t, &fx.session.id)
            .await?
            .map(|p| (p.version, p.tasks.len())),
        Some((3, 0))
    );
    Ok(())
}

fn conversation(session: &Session, first: &Run, second: &Run, s: &dyn Store) -> Vec<StoredMessage> {
    let call = ToolCall {
        id: "call_1".into(),
        name: "run_command".into(),
        arguments: serde_json::json!({"command": "cargo test", "timeout_ms": 60000}),
    };
    vec![
        said(
            session,
            first,
            Message::system("you are a careful engineer"),
            s,
        ),
        said(session, first, Message::user("make the tests pass"), s),
        said(
            session,
            first,
            Message::assistant("running the tests", vec![call]),
            s,
        ),
        said(
            session,
            first,
            Message::tool_results(vec![ToolResult {
                call_id: "call_1".into(),
                content: "1 failed".into(),
                is_error: true,
            }]),
            s,
        ),
        said(session, second, Message::user("try again"), s),
        said(session, second, Message::assistant("fixed", vec![]), s),
    ]
}

pub async fn messages_are_sequenced_and_cut_at_a_run(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(s, &fx.session, "node-a").await?;
    let first = started_run(s, &fx, &lease, "make the tests pass").await?;
    let second = started_run(s, &fx, &lease, "try again").await?;
    assert!(
        store
            .list_messages(t, &fx.session.id, None)
            .await?
            .is_empty()
    );

    let mut appended = Vec::new();
    for (i, message) in conversation(&fx.session, &first, &second, s)
        .into_iter()
        .enumerate()
    {
        let stored = store.append_message(&lease, &message).await?;
        assert_eq!(
            stored,
            StoredMessage {
                seq: i as u64 + 1,
                ..message
            }
        );
        appended.push(stored);
    }
    assert_eq!(
        store.list_messages(t, &fx.session.id, None).await?,
        appended
    );
    assert_eq!(
        store
            .list_messages(t, &fx.session.id, Some(&first.id))
            .await?,
        appended[..4]
    );
    assert_eq!(
        store
            .list_messages(t, &fx.session.id, Some(&second.id))
            .await?,
        appended
    );
    let ghost = RunId::generate();
    assert_not_found(
        store.list_messages(t, &fx.session.id, Some(&ghost)).await,
        "run",
        ghost.as_str(),
    );

    // a fork copies the history up to a run, keeping the original runs; the
    // fork's own runs come later, so cutting at one of them keeps the copies
    let fork = Session {
        forked_from: Some(fx.session.id.clone()),
        forked_at_run: Some(first.id.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "fork", store.now())
    };
    store.create_session(&fork).await?;
    let fork_lease = lease_session(s, &fork, "node-a").await?;
    let mut copied = Vec::new();
    for original in store
        .list_messages(t, &fx.session.id, Some(&first.id))
        .await?
    {
        let copy = StoredMessage {
            session: fork.id.clone(),
            ..original
        };
        copied.push(store.append_message(&fork_lease, &copy).await?);
    }
    assert_eq!(
        copied.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let fork_run = Run::new(t.clone(), fork.id.clone(), "other fix", store.now());
    store.create_run(&fork_lease, &fork_run).await?;
    let own = store
        .append_message(
            &fork_lease,
            &said(&fork, &fork_run, Message::user("other fix"), s),
        )
        .await?;
    assert_eq!(own.seq, 5);
    let mut fork_history = copied.clone();
    fork_history.push(own);
    assert_eq!(
        store.list_messages(t, &fork.id, Some(&fork_run.id)).await?,
        fork_history
    );
    assert_eq!(
        store.list_messages(t, &fork.id, Some(&first.id)).await?,
        copied
    );

    // a message must name a run of the tenant; the refused append uses up no seq
    let orphan = StoredMessage {
        run: ghost.clone(),
        ..said(&fx.session, &second, Message::user("lost"), s)
    };
    assert_not_found(
        store.append_message(&lease, &orphan).await,
        "run",
        ghost.as_str(),
    );
    let next = store
        .append_message(&lease, &said(&fx.session, &second, Message::user("ok"), s))
        .await?;
    assert_eq!(next.seq, 7);
    Ok(())
}

pub async fn concurrent_message_appends_are_gap_free(f: &dyn StoreFactory) -> anyhow::Result<()> {
    const TASKS: u32 = 6;
    const EACH: u32 = 20;
    let clock = clock();
    let first = f.open(clock.clone()).await?;
    let second = f.open(clock.clone()).await?;
    let fx = fixture(&*first, "acme").await?;
    let lease = lease_session(&*first, &fx.session, "node-a").await?;
    let run = started_run(&*first, &fx, &lease, "goal").await?;

    let mut tasks = Vec::new();
    for t in 0..TASKS {
        // half the appenders go through a second pool on the same database
        let store: Arc<dyn Store> = if t % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let (lease, session, run) = (lease.clone(), fx.session.clone(), run.clone());
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for n in 0..EACH {
                let text = format!("{t}:{n}");
                let m = said(&session, &run, Message::user(text), &*store);
                seqs.push(store.append_message(&lease, &m).await?.seq);
            }
            anyhow::Ok(seqs)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    all.sort_unstable();
    let expected: Vec<u64> = (1..=u64::from(TASKS * EACH)).collect();
    assert_eq!(all, expected, "message seqs must be unique and gap-free");

    let listed = first
        .list_messages(&fx.tenant, &fx.session.id, None)
        .await?;
    assert_eq!(listed.iter().map(|m| m.seq).collect::<Vec<_>>(), expected);
    // each appender's messages are in the order it appended them
    for t in 0..TASKS {
        let mine: Vec<String> = listed
            .iter()
            .map(|m| m.message.joined_text())
            .filter(|text| text.starts_with(&format!("{t}:")))
            .collect();
        let in_order: Vec<String> = (0..EACH).map(|n| format!("{t}:{n}")).collect();
        assert_eq!(mine, in_order);
    }
    Ok(())
}

pub async fn run_events_and_blob_references(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(s, &fx.session, "node-a").await?;
    let a = started_run(s, &fx, &lease, "a").await?;
    let b = started_run(s, &fx, &lease, "b").await?;

    let mut of_a = Vec::new();
    for (i, run) in [Some(&a), Some(&b), Some(&a), None, Some(&a), Some(&b)]
        .into_iter()
        .enumerate()
    {
        let event = NewEvent {
            session: fx.session.id.clone(),
            run: run.map(|r| r.id.clone()),
            kind: "step".into(),
            payload: format!("{{\"i\":{i}}}"),
        };
        let stored = store.append_event(&lease, t, &event).await?;
        if run == Some(&a) {
            of_a.push(stored);
        }
    }
    assert_eq!(of_a.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 3, 5]);
    assert_eq!(store.list_run_events(t, &a.id, 0, 100).await?, of_a);
    assert_eq!(store.list_run_events(t, &a.id, 1, 1).await?, of_a[1..2]);
    assert!(store.list_run_events(t, &a.id, 5, 100).await?.is_empty());
    let seqs_b: Vec<u64> = store
        .list_run_events(t, &b.id, 0, 100)
        .await?
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs_b, [2, 6]);

    // blob references count every tenant's snapshot rows
    let other = fixture(s, "other").await?;
    let mut shared = snapshot(&other.tenant, None, s);
    shared.blob_hash = "blake3:shared".into();
    store.create_snapshot(&shared).await?;
    let mut also = snapshot(t, None, s);
    also.blob_hash = "blake3:shared".into();
    store.create_snapshot(&also).await?;
    assert!(store.snapshot_blob_referenced("blake3:shared").await?);
    assert!(!store.snapshot_blob_referenced("blake3:unknown").await?);
    store.delete_snapshot(&other.tenant, &shared.id).await?;
    assert!(store.snapshot_blob_referenced("blake3:shared").await?);
    store.delete_snapshot(t, &also.id).await?;
    assert!(!store.snapshot_blob_referenced("blake3:shared").await?);
    Ok(())
}

/// Another tenant reads nothing of A's goals, plan, history or run events, and
/// cannot write into A's session even holding A's lease.
pub async fn agent_rows_are_tenant_scoped(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let a = fixture(s, "tenant-a").await?;
    let b = fixture(s, "tenant-b").await?;
    let lease_a = lease_session(s, &a.session, "node-a").await?;
    let run_a = started_run(s, &a, &lease_a, "secret").await?;
    let goal_a = goal(&run_a, "secret goal", s);
    store.create_goal(&lease_a, &goal_a).await?;
    store
        .save_plan(
            &lease_a,
            &plan(&run_a, vec![task("1", TaskStatus::Pending, &run_a, s)], s),
        )
        .await?;
    store
        .append_message(
            &lease_a,
            &said(&a.session, &run_a, Message::user("secret"), s),
        )
        .await?;
    let event = NewEvent {
        session: a.session.id.clone(),
        run: Some(run_a.id.clone()),
        kind: "secret".into(),
        payload: "{}".into(),
    };
    store.append_event(&lease_a, &a.tenant, &event).await?;

    let tb = &b.tenant;
    assert!(store.list_goals(tb, &a.session.id).await?.is_empty());
    assert_eq!(store.get_plan(tb, &a.session.id).await?, None);
    assert!(
        store
            .list_messages(tb, &a.session.id, None)
            .await?
            .is_empty()
    );
    assert_not_found(
        store
            .list_messages(tb, &a.session.id, Some(&run_a.id))
            .await,
        "run",
        run_a.id.as_str(),
    );
    assert!(
        store
            .list_run_events(tb, &run_a.id, 0, 100)
            .await?
            .is_empty()
    );
    assert!(store.list_child_runs(tb, &run_a.id).await?.is_empty());
    assert_not_found(
        store
            .set_goal_status(&lease_a, tb, &goal_a.id, GoalStatus::Met)
            .await,
        "goal",
        goal_a.id.as_str(),
    );

    // rows claiming tenant B in A's session are refused
    let forged_goal = Goal {
        tenant: tb.clone(),
        ..goal(&run_a, "forged", s)
    };
    assert_not_found(
        store.create_goal(&lease_a, &forged_goal).await,
        "session",
        a.session.id.as_str(),
    );
    let forged_plan = Plan {
        tenant: tb.clone(),
        ..plan(&run_a, vec![], s)
    };
    assert_not_found(
        store.save_plan(&lease_a, &forged_plan).await,
        "session",
        a.session.id.as_str(),
    );
    let forged_message = StoredMessage {
        tenant: tb.clone(),
        ..said(&a.session, &run_a, Message::user("forged"), s)
    };
    assert_not_found(
        store.append_message(&lease_a, &forged_message).await,
        "session",
        a.session.id.as_str(),
    );
    // and B cannot point its own rows at A's runs
    let lease_b = lease_session(s, &b.session, "node-b").await?;
    let run_b = started_run(s, &b, &lease_b, "mine").await?;
    let borrowing = StoredMessage {
        run: run_a.id.clone(),
        ..said(&b.session, &run_b, Message::user("borrowed"), s)
    };
    assert_not_found(
        store.append_message(&lease_b, &borrowing).await,
        "run",
        run_a.id.as_str(),
    );
    let borrowed_goal = Goal {
        run: run_a.id.clone(),
        ..goal(&run_b, "borrowed", s)
    };
    assert_not_found(
        store.create_goal(&lease_b, &borrowed_goal).await,
        "run",
        run_a.id.as_str(),
    );

    // A's rows are as they were
    let ta: &TenantId = &a.tenant;
    assert_eq!(store.list_goals(ta, &a.session.id).await?, [goal_a]);
    assert_eq!(
        store.get_plan(ta, &a.session.id).await?.map(|p| p.version),
        Some(1)
    );
    assert_eq!(store.list_messages(ta, &a.session.id, None).await?.len(), 1);
    Ok(())
}
