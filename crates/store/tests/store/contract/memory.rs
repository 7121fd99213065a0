//! Compactions, session memory and project memory records with full-text
//! search, on every engine.

use std::time::Duration;

use paddock_core::ids::{MemoryId, TenantId, WorkspaceId};
use paddock_core::model::Message;
use paddock_core::store::{
    Compaction, MemoryApproval, MemoryFilter, MemoryKind, MemoryRecord, MemoryScope, MemoryStatus,
    Run, SessionMemory, Store, StoredMessage, StoredSessionMemory, Workspace,
};

use super::{
    StoreFactory, assert_invalid, assert_not_found, assert_stale, clock, fixture, lease_session,
};

fn record(
    store: &dyn Store,
    tenant: &TenantId,
    scope: MemoryScope,
    workspace: Option<&WorkspaceId>,
    kind: MemoryKind,
    text: &str,
) -> MemoryRecord {
    MemoryRecord {
        id: MemoryId::generate(),
        tenant: tenant.clone(),
        scope,
        workspace: workspace.cloned(),
        project: (scope == MemoryScope::Project).then(|| "paddock".to_owned()),
        kind,
        text: text.to_owned(),
        status: MemoryStatus::Active,
        source_run: None,
        source_session: None,
        created_at: store.now(),
        updated_at: store.now(),
        superseded_by: None,
    }
}

fn texts(records: &[MemoryRecord]) -> Vec<&str> {
    records.iter().map(|r| r.text.as_str()).collect()
}

fn seeing(workspace: &WorkspaceId) -> MemoryFilter {
    MemoryFilter {
        workspace: Some(workspace.clone()),
        limit: 10,
        ..MemoryFilter::default()
    }
}

