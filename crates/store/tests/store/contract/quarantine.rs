//! Contract cases for corrupt rows: a row that fails validation when read is
//! moved to the quarantine (table, key, reason, its columns) and skipped;
//! the rest of the session reads as before.

use paddock_core::model::Message;
use paddock_core::store::{NewEvent, Run, SessionMemory, StoredMessage, StoredSessionMemory};
use serde_json::Value;

use super::{StoreFactory, clock, fixture, lease_session};

async fn raw(f: &dyn StoreFactory) -> anyhow::Result<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    Ok(sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&f.url())
        .await?)
}

pub async fn corrupt_rows_are_quarantined_and_skipped(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let s = &*store;
    let fx = fixture(s, "acme").await?;
    let other = fixture(s, "globex").await?;
    let t = &fx.tenant;
    let lease = lease_session(s, &fx.session, "node-a").await?;
    let run = Run::new(t.clone(), fx.session.id.clone(), "fix it", s.now());
    s.create_run(&lease, &run).await?;
    let mut said = Vec::new();
    for text in ["one", "two", "three", "four"] {
        let message = StoredMessage {
            tenant: t.clone(),
            session: fx.session.id.clone(),
            run: run.id.clone(),
            seq: 0,
            message: Message::user(text),
            created_at: s.now(),
        };
        said.push(s.append_message(&lease, &message).await?);
    }
    let events: Vec<NewEvent> = (1..=3)
        .map(|n| NewEvent {
            session: fx.session.id.clone(),
            run: Some(run.id.clone()),
            kind: "run.note".to_owned(),
            payload: format!("{{\"n\":{n}}}"),
        })
        .collect();
    let stored_events = s.append_events(&lease, t, &events).await?;
    let other_run = Run::new(t.clone(), fx.session.id.clone(), "try again", s.now());
    s.create_run(&lease, &other_run).await?;
    let kept_goal = super::history::goal(&run, "fix it", s);
    let bad_goal = super::history::goal(&other_run, "try again", s);
    s.create_goal(&lease, &kept_goal).await?;
    s.create_goal(&lease, &bad_goal).await?;
    s.put_session_memory(
        &lease,
        &StoredSessionMemory {
            tenant: t.clone(),
            session: fx.session.id.clone(),
            run: run.id.clone(),
            memory: SessionMemory {
                summary: "did it".into(),
                ..SessionMemory::default()
            },
            updated_at: s.now(),
        },
    )
    .await?;
    assert!(s.list_quarantined(None, 100).await?.is_empty());

    // damage: a message that is not JSON, one of the wrong shape, an event
    // whose payload is not JSON, a session memory of the wrong shape
    let pool = raw(f).await?;
    let sid = fx.session.id.as_str();
    for (sql, seq) in [
        (
            "UPDATE messages SET content = '{\"trunc' WHERE session_id = $1 AND seq = $2",
            2,
        ),
        (
            "UPDATE messages SET content = '{\"wizard\": 1}' WHERE session_id = $1 AND seq = $2",
            3,
        ),
        (
            "UPDATE run_events SET payload = 'not json' WHERE session_id = $1 AND seq = $2",
            2,
        ),
    ] {
        let done = sqlx::query(sql).bind(sid).bind(seq).execute(&pool).await?;
        assert_eq!(done.rows_affected(), 1, "{sql}");
    }
    sqlx::query("UPDATE session_memories SET memory = '[1, 2]' WHERE session_id = $1")
        .bind(sid)
        .execute(&pool)
        .await?;
    sqlx::query("UPDATE goals SET success_criteria = '{\"a\": 1}' WHERE id = $1")
        .bind(bad_goal.id.as_str())
        .execute(&pool)
        .await?;
    sqlx::query("UPDATE runs SET usage = 'lots' WHERE id = $1")
        .bind(other_run.id.as_str())
        .execute(&pool)
        .await?;

    // the reads skip them, and go on skipping them (they were moved)
    for _ in 0..2 {
        let messages = s.list_messages(t, &fx.session.id, None).await?;
        assert_eq!(messages, vec![said[0].clone(), said[3].clone()]);
        let events = s.list_events(t, &fx.session.id, 0, 100).await?;
        assert_eq!(
            events,
            vec![stored_events[0].clone(), stored_events[2].clone()]
        );
        assert_eq!(s.get_session_memory(t, &fx.session.id).await?, None);
        assert_eq!(
            s.list_goals(t, &fx.session.id).await?,
            vec![kept_goal.clone()]
        );
        let runs: Vec<_> = s.list_runs(t, &fx.session.id).await?;
        assert_eq!(runs.iter().map(|r| &r.id).collect::<Vec<_>>(), [&run.id]);
    }
    // a run is referred to by the rest of its session: copied, left in place
    assert!(matches!(
        s.get_run(t, &other_run.id).await,
        Err(paddock_core::store::StoreError::Corrupt { .. })
    ));
    assert_eq!(
        s.list_messages_after(t, &fx.session.id, 0).await?,
        vec![said[0].clone(), said[3].clone()]
    );

    let rows = s.list_quarantined(Some(t), 100).await?;
    let mut found: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.table.clone(), r.key.clone()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("goals".to_owned(), format!("id={}", bad_goal.id)),
            ("messages".to_owned(), format!("session_id={sid} seq=2")),
            ("messages".to_owned(), format!("session_id={sid} seq=3")),
            ("run_events".to_owned(), format!("session_id={sid} seq=2")),
            ("runs".to_owned(), format!("id={}", other_run.id)),
            ("session_memories".to_owned(), format!("session_id={sid}")),
        ]
    );
    for row in &rows {
        assert_eq!(row.tenant.as_deref(), Some(t.as_str()), "{row:?}");
        let columns: Value = serde_json::from_str(&row.raw)?;
        assert_eq!(columns["tenant_id"], t.as_str(), "{row:?}");
        assert!(!row.reason.is_empty());
    }
    let message = rows
        .iter()
        .find(|r| r.key.ends_with("seq=3") && r.table == "messages")
        .ok_or_else(|| anyhow::anyhow!("the message of the wrong shape"))?;
    assert!(message.reason.contains("content"), "{}", message.reason);
    let columns: Value = serde_json::from_str(&message.raw)?;
    assert_eq!(columns["content"], "{\"wizard\": 1}");
    assert_eq!(columns["seq"], 3);
    let event = rows
        .iter()
        .find(|r| r.table == "run_events")
        .ok_or_else(|| anyhow::anyhow!("the event"))?;
    assert!(event.reason.contains("payload"), "{}", event.reason);
    assert_eq!(
        serde_json::from_str::<Value>(&event.raw)?["payload"],
        "not json"
    );

    // another tenant sees none of it; the operator's view sees all of it
    assert!(
        s.list_quarantined(Some(&other.tenant), 100)
            .await?
            .is_empty()
    );
    assert_eq!(s.list_quarantined(None, 100).await?.len(), 6);
    assert_eq!(s.list_quarantined(None, 1).await?.len(), 1);

    // the session goes on: new appends are numbered after the moved rows
    let next = s
        .append_message(
            &lease,
            &StoredMessage {
                seq: 0,
                ..said[0].clone()
            },
        )
        .await?;
    assert_eq!(next.seq, 5);
    pool.close().await;
    Ok(())
}
