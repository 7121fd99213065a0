//! Contract cases for everything but leases.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::ids::{RunId, SnapshotId, TenantId, ToolInvocationId, WorkspaceId};
use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_core::store::{
    NewEvent, Page, RecordedSpec, Run, RunState, RunUpdate, SandboxRecord, SandboxState, Session,
    SessionStatus, SnapshotFilter, SnapshotRecord, Store, StoreError, Tenant, ToolInvocation,
    ToolOutcome, ToolStatus, Workspace,
};

use super::{
    StoreFactory, T0, assert_conflict, assert_not_found, clock, fixture, lease_session, snapshot,
};

fn event(session: &Session, run: Option<&Run>, kind: &str, n: u32) -> NewEvent {
    NewEvent {
        session: session.id.clone(),
        run: run.map(|r| r.id.clone()),
        kind: kind.to_owned(),
        payload: format!("{{\"n\":{n}}}"),
    }
}

pub fn sandbox(
    tenant: &TenantId,
    workspace: Option<&Workspace>,
    node: &str,
    store: &dyn Store,
) -> SandboxRecord {
    SandboxRecord {
        id: SandboxId::generate(),
        tenant: tenant.clone(),
        workspace: workspace.map(|w| w.id.clone()),
        backend: "native".to_owned(),
        node: node.to_owned(),
        state: SandboxState::Running,
        spec: RecordedSpec::of(&SandboxSpec::default()),
        pid: Some(4242),
        created_at: store.now(),
        updated_at: store.now(),
        last_active_at: store.now(),
        expires_at: Some(store.now().saturating_add(Duration::from_secs(3600))),
        run: None,
        pause: None,
    }
}

pub async fn tenants_and_workspaces(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let tenant = TenantId::parse("acme")?;
    let stored = store
        .ensure_tenant(&Tenant {
            id: tenant.clone(),
            name: "Acme".into(),
            created_at: T0,
        })
        .await?;
    assert_eq!(
        stored,
        Tenant {
            id: tenant.clone(),
            name: "Acme".into(),
            created_at: T0
        }
    );
    // ensure_tenant again renames and keeps the creation time
    let renamed = store
        .ensure_tenant(&Tenant {
            id: tenant.clone(),
            name: "Acme Ltd".into(),
            created_at: store.now(),
        })
        .await?;
    assert_eq!(renamed.name, "Acme Ltd");
    assert_eq!(store.get_tenant(&tenant).await?, renamed);
    assert_not_found(
        store.get_tenant(&TenantId::parse("nobody")?).await,
        "tenant",
        "nobody",
    );

    let mut created = Vec::new();
    for name in ["a", "b", "c"] {
        let ws = Workspace::new(tenant.clone(), name, store.now());
        store.create_workspace(&ws).await?;
        created.push(ws);
    }
    assert_eq!(
        store.get_workspace(&tenant, &created[1].id).await?,
        created[1]
    );
    let first = store
        .list_workspaces(
            &tenant,
            &Page {
                after: None,
                limit: 2,
            },
        )
        .await?;
    assert_eq!(first, created[..2]);
    let rest = store
        .list_workspaces(
            &tenant,
            &Page {
                after: Some(first[1].id.to_string()),
                limit: 2,
            },
        )
        .await?;
    assert_eq!(rest, created[2..]);

    assert_conflict(store.create_workspace(&created[0]).await, "workspace");
    let orphan = Workspace::new(TenantId::parse("ghost")?, "x", store.now());
    assert_not_found(store.create_workspace(&orphan).await, "tenant", "ghost");
    let missing = WorkspaceId::generate();
    assert_not_found(
        store.get_workspace(&tenant, &missing).await,
        "workspace",
        missing.as_str(),
    );
    Ok(())
}

