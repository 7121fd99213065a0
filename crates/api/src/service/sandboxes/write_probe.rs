//! Whether the store takes a write, for health. A read (`ping`) answers on
//! a full disk; only a committed write tells (see the store's
//! `probe_write`). The probe is a write, so it is not made per request:
//! its answer is kept for [`FRESH_FOR`] and callers meanwhile share it (one
//! probe in flight at a time), and one that does not commit within
//! [`PROBE_TIMEOUT`] counts as not writing, so health still answers in
//! well under a second while another writer holds the database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_core::store::{Store, StoreError};

use super::views::StoreWrites;

/// How long a probe's answer stands.
const FRESH_FOR: Duration = Duration::from_millis(500);
/// How long a probe may wait for its commit.
const PROBE_TIMEOUT: Duration = Duration::from_millis(700);

#[derive(Debug, Default)]
pub(crate) struct WriteProbe {
    last: tokio::sync::Mutex<Option<(Instant, StoreWrites)>>,
}

impl WriteProbe {
    pub(crate) async fn check(&self, store: &Arc<dyn Store>) -> StoreWrites {
        let mut last = self.last.lock().await;
        if let Some((at, writes)) = *last
            && at.elapsed() < FRESH_FOR
        {
            return writes;
        }
        let writes = match tokio::time::timeout(PROBE_TIMEOUT, store.probe_write()).await {
            Ok(Ok(())) => StoreWrites::Ok,
            Ok(Err(StoreError::Full { .. })) => {
                tracing::warn!("health: the store has no space left to write");
                StoreWrites::Full
            }
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "health: the store did not take a write");
                StoreWrites::Failed
            }
            Err(_) => {
                tracing::warn!(
                    timeout_ms = PROBE_TIMEOUT.as_millis() as u64,
                    "health: the store did not commit a write in time"
                );
                StoreWrites::Failed
            }
        };
        *last = Some((Instant::now(), writes));
        writes
    }
}
