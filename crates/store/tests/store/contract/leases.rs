//! Contract cases for leases and fencing.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::store::{
    Lease, NewEvent, Run, RunState, RunUpdate, Session, Store, StoreError, ToolInvocation,
};
use tokio::sync::Barrier;

use super::{StoreFactory, TTL, assert_stale, clock, fixture, lease_session};

fn note(session: &Session, text: &str) -> NewEvent {
    NewEvent {
        session: session.id.clone(),
        run: None,
        kind: "note".into(),
        payload: format!("{{\"text\":\"{text}\"}}"),
    }
}

pub async fn lease_lifecycle(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let resource = "session:ses_lifecycle";

    assert_eq!(store.get_lease(resource).await?, None);
    let first = store.acquire_lease(resource, "node-a", TTL).await?;
    assert_eq!(
        first,
        Lease {
            resource: resource.into(),
            owner: "node-a".into(),
            token: 1,
            expires_at: store.now().saturating_add(TTL),
        }
    );
    assert_eq!(store.get_lease(resource).await?, Some(first.clone()));

    // held: another owner is told who holds it and until when
    match store.acquire_lease(resource, "node-b", TTL).await {
        Err(StoreError::LeaseHeld {
            resource: r,
            owner,
            expires_at,
        }) => {
            assert_eq!(
                (r.as_str(), owner.as_str(), expires_at),
                (resource, "node-a", first.expires_at)
            );
        }
        other => panic!("node-b got {other:?}"),
    }

    // renew extends from now, keeps the token
    clock.advance(Duration::from_secs(20));
    let renewed = store.renew_lease(&first, TTL).await?;
    assert_eq!(
        renewed,
        Lease {
            expires_at: store.now().saturating_add(TTL),
            ..first.clone()
        }
    );
    clock.advance(Duration::from_secs(20));
    assert!(matches!(
        store.acquire_lease(resource, "node-b", TTL).await,
        Err(StoreError::LeaseHeld { .. })
    ));

    // the same owner acquiring again gets a new token, fencing its older self
    let again = store.acquire_lease(resource, "node-a", TTL).await?;
    assert_eq!(again.token, 2);
    assert_stale(store.renew_lease(&first, TTL).await, &first);

    // expired: another owner takes over with a higher token
    clock.advance(TTL);
    let taken = store.acquire_lease(resource, "node-b", TTL).await?;
    assert_eq!((taken.owner.as_str(), taken.token), ("node-b", 3));
    assert_stale(store.renew_lease(&again, TTL).await, &again);
    assert_stale(store.release_lease(&again).await, &again);

    // an expired lease nobody took over can still be renewed by its holder
    clock.advance(TTL * 2);
    let revived = store.renew_lease(&taken, TTL).await?;
    assert_eq!(revived.token, 3);

    // release frees it; the token is not reused
    store.release_lease(&revived).await?;
    assert_eq!(store.get_lease(resource).await?, None);
    assert_stale(store.renew_lease(&revived, TTL).await, &revived);
    let after_release = store.acquire_lease(resource, "node-a", TTL).await?;
    assert_eq!(after_release.token, 4);

    // leases on different resources are independent
    let other = store
        .acquire_lease("session:ses_other", "node-b", TTL)
        .await?;
    assert_eq!(other.token, 1);

    assert!(matches!(
        store
            .acquire_lease(resource, "node-a", Duration::ZERO)
            .await,
        Err(StoreError::Invalid { field: "ttl", .. })
    ));
    assert!(matches!(
        store.acquire_lease("session:ses_x", "", TTL).await,
        Err(StoreError::Invalid { field: "owner", .. })
    ));
    Ok(())
}

