//! Forks share their parent's history instead of copying it; deleting a
//! session removes its rows and frees only the blobs no other checkpoint
//! keeps.

use paddock_core::ids::CheckpointId;
use paddock_core::model::Message;
use paddock_core::store::{
    Checkpoint, CheckpointReason, HistoryPoint, Lease, Rewind, Run, RunState, RunUpdate, Session,
    SharedHistory, Store, StoreError, StoredMessage, visible_messages,
};

use super::{
    Fixture, StoreFactory, assert_conflict, assert_not_found, clock, fixture, lease_session,
};

async fn raw(f: &dyn StoreFactory) -> anyhow::Result<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    Ok(sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&f.url())
        .await?)
}

async fn count(pool: &sqlx::AnyPool, sql: &str) -> anyhow::Result<i64> {
    use sqlx::Row;
    Ok(sqlx::query(sql)
        .fetch_one(pool)
        .await?
        .try_get::<i64, _>(0)?)
}

fn text(message: &StoredMessage) -> String {
    serde_json::to_string(&message.message.content).unwrap_or_default()
}

fn say(session: &Session, run: &Run, text: String, s: &dyn Store) -> StoredMessage {
    StoredMessage {
        tenant: session.tenant.clone(),
        session: session.id.clone(),
        run: run.id.clone(),
        seq: 0,
        message: Message::user(text),
        created_at: s.now(),
    }
}

fn checkpoint(session: &Session, run: &Run, manifest: &str, s: &dyn Store) -> Checkpoint {
    Checkpoint {
        id: CheckpointId::generate(),
        tenant: session.tenant.clone(),
        session: session.id.clone(),
        run: run.id.clone(),
        workspace: session.workspace.clone(),
        reason: CheckpointReason::ToolBatch,
        message_seq: 0,
        event_seq: 0,
        plan_version: 0,
        manifest_hash: manifest.to_owned(),
        file_count: 1,
        bytes: 1,
        new_blobs: 1,
        new_bytes: 1,
        created_at: s.now(),
    }
}

/// A fork of `parent` sharing its history as it is now.
async fn fork(
    s: &dyn Store,
    fx: &Fixture,
    parent: &Session,
    title: &str,
) -> anyhow::Result<Session> {
    let mut fork = Session::new(fx.tenant.clone(), fx.workspace.id.clone(), title, s.now());
    fork.forked_from = Some(parent.id.clone());
    fork.shared_history = Some(SharedHistory {
        upto_seq: u64::MAX,
        at: HistoryPoint::NOW,
    });
    s.create_session(&fork).await?;
    Ok(s.get_session(&fx.tenant, &fork.id).await?)
}

async fn finished_run(s: &dyn Store, lease: &Lease, session: &Session) -> anyhow::Result<Run> {
    let run = Run::new(session.tenant.clone(), session.id.clone(), "goal", s.now());
    s.create_run(lease, &run).await?;
    s.update_run(
        lease,
        &session.tenant,
        &run.id,
        &RunUpdate::state(RunState::Completed),
    )
    .await?;
    Ok(run)
}

/// What the history reads as now, with the session's own rewinds applied
/// (as the runtime reads it).
async fn visible(s: &dyn Store, session: &Session) -> anyhow::Result<Vec<String>> {
    let rewinds = s.list_rewinds(&session.tenant, &session.id).await?;
    Ok(s.list_messages(&session.tenant, &session.id, None)
        .await?
        .iter()
        .filter(|m| visible_messages(&rewinds, HistoryPoint::NOW, m.seq))
        .map(text)
        .collect())
}

