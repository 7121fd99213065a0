//! The Store contract: one suite, run against every engine (tests/sqlite.rs,
//! tests/postgres.rs). Each case gets a fresh, empty database from a
//! [`StoreFactory`] and may open several independent stores on it.

#![allow(dead_code)] // each test binary uses its own subset of the helpers

pub mod cases;
pub mod leases;
pub mod proxy;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::ids::TenantId;
use paddock_core::store::{Lease, ManualClock, Session, Store, Tenant, Timestamp, Workspace};

/// A fresh database for one test.
#[async_trait]
pub trait StoreFactory: Send + Sync {
    /// A new store with its own connection pool on this test's database, as
    /// another orchestrator process would have.
    async fn open(&self, clock: Arc<ManualClock>) -> anyhow::Result<Arc<dyn Store>>;
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

/// Expands to one `#[tokio::test]` per contract case. `$factory` is an async
/// expression giving `anyhow::Result<Option<F>>` (None: this engine is skipped).
#[macro_export]
macro_rules! contract_tests {
    ($factory:expr) => {
        $crate::contract_tests!(@cases $factory;
            cases::tenants_and_workspaces,
            cases::sandboxes,
            cases::sessions_and_runs,
            cases::events_are_sequenced_per_session,
            cases::concurrent_appenders_get_gap_free_sequences,
            cases::tool_invocations,
            cases::snapshots,
            cases::tenant_isolation,
            cases::closed_store_fails_cleanly,
            cases::reopened_store_sees_committed_rows,
            leases::lease_lifecycle,
            leases::fenced_writes_refuse_stale_tokens,
            leases::lease_race_between_two_stores,
            leases::takeover_during_writes,
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
