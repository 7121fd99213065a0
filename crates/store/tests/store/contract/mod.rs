//! The Store contract: one suite, run against every engine (tests/store/sqlite.rs,
//! tests/store/postgres.rs). Each case gets a fresh, empty database from a
//! [`StoreFactory`] and may open several independent stores on it.

#![allow(dead_code)] // each test binary uses its own subset of the helpers

pub mod agent_rows;
pub mod batches;
pub mod cases;
pub mod checkpoints;
pub mod forks;
pub mod full_disk;
pub mod history;
pub mod leases;
#[path = "../../../../test-support/src/loop_fs.rs"]
pub mod loop_fs;
pub mod memory;
pub mod network_changes;
pub mod proxy;
pub mod quarantine;
#[path = "../../../../test-support/src/require.rs"]
pub mod require;
pub mod sandbox_specs;
pub mod steering;
pub mod upgrade;
pub mod volumes;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::ids::{SnapshotId, TenantId};
use paddock_core::store::{
    Lease, ManualClock, Session, SnapshotRecord, Store, StoreError, Tenant, Timestamp, Workspace,
};
use paddock_store::Engine;

/// A fresh database for one test.
#[async_trait]
pub trait StoreFactory: Send + Sync {
    /// A new store with its own connection pool on this test's database, as
    /// another orchestrator process would have.
    async fn open(&self, clock: Arc<ManualClock>) -> anyhow::Result<Arc<dyn Store>>;
    /// The engine behind [`StoreFactory::url`].
    fn engine(&self) -> Engine;
    /// The URL of this test's database, for raw connections.
    fn url(&self) -> String;
}

pub const T0: Timestamp = Timestamp::from_millis(1_700_000_000_000);
pub const TTL: Duration = Duration::from_secs(30);

pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

/// A tenant with one workspace and one session in it.
pub struct Fixture {
    pub tenant: TenantId,
    pub workspace: Workspace,
    pub session: Session,
}

pub async fn fixture(store: &dyn Store, tenant: &str) -> anyhow::Result<Fixture> {
    let tenant = TenantId::parse(tenant)?;
    store
        .ensure_tenant(&Tenant {
            id: tenant.clone(),
            name: format!("{tenant} inc."),
            created_at: store.now(),
        })
        .await?;
    let workspace = Workspace::new(tenant.clone(), "main", store.now());
    store.create_workspace(&workspace).await?;
    let session = Session::new(tenant.clone(), workspace.id.clone(), "first", store.now());
    store.create_session(&session).await?;
    Ok(Fixture {
        tenant,
        workspace,
        session,
    })
}

pub async fn lease_session(
    store: &dyn Store,
    session: &Session,
    owner: &str,
) -> anyhow::Result<Lease> {
    Ok(store
        .acquire_lease(&Lease::session_resource(&session.id), owner, TTL)
        .await?)
}

pub fn snapshot(
    tenant: &TenantId,
    parent: Option<&SnapshotRecord>,
    store: &dyn Store,
) -> SnapshotRecord {
    SnapshotRecord {
        id: SnapshotId::generate(),
        tenant: tenant.clone(),
        workspace: None,
        source_sandbox: None,
        session: None,
        parent: parent.map(|p| p.id.clone()),
        file_count: 12,
        bytes_raw: 40_960,
        bytes_compressed: 8_192,
        excludes: vec!["target/".to_owned(), "*.log".to_owned()],
        blob_hash: "blake3:00ff".to_owned(),
        created_at: store.now(),
    }
}

pub fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>, entity: &str, id: &str) {
    match result {
        Err(StoreError::NotFound { entity: e, id: i }) if e == entity && i == id => {}
        other => panic!("expected {entity} {id} not found, got {other:?}"),
    }
}

pub fn assert_conflict<T: std::fmt::Debug>(result: Result<T, StoreError>, entity: &str) {
    match result {
        Err(StoreError::Conflict { entity: e, .. }) if e == entity => {}
        other => panic!("expected a conflict on {entity}, got {other:?}"),
    }
}