pub async fn forks_share_their_parents_history_and_rewinds_stay_apart(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let pool = raw(f).await?;
    let fx = fixture(s, "acme").await?;
    let parent = fx.session.clone();
    let lease = lease_session(s, &parent, "node/a").await?;
    let run = Run::new(fx.tenant.clone(), parent.id.clone(), "goal", s.now());
    s.create_run(&lease, &run).await?;
    // a big history: 200 messages of 16 KiB
    let big = "x".repeat(16 * 1024);
    for n in 0..200 {
        s.append_message(&lease, &say(&parent, &run, format!("{n} {big}"), s))
            .await?;
    }
    let at_200 = s
        .create_checkpoint(&lease, &checkpoint(&parent, &run, &"a".repeat(64), s), &[])
        .await?;
    let history = visible(s, &parent).await?;
    assert_eq!(history.len(), 200);
    let rows = count(&pool, "SELECT COUNT(*) FROM messages").await?;
    let bytes = count(
        &pool,
        "SELECT COALESCE(SUM(LENGTH(content)), 0) FROM messages",
    )
    .await?;

    let mut forks = Vec::new();
    for n in 0..8 {
        forks.push(fork(s, &fx, &parent, &format!("fork {n}")).await?);
    }
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM messages").await?,
        rows,
        "8 forks store no message"
    );
    assert_eq!(
        count(
            &pool,
            "SELECT COALESCE(SUM(LENGTH(content)), 0) FROM messages"
        )
        .await?,
        bytes
    );
    for fork in &forks {
        assert_eq!(visible(s, fork).await?, history, "{} reads it all", fork.id);
        let messages = s.list_messages(&fx.tenant, &fork.id, None).await?;
        assert!(messages.iter().all(|m| m.session == fork.id));
        assert_eq!(
            s.list_messages_after(&fx.tenant, &fork.id, 198)
                .await?
                .len(),
            2
        );
    }

    // each goes on on its own: its messages are numbered after the parent's
    let (one, two) = (&forks[0], &forks[1]);
    let one_lease = lease_session(s, one, "node/a").await?;
    let one_run = Run::new(fx.tenant.clone(), one.id.clone(), "goal", s.now());
    s.create_run(&one_lease, &one_run).await?;
    let said = s
        .append_message(&one_lease, &say(one, &one_run, "fork one".into(), s))
        .await?;
    assert_eq!(said.seq, 201);
    s.append_message(&lease, &say(&parent, &run, "parent again".into(), s))
        .await?;
    let mut expected = history.clone();
    expected.push(text(&said));
    assert_eq!(visible(s, one).await?, expected);
    assert_eq!(
        visible(s, two).await?,
        history,
        "a sibling's message is not shared"
    );
    assert_eq!(visible(s, &parent).await?.len(), 201);

    // a rewind of the parent leaves the forks' history alone ...
    s.record_rewind(
        &lease,
        &Rewind {
            tenant: fx.tenant.clone(),
            session: parent.id.clone(),
            run: run.id.clone(),
            checkpoint: at_200.id.clone(),
            to_seq: at_200.message_seq,
            to_event_seq: at_200.event_seq,
            through_seq: 0,
            through_event_seq: 0,
            created_at: s.now(),
        },
    )
    .await?;
    assert_eq!(
        visible(s, &parent).await?,
        history,
        "rewound to message 200"
    );
    assert_eq!(visible(s, two).await?, history);
    assert_eq!(visible(s, one).await?, expected);
    // ... and a fork made after it shares the parent's history as rewound
    let late = fork(s, &fx, &parent, "late").await?;
    assert_eq!(visible(s, &late).await?, history);

    // a rewind of a fork leaves the parent and the other forks alone
    let one_checkpoint = s
        .create_checkpoint(
            &one_lease,
            &checkpoint(one, &one_run, &"b".repeat(64), s),
            &[],
        )
        .await?;
    assert_eq!(one_checkpoint.message_seq, 201);
    s.append_message(&one_lease, &say(one, &one_run, "undone".into(), s))
        .await?;
    s.record_rewind(
        &one_lease,
        &Rewind {
            tenant: fx.tenant.clone(),
            session: one.id.clone(),
            run: one_run.id.clone(),
            checkpoint: one_checkpoint.id.clone(),
            to_seq: one_checkpoint.message_seq,
            to_event_seq: one_checkpoint.event_seq,
            through_seq: 0,
            through_event_seq: 0,
            created_at: s.now(),
        },
    )
    .await?;
    assert_eq!(visible(s, one).await?, expected);
    assert_eq!(visible(s, two).await?, history);
    assert_eq!(visible(s, &parent).await?, history);

    // a fork of a fork reads through both
    let grandchild = fork(s, &fx, one, "grandchild").await?;
    assert_eq!(visible(s, &grandchild).await?, expected);

    // a fork made before 0013 holds a copy: it reads that copy alone
    let mut copied = Session::new(fx.tenant.clone(), fx.workspace.id.clone(), "copy", s.now());
    copied.forked_from = Some(parent.id.clone());
    s.create_session(&copied).await?;
    assert_eq!(
        s.get_session(&fx.tenant, &copied.id).await?.shared_history,
        None
    );
    let copy_lease = lease_session(s, &copied, "node/a").await?;
    s.append_message(&copy_lease, &say(&copied, &run, "copied".into(), s))
        .await?;
    assert_eq!(visible(s, &copied).await?.len(), 1);
    Ok(())
}