pub async fn sandboxes(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let acme = fixture(&*store, "acme").await?;
    let other = fixture(&*store, "other").await?;

    let on_a = sandbox(&acme.tenant, Some(&acme.workspace), "node-a", &*store);
    // A run's sandbox names its run (kept through a state change below).
    let on_b = SandboxRecord {
        run: Some(RunId::generate()),
        ..sandbox(&acme.tenant, None, "node-b", &*store)
    };
    let other_on_a = sandbox(&other.tenant, None, "node-a", &*store);
    for sb in [&on_a, &on_b, &other_on_a] {
        store.create_sandbox(sb).await?;
    }
    assert_eq!(store.get_sandbox(&acme.tenant, &on_a.id).await?, on_a);
    assert_eq!(store.get_sandbox(&acme.tenant, &on_b.id).await?, on_b);
    assert_conflict(store.create_sandbox(&on_a).await, "sandbox");

    // a sandbox cannot name another tenant's workspace
    let mut cross = sandbox(&acme.tenant, Some(&other.workspace), "node-a", &*store);
    cross.id = SandboxId::generate();
    assert_not_found(
        store.create_sandbox(&cross).await,
        "workspace",
        other.workspace.id.as_str(),
    );

    clock.advance(Duration::from_secs(5));
    let stopped = store
        .set_sandbox_state(&acme.tenant, &on_b.id, SandboxState::Stopped)
        .await?;
    assert_eq!(
        stopped,
        SandboxRecord {
            state: SandboxState::Stopped,
            pid: None,
            updated_at: store.now(),
            ..on_b.clone()
        }
    );
    let running = store
        .list_sandboxes(&acme.tenant, Some(SandboxState::Running), &Page::default())
        .await?;
    assert_eq!(running, std::slice::from_ref(&on_a));
    let all = store
        .list_sandboxes(&acme.tenant, None, &Page::default())
        .await?;
    assert_eq!(all.len(), 2);

    clock.advance(Duration::from_secs(5));
    store.touch_sandbox(&acme.tenant, &on_a.id).await?;
    assert_eq!(
        store
            .get_sandbox(&acme.tenant, &on_a.id)
            .await?
            .last_active_at,
        store.now()
    );

    // reconciliation sees every tenant's running sandboxes of one node
    let node_a = store
        .list_node_sandboxes("node-a", SandboxState::Running)
        .await?;
    let ids: BTreeSet<_> = node_a.iter().map(|s| s.id.clone()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([on_a.id.clone(), other_on_a.id.clone()])
    );
    let lost = store
        .set_sandbox_state(&other.tenant, &other_on_a.id, SandboxState::Lost)
        .await?;
    assert_eq!(lost.state, SandboxState::Lost);
    assert_eq!(
        store
            .list_node_sandboxes("node-a", SandboxState::Lost)
            .await?,
        [lost]
    );

    let missing = SandboxId::generate();
    assert_not_found(
        store.touch_sandbox(&acme.tenant, &missing).await,
        "sandbox",
        missing.as_str(),
    );
    assert_not_found(
        store
            .set_sandbox_state(&acme.tenant, &missing, SandboxState::Stopped)
            .await,
        "sandbox",
        missing.as_str(),
    );
    Ok(())
}