pub fn assert_stale<T: std::fmt::Debug>(result: Result<T, StoreError>, lease: &Lease) {
    match result {
        Err(StoreError::StaleLease { resource, token })
            if resource == lease.resource && token == lease.token => {}
        other => panic!(
            "expected token {} on {} to be stale, got {other:?}",
            lease.token, lease.resource
        ),
    }
}

pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T, StoreError>, field: &str) {
    match result {
        Err(StoreError::Invalid { field: f, .. }) if f == field => {}
        other => panic!("expected {field} to be refused as invalid, got {other:?}"),
    }
}

/// Expands to one `#[tokio::test]` per contract case. `$factory` is an async
/// expression giving `anyhow::Result<Option<F>>` (None: this engine is skipped).
#[macro_export]
macro_rules! contract_tests {
    ($factory:expr) => {
        $crate::contract_tests!(@cases $factory;
            cases::tenants_and_workspaces,
            cases::sandboxes,
            cases::sandboxes_pause_and_resume,
            cases::sessions_and_runs,
            cases::events_are_sequenced_per_session,
            cases::concurrent_appenders_get_gap_free_sequences,
            batches::batched_events_keep_their_order_and_sequence,
            batches::concurrent_batches_are_gap_free,
            batches::a_stale_batch_writes_nothing,
            cases::tool_invocations,
            cases::snapshots,
            cases::tenant_isolation,
            cases::closed_store_fails_cleanly,
            cases::reopened_store_sees_committed_rows,
            leases::lease_lifecycle,
            leases::fenced_writes_refuse_stale_tokens,
            leases::lease_race_between_two_stores,
            leases::takeover_during_writes,
            leases::agent_writes_refuse_stale_tokens,
            leases::workspace_writer_lease_names_its_holder,
            agent_rows::workspace_roots_are_unique_per_tenant,
            agent_rows::session_links_and_updates,
            agent_rows::run_settings_and_results,
            agent_rows::child_and_unfinished_runs,
            agent_rows::a_runs_end_and_its_events_are_one_write,
            history::goals,
            history::plans_are_versioned_and_replace_tasks,
            history::messages_are_sequenced_and_cut_at_a_run,
            history::concurrent_message_appends_are_gap_free,
            history::run_events_and_blob_references,
            history::agent_rows_are_tenant_scoped,
            upgrade::a_0001_database_upgrades_with_its_rows,
            memory::memory_records_are_found_by_relevance_recency_and_scope,
            memory::compactions_and_session_memory_are_fenced_and_ordered,
            memory::approval_keeps_or_widens_the_scope_as_a_person_says,
            upgrade::agent_memory_for_the_tenant_is_proposed_again_after_0010,
            checkpoints::checkpoints_record_the_session_position_and_keep_their_blobs,
            checkpoints::pruning_keeps_starts_rewind_targets_and_the_latest,
            quarantine::corrupt_rows_are_quarantined_and_skipped,
            sandbox_specs::old_sandbox_specs_read_and_a_bad_one_is_quarantined,
            steering::steering_messages_are_taken_once_by_the_lease_holder,
            steering::closing_the_queue_takes_what_waits_and_refuses_later_posts,
            steering::a_post_racing_the_close_is_taken_or_refused,
            steering::a_resumed_run_takes_over_the_waiting_messages_once,
            steering::a_steering_message_is_delivered_with_its_history_entry_once,
            steering::steering_ids_count_per_run,
            steering::steering_is_capped_per_run_in_count_and_size,
            forks::forks_share_their_parents_history_and_rewinds_stay_apart,
            forks::deleting_a_session_removes_its_rows_and_frees_only_its_blobs,
            volumes::volumes_are_per_tenant_and_listed_by_name,
            network_changes::network_changes_are_numbered_per_sandbox_and_listed_in_pages,
        );
    };
    (@cases $factory:expr; $($module:ident :: $case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() -> anyhow::Result<()> {
                let Some(factory) = $factory.await? else {
                    return Ok(());
                };
                let result = contract::$module::$case(&factory).await;
                factory.cleanup().await;
                result
            }
        )+
    };
}