pub async fn deleting_a_session_removes_its_rows_and_frees_only_its_blobs(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let pool = raw(f).await?;
    let fx = fixture(s, "acme").await?;
    let parent = fx.session.clone();
    let lease = lease_session(s, &parent, "node/a").await?;
    let run = finished_run(s, &lease, &parent).await?;
    for n in 0..3 {
        s.append_message(&lease, &say(&parent, &run, format!("m{n}"), s))
            .await?;
    }
    let (p_manifest, p_file, shared) = ("1".repeat(64), "2".repeat(64), "3".repeat(64));
    s.create_checkpoint(
        &lease,
        &checkpoint(&parent, &run, &p_manifest, s),
        std::slice::from_ref(&p_file),
    )
    .await?;

    let child = fork(s, &fx, &parent, "child").await?;
    let child_lease = lease_session(s, &child, "node/a").await?;
    let child_run = finished_run(s, &child_lease, &child).await?;
    s.append_message(&child_lease, &say(&child, &child_run, "own".into(), s))
        .await?;
    let (c_manifest, c_file) = ("4".repeat(64), "5".repeat(64));
    let child_checkpoint = s
        .create_checkpoint(
            &child_lease,
            &checkpoint(&child, &child_run, &c_manifest, s),
            &[c_file.clone(), shared.clone()],
        )
        .await?;
    // a later checkpoint of the parent names `shared` too (without a row)
    let parent_later = s
        .create_checkpoint(
            &lease,
            &checkpoint(&parent, &run, &"6".repeat(64), s),
            std::slice::from_ref(&shared),
        )
        .await?;

    // the parent has a fork: refused, naming it
    match s.plan_session_delete(&fx.tenant, &parent.id).await {
        Err(StoreError::Conflict { reason, .. }) => {
            assert!(reason.contains(child.id.as_str()), "{reason}");
        }
        other => panic!("expected the fork named, got {other:?}"),
    }
    // a session with a run not ended: refused, naming it
    let busy = Session::new(fx.tenant.clone(), fx.workspace.id.clone(), "busy", s.now());
    s.create_session(&busy).await?;
    let busy_lease = lease_session(s, &busy, "node/a").await?;
    let busy_run = Run::new(fx.tenant.clone(), busy.id.clone(), "goal", s.now());
    s.create_run(&busy_lease, &busy_run).await?;
    match s.plan_session_delete(&fx.tenant, &busy.id).await {
        Err(StoreError::Conflict { reason, .. }) => {
            assert!(reason.contains(busy_run.id.as_str()), "{reason}");
        }
        other => panic!("expected the run named, got {other:?}"),
    }
    // another tenant cannot see it
    let other = fixture(s, "globex").await?;
    assert_not_found(
        s.plan_session_delete(&other.tenant, &child.id).await,
        "session",
        child.id.as_str(),
    );

    let plan = s.plan_session_delete(&fx.tenant, &child.id).await?;
    assert_eq!(plan.sessions, std::slice::from_ref(&child.id));
    assert_eq!(plan.checkpoints, std::slice::from_ref(&child_checkpoint.id));
    let mut owned = plan.owned_blobs.clone();
    owned.sort();
    assert_eq!(owned, [shared.clone(), c_file.clone()]);
    // a stale plan is refused
    let mut stale = plan.clone();
    stale.checkpoints.clear();
    assert_conflict(s.delete_sessions(&fx.tenant, &stale, &[]).await, "session");

    let keep = [(shared.clone(), parent_later.id.clone())];
    let mut freed = s.delete_sessions(&fx.tenant, &plan, &keep).await?;
    freed.sort();
    assert_eq!(freed, [c_manifest.clone(), c_file.clone()]);
    assert!(!s.snapshot_blob_referenced(&c_file).await?);
    assert!(!s.snapshot_blob_referenced(&c_manifest).await?);
    for kept in [&shared, &p_file, &p_manifest] {
        assert!(s.snapshot_blob_referenced(kept).await?, "{kept}");
    }
    assert_not_found(
        s.get_session(&fx.tenant, &child.id).await,
        "session",
        child.id.as_str(),
    );
    let id = child.id.as_str();
    for table in [
        "messages",
        "runs",
        "checkpoints",
        "run_events",
        "goals",
        "rewinds",
        "tool_invocations",
    ] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE session_id = '{id}'");
        assert_eq!(count(&pool, &sql).await?, 0, "{table}");
    }
    assert_eq!(visible(s, &parent).await?.len(), 3, "the parent is whole");

    // now the parent can go, with every row
    let plan = s.plan_session_delete(&fx.tenant, &parent.id).await?;
    let freed = s.delete_sessions(&fx.tenant, &plan, &[]).await?;
    assert!(
        freed.contains(&shared) && freed.contains(&p_file),
        "{freed:?}"
    );
    for table in ["messages", "runs", "checkpoints"] {
        let sql = format!(
            "SELECT COUNT(*) FROM {table} WHERE session_id = '{}'",
            parent.id.as_str()
        );
        assert_eq!(count(&pool, &sql).await?, 0, "{table}");
    }
    assert_eq!(
        count(&pool, "SELECT COUNT(*) FROM checkpoint_blobs").await?,
        0
    );
    Ok(())
}
