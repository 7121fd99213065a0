//! Contract cases for `append_events`: several events of one session in one
//! fenced transaction.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::store::{NewEvent, Run, Session, Store, StoreError};

use super::{StoreFactory, TTL, assert_invalid, assert_not_found, assert_stale, clock};
use super::{fixture, lease_session};

fn events(
    session: &Session,
    run: Option<&Run>,
    kind: &str,
    range: std::ops::Range<u32>,
) -> Vec<NewEvent> {
    range
        .map(|n| NewEvent {
            session: session.id.clone(),
            run: run.map(|r| r.id.clone()),
            kind: kind.to_owned(),
            payload: format!("{{\"n\":{n}}}"),
        })
        .collect()
}

fn seqs(events: &[paddock_core::store::RunEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

pub async fn batched_events_keep_their_order_and_sequence(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(t.clone(), fx.session.id.clone(), "goal", store.now());
    store.create_run(&lease, &run).await?;

    // an empty batch writes nothing and takes no number
    assert!(store.append_events(&lease, t, &[]).await?.is_empty());

    let single = store
        .append_event(&lease, t, &events(&fx.session, None, "one", 0..1)[0])
        .await?;
    assert_eq!(single.seq, 1);
    let batch = events(&fx.session, Some(&run), "step", 1..6);
    let stored = store.append_events(&lease, t, &batch).await?;
    assert_eq!(seqs(&stored), [2, 3, 4, 5, 6]);
    for (stored, sent) in stored.iter().zip(&batch) {
        assert_eq!(
            (&stored.kind, &stored.payload, &stored.run),
            (&sent.kind, &sent.payload, &sent.run)
        );
        assert_eq!((&stored.tenant, &stored.session), (t, &fx.session.id));
    }
    // more than one INSERT's worth keeps counting
    let long = events(&fx.session, None, "bulk", 0..150);
    let long_stored = store.append_events(&lease, t, &long).await?;
    assert_eq!(seqs(&long_stored), (7..157).collect::<Vec<u64>>());
    let after = store
        .append_event(&lease, t, &events(&fx.session, None, "after", 0..1)[0])
        .await?;
    assert_eq!(after.seq, 157);

    // what was returned is what is stored, in order
    let mut expected = vec![single];
    expected.extend(stored);
    expected.extend(long_stored);
    expected.push(after);
    assert_eq!(
        store.list_events(t, &fx.session.id, 0, 1000).await?,
        expected
    );

    // a batch is one session's
    let other = Session::new(t.clone(), fx.workspace.id.clone(), "other", store.now());
    store.create_session(&other).await?;
    let mut mixed = events(&fx.session, None, "mixed", 0..2);
    mixed.extend(events(&other, None, "mixed", 2..3));
    assert_invalid(store.append_events(&lease, t, &mixed).await, "events");

    // all or nothing: a run of another session refuses the whole batch and
    // leaves no gap
    let other_lease = lease_session(&*store, &other, "node-a").await?;
    let foreign = Run::new(t.clone(), other.id.clone(), "elsewhere", store.now());
    store.create_run(&other_lease, &foreign).await?;
    let mut bad = events(&fx.session, Some(&run), "bad", 0..2);
    bad.extend(events(&fx.session, Some(&foreign), "bad", 2..3));
    assert_not_found(
        store.append_events(&lease, t, &bad).await,
        "run",
        foreign.id.as_str(),
    );
    assert_eq!(
        store.list_events(t, &fx.session.id, 0, 1000).await?,
        expected
    );
    let next = store
        .append_events(&lease, t, &events(&fx.session, None, "next", 0..1))
        .await?;
    assert_eq!(seqs(&next), [158]);
    Ok(())
}

pub async fn concurrent_batches_are_gap_free(f: &dyn StoreFactory) -> anyhow::Result<()> {
    const TASKS: u32 = 6;
    const BATCHES: u32 = 10;
    let clock = clock();
    let first = f.open(clock.clone()).await?;
    let second = f.open(clock.clone()).await?;
    let fx = fixture(&*first, "acme").await?;
    let lease = lease_session(&*first, &fx.session, "node-a").await?;

    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store: Arc<dyn Store> = if t % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let (lease, tenant, session) = (lease.clone(), fx.tenant.clone(), fx.session.clone());
        tasks.push(tokio::spawn(async move {
            let mut appended = Vec::new();
            for b in 0..BATCHES {
                // batches of 1 to 4 events, each naming its task and position
                let size = 1 + (t + b) % 4;
                let start = (t * 1000) + (b * 10);
                let batch = events(&session, None, "tick", start..start + size);
                let stored = store.append_events(&lease, &tenant, &batch).await?;
                // a batch's numbers are consecutive, in the batch's order
                let s = seqs(&stored);
                assert!(s.windows(2).all(|w| w[1] == w[0] + 1), "{s:?}");
                appended.extend(stored);
            }
            anyhow::Ok(appended)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    all.sort_by_key(|e| e.seq);
    let total: u64 = all.len() as u64;
    assert_eq!(seqs(&all), (1..=total).collect::<Vec<u64>>());
    let listed = first
        .list_events(&fx.tenant, &fx.session.id, 0, 1000)
        .await?;
    assert_eq!(listed, all);
    Ok(())
}

pub async fn a_stale_batch_writes_nothing(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let old = lease_session(&*store, &fx.session, "node-a").await?;
    store
        .append_events(&old, t, &events(&fx.session, None, "a", 0..2))
        .await?;

    clock.advance(TTL + Duration::from_secs(1));
    let new = lease_session(&*store, &fx.session, "node-b").await?;
    assert_stale(
        store
            .append_events(&old, t, &events(&fx.session, None, "late", 0..3))
            .await,
        &old,
    );
    let listed = store.list_events(t, &fx.session.id, 0, 100).await?;
    assert_eq!(seqs(&listed), [1, 2]);
    assert!(listed.iter().all(|e| e.kind == "a"));

    // the new holder continues the sequence without a gap
    let stored = store
        .append_events(&new, t, &events(&fx.session, None, "b", 0..2))
        .await?;
    assert_eq!(seqs(&stored), [3, 4]);

    // a lease on one session does not cover another's events
    let other = Session::new(t.clone(), fx.workspace.id.clone(), "other", store.now());
    store.create_session(&other).await?;
    match store
        .append_events(&new, t, &events(&other, None, "wrong", 0..1))
        .await
    {
        Err(StoreError::WrongLease { .. }) => {}
        other => panic!("expected WrongLease, got {other:?}"),
    }
    assert!(store.list_events(t, &other.id, 0, 100).await?.is_empty());
    Ok(())
}
