//! Steering messages: posted by anyone while the run goes on, delivered once
//! by the session's lease holder (marked delivered in the write that puts
//! them into the history with their event), refused for a finished run or
//! another tenant.

use paddock_core::ids::RunId;
use paddock_core::model::Message;
use paddock_core::store::{
    Lease, NewEvent, Run, RunState, RunUpdate, SteeringCaps, SteeringClose, SteeringDelivered,
    SteeringDelivery, SteeringMessage, Store, StoreError, StoredMessage,
};

use super::{Fixture, StoreFactory, clock, fixture, lease_session};

/// No cap: the cases below are about delivery, not about the caps.
const NO_CAPS: SteeringCaps = SteeringCaps {
    max_messages: u32::MAX,
    max_total_chars: u64::MAX,
};

/// `messages` as the run's loop delivers them: a user message and a
/// `user.message` event each.
fn deliveries(
    store: &dyn Store,
    fx: &Fixture,
    run: &RunId,
    messages: &[SteeringMessage],
) -> Vec<SteeringDelivery> {
    messages
        .iter()
        .map(|m| SteeringDelivery {
            id: m.id,
            message: StoredMessage {
                tenant: fx.tenant.clone(),
                session: fx.session.id.clone(),
                run: run.clone(),
                seq: 0,
                message: Message::user(m.text.clone()),
                created_at: store.now(),
            },
            event: NewEvent {
                session: fx.session.id.clone(),
                run: Some(run.clone()),
                kind: "user.message".to_owned(),
                payload: format!(r#"{{"steering_id":{}}}"#, m.id),
            },
        })
        .collect()
}

async fn deliver(
    store: &dyn Store,
    lease: &Lease,
    fx: &Fixture,
    run: &RunId,
    messages: &[SteeringMessage],
) -> Result<Vec<SteeringDelivered>, StoreError> {
    let deliveries = deliveries(store, fx, run, messages);
    store
        .deliver_steering_messages(lease, &fx.tenant, &fx.session.id, run, &deliveries)
        .await
}

/// What the run's loop does before a model request: delivers what waits;
/// answers the messages delivered, as listed after.
async fn take(
    store: &dyn Store,
    lease: &Lease,
    fx: &Fixture,
    run: &RunId,
) -> Result<Vec<SteeringMessage>, StoreError> {
    let waiting = store.waiting_steering_messages(&fx.tenant, run).await?;
    let delivered: Vec<u64> = deliver(store, lease, fx, run, &waiting)
        .await?
        .iter()
        .map(|d| d.id)
        .collect();
    let listed = store.list_steering_messages(&fx.tenant, run).await?;
    Ok(listed
        .into_iter()
        .filter(|m| delivered.contains(&m.id))
        .collect())
}

pub async fn steering_messages_are_taken_once_by_the_lease_holder(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    // another node: posts through its own pool
    let other_node = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;

    // nothing waits: an empty answer
    let none = take(store.as_ref(), &lease, &fx, &run.id).await?;
    assert!(none.is_empty());

    let first = other_node
        .post_steering_message(&fx.tenant, &run.id, "use v2", NO_CAPS)
        .await?;
    let second = other_node
        .post_steering_message(&fx.tenant, &run.id, "and add a test", NO_CAPS)
        .await?;
    assert!(second.id > first.id);
    assert_eq!(first.delivered_at, None);

    // a stale lease takes nothing, and leaves the messages waiting
    let newer = store
        .acquire_lease(&lease.resource, "driver", super::TTL)
        .await?;
    let stale = take(store.as_ref(), &lease, &fx, &run.id).await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );

    let taken = take(store.as_ref(), &newer, &fx, &run.id).await?;
    let texts: Vec<&str> = taken.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["use v2", "and add a test"]);
    assert!(taken.iter().all(|m| m.delivered_at.is_some()));
    let again = take(store.as_ref(), &newer, &fx, &run.id).await?;
    assert!(again.is_empty(), "taken twice: {again:?}");
    let listed = store.list_steering_messages(&fx.tenant, &run.id).await?;
    assert_eq!(listed, taken);

    // another tenant sees no such run, and cannot post to it
    let other = fixture(store.as_ref(), "globex").await?;
    let foreign = store
        .post_steering_message(&other.tenant, &run.id, "hello", NO_CAPS)
        .await;
    assert!(
        matches!(foreign, Err(StoreError::NotFound { entity: "run", .. })),
        "{foreign:?}"
    );
    assert!(
        store
            .list_steering_messages(&other.tenant, &run.id)
            .await?
            .is_empty()
    );
    let unknown = store
        .post_steering_message(&fx.tenant, &RunId::generate(), "hello", NO_CAPS)
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound { entity: "run", .. })),
        "{unknown:?}"
    );

    // a run that asked the user, or ended, takes no more
    for state in [RunState::AwaitingUser, RunState::Completed] {
        store
            .update_run(&newer, &fx.tenant, &run.id, &RunUpdate::state(state))
            .await?;
        let late = other_node
            .post_steering_message(&fx.tenant, &run.id, "too late", NO_CAPS)
            .await;
        assert!(
            matches!(late, Err(StoreError::Conflict { entity: "run", .. })),
            "{state}: {late:?}"
        );
    }
    assert_eq!(
        store
            .list_steering_messages(&fx.tenant, &run.id)
            .await?
            .len(),
        2
    );
    Ok(())
}