pub async fn fenced_writes_refuse_stale_tokens(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;

    let old = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(t.clone(), fx.session.id.clone(), "goal", store.now());
    store.create_run(&old, &run).await?;
    let call = ToolInvocation::start(&run, "shell", "{}", store.now());
    store.record_tool_invocation(&old, &call).await?;
    store
        .append_event(&old, t, &note(&fx.session, "from a"))
        .await?;

    // node-a stalls past its expiry; node-b takes the session over
    clock.advance(TTL + Duration::from_secs(1));
    let new = lease_session(&*store, &fx.session, "node-b").await?;
    assert!(new.token > old.token);

    let acting = RunUpdate::state(RunState::Acting);
    assert_stale(
        store
            .append_event(&old, t, &note(&fx.session, "late"))
            .await,
        &old,
    );
    assert_stale(store.update_run(&old, t, &run.id, &acting).await, &old);
    let late_call = ToolInvocation::start(&run, "shell", "{}", store.now());
    assert_stale(store.record_tool_invocation(&old, &late_call).await, &old);
    let outcome = paddock_core::store::ToolOutcome {
        status: paddock_core::store::ToolStatus::Failed,
        output: "{}".into(),
    };
    assert_stale(
        store
            .finish_tool_invocation(&old, t, &call.id, &outcome)
            .await,
        &old,
    );
    let late_run = Run::new(t.clone(), fx.session.id.clone(), "late", store.now());
    assert_stale(store.create_run(&old, &late_run).await, &old);

    // none of the stale writes landed
    let events = store.list_events(t, &fx.session.id, 0, 100).await?;
    assert_eq!(events.len(), 1);
    assert_eq!(store.get_run(t, &run.id).await?.state, RunState::Preparing);
    assert_eq!(
        store.list_tool_invocations(t, &run.id).await?,
        std::slice::from_ref(&call)
    );
    assert_eq!(store.list_runs(t, &fx.session.id).await?.len(), 1);

    // the new holder writes freely, and the sequence continues without a gap
    assert_eq!(
        store
            .append_event(&new, t, &note(&fx.session, "from b"))
            .await?
            .seq,
        2
    );
    store.update_run(&new, t, &run.id, &acting).await?;
    store
        .finish_tool_invocation(&new, t, &call.id, &outcome)
        .await?;

    // a lease on one session does not cover another
    let other = Session::new(t.clone(), fx.workspace.id.clone(), "other", store.now());
    store.create_session(&other).await?;
    match store.append_event(&new, t, &note(&other, "wrong")).await {
        Err(StoreError::WrongLease { resource, expected }) => {
            assert_eq!(resource, new.resource);
            assert_eq!(expected, Lease::session_resource(&other.id));
        }
        result => panic!("expected a wrong-lease refusal, got {result:?}"),
    }

    // after release even the last holder is refused
    store.release_lease(&new).await?;
    assert_stale(
        store
            .append_event(&new, t, &note(&fx.session, "after release"))
            .await,
        &new,
    );
    // a forged token (never granted) is refused too
    let forged = Lease {
        token: new.token + 10,
        ..new.clone()
    };
    assert_stale(
        store
            .append_event(&forged, t, &note(&fx.session, "forged"))
            .await,
        &forged,
    );
    Ok(())
}

