//! Keeping a run's session lease alive while the run works.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use paddock_core::store::{Lease, Store, StoreError};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::util::error_chain;

/// Renews `lease` every third of `ttl` until the returned token is
/// cancelled. If another holder took the lease over, sets `lost` and
/// cancels the run: its writes would all be refused anyway.
pub(crate) fn spawn(
    store: Arc<dyn Store>,
    lease: Lease,
    ttl: Duration,
    run_cancel: CancellationToken,
    lost: Arc<AtomicBool>,
) -> CancellationToken {
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let period = (ttl / 3).max(Duration::from_millis(10));
    tokio::spawn(
        async move {
        loop {
            tokio::select! {
                () = stopped.cancelled() => break,
                () = tokio::time::sleep(period) => {}
            }
            match store.renew_lease(&lease, ttl).await {
                Ok(_) => {}
                Err(err @ StoreError::StaleLease { .. }) => {
                    tracing::error!(resource = %lease.resource, error = %error_chain(&err), "session lease lost; stopping the run");
                    lost.store(true, Ordering::SeqCst);
                    run_cancel.cancel();
                    break;
                }
                Err(err) => {
                    tracing::warn!(resource = %lease.resource, error = %error_chain(&err), "renewing the session lease");
                }
            }
        }
    }
        .instrument(tracing::Span::current()),
    );
    stop
}
