//! A database created by an older release (migration 0001 only, with rows in it)
//! opens with the current store: the later migrations apply, the old rows read
//! back with the new fields at their defaults, and writing carries on.

use paddock_core::ids::{MemoryId, RunId, SessionId, SnapshotId, TenantId, WorkspaceId};
use paddock_core::model::Message;
use paddock_core::store::{
    Budgets, EndReason, Lease, MemoryRecord, MemoryScope, MemoryStatus, Run, RunMode, RunState,
    RunUpdate, RunUsage, Session, SessionStatus, Store, TaskStatus, Workspace,
};
use sqlx::Executor;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

use super::history::{plan, said, task};
use super::{StoreFactory, T0, TTL, clock};

/// Applies only `0001_control_plane.sql`, the way a release that shipped just
/// that file did (sqlx records it with the same checksum the store expects).
async fn create_0001_database(f: &dyn StoreFactory) -> anyhow::Result<sqlx::AnyPool> {
    create_database_through(f, "0001_control_plane.sql").await
}

/// Applies the migrations up to and including `last`, as the release that
/// shipped them did.
async fn create_database_through(
    f: &dyn StoreFactory,
    last: &str,
) -> anyhow::Result<sqlx::AnyPool> {
    let sources = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(f.engine().name());
    let dir = tempfile::tempdir()?;
    for entry in std::fs::read_dir(&sources)? {
        let name = entry?.file_name();
        let file = name.to_string_lossy();
        if file.ends_with(".sql") && *file <= *last {
            std::fs::copy(sources.join(&name), dir.path().join(&name))?;
        }
    }
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&f.url())
        .await?;
    Migrator::new(dir.path()).await?.run(&pool).await?;
    Ok(pool)
}

struct OldRows {
    tenant: TenantId,
    workspace: WorkspaceId,
    session: SessionId,
    finished: RunId,
    running: RunId,
    snapshot: SnapshotId,
    lease: Lease,
}

async fn insert_old_rows(pool: &sqlx::AnyPool) -> anyhow::Result<OldRows> {
    let session = SessionId::generate();
    let rows = OldRows {
        tenant: TenantId::parse("acme")?,
        workspace: WorkspaceId::generate(),
        finished: RunId::generate(),
        running: RunId::generate(),
        snapshot: SnapshotId::generate(),
        lease: Lease {
            resource: Lease::session_resource(&session),
            owner: "node-a".into(),
            token: 3,
            expires_at: T0.saturating_add(TTL),
        },
        session,
    };
    let (ws, ses, done, running, snap) = (
        rows.workspace.as_str(),
        rows.session.as_str(),
        rows.finished.as_str(),
        rows.running.as_str(),
        rows.snapshot.as_str(),
    );
    let t0 = T0.as_millis();
    let expires = rows.lease.expires_at.as_millis();
    let statements = [
        format!("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'Acme', {t0})"),
        format!(
            "INSERT INTO workspaces (id, tenant_id, name, created_at) \
             VALUES ('{ws}', 'acme', 'main', {t0})"
        ),
        format!(
            "INSERT INTO sessions (id, tenant_id, workspace_id, title, status, last_event_seq, \
             created_at, updated_at) VALUES ('{ses}', 'acme', '{ws}', 'old', 'active', 2, {t0}, \
             {t0})"
        ),
        format!(
            "INSERT INTO runs (id, tenant_id, session_id, state, goal, created_at, updated_at, \
             finished_at) VALUES ('{done}', 'acme', '{ses}', 'completed', 'first', {t0}, {t0}, \
             {t0})"
        ),
        format!(
            "INSERT INTO runs (id, tenant_id, session_id, parent_run_id, state, goal, created_at, \
             updated_at) VALUES ('{running}', 'acme', '{ses}', '{done}', 'acting', 'second', \
             {t0}, {t0})"
        ),
        format!(
            "INSERT INTO run_events (tenant_id, session_id, seq, run_id, kind, payload, \
             created_at) VALUES ('acme', '{ses}', 1, '{done}', 'step', '{{}}', {t0})"
        ),
        format!(
            "INSERT INTO run_events (tenant_id, session_id, seq, run_id, kind, payload, \
             created_at) VALUES ('acme', '{ses}', 2, '{running}', 'step', '{{}}', {t0})"
        ),
        format!(
            "INSERT INTO snapshots (id, tenant_id, workspace_id, session_id, file_count, \
             bytes_raw, bytes_compressed, excludes, blob_hash, created_at) \
             VALUES ('{snap}', 'acme', '{ws}', '{ses}', 1, 10, 5, '[]', 'blake3:old', {t0})"
        ),
        format!(
            "INSERT INTO leases (resource, owner, token, expires_at) \
             VALUES ('{}', 'node-a', 3, {expires})",
            rows.lease.resource
        ),
    ];
    for sql in &statements {
        pool.execute(sql.as_str()).await?;
    }
    Ok(rows)
}

