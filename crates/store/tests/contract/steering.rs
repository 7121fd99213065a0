//! Steering messages: posted by anyone while the run goes on, taken once by
//! the session's lease holder, refused for a finished run or another tenant.

use paddock_core::ids::RunId;
use paddock_core::store::{Run, RunState, RunUpdate, StoreError};

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
