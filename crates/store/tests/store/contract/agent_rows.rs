//! Contract cases for what the agent runtime added to workspaces, sessions and runs.

use std::time::Duration;

use paddock_core::ids::{RunId, SnapshotId};
use paddock_core::store::{
    Budgets, CriterionReview, DriverKind, EndReason, NewEvent, Page, Review, Run, RunEvent,
    RunMode, RunState, RunUpdate, RunUsage, Session, SessionPatch, SessionStatus, StoreError,
    SubagentProfile, Verdict, Workspace,
};

use super::{
    StoreFactory, assert_conflict, assert_invalid, assert_not_found, clock, fixture, lease_session,
    snapshot,
};

pub async fn workspace_roots_are_unique_per_tenant(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let acme = fixture(&*store, "acme").await?;
    let other = fixture(&*store, "other").await?;
    const ROOT: &str = "/srv/app";
    assert_eq!(acme.workspace.root, None);
    assert_eq!(
        store.find_workspace_by_root(&acme.tenant, ROOT).await?,
        None
    );

    let rooted = Workspace {
        root: Some(ROOT.into()),
        ..Workspace::new(acme.tenant.clone(), "app", store.now())
    };
    store.create_workspace(&rooted).await?;
    assert_eq!(store.get_workspace(&acme.tenant, &rooted.id).await?, rooted);
    assert_eq!(
        store.find_workspace_by_root(&acme.tenant, ROOT).await?,
        Some(rooted.clone())
    );
    assert_eq!(
        store.find_workspace_by_root(&acme.tenant, "/srv").await?,
        None
    );

    // a second workspace on the same directory is refused and not written
    let twin = Workspace {
        root: Some(ROOT.into()),
        ..Workspace::new(acme.tenant.clone(), "twin", store.now())
    };
    assert_conflict(store.create_workspace(&twin).await, "workspace");
    assert_not_found(
        store.get_workspace(&acme.tenant, &twin.id).await,
        "workspace",
        twin.id.as_str(),
    );

    // another tenant neither sees acme's root nor is blocked by it
    assert_eq!(
        store.find_workspace_by_root(&other.tenant, ROOT).await?,
        None
    );
    let theirs = Workspace {
        root: Some(ROOT.into()),
        ..Workspace::new(other.tenant.clone(), "app", store.now())
    };
    store.create_workspace(&theirs).await?;
    assert_eq!(
        store.find_workspace_by_root(&other.tenant, ROOT).await?,
        Some(theirs)
    );
    assert_eq!(
        store.find_workspace_by_root(&acme.tenant, ROOT).await?,
        Some(rooted.clone())
    );

    // workspaces without a root never collide
    let plain = Workspace::new(acme.tenant.clone(), "plain", store.now());
    store.create_workspace(&plain).await?;
    assert_eq!(
        store
            .list_workspaces(&acme.tenant, &Page::default())
            .await?,
        [acme.workspace, rooted, plain]
    );
    Ok(())
}

pub async fn session_links_and_updates(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(t.clone(), fx.session.id.clone(), "goal", store.now());
    store.create_run(&lease, &run).await?;

    let fork = Session {
        forked_from: Some(fx.session.id.clone()),
        forked_at_run: Some(run.id.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "fork", store.now())
    };
    store.create_session(&fork).await?;
    assert_eq!(store.get_session(t, &fork.id).await?, fork);
    let subagent = Session {
        parent_run: Some(run.id.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "explore", store.now())
    };
    store.create_session(&subagent).await?;
    assert_eq!(store.get_session(t, &subagent.id).await?, subagent);

    // the fork point is a run of the session forked from
    let misplaced = Session {
        forked_from: Some(fork.id.clone()),
        forked_at_run: Some(run.id.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "misplaced", store.now())
    };
    assert_not_found(
        store.create_session(&misplaced).await,
        "run",
        run.id.as_str(),
    );
    let unforked = Session {
        forked_at_run: Some(run.id.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "unforked", store.now())
    };
    assert_invalid(store.create_session(&unforked).await, "forked_at_run");
    let missing = RunId::generate();
    let orphan = Session {
        parent_run: Some(missing.clone()),
        ..Session::new(t.clone(), fx.workspace.id.clone(), "orphan", store.now())
    };
    assert_not_found(store.create_session(&orphan).await, "run", missing.as_str());
    assert_eq!(
        store.list_sessions(t, None, &Page::default()).await?,
        [fx.session.clone(), fork.clone(), subagent]
    );

    clock.advance(Duration::from_secs(5));
    let renamed = store
        .update_session(
            t,
            &fork.id,
            &SessionPatch {
                title: Some("try the other fix".into()),
                status: None,
            },
        )
        .await?;
    assert_eq!(
        renamed,
        Session {
            title: "try the other fix".into(),
            updated_at: store.now(),
            ..fork.clone()
        }
    );
    clock.advance(Duration::from_secs(5));
    let archived = store
        .update_session(
            t,
            &fork.id,
            &SessionPatch {
                title: None,
                status: Some(SessionStatus::Archived),
            },
        )
        .await?;
    assert_eq!(
        archived,
        Session {
            status: SessionStatus::Archived,
            updated_at: store.now(),
            ..renamed
        }
    );
    assert_eq!(store.get_session(t, &fork.id).await?, archived);

    // another tenant cannot touch it
    let other = fixture(&*store, "other").await?;
    let patch = SessionPatch {
        title: Some("mine now".into()),
        status: None,
    };
    assert_not_found(
        store.update_session(&other.tenant, &fork.id, &patch).await,
        "session",
        fork.id.as_str(),
    );
    assert_eq!(store.get_session(t, &fork.id).await?, archived);
    Ok(())
}