pub async fn memory_records_are_found_by_relevance_recency_and_scope(
    factory: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let clock = clock();
    let store = factory.open(clock.clone()).await?;
    let s = store.as_ref();
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let ws = &fx.workspace.id;
    let other_ws = Workspace::new(t.clone(), "other", s.now());
    s.create_workspace(&other_ws).await?;

    let old = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(ws),
        MemoryKind::Convention,
        "Run the tests with cargo nextest, not cargo test",
    );
    s.create_memory(&old).await?;
    clock.advance(Duration::from_secs(10 * 86_400));
    let fresh = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(ws),
        MemoryKind::Convention,
        "The tests need the postgres wrapper: scripts/postgres-test.sh cargo test",
    );
    s.create_memory(&fresh).await?;
    let tenant_wide = record(
        s,
        t,
        MemoryScope::Tenant,
        None,
        MemoryKind::Preference,
        "Prefer small commits with honest messages",
    );
    s.create_memory(&tenant_wide).await?;
    let elsewhere = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(&other_ws.id),
        MemoryKind::Fact,
        "The other workspace builds its tests with make",
    );
    s.create_memory(&elsewhere).await?;
    let project = record(
        s,
        t,
        MemoryScope::Project,
        None,
        MemoryKind::Rule,
        "Never push tests to main directly",
    );
    s.create_memory(&project).await?;

    // relevance first: more of the words beat a newer record with fewer
    let found = s
        .search_memories(t, "how do I run the tests?", &seeing(ws))
        .await?;
    assert_eq!(texts(&found), [old.text.as_str(), fresh.text.as_str()]);
    assert_eq!(found[1], fresh);
    // as relevant, the newer record comes first (the older one was first in)
    let build_old = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(ws),
        MemoryKind::Fact,
        "Build the docs with mdbook build",
    );
    let build_new = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(ws),
        MemoryKind::Fact,
        "Build the image with docker build",
    );
    let build_old = MemoryRecord {
        updated_at: paddock_core::store::Timestamp::from_millis(
            build_new.updated_at.as_millis() - 60 * 86_400_000,
        ),
        ..build_old
    };
    s.create_memory(&build_old).await?;
    s.create_memory(&build_new).await?;
    let found = s.search_memories(t, "build", &seeing(ws)).await?;
    assert_eq!(
        texts(&found),
        [build_new.text.as_str(), build_old.text.as_str()]
    );
    s.delete_memory(t, &build_old.id).await?;
    s.delete_memory(t, &build_new.id).await?;
    // stemming: "commit" finds "commits"
    let found = s.search_memories(t, "commit", &seeing(ws)).await?;
    assert_eq!(texts(&found), [tenant_wide.text.as_str()]);
    // another workspace's records are not seen from this one, and a project
    // record only by who names the project
    let found = s.search_memories(t, "tests", &seeing(&other_ws.id)).await?;
    assert_eq!(texts(&found), [elsewhere.text.as_str()]);
    let in_project = MemoryFilter {
        project: Some("paddock".into()),
        ..seeing(ws)
    };
    let found = s.search_memories(t, "push tests", &in_project).await?;
    assert_eq!(found[0].id, project.id);
    // only words reach the query language
    assert!(
        s.search_memories(t, " \"* NEAR( ", &seeing(ws))
            .await?
            .is_empty()
    );
    assert_eq!(
        s.search_memories(t, "tests\" OR \"x", &seeing(ws))
            .await?
            .len(),
        2
    );
    // kind filter, listing
    let rules = MemoryFilter {
        kind: Some(MemoryKind::Preference),
        ..seeing(ws)
    };
    assert_eq!(
        texts(&s.list_memories(t, &rules).await?),
        [tenant_wide.text.as_str()]
    );
    let all = s
        .list_memories(
            t,
            &MemoryFilter {
                limit: 100,
                ..MemoryFilter::default()
            },
        )
        .await?;
    assert_eq!(all.len(), 5);

    // supersede hides the old record; proposed ones wait for approval
    let newer = record(
        s,
        t,
        MemoryScope::Workspace,
        Some(ws),
        MemoryKind::Convention,
        "Run the tests with cargo nextest run --workspace",
    );
    s.create_memory(&newer).await?;
    let superseded = s.supersede_memory(t, &old.id, &newer.id).await?;
    assert_eq!(superseded.superseded_by, Some(newer.id.clone()));
    let found = s.search_memories(t, "nextest", &seeing(ws)).await?;
    assert_eq!(texts(&found), [newer.text.as_str()]);
    let proposed = MemoryRecord {
        status: MemoryStatus::Proposed,
        ..record(
            s,
            t,
            MemoryScope::Workspace,
            Some(ws),
            MemoryKind::Pitfall,
            "The flaky lease test fails under load",
        )
    };
    s.create_memory(&proposed).await?;
    assert!(s.search_memories(t, "flaky", &seeing(ws)).await?.is_empty());
    let with_proposed = MemoryFilter {
        include_proposed: true,
        ..seeing(ws)
    };
    assert_eq!(
        s.search_memories(t, "flaky", &with_proposed).await?.len(),
        1
    );
    assert_eq!(
        s.approve_memory(t, &proposed.id, MemoryApproval::AsWritten)
            .await?
            .status,
        MemoryStatus::Active
    );
    assert_eq!(s.search_memories(t, "flaky", &seeing(ws)).await?.len(), 1);

    // another tenant sees none of it
    let other = fixture(s, "globex").await?;
    assert!(
        s.search_memories(
            &other.tenant,
            "tests",
            &MemoryFilter {
                limit: 10,
                ..MemoryFilter::default()
            }
        )
        .await?
        .is_empty()
    );
    assert_not_found(
        s.get_memory(&other.tenant, &fresh.id).await,
        "memory",
        fresh.id.as_str(),
    );
    assert_not_found(
        s.delete_memory(&other.tenant, &fresh.id).await,
        "memory",
        fresh.id.as_str(),
    );

    // bad records are refused
    let mut bad = record(s, t, MemoryScope::Workspace, None, MemoryKind::Fact, "x");
    assert_invalid(s.create_memory(&bad).await, "memory.scope");
    bad = record(s, t, MemoryScope::Tenant, None, MemoryKind::Fact, "   ");
    assert_invalid(s.create_memory(&bad).await, "memory.text");

    // delete
    s.delete_memory(t, &fresh.id).await?;
    assert_not_found(
        s.get_memory(t, &fresh.id).await,
        "memory",
        fresh.id.as_str(),
    );
    let found = s
        .search_memories(t, "postgres wrapper", &seeing(ws))
        .await?;
    assert!(found.iter().all(|r| r.id != fresh.id));
    Ok(())
}