pub async fn closing_the_queue_takes_what_waits_and_refuses_later_posts(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let other_node = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;
    let close = |how| store.close_steering(&lease, &fx.tenant, &fx.session.id, &run.id, how);

    // a run that could go on: the queue stays open for what waits, which
    // the loop then delivers
    let early = other_node
        .post_steering_message(&fx.tenant, &run.id, "one more thing", NO_CAPS)
        .await?;
    let kept_open = close(SteeringClose::UnlessWaiting).await?;
    assert!(!kept_open.closed);
    assert_eq!(kept_open.messages.len(), 1);
    assert_eq!(kept_open.messages[0].id, early.id);
    assert_eq!(kept_open.messages[0].delivered_at, None);
    let delivered = deliver(store.as_ref(), &lease, &fx, &run.id, &kept_open.messages).await?;
    assert_eq!(delivered.len(), 1);
    let later = other_node
        .post_steering_message(&fx.tenant, &run.id, "and another", NO_CAPS)
        .await?;

    // a run that ends whatever waits: closed, the waiting one undelivered
    let ended = close(SteeringClose::Always).await?;
    assert!(ended.closed);
    let ids: Vec<u64> = ended.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, [later.id]);
    assert_eq!(ended.messages[0].delivered_at, None);
    let late = other_node
        .post_steering_message(&fx.tenant, &run.id, "too late", NO_CAPS)
        .await;
    assert!(
        matches!(late, Err(StoreError::Conflict { entity: "run", .. })),
        "{late:?}"
    );
    // what the close reported undelivered is not delivered after it
    let after_close = deliver(store.as_ref(), &lease, &fx, &run.id, &ended.messages).await?;
    assert!(after_close.is_empty(), "{after_close:?}");
    // closing again changes nothing; the undelivered one stays on record
    let again = close(SteeringClose::Always).await?;
    assert!(again.closed);
    assert_eq!(again.messages, ended.messages);
    let listed = store.list_steering_messages(&fx.tenant, &run.id).await?;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].delivered_at, None);

    // with nothing waiting, a run that could go on closes too
    let second = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal 2",
        store.now(),
    );
    store.create_run(&lease, &second).await?;
    let quiet = store
        .close_steering(
            &lease,
            &fx.tenant,
            &fx.session.id,
            &second.id,
            SteeringClose::UnlessWaiting,
        )
        .await?;
    assert!(quiet.closed && quiet.messages.is_empty(), "{quiet:?}");
    let refused = other_node
        .post_steering_message(&fx.tenant, &second.id, "hello?", NO_CAPS)
        .await;
    assert!(
        matches!(refused, Err(StoreError::Conflict { .. })),
        "{refused:?}"
    );

    // only the lease holder closes; an unknown run is not found
    let newer = store
        .acquire_lease(&lease.resource, "driver", super::TTL)
        .await?;
    let stale = close(SteeringClose::Always).await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );
    let unknown = store
        .close_steering(
            &newer,
            &fx.tenant,
            &fx.session.id,
            &RunId::generate(),
            SteeringClose::Always,
        )
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound { entity: "run", .. })),
        "{unknown:?}"
    );
    Ok(())
}