pub async fn sessions_and_runs(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    assert_eq!(
        store.get_session(&fx.tenant, &fx.session.id).await?,
        fx.session
    );

    let mut fork = Session::new(
        fx.tenant.clone(),
        fx.workspace.id.clone(),
        "fork",
        store.now(),
    );
    fork.forked_from = Some(fx.session.id.clone());
    fork.status = SessionStatus::Archived;
    store.create_session(&fork).await?;
    let other_ws = Workspace::new(fx.tenant.clone(), "second", store.now());
    store.create_workspace(&other_ws).await?;
    let elsewhere = Session::new(
        fx.tenant.clone(),
        other_ws.id.clone(),
        "elsewhere",
        store.now(),
    );
    store.create_session(&elsewhere).await?;
    let in_main = store
        .list_sessions(&fx.tenant, Some(&fx.workspace.id), &Page::default())
        .await?;
    assert_eq!(in_main, [fx.session.clone(), fork.clone()]);
    assert_eq!(
        store
            .list_sessions(&fx.tenant, None, &Page::default())
            .await?
            .len(),
        3
    );
    let missing_ws = WorkspaceId::generate();
    let orphan = Session::new(fx.tenant.clone(), missing_ws.clone(), "orphan", store.now());
    assert_not_found(
        store.create_session(&orphan).await,
        "workspace",
        missing_ws.as_str(),
    );

    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "fix the build",
        store.now(),
    );
    store.create_run(&lease, &run).await?;
    assert_eq!(store.get_run(&fx.tenant, &run.id).await?, run);
    assert_conflict(store.create_run(&lease, &run).await, "run");

    clock.advance(Duration::from_secs(1));
    let acting = store
        .update_run(
            &lease,
            &fx.tenant,
            &run.id,
            &RunUpdate::state(RunState::Acting),
        )
        .await?;
    assert_eq!(
        acting,
        Run {
            state: RunState::Acting,
            updated_at: store.now(),
            ..run.clone()
        }
    );

    clock.advance(Duration::from_secs(1));
    let failed = store
        .update_run(
            &lease,
            &fx.tenant,
            &run.id,
            &RunUpdate {
                error: Some("model unreachable".into()),
                ..RunUpdate::state(RunState::Failed)
            },
        )
        .await?;
    assert_eq!(
        failed,
        Run {
            state: RunState::Failed,
            error: Some("model unreachable".into()),
            updated_at: store.now(),
            finished_at: Some(store.now()),
            ..run.clone()
        }
    );
    // terminal states are final
    assert_conflict(
        store
            .update_run(
                &lease,
                &fx.tenant,
                &run.id,
                &RunUpdate::state(RunState::Acting),
            )
            .await,
        "run",
    );

    let mut resumed = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "fix the build",
        store.now(),
    );
    resumed.parent_run = Some(run.id.clone());
    store.create_run(&lease, &resumed).await?;
    assert_eq!(
        store.list_runs(&fx.tenant, &fx.session.id).await?,
        [failed, resumed.clone()]
    );

    let mut dangling = Run::new(fx.tenant.clone(), fx.session.id.clone(), "x", store.now());
    let missing = RunId::generate();
    dangling.parent_run = Some(missing.clone());
    assert_not_found(
        store.create_run(&lease, &dangling).await,
        "run",
        missing.as_str(),
    );
    assert_not_found(
        store
            .update_run(
                &lease,
                &fx.tenant,
                &missing,
                &RunUpdate::state(RunState::Acting),
            )
            .await,
        "run",
        missing.as_str(),
    );
    Ok(())
}

pub async fn events_are_sequenced_per_session(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(&*store, "acme").await?;
    let second = Session::new(
        fx.tenant.clone(),
        fx.workspace.id.clone(),
        "second",
        store.now(),
    );
    store.create_session(&second).await?;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let lease2 = lease_session(&*store, &second, "node-a").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;

    let mut appended = Vec::new();
    for n in 1..=5 {
        let stored = store
            .append_event(
                &lease,
                &fx.tenant,
                &event(&fx.session, Some(&run), "step", n),
            )
            .await?;
        assert_eq!(stored.seq, u64::from(n));
        assert_eq!(stored.payload, format!("{{\"n\":{n}}}"));
        assert_eq!(stored.run.as_ref(), Some(&run.id));
        appended.push(stored);
    }
    // another session counts from 1 on its own
    let other = store
        .append_event(&lease2, &fx.tenant, &event(&second, None, "note", 1))
        .await?;
    assert_eq!(other.seq, 1);

    assert_eq!(
        store
            .list_events(&fx.tenant, &fx.session.id, 0, 100)
            .await?,
        appended
    );
    assert_eq!(
        store.list_events(&fx.tenant, &fx.session.id, 2, 2).await?,
        appended[2..4]
    );
    assert!(
        store
            .list_events(&fx.tenant, &fx.session.id, 5, 100)
            .await?
            .is_empty()
    );

    // an event may only name a run of its own session
    assert_not_found(
        store
            .append_event(&lease2, &fx.tenant, &event(&second, Some(&run), "x", 0))
            .await,
        "run",
        run.id.as_str(),
    );
    assert_eq!(
        store.list_events(&fx.tenant, &second.id, 0, 100).await?,
        [other]
    );
    Ok(())
}

