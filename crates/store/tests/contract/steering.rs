//! Steering messages: posted by anyone while the run goes on, taken once by
//! the session's lease holder, refused for a finished run or another tenant.

use paddock_core::ids::RunId;
use paddock_core::store::{Run, RunState, RunUpdate, SteeringClose, StoreError};

use super::{StoreFactory, clock, fixture, lease_session};

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
    let none = store
        .take_steering_messages(&lease, &fx.tenant, &fx.session.id, &run.id)
        .await?;
    assert!(none.is_empty());

    let first = other_node
        .post_steering_message(&fx.tenant, &run.id, "use v2")
        .await?;
    let second = other_node
        .post_steering_message(&fx.tenant, &run.id, "and add a test")
        .await?;
    assert!(second.id > first.id);
    assert_eq!(first.delivered_at, None);

    // a stale lease takes nothing, and leaves the messages waiting
    let newer = store
        .acquire_lease(&lease.resource, "driver", super::TTL)
        .await?;
    let stale = store
        .take_steering_messages(&lease, &fx.tenant, &fx.session.id, &run.id)
        .await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );

    let taken = store
        .take_steering_messages(&newer, &fx.tenant, &fx.session.id, &run.id)
        .await?;
    let texts: Vec<&str> = taken.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["use v2", "and add a test"]);
    assert!(taken.iter().all(|m| m.delivered_at.is_some()));
    let again = store
        .take_steering_messages(&newer, &fx.tenant, &fx.session.id, &run.id)
        .await?;
    assert!(again.is_empty(), "taken twice: {again:?}");
    let listed = store.list_steering_messages(&fx.tenant, &run.id).await?;
    assert_eq!(listed, taken);

    // another tenant sees no such run, and cannot post to it
    let other = fixture(store.as_ref(), "globex").await?;
    let foreign = store
        .post_steering_message(&other.tenant, &run.id, "hello")
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
        .post_steering_message(&fx.tenant, &RunId::generate(), "hello")
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
            .post_steering_message(&fx.tenant, &run.id, "too late")
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

    // a run that could go on: what waits is delivered and the queue stays open
    let early = other_node
        .post_steering_message(&fx.tenant, &run.id, "one more thing")
        .await?;
    let kept_open = close(SteeringClose::UnlessWaiting).await?;
    assert!(!kept_open.closed);
    assert_eq!(kept_open.messages.len(), 1);
    assert_eq!(kept_open.messages[0].id, early.id);
    assert!(kept_open.messages[0].delivered_at.is_some());
    let later = other_node
        .post_steering_message(&fx.tenant, &run.id, "and another")
        .await?;

    // a run that ends whatever waits: closed, the waiting one undelivered
    let ended = close(SteeringClose::Always).await?;
    assert!(ended.closed);
    let ids: Vec<u64> = ended.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids, [later.id]);
    assert_eq!(ended.messages[0].delivered_at, None);
    let late = other_node
        .post_steering_message(&fx.tenant, &run.id, "too late")
        .await;
    assert!(
        matches!(late, Err(StoreError::Conflict { entity: "run", .. })),
        "{late:?}"
    );
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
        .post_steering_message(&fx.tenant, &second.id, "hello?")
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
/// in the close's answer (delivered) or in the one after it (undelivered),
/// and every post after the close is refused.
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
                            .post_steering_message(&tenant, &run, &format!("m{i}.{j}"))
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
            taken.extend(closed.messages.iter().map(|m| m.id));
            if closed.closed {
                break;
            }
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
        .post_steering_message(&fx.tenant, &dead.id, "use v2")
        .await?;
    let delivered = store
        .take_steering_messages(&lease, &fx.tenant, &fx.session.id, &dead.id)
        .await?;
    assert_eq!(delivered.len(), 1);
    let second = other_node
        .post_steering_message(&fx.tenant, &dead.id, "and add a test")
        .await?;
    let third = other_node
        .post_steering_message(&fx.tenant, &dead.id, "then stop")
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
    let taken = store
        .take_steering_messages(&lease, &fx.tenant, &fx.session.id, &resumed.id)
        .await?;
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
                            .post_steering_message(&tenant, &run, &format!("m{i}.{j}"))
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
            .post_steering_message(&fx.tenant, &dead.id, "too late")
            .await;
        assert!(
            matches!(late, Err(StoreError::Conflict { entity: "run", .. })),
            "round {round}: {late:?}"
        );
        let taken = store
            .take_steering_messages(&lease, &fx.tenant, &fx.session.id, &resumed.id)
            .await?;
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