/// Posts from another node race the close: every post that was accepted is
/// in a close's answer and delivered (the queue stays open while one
/// waits), and every post after the close is refused.
pub async fn a_post_racing_the_close_is_taken_or_refused(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let other_node = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    for round in 0..8 {
        let run = Run::new(
            fx.tenant.clone(),
            fx.session.id.clone(),
            format!("goal {round}"),
            store.now(),
        );
        store.create_run(&lease, &run).await?;
        let posters: Vec<_> = (0..4)
            .map(|i| {
                let node = std::sync::Arc::clone(&other_node);
                let tenant = fx.tenant.clone();
                let run = run.id.clone();
                tokio::spawn(async move {
                    let mut accepted = Vec::new();
                    for j in 0..6 {
                        match node
                            .post_steering_message(&tenant, &run, &format!("m{i}.{j}"), NO_CAPS)
                            .await
                        {
                            Ok(message) => accepted.push(message.id),
                            Err(StoreError::Conflict { .. }) => break,
                            Err(err) => return Err(anyhow::Error::new(err)),
                        }
                    }
                    Ok(accepted)
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(round)).await;
        let mut taken = Vec::new();
        loop {
            let closed = store
                .close_steering(
                    &lease,
                    &fx.tenant,
                    &fx.session.id,
                    &run.id,
                    SteeringClose::UnlessWaiting,
                )
                .await?;
            if closed.closed {
                assert!(closed.messages.is_empty(), "round {round}");
                break;
            }
            let delivered = deliver(store.as_ref(), &lease, &fx, &run.id, &closed.messages).await?;
            taken.extend(delivered.iter().map(|d| d.id));
        }
        let mut accepted = Vec::new();
        for poster in posters {
            accepted.extend(poster.await??);
        }
        let undelivered = store
            .close_steering(
                &lease,
                &fx.tenant,
                &fx.session.id,
                &run.id,
                SteeringClose::Always,
            )
            .await?;
        assert!(
            undelivered.messages.is_empty(),
            "round {round}: accepted after the queue closed: {:?}",
            undelivered.messages
        );
        accepted.sort_unstable();
        taken.sort_unstable();
        assert_eq!(accepted, taken, "round {round}");
    }
    Ok(())
}

/// A resumed run takes over what its interrupted predecessor accepted and
/// never delivered, in the transaction that creates it: in order, once (a
/// second resume carries nothing), and a post racing the resume is either
/// carried or refused.
pub async fn a_resumed_run_takes_over_the_waiting_messages_once(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let other_node = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    let new_run = |goal: &str, from: Option<&RunId>| {
        let mut run = Run::new(fx.tenant.clone(), fx.session.id.clone(), goal, store.now());
        run.resumed_from = from.cloned();
        run
    };
    let dead = new_run("goal", None);
    store.create_run(&lease, &dead).await?;
    let first = other_node
        .post_steering_message(&fx.tenant, &dead.id, "use v2", NO_CAPS)
        .await?;
    let delivered = take(store.as_ref(), &lease, &fx, &dead.id).await?;
    assert_eq!(delivered.len(), 1);
    let second = other_node
        .post_steering_message(&fx.tenant, &dead.id, "and add a test", NO_CAPS)
        .await?;
    let third = other_node
        .post_steering_message(&fx.tenant, &dead.id, "then stop", NO_CAPS)
        .await?;
    // the recovery closes its queue, the two waiting ones undelivered
    let closed = store
        .close_steering(
            &lease,
            &fx.tenant,
            &fx.session.id,
            &dead.id,
            SteeringClose::Always,
        )
        .await?;
    assert_eq!(closed.messages.len(), 2);

    let resumed = new_run("goal", Some(&dead.id));
    store.create_run(&lease, &resumed).await?;
    let taken = take(store.as_ref(), &lease, &fx, &resumed.id).await?;
    let ids: Vec<u64> = taken.iter().map(|m| m.id).collect();
    assert_eq!(ids, [second.id, third.id]);
    assert!(taken.iter().all(|m| m.run == resumed.id));
    let left: Vec<u64> = store
        .list_steering_messages(&fx.tenant, &dead.id)
        .await?
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(
        left,
        [first.id],
        "only the delivered one stays the dead run's"
    );

    // a second resume of the same run carries nothing
    let again = new_run("goal", Some(&dead.id));
    store.create_run(&lease, &again).await?;
    assert!(
        store
            .list_steering_messages(&fx.tenant, &again.id)
            .await?
            .is_empty()
    );

    // a run killed with its queue open: posts racing the resume are carried or refused
    for round in 0..6 {
        let dead = new_run(&format!("goal {round}"), None);
        store.create_run(&lease, &dead).await?;
        let posters: Vec<_> = (0..3)
            .map(|i| {
                let node = std::sync::Arc::clone(&other_node);
                let tenant = fx.tenant.clone();
                let run = dead.id.clone();
                tokio::spawn(async move {
                    let mut accepted = Vec::new();
                    for j in 0..6 {
                        match node
                            .post_steering_message(&tenant, &run, &format!("m{i}.{j}"), NO_CAPS)
                            .await
                        {
                            Ok(message) => accepted.push(message.id),
                            Err(StoreError::Conflict { .. }) => break,
                            Err(err) => return Err(anyhow::Error::new(err)),
                        }
                    }
                    Ok(accepted)
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(round)).await;
        let resumed = new_run(&format!("goal {round}"), Some(&dead.id));
        store.create_run(&lease, &resumed).await?;
        let mut accepted = Vec::new();
        for poster in posters {
            accepted.extend(poster.await??);
        }
        let late = other_node
            .post_steering_message(&fx.tenant, &dead.id, "too late", NO_CAPS)
            .await;
        assert!(
            matches!(late, Err(StoreError::Conflict { entity: "run", .. })),
            "round {round}: {late:?}"
        );
        let taken = take(store.as_ref(), &lease, &fx, &resumed.id).await?;
        let mut taken: Vec<u64> = taken.iter().map(|m| m.id).collect();
        taken.sort_unstable();
        accepted.sort_unstable();
        assert_eq!(accepted, taken, "round {round}");
        assert!(
            store
                .list_steering_messages(&fx.tenant, &dead.id)
                .await?
                .is_empty(),
            "round {round}"
        );
    }
    Ok(())
}

/// Delivering marks a message delivered in the write that appends its
/// history entry and its event: each message once, whoever else delivers,
/// closes or carries it meanwhile; a stale lease or a foreign delivery
/// writes nothing.
pub async fn a_steering_message_is_delivered_with_its_history_entry_once(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let other_node = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;
    let history = || store.list_messages(&fx.tenant, &fx.session.id, None);
    let user_events = || async {
        let events = store.list_run_events(&fx.tenant, &run.id, 0, 100).await?;
        Ok::<_, StoreError>(
            events
                .into_iter()
                .filter(|e| e.kind == "user.message")
                .collect::<Vec<_>>(),
        )
    };
    let first = other_node
        .post_steering_message(&fx.tenant, &run.id, "use v2", NO_CAPS)
        .await?;
    let second = other_node
        .post_steering_message(&fx.tenant, &run.id, "and add a test", NO_CAPS)
        .await?;
    let waiting = store.waiting_steering_messages(&fx.tenant, &run.id).await?;
    assert_eq!(waiting, [first.clone(), second.clone()]);

    // a stale lease writes nothing: both still wait
    let newer = store
        .acquire_lease(&lease.resource, "driver", super::TTL)
        .await?;
    let stale = deliver(store.as_ref(), &lease, &fx, &run.id, &waiting).await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );
    // a delivery naming another run is refused
    let mut foreign = deliveries(store.as_ref(), &fx, &run.id, &waiting);
    foreign[1].message.run = RunId::generate();
    let refused = store
        .deliver_steering_messages(&newer, &fx.tenant, &fx.session.id, &run.id, &foreign)
        .await;
    assert!(
        matches!(refused, Err(StoreError::Invalid { .. })),
        "{refused:?}"
    );
    assert!(history().await?.is_empty());
    assert_eq!(
        store
            .waiting_steering_messages(&fx.tenant, &run.id)
            .await?
            .len(),
        2
    );

    // two deliveries of the same messages race (two nodes): each message once
    let (a, b) = tokio::join!(
        deliver(store.as_ref(), &newer, &fx, &run.id, &waiting),
        deliver(other_node.as_ref(), &newer, &fx, &run.id, &waiting),
    );
    let mut ids: Vec<u64> = a?.iter().chain(b?.iter()).map(|d| d.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [first.id, second.id]);
    let appended = history().await?;
    let texts: Vec<String> = appended
        .iter()
        .map(|m| format!("{:?}", m.message))
        .collect();
    assert_eq!(appended.len(), 2, "{texts:?}");
    assert_eq!(appended[0].message, Message::user("use v2"));
    assert_eq!(appended[1].message, Message::user("and add a test"));
    assert_eq!(user_events().await?.len(), 2);
    assert!(
        store
            .list_steering_messages(&fx.tenant, &run.id)
            .await?
            .iter()
            .all(|m| m.delivered_at.is_some())
    );
    assert!(
        store
            .waiting_steering_messages(&fx.tenant, &run.id)
            .await?
            .is_empty()
    );

    // delivered already: a second delivery appends nothing
    let again = deliver(store.as_ref(), &newer, &fx, &run.id, &waiting).await?;
    assert!(again.is_empty(), "{again:?}");

    // one delivered, then one taken by a close that reports it undelivered
    let third = other_node
        .post_steering_message(&fx.tenant, &run.id, "then stop", NO_CAPS)
        .await?;
    let delivered = deliver(
        store.as_ref(),
        &newer,
        &fx,
        &run.id,
        std::slice::from_ref(&third),
    )
    .await?;
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].message.seq, 3);
    assert_eq!(delivered[0].message.message, Message::user("then stop"));
    assert_eq!(delivered[0].event.kind, "user.message");
    let fourth = other_node
        .post_steering_message(&fx.tenant, &run.id, "too late to answer", NO_CAPS)
        .await?;
    let closed = store
        .close_steering(
            &newer,
            &fx.tenant,
            &fx.session.id,
            &run.id,
            SteeringClose::Always,
        )
        .await?;
    assert_eq!(closed.messages, std::slice::from_ref(&fourth));
    let after = deliver(store.as_ref(), &newer, &fx, &run.id, &closed.messages).await?;
    assert!(after.is_empty(), "{after:?}");
    assert_eq!(history().await?.len(), 3);
    assert_eq!(user_events().await?.len(), 3);

    // a message carried to the resumed run is not delivered by the dead one
    let dead = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal 2",
        store.now(),
    );
    store.create_run(&newer, &dead).await?;
    let carried = other_node
        .post_steering_message(&fx.tenant, &dead.id, "carry me", NO_CAPS)
        .await?;
    let mut resumed = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal 2",
        store.now(),
    );
    resumed.resumed_from = Some(dead.id.clone());
    store.create_run(&newer, &resumed).await?;
    let stale_run = deliver(
        store.as_ref(),
        &newer,
        &fx,
        &dead.id,
        std::slice::from_ref(&carried),
    )
    .await?;
    assert!(stale_run.is_empty(), "{stale_run:?}");
    let taken = take(store.as_ref(), &newer, &fx, &resumed.id).await?;
    assert_eq!(taken.iter().map(|m| m.id).collect::<Vec<_>>(), [carried.id]);
    assert_eq!(history().await?.len(), 4);
    Ok(())
}

/// Issue 26: a steering message's id is its run's own count (1, 2, ...),
/// not a sequence over every tenant's messages, so the id a caller gets
/// says nothing of other runs; a resumed run goes on after the ids it took
/// over.
pub async fn steering_ids_count_per_run(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let acme = fixture(store.as_ref(), "acme").await?;
    let globex = fixture(store.as_ref(), "globex").await?;
    let acme_lease = lease_session(store.as_ref(), &acme.session, "driver").await?;
    let globex_lease = lease_session(store.as_ref(), &globex.session, "driver").await?;
    let run_of = |fx: &Fixture, goal: &str, from: Option<&RunId>| {
        let mut run = Run::new(fx.tenant.clone(), fx.session.id.clone(), goal, store.now());
        run.resumed_from = from.cloned();
        run
    };
    let a = run_of(&acme, "a", None);
    store.create_run(&acme_lease, &a).await?;
    let b = run_of(&globex, "b", None);
    store.create_run(&globex_lease, &b).await?;

    let mut a_ids = Vec::new();
    for text in ["one", "two", "three"] {
        a_ids.push(
            store
                .post_steering_message(&acme.tenant, &a.id, text, NO_CAPS)
                .await?
                .id,
        );
    }
    // globex's first message is its run's first, whatever acme posted
    let b_first = store
        .post_steering_message(&globex.tenant, &b.id, "hi", NO_CAPS)
        .await?;
    assert_eq!(a_ids, [1, 2, 3]);
    assert_eq!(b_first.id, 1);
    let listed: Vec<u64> = store
        .list_steering_messages(&acme.tenant, &a.id)
        .await?
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(listed, [1, 2, 3]);

    // all three delivered; two more wait, carried to the run resuming it,
    // whose own next message is 6
    let delivered = take(store.as_ref(), &acme_lease, &acme, &a.id).await?;
    assert_eq!(delivered.len(), 3);
    let late = store
        .post_steering_message(&acme.tenant, &a.id, "four", NO_CAPS)
        .await?;
    let five = store
        .post_steering_message(&acme.tenant, &a.id, "five", NO_CAPS)
        .await?;
    assert_eq!((late.id, five.id), (4, 5));
    store
        .close_steering(
            &acme_lease,
            &acme.tenant,
            &acme.session.id,
            &a.id,
            SteeringClose::Always,
        )
        .await?;
    let resumed = run_of(&acme, "a", Some(&a.id));
    store.create_run(&acme_lease, &resumed).await?;
    let next = store
        .post_steering_message(&acme.tenant, &resumed.id, "six", NO_CAPS)
        .await?;
    assert_eq!(next.id, 6);
    let taken: Vec<u64> = take(store.as_ref(), &acme_lease, &acme, &resumed.id)
        .await?
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(taken, [4, 5, 6]);
    // a fresh run of the same session counts from 1 again
    let fresh = run_of(&acme, "c", None);
    store.create_run(&acme_lease, &fresh).await?;
    let first = store
        .post_steering_message(&acme.tenant, &fresh.id, "new", NO_CAPS)
        .await?;
    assert_eq!(first.id, 1);
    Ok(())
}

/// Issue 27: a run takes at most `max_messages` steering messages and
/// `max_total_chars` characters of them in all, delivered ones included;
/// one over is refused with `Limit` and stores nothing; another run is not
/// affected.
pub async fn steering_is_capped_per_run_in_count_and_size(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(store.as_ref(), "acme").await?;
    let lease = lease_session(store.as_ref(), &fx.session, "driver").await?;
    let run = Run::new(fx.tenant.clone(), fx.session.id.clone(), "g", store.now());
    store.create_run(&lease, &run).await?;
    let caps = SteeringCaps {
        max_messages: 3,
        max_total_chars: 10,
    };
    store
        .post_steering_message(&fx.tenant, &run.id, "abcd", caps)
        .await?;
    // 4 + 7 characters would pass 10
    let refused = store
        .post_steering_message(&fx.tenant, &run.id, "efghijk", caps)
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Limit { reason, .. }) if reason.contains("10")),
        "{refused:?}"
    );
    store
        .post_steering_message(&fx.tenant, &run.id, "ab", caps)
        .await?;
    take(store.as_ref(), &lease, &fx, &run.id).await?;
    // delivered ones still count
    store
        .post_steering_message(&fx.tenant, &run.id, "c", caps)
        .await?;
    let refused = store
        .post_steering_message(&fx.tenant, &run.id, "d", caps)
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Limit { reason, .. }) if reason.contains("3 steering messages")),
        "{refused:?}"
    );
    let listed = store.list_steering_messages(&fx.tenant, &run.id).await?;
    assert_eq!(
        listed.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["abcd", "ab", "c"]
    );
    Ok(())
}