/// Two orchestrator processes (separate pools) race for one session's lease, round
/// after round: exactly one wins each round, and the loser's writes with the token
/// it won earlier are refused.
pub async fn lease_race_between_two_stores(f: &dyn StoreFactory) -> anyhow::Result<()> {
    const ROUNDS: usize = 40;
    let clock = clock();
    let nodes: [Arc<dyn Store>; 2] = [f.open(clock.clone()).await?, f.open(clock.clone()).await?];
    let fx = fixture(&*nodes[0], "acme").await?;
    let resource = Lease::session_resource(&fx.session.id);

    let mut held: [Option<Lease>; 2] = [None, None];
    let mut last_token = 0;
    let mut wins = [0usize; 2];
    for round in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(2));
        let attempts: Vec<_> = (0..2)
            .map(|i| {
                let (store, barrier, resource) =
                    (nodes[i].clone(), barrier.clone(), resource.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .acquire_lease(&resource, &format!("node-{i}"), TTL)
                        .await
                })
            })
            .collect();
        let mut winner = None;
        for (i, attempt) in attempts.into_iter().enumerate() {
            match attempt.await? {
                Ok(lease) => {
                    assert!(winner.is_none(), "round {round}: both nodes won");
                    winner = Some(i);
                    held[i] = Some(lease);
                }
                Err(StoreError::LeaseHeld { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let Some(w) = winner else {
            panic!("round {round}: nobody won");
        };
        wins[w] += 1;
        let lease = held[w].clone().unwrap_or_else(|| unreachable!());
        assert!(
            lease.token > last_token,
            "round {round}: token went from {last_token} to {}",
            lease.token
        );
        last_token = lease.token;

        let seq = nodes[w]
            .append_event(
                &lease,
                &fx.tenant,
                &note(&fx.session, &format!("round {round}")),
            )
            .await?;
        assert_eq!(seq.seq, round as u64 + 1, "one event per round, no gaps");
        // the loser wakes up and writes with the lease it won in an earlier round
        if let Some(stale) = held[1 - w].as_ref() {
            assert_stale(
                nodes[1 - w]
                    .append_event(stale, &fx.tenant, &note(&fx.session, "late"))
                    .await,
                stale,
            );
            assert_stale(nodes[1 - w].renew_lease(stale, TTL).await, stale);
        }
        // the winner stalls: its lease runs out before the next round
        clock.advance(TTL + Duration::from_millis(1));
    }
    let events = nodes[1]
        .list_events(&fx.tenant, &fx.session.id, 0, 1000)
        .await?;
    assert_eq!(events.len(), ROUNDS, "only the winners' writes landed");
    assert!(events.iter().all(|e| e.payload.contains("round")));
    eprintln!(
        "lease race: node-0 won {} rounds, node-1 won {}",
        wins[0], wins[1]
    );
    Ok(())
}

/// The old holder keeps appending while another node takes the session over:
/// every write of the old holder that landed is ordered before the new holder's
/// first write, and once the takeover returned the old holder is refused.
pub async fn takeover_during_writes(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let a_store = f.open(clock.clone()).await?;
    let b_store = f.open(clock.clone()).await?;
    let fx = fixture(&*a_store, "acme").await?;
    let a_lease = lease_session(&*a_store, &fx.session, "node-a").await?;

    let writer = {
        let (store, lease, tenant, session) = (
            a_store.clone(),
            a_lease.clone(),
            fx.tenant.clone(),
            fx.session.clone(),
        );
        tokio::spawn(async move {
            let mut landed = Vec::new();
            loop {
                match store
                    .append_event(&lease, &tenant, &note(&session, "a"))
                    .await
                {
                    Ok(e) => landed.push(e.seq),
                    Err(StoreError::StaleLease { .. }) => return anyhow::Ok(landed),
                    Err(e) => return Err(e.into()),
                }
                if landed.len() > 10_000 {
                    anyhow::bail!("node-a was never fenced off");
                }
            }
        })
    };
    // let node-a get going, then expire its lease and take over
    while a_store
        .list_events(&fx.tenant, &fx.session.id, 0, 5)
        .await?
        .len()
        < 5
    {
        tokio::task::yield_now().await;
    }
    clock.advance(TTL + Duration::from_secs(1));
    let b_lease = lease_session(&*b_store, &fx.session, "node-b").await?;
    let b_first = b_store
        .append_event(&b_lease, &fx.tenant, &note(&fx.session, "b"))
        .await?;
    let a_landed = writer.await??;

    assert!(!a_landed.is_empty());
    let a_last = a_landed.iter().copied().max().unwrap_or_default();
    assert!(
        a_last < b_first.seq,
        "node-a's write {a_last} landed after node-b's first write {}",
        b_first.seq
    );
    // paged: on a loaded machine node-a can land more than a page before
    // it is fenced off
    let mut seqs: Vec<u64> = Vec::new();
    loop {
        let after = seqs.last().copied().unwrap_or(0);
        let page = b_store
            .list_events(&fx.tenant, &fx.session.id, after, 1000)
            .await?;
        if page.is_empty() {
            break;
        }
        seqs.extend(page.iter().map(|e| e.seq));
    }
    assert_eq!(seqs, (1..=b_first.seq).collect::<Vec<_>>(), "no gaps");
    Ok(())
}

/// Goals, plans and messages are fenced like events: after a takeover the old
/// holder's writes are refused and leave nothing behind (no row, no used-up
/// version or sequence number).
pub async fn agent_writes_refuse_stale_tokens(f: &dyn StoreFactory) -> anyhow::Result<()> {
    use paddock_core::model::Message;
    use paddock_core::store::{GoalStatus, TaskStatus};

    use super::history::{goal, plan, said, task};

    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let s = &*store;
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let old = lease_session(s, &fx.session, "node-a").await?;
    let run = Run::new(t.clone(), fx.session.id.clone(), "goal", store.now());
    store.create_run(&old, &run).await?;
    let first = goal(&run, "first", s);
    store.create_goal(&old, &first).await?;

    clock.advance(TTL + Duration::from_secs(1));
    let new = lease_session(s, &fx.session, "node-b").await?;

    assert_stale(store.create_goal(&old, &goal(&run, "late", s)).await, &old);
    assert_stale(
        store
            .set_goal_status(&old, t, &first.id, GoalStatus::Met)
            .await,
        &old,
    );
    let late_plan = plan(&run, vec![task("1", TaskStatus::Pending, &run, s)], s);
    assert_stale(store.save_plan(&old, &late_plan).await, &old);
    let late_message = said(&fx.session, &run, Message::user("late"), s);
    assert_stale(store.append_message(&old, &late_message).await, &old);

    assert_eq!(
        store.list_goals(t, &fx.session.id).await?,
        std::slice::from_ref(&first)
    );
    assert_eq!(store.get_plan(t, &fx.session.id).await?, None);
    assert!(
        store
            .list_messages(t, &fx.session.id, None)
            .await?
            .is_empty()
    );

    // the new holder starts at version 1 and seq 1
    assert_eq!(store.save_plan(&new, &late_plan).await?.version, 1);
    assert_eq!(store.append_message(&new, &late_message).await?.seq, 1);
    assert_eq!(
        store
            .set_goal_status(&new, t, &first.id, GoalStatus::Met)
            .await?
            .status,
        GoalStatus::Met
    );

    // a lease on another session does not cover this one
    let other = Session::new(t.clone(), fx.workspace.id.clone(), "other", store.now());
    store.create_session(&other).await?;
    let other_lease = lease_session(s, &other, "node-b").await?;
    assert!(matches!(
        store.append_message(&other_lease, &late_message).await,
        Err(StoreError::WrongLease { .. })
    ));
    assert!(matches!(
        store.save_plan(&other_lease, &late_plan).await,
        Err(StoreError::WrongLease { .. })
    ));
    Ok(())
}

/// One writer per workspace: the workspace lease is a resource of its own
/// (a session lease in the workspace does not hold it), a second writer is
/// told who holds it and until when, and it is free again once released.
pub async fn workspace_writer_lease_names_its_holder(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "writers").await?;
    let resource = Lease::workspace_resource(&fx.workspace.id);
    assert_eq!(resource, format!("workspace:{}", fx.workspace.id));
    let _session = lease_session(store.as_ref(), &fx.session, "node-a/run_1").await?;

    let writer = store.acquire_lease(&resource, "node-a/run_1", TTL).await?;
    match store.acquire_lease(&resource, "node-b/sb-2", TTL).await {
        Err(StoreError::LeaseHeld {
            resource: r,
            owner,
            expires_at,
        }) => assert_eq!(
            (r, owner.as_str(), expires_at),
            (resource.clone(), "node-a/run_1", writer.expires_at)
        ),
        other => panic!("a second writer got {other:?}"),
    }
    // the holder taking it again (a recovery acting for a dead driver) gets a new token
    let again = store.acquire_lease(&resource, "node-a/run_1", TTL).await?;
    assert!(again.token > writer.token);
    store.release_lease(&again).await?;
    let next = store.acquire_lease(&resource, "node-b/sb-2", TTL).await?;
    assert_eq!(next.owner, "node-b/sb-2");
    assert!(next.token > again.token);
    Ok(())
}
