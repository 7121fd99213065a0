//! The write probe behind health: does the database take a write now?
//!
//! A read (`SELECT 1`) answers on a full disk, and so does a transaction
//! begun and rolled back: neither needs a new block. The probe commits a
//! real write, an upsert of one lease row (`store:write-probe`, never
//! held, its token counting probes), so a database whose log cannot grow
//! fails it with [`StoreError::Full`]. On SQLite that is not enough alone:
//! a WAL file keeps its size after a checkpoint, so small commits can still
//! land in its reused frames on a full disk while the next larger write
//! fails. The probe therefore also reads the free space of the file system
//! holding the database file, and counts less than [`MIN_FREE_BYTES`] as
//! full. Postgres' disk is the server's, not ours to look at: there the
//! commit (which flushes its WAL) is the probe, and that is not enough
//! either: the upsert is a HOT update inside a page it already has, and
//! its WAL record fits in a segment already allocated, so it commits on a
//! full disk while any write needing a new block fails (measured: the
//! loop-fs test's 64 KiB events failed `disk_full`, the probe passed). So
//! the probe also fails while any write of this process failed for lack of
//! space less than [`FULL_MEMORY`] ago: a run waiting for space retries at
//! least every second, which keeps it fresh, and health turns ok within
//! [`FULL_MEMORY`] of the last refused write.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use paddock_core::store::StoreError;

use crate::error::db;
use crate::open::SqlStore;

/// The lease row the probe overwrites; no driver ever takes a lease on it.
pub(crate) const PROBE_RESOURCE: &str = "store:write-probe";

/// Less free space than this on SQLite's file system counts as full: a
/// turn of a run writes a few pages of events and messages, and the WAL
/// grows in pages of 4 KiB.
pub(crate) const MIN_FREE_BYTES: u64 = 1 << 20;

/// How long a write refused for lack of space counts against the probe.
pub(crate) const FULL_MEMORY: Duration = Duration::from_secs(2);

/// When (ms since the epoch) a write of this process last failed for lack
/// of space; 0 for never. Process-wide: a server holds one store.
static LAST_FULL_MS: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Notes a write refused for lack of space (see [`FULL_MEMORY`]).
pub(crate) fn saw_full() {
    LAST_FULL_MS.store(now_ms(), Ordering::Relaxed);
}

pub(crate) async fn probe_write(store: &SqlStore) -> Result<(), StoreError> {
    const OP: &str = "probe_write";
    if let Some(file) = &store.sqlite_file {
        let free = free_bytes(file)?;
        if free < MIN_FREE_BYTES {
            return Err(StoreError::Full {
                operation: OP,
                source: format!(
                    "{free} bytes free on the file system of {} (less than {MIN_FREE_BYTES})",
                    file.display()
                )
                .into(),
            });
        }
    }
    sqlx::query(
        "INSERT INTO leases (resource, owner, token, expires_at) VALUES ($1, NULL, 1, $2) \
         ON CONFLICT (resource) DO UPDATE \
           SET token = leases.token + 1, expires_at = excluded.expires_at",
    )
    .bind(PROBE_RESOURCE)
    .bind(store.clock.now().as_millis())
    .execute(&store.pool)
    .await
    .map_err(db(OP))?;
    let last = LAST_FULL_MS.load(Ordering::Relaxed);
    let ago = now_ms().saturating_sub(last);
    if last != 0 && ago < FULL_MEMORY.as_millis() as u64 {
        return Err(StoreError::Full {
            operation: OP,
            source: format!("a write failed for lack of space {ago} ms ago").into(),
        });
    }
    Ok(())
}

/// Bytes an unprivileged writer may still use on the file system holding
/// `file` (its directory when the file is not there yet).
fn free_bytes(file: &Path) -> Result<u64, StoreError> {
    let at = if file.exists() {
        file
    } else {
        file.parent().unwrap_or(file)
    };
    let stat = nix::sys::statvfs::statvfs(at).map_err(|e| StoreError::Database {
        operation: "probe_write",
        source: format!("statvfs {}: {e}", at.display()).into(),
    })?;
    Ok(stat.blocks_available().saturating_mul(stat.fragment_size()))
}
