//! Captures and blob collection of one tenant exclude each other.
//!
//! A capture finds a file blob already in the tenant's part and names it in
//! its manifest without storing it again, so without a row of its own for
//! it; it records its checkpoint row later. Deleting a session decides
//! which blobs no remaining checkpoint names by reading their manifests: a
//! capture between that reading and its own row would name a blob the
//! deletion removes. So a capture holds its tenant's lock shared from
//! before it looks at the store until its row is written (or it is
//! dropped), and a deletion holds it exclusive while it decides and
//! removes. The exclusive side polls (`try_write`) instead of queueing, so
//! a capture never waits behind a waiting deletion (a rewind holds one
//! capture while it takes the next); a deletion that cannot get the lock
//! within [`COLLECT_WAIT`] gives up and says the tenant is busy.
//!
//! The lock is this process's: every process writing a data directory's
//! blob store must be this one (one node per data directory).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use paddock_core::ids::TenantId;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Longest a capture waits for a deletion of its tenant to finish.
pub(crate) const CAPTURE_WAIT: Duration = Duration::from_secs(120);
/// Longest a deletion waits for its tenant's captures to finish.
pub(crate) const COLLECT_WAIT: Duration = Duration::from_secs(30);
/// How often a waiting deletion tries again.
const POLL: Duration = Duration::from_millis(20);

type Locks = Mutex<HashMap<TenantId, Arc<RwLock<()>>>>;

fn lock_of(tenant: &TenantId) -> Arc<RwLock<()>> {
    static LOCKS: OnceLock<Locks> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Locks::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(locks.entry(tenant.clone()).or_default())
}

/// Held by a capture until its checkpoint row is written; None when a
/// deletion of the tenant held the lock for longer than [`CAPTURE_WAIT`].
pub(crate) async fn capturing(tenant: &TenantId) -> Option<OwnedRwLockReadGuard<()>> {
    tokio::time::timeout(CAPTURE_WAIT, lock_of(tenant).read_owned())
        .await
        .ok()
}

/// Held by a deletion while it decides which blobs go and removes them;
/// None when the tenant's captures kept it for [`COLLECT_WAIT`].
pub(crate) async fn collecting(tenant: &TenantId) -> Option<OwnedRwLockWriteGuard<()>> {
    let lock = lock_of(tenant);
    let deadline = tokio::time::Instant::now() + COLLECT_WAIT;
    loop {
        if let Ok(guard) = Arc::clone(&lock).try_write_owned() {
            return Some(guard);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}