pub async fn compactions_and_session_memory_are_fenced_and_ordered(
    factory: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = factory.open(clock()).await?;
    let s = store.as_ref();
    let fx = fixture(s, "acme").await?;
    let lease = lease_session(s, &fx.session, "node/a").await?;
    let run = Run::new(fx.tenant.clone(), fx.session.id.clone(), "goal", s.now());
    s.create_run(&lease, &run).await?;
    for n in 0..5 {
        s.append_message(
            &lease,
            &StoredMessage {
                tenant: fx.tenant.clone(),
                session: fx.session.id.clone(),
                run: run.id.clone(),
                seq: 0,
                message: Message::user(format!("m{n}")),
                created_at: s.now(),
            },
        )
        .await?;
    }
    let after = s.list_messages_after(&fx.tenant, &fx.session.id, 3).await?;
    assert_eq!(after.iter().map(|m| m.seq).collect::<Vec<_>>(), [4, 5]);
    assert_eq!(after[0].message.joined_text(), "m3");

    assert_eq!(s.latest_compaction(&fx.tenant, &fx.session.id).await?, None);
    let compaction = |through_seq, summary: &str| Compaction {
        tenant: fx.tenant.clone(),
        session: fx.session.id.clone(),
        run: run.id.clone(),
        seq: 0,
        through_seq,
        replaced_messages: through_seq,
        summary: summary.to_owned(),
        fallback: false,
        tokens_before: 7_000,
        tokens_after: 2_000,
        created_at: s.now(),
    };
    let first = s.record_compaction(&lease, &compaction(2, "first")).await?;
    assert_eq!(first.seq, 1);
    let second = s
        .record_compaction(&lease, &compaction(4, "second"))
        .await?;
    assert_eq!(second.seq, 2);
    assert_eq!(
        s.latest_compaction(&fx.tenant, &fx.session.id).await?,
        Some(second.clone())
    );
    assert_eq!(
        s.list_compactions(&fx.tenant, &fx.session.id).await?,
        [first, second]
    );

    let memory = StoredSessionMemory {
        tenant: fx.tenant.clone(),
        session: fx.session.id.clone(),
        run: run.id.clone(),
        memory: SessionMemory {
            summary: "Listed the blocks".into(),
            open_questions: vec!["is 7 missing?".into()],
            next_steps: vec!["list the rest".into()],
            facts: vec!["seq is on the PATH".into()],
        },
        updated_at: s.now(),
    };
    assert_eq!(
        s.get_session_memory(&fx.tenant, &fx.session.id).await?,
        None
    );
    s.put_session_memory(&lease, &memory).await?;
    let replaced = StoredSessionMemory {
        memory: SessionMemory {
            summary: "All listed".into(),
            ..SessionMemory::default()
        },
        ..memory.clone()
    };
    s.put_session_memory(&lease, &replaced).await?;
    assert_eq!(
        s.get_session_memory(&fx.tenant, &fx.session.id).await?,
        Some(replaced)
    );

    // a stale holder writes neither
    s.release_lease(&lease).await?;
    let newer = lease_session(s, &fx.session, "node/b").await?;
    assert_stale(
        s.record_compaction(&lease, &compaction(5, "late")).await,
        &lease,
    );
    assert_stale(s.put_session_memory(&lease, &memory).await, &lease);
    assert_eq!(
        s.list_compactions(&fx.tenant, &fx.session.id).await?.len(),
        2
    );
    // and another tenant sees nothing
    let other = fixture(s, "globex").await?;
    assert_eq!(
        s.latest_compaction(&other.tenant, &fx.session.id).await?,
        None
    );
    assert_eq!(
        s.get_session_memory(&other.tenant, &fx.session.id).await?,
        None
    );
    drop(newer);
    Ok(())
}

/// A run's record is its workspace's and proposed; a person's approval
/// keeps it there unless it widens it to the tenant, in one step.
pub async fn approval_keeps_or_widens_the_scope_as_a_person_says(
    factory: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let store = factory.open(clock()).await?;
    let s = store.as_ref();
    let fx = fixture(s, "acme").await?;
    let t = &fx.tenant;
    let ws = &fx.workspace.id;
    let other_ws = Workspace::new(t.clone(), "other", s.now());
    s.create_workspace(&other_ws).await?;
    let proposed = |text: &str| MemoryRecord {
        status: MemoryStatus::Proposed,
        ..record(
            s,
            t,
            MemoryScope::Workspace,
            Some(ws),
            MemoryKind::Rule,
            text,
        )
    };

    let kept = proposed("Always run the zebra linter before committing");
    s.create_memory(&kept).await?;
    assert!(s.search_memories(t, "zebra", &seeing(ws)).await?.is_empty());
    let approved = s
        .approve_memory(t, &kept.id, MemoryApproval::AsWritten)
        .await?;
    assert_eq!(
        approved,
        MemoryRecord {
            status: MemoryStatus::Active,
            updated_at: approved.updated_at,
            ..kept.clone()
        }
    );
    assert_eq!(
        texts(&s.search_memories(t, "zebra", &seeing(ws)).await?),
        [kept.text.as_str()]
    );
    assert!(
        s.search_memories(t, "zebra", &seeing(&other_ws.id))
            .await?
            .is_empty(),
        "approved as written, it stays its workspace's"
    );

    let widened = proposed("Never push to the yak branch directly");
    s.create_memory(&widened).await?;
    let approved = s
        .approve_memory(t, &widened.id, MemoryApproval::WidenToTenant)
        .await?;
    assert_eq!(
        approved,
        MemoryRecord {
            status: MemoryStatus::Active,
            scope: MemoryScope::Tenant,
            workspace: None,
            updated_at: approved.updated_at,
            ..widened.clone()
        }
    );
    assert_eq!(s.get_memory(t, &widened.id).await?, approved);
    assert_eq!(
        texts(&s.search_memories(t, "yak", &seeing(&other_ws.id)).await?),
        [widened.text.as_str()]
    );
    let missing = MemoryId::generate();
    assert_not_found(
        s.approve_memory(t, &missing, MemoryApproval::WidenToTenant)
            .await,
        "memory",
        missing.as_str(),
    );
    Ok(())
}