pub async fn a_0001_database_upgrades_with_its_rows(f: &dyn StoreFactory) -> anyhow::Result<()> {
    let pool = create_0001_database(f).await?;
    let old = insert_old_rows(&pool).await?;
    pool.close().await;

    let store = f.open(clock()).await?;
    let t = &old.tenant;
    assert_eq!(
        store.get_workspace(t, &old.workspace).await?,
        Workspace {
            id: old.workspace.clone(),
            tenant: t.clone(),
            name: "main".into(),
            root: None,
            created_at: T0,
        }
    );
    assert_eq!(
        store.get_session(t, &old.session).await?,
        Session {
            id: old.session.clone(),
            status: SessionStatus::Active,
            ..Session::new(t.clone(), old.workspace.clone(), "old", T0)
        }
    );
    let running = store.get_run(t, &old.running).await?;
    assert_eq!(
        running,
        Run {
            id: old.running.clone(),
            parent_run: Some(old.finished.clone()),
            state: RunState::Acting,
            mode: RunMode::Build,
            budgets: Budgets::default(),
            usage: RunUsage::default(),
            ..Run::new(t.clone(), old.session.clone(), "second", T0)
        }
    );
    assert_eq!(
        store.list_unfinished_runs().await?,
        std::slice::from_ref(&running)
    );
    assert_eq!(
        store.list_child_runs(t, &old.finished).await?,
        std::slice::from_ref(&running)
    );
    let events = store.list_run_events(t, &old.running, 0, 10).await?;
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2]);
    assert!(store.snapshot_blob_referenced("blake3:old").await?);
    assert_eq!(
        store.get_lease(&old.lease.resource).await?,
        Some(old.lease.clone())
    );

    // the old holder's lease still fences, and every sequence carries on
    let lease = store.renew_lease(&old.lease, TTL).await?;
    let event = paddock_core::store::NewEvent {
        session: old.session.clone(),
        run: Some(old.running.clone()),
        kind: "step".into(),
        payload: "{}".into(),
    };
    assert_eq!(store.append_event(&lease, t, &event).await?.seq, 3);
    let s: &dyn Store = &*store;
    let session = store.get_session(t, &old.session).await?;
    let message = said(&session, &running, Message::user("carry on"), s);
    assert_eq!(store.append_message(&lease, &message).await?.seq, 1);
    let new_plan = plan(&running, vec![task("1", TaskStatus::Done, &running, s)], s);
    assert_eq!(store.save_plan(&lease, &new_plan).await?.version, 1);
    let ended = store
        .update_run(
            &lease,
            t,
            &old.running,
            &RunUpdate {
                end_reason: Some(EndReason::Completed),
                end_snapshot: Some(old.snapshot.clone()),
                ..RunUpdate::state(RunState::Completed)
            },
        )
        .await?;
    assert_eq!(ended.end_snapshot, Some(old.snapshot.clone()));
    assert!(store.list_unfinished_runs().await?.is_empty());

    // and the new columns take values on old tables
    let rooted = Workspace {
        root: Some("/srv/old".into()),
        ..Workspace::new(t.clone(), "rooted", store.now())
    };
    store.create_workspace(&rooted).await?;
    assert_eq!(
        store.find_workspace_by_root(t, "/srv/old").await?,
        Some(rooted)
    );
    store.close().await;

    // reopening applies nothing new and keeps it all
    let reopened = f.open(clock()).await?;
    assert_eq!(reopened.get_run(t, &old.running).await?, ended);
    Ok(())
}

/// Before 0010 an agent's `remember` could store an active record for every
/// workspace of the tenant; 0010 makes such records proposed again, scoped
/// to the workspace of the session that wrote them (tenant-scoped but
/// proposed when that session is gone), and leaves every other record alone.
pub async fn agent_memory_for_the_tenant_is_proposed_again_after_0010(
    f: &dyn StoreFactory,
) -> anyhow::Result<()> {
    let pool = create_database_through(f, "0009_steering_closed.sql").await?;
    let (ws, ses, run) = (
        WorkspaceId::generate(),
        SessionId::generate(),
        RunId::generate(),
    );
    let gone = SessionId::generate();
    let [agent, orphan, person, local] = [(); 4].map(|()| MemoryId::generate());
    let t0 = T0.as_millis();
    let memory = |id: &MemoryId, scope: &str, workspace: &str, session: &SessionId, run: &str| {
        format!(
            "INSERT INTO memories (id, tenant_id, scope, workspace_id, kind, text, status, \
             source_run_id, source_session_id, created_at, updated_at) VALUES ('{id}', 'acme', \
             '{scope}', {workspace}, 'rule', 'rule {id}', 'active', {run}, '{session}', {t0}, \
             {t0})"
        )
    };
    let quoted_run = format!("'{run}'");
    let statements = [
        format!("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'Acme', {t0})"),
        format!(
            "INSERT INTO workspaces (id, tenant_id, name, created_at) \
             VALUES ('{ws}', 'acme', 'main', {t0})"
        ),
        format!(
            "INSERT INTO sessions (id, tenant_id, workspace_id, title, status, last_event_seq, \
             created_at, updated_at) VALUES ('{ses}', 'acme', '{ws}', 'old', 'active', 0, {t0}, \
             {t0})"
        ),
        memory(&agent, "tenant", "NULL", &ses, &quoted_run),
        memory(&orphan, "tenant", "NULL", &gone, &quoted_run),
        memory(&person, "tenant", "NULL", &ses, "NULL"),
        memory(&local, "workspace", &format!("'{ws}'"), &ses, &quoted_run),
    ];
    for sql in &statements {
        pool.execute(sql.as_str()).await?;
    }
    pool.close().await;

    let store = f.open(clock()).await?;
    let t = &TenantId::parse("acme")?;
    let shape = |r: MemoryRecord| (r.scope, r.workspace, r.status);
    assert_eq!(
        shape(store.get_memory(t, &agent).await?),
        (
            MemoryScope::Workspace,
            Some(ws.clone()),
            MemoryStatus::Proposed
        )
    );
    assert_eq!(
        shape(store.get_memory(t, &orphan).await?),
        (MemoryScope::Tenant, None, MemoryStatus::Proposed)
    );
    assert_eq!(
        shape(store.get_memory(t, &person).await?),
        (MemoryScope::Tenant, None, MemoryStatus::Active)
    );
    assert_eq!(
        shape(store.get_memory(t, &local).await?),
        (MemoryScope::Workspace, Some(ws), MemoryStatus::Active)
    );
    store.close().await;
    Ok(())
}