fn review() -> Review {
    Review {
        verdict: Verdict::Unsure,
        summary: "tests pass locally; could not run the integration suite".into(),
        evidence: vec!["cargo test: 42 passed".into()],
        remaining: vec!["run the integration suite".into()],
        criteria: vec![
            CriterionReview {
                criterion: "unit tests pass".into(),
                verdict: Verdict::Met,
                evidence: Some("cargo test exit 0".into()),
            },
            CriterionReview {
                criterion: "integration tests pass".into(),
                verdict: Verdict::Unsure,
                evidence: None,
            },
        ],
    }
}

pub async fn run_settings_and_results(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let t = &fx.tenant;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let snap = snapshot(t, None, &*store);
    store.create_snapshot(&snap).await?;

    let run = Run {
        mode: RunMode::Plan,
        driver: DriverKind::ClaudeCode,
        profile: Some(SubagentProfile::Explore),
        task_key: Some("2".into()),
        budgets: Budgets {
            max_turns: 7,
            max_tokens: 10_000,
            max_tool_calls: 20,
            max_wall_clock_ms: 60_000,
            max_cost_micro_usd: Some(250_000),
        },
        ..Run::new(
            t.clone(),
            fx.session.id.clone(),
            "map the repo",
            store.now(),
        )
    };
    store.create_run(&lease, &run).await?;
    assert_eq!(store.get_run(t, &run.id).await?, run);

    clock.advance(Duration::from_secs(1));
    let usage = RunUsage {
        turns: 2,
        input_tokens: 1_200,
        output_tokens: 300,
        tool_calls: 3,
        wall_clock_ms: 1_000,
        cost_micro_usd: 4_321,
    };
    let acting = store
        .update_run(
            &lease,
            t,
            &run.id,
            &RunUpdate {
                usage: Some(usage),
                ..RunUpdate::state(RunState::Acting)
            },
        )
        .await?;
    assert_eq!(
        acting,
        Run {
            state: RunState::Acting,
            usage,
            updated_at: store.now(),
            ..run.clone()
        }
    );

    // unset fields keep their stored value; error is written as given
    clock.advance(Duration::from_secs(1));
    let flaky = store
        .update_run(
            &lease,
            t,
            &run.id,
            &RunUpdate {
                error: Some("model timed out, retrying".into()),
                ..RunUpdate::state(RunState::Observing)
            },
        )
        .await?;
    assert_eq!(
        flaky,
        Run {
            state: RunState::Observing,
            error: Some("model timed out, retrying".into()),
            updated_at: store.now(),
            ..acting.clone()
        }
    );
    clock.advance(Duration::from_secs(1));
    let verifying = store
        .update_run(&lease, t, &run.id, &RunUpdate::state(RunState::Verifying))
        .await?;
    assert_eq!(
        verifying,
        Run {
            state: RunState::Verifying,
            error: None,
            updated_at: store.now(),
            ..acting.clone()
        }
    );

    // the end: what ended it, the review and the workspace as it was
    clock.advance(Duration::from_secs(1));
    let spent = RunUsage {
        turns: 7,
        wall_clock_ms: 4_000,
        ..usage
    };
    let ended = store
        .update_run(
            &lease,
            t,
            &run.id,
            &RunUpdate {
                state: RunState::Failed,
                error: Some("turn budget exceeded".into()),
                usage: Some(spent),
                end_reason: Some(EndReason::BudgetExceeded),
                review: Some(review()),
                end_snapshot: Some(snap.id.clone()),
            },
        )
        .await?;
    let expected = Run {
        state: RunState::Failed,
        error: Some("turn budget exceeded".into()),
        usage: spent,
        end_reason: Some(EndReason::BudgetExceeded),
        review: Some(review()),
        end_snapshot: Some(snap.id.clone()),
        updated_at: store.now(),
        finished_at: Some(store.now()),
        ..verifying
    };
    assert_eq!(ended, expected);
    assert_eq!(store.get_run(t, &run.id).await?, expected);

    // an end snapshot must exist (and be the tenant's)
    let second = Run::new(t.clone(), fx.session.id.clone(), "again", store.now());
    store.create_run(&lease, &second).await?;
    let missing = SnapshotId::generate();
    let dangling = RunUpdate {
        end_snapshot: Some(missing.clone()),
        ..RunUpdate::state(RunState::Completed)
    };
    assert_not_found(
        store.update_run(&lease, t, &second.id, &dangling).await,
        "snapshot",
        missing.as_str(),
    );
    assert_eq!(store.get_run(t, &second.id).await?, second);
    let born_dangling = Run {
        end_snapshot: Some(missing.clone()),
        ..Run::new(t.clone(), fx.session.id.clone(), "x", store.now())
    };
    assert_not_found(
        store.create_run(&lease, &born_dangling).await,
        "snapshot",
        missing.as_str(),
    );
    let other = fixture(&*store, "other").await?;
    let theirs = snapshot(&other.tenant, None, &*store);
    store.create_snapshot(&theirs).await?;
    let foreign = RunUpdate {
        end_snapshot: Some(theirs.id.clone()),
        ..RunUpdate::state(RunState::Completed)
    };
    assert_not_found(
        store.update_run(&lease, t, &second.id, &foreign).await,
        "snapshot",
        theirs.id.as_str(),
    );

    // deleting the snapshot leaves the run without one
    store.delete_snapshot(t, &snap.id).await?;
    assert_eq!(
        store.get_run(t, &run.id).await?,
        Run {
            end_snapshot: None,
            ..expected
        }
    );
    Ok(())
}