pub async fn concurrent_appenders_get_gap_free_sequences(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    const TASKS: u32 = 8;
    const EACH: u32 = 25;
    let clock = clock();
    let first = f.open(clock.clone()).await?;
    let second = f.open(clock.clone()).await?;
    let fx = fixture(&*first, "acme").await?;
    let lease = lease_session(&*first, &fx.session, "node-a").await?;

    let mut tasks = Vec::new();
    for t in 0..TASKS {
        // half the appenders go through a second pool on the same database
        let store: Arc<dyn Store> = if t % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let (lease, tenant, session) = (lease.clone(), fx.tenant.clone(), fx.session.clone());
        tasks.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for n in 0..EACH {
                let e = store
                    .append_event(
                        &lease,
                        &tenant,
                        &event(&session, None, "tick", t * 1000 + n),
                    )
                    .await?;
                seqs.push(e.seq);
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
    assert_eq!(
        all, expected,
        "sequence numbers must be unique and gap-free"
    );

    let listed = first
        .list_events(&fx.tenant, &fx.session.id, 0, 1000)
        .await?;
    let listed_seqs: Vec<u64> = listed.iter().map(|e| e.seq).collect();
    assert_eq!(listed_seqs, expected);
    Ok(())
}

pub async fn tool_invocations(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let clock = clock();
    let store = f.open(clock.clone()).await?;
    let fx = fixture(&*store, "acme").await?;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;

    let call = ToolInvocation::start(&run, "shell", r#"{"cmd":"cargo test"}"#, store.now());
    store.record_tool_invocation(&lease, &call).await?;
    assert_conflict(
        store.record_tool_invocation(&lease, &call).await,
        "tool invocation",
    );
    clock.advance(Duration::from_millis(1500));
    let outcome = ToolOutcome {
        status: ToolStatus::Succeeded,
        output: r#"{"exit":0}"#.into(),
    };
    let done = store
        .finish_tool_invocation(&lease, &fx.tenant, &call.id, &outcome)
        .await?;
    assert_eq!(
        done,
        ToolInvocation {
            status: ToolStatus::Succeeded,
            output: Some(outcome.output.clone()),
            finished_at: Some(store.now()),
            ..call.clone()
        }
    );
    // a finished call is not rewritten
    assert_conflict(
        store
            .finish_tool_invocation(&lease, &fx.tenant, &call.id, &outcome)
            .await,
        "tool invocation",
    );
    let still_running = ToolOutcome {
        status: ToolStatus::Running,
        output: String::new(),
    };
    assert!(matches!(
        store
            .finish_tool_invocation(&lease, &fx.tenant, &call.id, &still_running)
            .await,
        Err(StoreError::Invalid {
            field: "outcome.status",
            ..
        })
    ));
    let second = ToolInvocation::start(&run, "read_file", r#"{"path":"a"}"#, store.now());
    store.record_tool_invocation(&lease, &second).await?;
    assert_eq!(
        store.list_tool_invocations(&fx.tenant, &run.id).await?,
        [done, second]
    );

    let missing = ToolInvocationId::generate();
    assert_not_found(
        store
            .finish_tool_invocation(&lease, &fx.tenant, &missing, &outcome)
            .await,
        "tool invocation",
        missing.as_str(),
    );
    // the run must belong to the invocation's session
    let other = Session::new(
        fx.tenant.clone(),
        fx.workspace.id.clone(),
        "other",
        store.now(),
    );
    store.create_session(&other).await?;
    let other_lease = lease_session(&*store, &other, "node-a").await?;
    let mut misfiled = ToolInvocation::start(&run, "shell", "{}", store.now());
    misfiled.session = other.id.clone();
    assert_not_found(
        store.record_tool_invocation(&other_lease, &misfiled).await,
        "run",
        run.id.as_str(),
    );
    Ok(())
}

pub async fn snapshots(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(&*store, "acme").await?;
    let sb = sandbox(&fx.tenant, Some(&fx.workspace), "node-a", &*store);
    store.create_sandbox(&sb).await?;

    let mut base = snapshot(&fx.tenant, None, &*store);
    base.workspace = Some(fx.workspace.id.clone());
    base.source_sandbox = Some(sb.id.clone());
    base.session = Some(fx.session.id.clone());
    store.create_snapshot(&base).await?;
    let child = snapshot(&fx.tenant, Some(&base), &*store);
    store.create_snapshot(&child).await?;
    assert_eq!(store.get_snapshot(&fx.tenant, &base.id).await?, base);
    assert_eq!(store.get_snapshot(&fx.tenant, &child.id).await?, child);
    assert_conflict(store.create_snapshot(&base).await, "snapshot");

    let all = store
        .list_snapshots(&fx.tenant, &SnapshotFilter::default(), &Page::default())
        .await?;
    assert_eq!(all, [base.clone(), child.clone()]);
    let of_session = SnapshotFilter {
        session: Some(fx.session.id.clone()),
        ..Default::default()
    };
    assert_eq!(
        store
            .list_snapshots(&fx.tenant, &of_session, &Page::default())
            .await?,
        [base.clone()]
    );
    let of_workspace = SnapshotFilter {
        workspace: Some(fx.workspace.id.clone()),
        ..Default::default()
    };
    assert_eq!(
        store
            .list_snapshots(&fx.tenant, &of_workspace, &Page::default())
            .await?,
        [base.clone()]
    );

    let dangling = snapshot(
        &fx.tenant,
        Some(&snapshot(&fx.tenant, None, &*store)),
        &*store,
    );
    assert_not_found(
        store.create_snapshot(&dangling).await,
        "snapshot",
        dangling
            .parent
            .as_ref()
            .map(|p| p.as_str())
            .unwrap_or_default(),
    );
    let huge = SnapshotRecord {
        id: SnapshotId::generate(),
        bytes_raw: u64::MAX,
        ..base.clone()
    };
    assert!(matches!(
        store.create_snapshot(&huge).await,
        Err(StoreError::Invalid {
            field: "bytes_raw",
            ..
        })
    ));

    // a parent stays while a child names it
    assert_conflict(
        store.delete_snapshot(&fx.tenant, &base.id).await,
        "snapshot",
    );
    store.delete_snapshot(&fx.tenant, &child.id).await?;
    store.delete_snapshot(&fx.tenant, &base.id).await?;
    assert_not_found(
        store.get_snapshot(&fx.tenant, &base.id).await,
        "snapshot",
        base.id.as_str(),
    );
    assert_not_found(
        store.delete_snapshot(&fx.tenant, &base.id).await,
        "snapshot",
        base.id.as_str(),
    );
    Ok(())
}

pub async fn tenant_isolation(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let a = fixture(&*store, "tenant-a").await?;
    let b = fixture(&*store, "tenant-b").await?;
    let lease_a = lease_session(&*store, &a.session, "node-a").await?;
    let run_a = Run::new(
        a.tenant.clone(),
        a.session.id.clone(),
        "secret plan",
        store.now(),
    );
    store.create_run(&lease_a, &run_a).await?;
    store
        .append_event(
            &lease_a,
            &a.tenant,
            &event(&a.session, Some(&run_a), "secret", 1),
        )
        .await?;
    let call_a = ToolInvocation::start(&run_a, "shell", "{}", store.now());
    store.record_tool_invocation(&lease_a, &call_a).await?;
    let sb_a = sandbox(&a.tenant, Some(&a.workspace), "node-a", &*store);
    store.create_sandbox(&sb_a).await?;
    let snap_a = snapshot(&a.tenant, None, &*store);
    store.create_snapshot(&snap_a).await?;

    let t = &b.tenant;
    assert_not_found(
        store.get_workspace(t, &a.workspace.id).await,
        "workspace",
        a.workspace.id.as_str(),
    );
    assert_not_found(
        store.get_session(t, &a.session.id).await,
        "session",
        a.session.id.as_str(),
    );
    assert_not_found(store.get_run(t, &run_a.id).await, "run", run_a.id.as_str());
    assert_not_found(
        store.get_sandbox(t, &sb_a.id).await,
        "sandbox",
        sb_a.id.as_str(),
    );
    assert_not_found(
        store.get_snapshot(t, &snap_a.id).await,
        "snapshot",
        snap_a.id.as_str(),
    );
    assert_not_found(
        store.touch_sandbox(t, &sb_a.id).await,
        "sandbox",
        sb_a.id.as_str(),
    );
    assert_not_found(
        store
            .set_sandbox_state(t, &sb_a.id, SandboxState::Stopped)
            .await,
        "sandbox",
        sb_a.id.as_str(),
    );
    assert_not_found(
        store.delete_snapshot(t, &snap_a.id).await,
        "snapshot",
        snap_a.id.as_str(),
    );

    assert_eq!(
        store.list_workspaces(t, &Page::default()).await?,
        std::slice::from_ref(&b.workspace)
    );
    assert_eq!(
        store.list_sessions(t, None, &Page::default()).await?,
        std::slice::from_ref(&b.session)
    );
    assert!(
        store
            .list_sessions(t, Some(&a.workspace.id), &Page::default())
            .await?
            .is_empty()
    );
    assert!(
        store
            .list_sandboxes(t, None, &Page::default())
            .await?
            .is_empty()
    );
    assert!(
        store
            .list_snapshots(t, &SnapshotFilter::default(), &Page::default())
            .await?
            .is_empty()
    );
    assert!(store.list_runs(t, &a.session.id).await?.is_empty());
    assert!(
        store
            .list_events(t, &a.session.id, 0, 100)
            .await?
            .is_empty()
    );
    assert!(store.list_tool_invocations(t, &run_a.id).await?.is_empty());

    // B cannot write into A's rows, even holding a valid lease on A's session
    let in_a = Session::new(t.clone(), a.workspace.id.clone(), "intruder", store.now());
    assert_not_found(
        store.create_session(&in_a).await,
        "workspace",
        a.workspace.id.as_str(),
    );
    assert_not_found(
        store
            .append_event(&lease_a, t, &event(&a.session, None, "forged", 0))
            .await,
        "session",
        a.session.id.as_str(),
    );
    let forged_run = Run::new(t.clone(), a.session.id.clone(), "forged", store.now());
    assert_not_found(
        store.create_run(&lease_a, &forged_run).await,
        "session",
        a.session.id.as_str(),
    );
    assert_not_found(
        store
            .update_run(
                &lease_a,
                t,
                &run_a.id,
                &RunUpdate::state(RunState::Cancelled),
            )
            .await,
        "run",
        run_a.id.as_str(),
    );
    let outcome = ToolOutcome {
        status: ToolStatus::Failed,
        output: "{}".into(),
    };
    assert_not_found(
        store
            .finish_tool_invocation(&lease_a, t, &call_a.id, &outcome)
            .await,
        "tool invocation",
        call_a.id.as_str(),
    );
    let mut stolen = snapshot(t, None, &*store);
    stolen.parent = Some(snap_a.id.clone());
    assert_not_found(
        store.create_snapshot(&stolen).await,
        "snapshot",
        snap_a.id.as_str(),
    );

    // and A's rows are untouched
    assert_eq!(store.get_run(&a.tenant, &run_a.id).await?, run_a);
    assert_eq!(
        store
            .list_events(&a.tenant, &a.session.id, 0, 100)
            .await?
            .len(),
        1
    );
    Ok(())
}

/// After close every operation fails promptly with `Unavailable`.
pub async fn closed_store_fails_cleanly(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(&*store, "acme").await?;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    store.ping().await?;
    store.close().await;

    let deadline = Duration::from_secs(10);
    let outcomes: Vec<(&str, Result<(), StoreError>)> = vec![
        ("ping", tokio::time::timeout(deadline, store.ping()).await?),
        (
            "get_session",
            tokio::time::timeout(deadline, store.get_session(&fx.tenant, &fx.session.id))
                .await?
                .map(|_| ()),
        ),
        (
            "append_event",
            tokio::time::timeout(
                deadline,
                store.append_event(&lease, &fx.tenant, &event(&fx.session, None, "x", 0)),
            )
            .await?
            .map(|_| ()),
        ),
        (
            "acquire_lease",
            tokio::time::timeout(
                deadline,
                store.acquire_lease("session:x", "node-b", super::TTL),
            )
            .await?
            .map(|_| ()),
        ),
    ];
    for (operation, outcome) in outcomes {
        match outcome {
            Err(StoreError::Unavailable { operation: op, .. }) => assert_eq!(op, operation),
            other => panic!("{operation} on a closed store gave {other:?}"),
        }
    }
    Ok(())
}

/// What one store committed, another store opened later on the same database
/// sees (the orchestrator restarting).
pub async fn reopened_store_sees_committed_rows(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let store = f.open(clock()).await?;
    let fx = fixture(&*store, "acme").await?;
    let lease = lease_session(&*store, &fx.session, "node-a").await?;
    let run = Run::new(
        fx.tenant.clone(),
        fx.session.id.clone(),
        "goal",
        store.now(),
    );
    store.create_run(&lease, &run).await?;
    let appended = store
        .append_event(&lease, &fx.tenant, &event(&fx.session, Some(&run), "x", 1))
        .await?;
    store.close().await;

    // migrations are applied again (a no-op) and the rows are all there
    let reopened = f.open(clock()).await?;
    assert_eq!(
        reopened.get_session(&fx.tenant, &fx.session.id).await?,
        fx.session
    );
    assert_eq!(reopened.get_run(&fx.tenant, &run.id).await?, run);
    assert_eq!(
        reopened
            .list_events(&fx.tenant, &fx.session.id, 0, 10)
            .await?,
        [appended]
    );
    assert_eq!(
        reopened.get_lease(&lease.resource).await?,
        Some(lease.clone())
    );
    let next = reopened
        .append_event(&lease, &fx.tenant, &event(&fx.session, None, "y", 2))
        .await?;
    assert_eq!(next.seq, 2);
    Ok(())
}

/// A running sandbox is paused with its pause record (no pid), listed as
/// paused for its node, resumed with a new pid; each step refuses a
/// sandbox in the wrong state, and any other state change clears it.
pub async fn sandboxes_pause_and_resume(f: &dyn StoreFactory) -> anyhow::Result<()> {
    use paddock_core::store::{PauseMode, SandboxPause};
    let store = f.open(clock()).await?;
    let acme = fixture(&*store, "acme").await?;
    let sb = sandbox(&acme.tenant, None, "node-p", &*store);
    store.create_sandbox(&sb).await?;
    let pause = SandboxPause {
        mode: PauseMode::Filesystem,
        snapshot: Some(SnapshotId::generate()),
        saved_state: Some("/var/lib/paddock/paused/sb-1.vm".into()),
        reason: "idle".to_owned(),
        paused_at: store.now(),
    };
    let paused = store.pause_sandbox(&acme.tenant, &sb.id, &pause).await?;
    let expected = SandboxRecord {
        state: SandboxState::Paused,
        pid: None,
        pause: Some(pause.clone()),
        updated_at: store.now(),
        ..sb.clone()
    };
    assert_eq!(paused, expected);
    assert_eq!(store.get_sandbox(&acme.tenant, &sb.id).await?, expected);
    assert_eq!(
        store
            .list_node_sandboxes("node-p", SandboxState::Paused)
            .await?,
        vec![expected.clone()]
    );
    assert_conflict(
        store.pause_sandbox(&acme.tenant, &sb.id, &pause).await,
        "sandbox",
    );
    let resumed = store
        .resume_sandbox(&acme.tenant, &sb.id, Some(777))
        .await?;
    assert_eq!(
        resumed,
        SandboxRecord {
            state: SandboxState::Running,
            pid: Some(777),
            pause: None,
            last_active_at: store.now(),
            ..expected.clone()
        }
    );
    assert_conflict(
        store.resume_sandbox(&acme.tenant, &sb.id, None).await,
        "sandbox",
    );
    store.pause_sandbox(&acme.tenant, &sb.id, &pause).await?;
    let stopped = store
        .set_sandbox_state(&acme.tenant, &sb.id, SandboxState::Stopped)
        .await?;
    assert_eq!(stopped.pause, None);
    let missing = SandboxId::generate();
    assert_not_found(
        store.pause_sandbox(&acme.tenant, &missing, &pause).await,
        "sandbox",
        missing.as_str(),
    );
    Ok(())
}