pub async fn child_and_unfinished_runs(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let acme = fixture(&*store, "acme").await?;
    let other = fixture(&*store, "other").await?;
    let t = &acme.tenant;
    let lease = lease_session(&*store, &acme.session, "node-a").await?;
    let root = Run::new(t.clone(), acme.session.id.clone(), "ship it", store.now());
    store.create_run(&lease, &root).await?;

    // subagents run in their own sessions, naming the parent run
    let mut children = Vec::new();
    for (title, profile) in [
        ("explore", SubagentProfile::Explore),
        ("review", SubagentProfile::Review),
    ] {
        let session = Session {
            parent_run: Some(root.id.clone()),
            ..Session::new(t.clone(), acme.workspace.id.clone(), title, store.now())
        };
        store.create_session(&session).await?;
        let child_lease = lease_session(&*store, &session, "node-a").await?;
        let child = Run {
            parent_run: Some(root.id.clone()),
            profile: Some(profile),
            mode: profile.mode(),
            ..Run::new(t.clone(), session.id.clone(), title, store.now())
        };
        store.create_run(&child_lease, &child).await?;
        children.push((child_lease, child));
    }
    let unrelated = Run::new(t.clone(), acme.session.id.clone(), "next", store.now());
    store.create_run(&lease, &unrelated).await?;
    let other_lease = lease_session(&*store, &other.session, "node-b").await?;
    let theirs = Run::new(
        other.tenant.clone(),
        other.session.id.clone(),
        "theirs",
        store.now(),
    );
    store.create_run(&other_lease, &theirs).await?;

    // a resumed run names the run it continues, a run of the same tenant
    let resumed = Run {
        resumed_from: Some(unrelated.id.clone()),
        ..Run::new(t.clone(), acme.session.id.clone(), "next", store.now())
    };
    store.create_run(&lease, &resumed).await?;
    assert_eq!(store.get_run(t, &resumed.id).await?, resumed);
    for missing in [RunId::generate(), theirs.id.clone()] {
        let dangling = Run {
            resumed_from: Some(missing.clone()),
            ..Run::new(t.clone(), acme.session.id.clone(), "next", store.now())
        };
        assert_not_found(
            store.create_run(&lease, &dangling).await,
            "run",
            missing.as_str(),
        );
    }

    let listed = store.list_child_runs(t, &root.id).await?;
    assert_eq!(
        listed,
        [children[0].1.clone(), children[1].1.clone()],
        "oldest first"
    );
    assert!(
        store
            .list_child_runs(t, &children[0].1.id)
            .await?
            .is_empty()
    );
    assert!(
        store
            .list_child_runs(&other.tenant, &root.id)
            .await?
            .is_empty()
    );

    // every tenant's runs that are not in a terminal state
    let (review_lease, review_run) = &children[1];
    store
        .update_run(
            review_lease,
            t,
            &review_run.id,
            &RunUpdate::state(RunState::Completed),
        )
        .await?;
    store
        .update_run(
            &lease,
            t,
            &unrelated.id,
            &RunUpdate::state(RunState::Interrupted),
        )
        .await?;
    let (explore_lease, explore_run) = &children[0];
    store
        .update_run(
            explore_lease,
            t,
            &explore_run.id,
            &RunUpdate::state(RunState::AwaitingUser),
        )
        .await?;
    store
        .update_run(
            &other_lease,
            &other.tenant,
            &theirs.id,
            &RunUpdate::state(RunState::Acting),
        )
        .await?;
    let unfinished: Vec<RunId> = store
        .list_unfinished_runs()
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        unfinished,
        [
            root.id.clone(),
            explore_run.id.clone(),
            theirs.id.clone(),
            resumed.id.clone()
        ]
    );
    Ok(())
}

/// A run's end and its events are one write: the new state and the events
/// are stored together, and an update the store refuses (the run already
/// ended, another session's event, a stale lease) stores neither.
pub async fn a_runs_end_and_its_events_are_one_write(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let acme = fixture(&*store, "acme").await?;
    let other = fixture(&*store, "other-session").await?;
    let t = &acme.tenant;
    let lease = lease_session(&*store, &acme.session, "node-a").await?;
    let run = Run::new(t.clone(), acme.session.id.clone(), "end it", store.now());
    store.create_run(&lease, &run).await?;
    let event = |session: &Session, kind: &str| NewEvent {
        session: session.id.clone(),
        run: Some(run.id.clone()),
        kind: kind.to_owned(),
        payload: "{}".to_owned(),
    };
    let end = RunUpdate {
        end_reason: Some(EndReason::Completed),
        ..RunUpdate::state(RunState::Completed)
    };

    // an event of another session: refused, the run left as it was
    assert_invalid(
        store
            .update_run_with_events(
                &lease,
                t,
                &run.id,
                &end,
                &[
                    event(&acme.session, "run.review"),
                    event(&other.session, "x"),
                ],
            )
            .await,
        "events",
    );
    assert_eq!(store.get_run(t, &run.id).await?.state, RunState::Preparing);
    assert!(store.list_run_events(t, &run.id, 0, 10).await?.is_empty());

    let (ended, stored) = store
        .update_run_with_events(
            &lease,
            t,
            &run.id,
            &end,
            &[
                event(&acme.session, "run.review"),
                event(&acme.session, "run.finished"),
            ],
        )
        .await?;
    assert_eq!(ended.state, RunState::Completed);
    assert_eq!(store.get_run(t, &run.id).await?, ended);
    let kinds = |events: &[RunEvent]| -> Vec<(u64, String)> {
        events.iter().map(|e| (e.seq, e.kind.clone())).collect()
    };
    let expected = vec![(1, "run.review".to_owned()), (2, "run.finished".to_owned())];
    assert_eq!(kinds(&stored), expected);
    assert_eq!(
        kinds(&store.list_run_events(t, &run.id, 0, 10).await?),
        expected
    );

    // a second end (two writers racing to end one run): a conflict, and no
    // second run.finished
    assert_conflict(
        store
            .update_run_with_events(
                &lease,
                t,
                &run.id,
                &end,
                &[event(&acme.session, "run.finished")],
            )
            .await,
        "run",
    );
    assert_eq!(store.list_run_events(t, &run.id, 0, 10).await?.len(), 2);

    // a lease taken over: nothing is written
    let second = Run::new(t.clone(), acme.session.id.clone(), "again", store.now());
    store.create_run(&lease, &second).await?;
    store.release_lease(&lease).await?;
    let _taken = lease_session(&*store, &acme.session, "node-b").await?;
    let stale = store
        .update_run_with_events(
            &lease,
            t,
            &second.id,
            &end,
            &[event(&acme.session, "run.finished")],
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::StaleLease { .. })),
        "{stale:?}"
    );
    assert_eq!(
        store.get_run(t, &second.id).await?.state,
        RunState::Preparing
    );
    assert!(
        store
            .list_run_events(t, &second.id, 0, 10)
            .await?
            .is_empty()
    );
    Ok(())
}
