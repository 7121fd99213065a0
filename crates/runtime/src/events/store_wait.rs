//! A run's writes on a full disk: the run waits for space, then goes on.
//!
//! The decision, wait rather than fail at once: a write that finds the
//! store's disk full (`StoreError::Full`) kept nothing, and the same write
//! succeeds once space is freed (the store replaces any connection the
//! failure left inside a transaction). So the run holds at that write,
//! retrying it (every 100 ms at first, backing off to every second), and
//! goes on where it was when space returns: nothing is lost and nothing
//! needs a resume. It says so live, since nothing can be stored: a
//! transient `store.waiting` event when the wait starts (`waiting: true`,
//! the operation and the error) and another when the write landed
//! (`waiting: false`, how long it waited).
//!
//! The wait is bounded by `RuntimeConfig::store_full_wait` (60 s by
//! default): past it the write fails and the run ends `failed`
//! (`infrastructure_error`, the error naming the full disk). Cancelling the
//! run ends the wait at once: the write is dropped (a run's writes are
//! pipelined and the first failed one stops its writer), and the run ends
//! `cancelled`, as asked. The writes that record the run's end
//! (session memory, `sandbox.stopped`, its row, `run.review`,
//! `run.finished`) wait for space too, within the same bound but whatever
//! the cancel, so a cancel answers once space is back (or the bound
//! passed); if the disk is still full after that, the row keeps its last
//! state, the session lease expires, and recovery marks the run
//! `interrupted`, from where it is resumed once space is back.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use paddock_core::store::StoreError;
use tokio_util::sync::CancellationToken;

use crate::events::StoreWaiting;
use crate::util::error_chain;

const FIRST_RETRY: Duration = Duration::from_millis(100);
const LAST_RETRY: Duration = Duration::from_secs(1);

/// How a run's [`Journal`](super::journal::Journal) waits out a full disk.
#[derive(Debug)]
pub(crate) struct StoreWait {
    cancel: CancellationToken,
    max: Duration,
    /// Set once the run records its end: cancel no longer cuts the wait.
    ending: AtomicBool,
}

impl StoreWait {
    pub(crate) fn new(cancel: CancellationToken, max: Duration) -> Self {
        Self {
            cancel,
            max,
            ending: AtomicBool::new(false),
        }
    }

    /// From now on the writes record the run's end.
    pub(crate) fn ending(&self) {
        self.ending.store(true, Ordering::SeqCst);
    }

    /// Runs `attempt` until it does not fail with `Full`, the wait's bound
    /// passes or (before the end) the run is cancelled; `say` is told when
    /// the wait starts and when it ends with the write done.
    pub(crate) async fn retry<T, F, Fut>(
        &self,
        operation: &'static str,
        say: impl Fn(StoreWaiting),
        attempt: F,
    ) -> Result<T, StoreError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let err = match attempt().await {
            Err(err @ StoreError::Full { .. }) => err,
            other => return other,
        };
        let started = Instant::now();
        let error = error_chain(&err);
        tracing::warn!(operation, error = %error, max_wait_ms = self.max.as_millis() as u64,
            "the store has no space left: the run waits for it");
        say(StoreWaiting {
            operation: operation.to_owned(),
            waiting: true,
            error: Some(error),
            waited_ms: 0,
        });
        let mut pause = FIRST_RETRY;
        let mut last = err;
        loop {
            let left = self.max.saturating_sub(started.elapsed());
            if left.is_zero() {
                tracing::warn!(operation, "the store stayed full: the run stops waiting");
                return Err(last);
            }
            let cancelled = async {
                if self.ending.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                self.cancel.cancelled().await;
            };
            tokio::select! {
                () = tokio::time::sleep(pause.min(left)) => {}
                () = cancelled => {
                    tracing::info!(operation, "cancelled while waiting for the store");
                    return Err(last);
                }
            }
            pause = (pause * 2).min(LAST_RETRY);
            match attempt().await {
                Err(err @ StoreError::Full { .. }) => last = err,
                other => {
                    let waited_ms =
                        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    if other.is_ok() {
                        tracing::info!(
                            operation,
                            waited_ms,
                            "the store writes again: the run goes on"
                        );
                        say(StoreWaiting {
                            operation: operation.to_owned(),
                            waiting: false,
                            error: None,
                            waited_ms,
                        });
                    }
                    return other;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    use super::*;

    fn full() -> StoreError {
        StoreError::Full {
            operation: "append_event",
            source: "database or disk is full".into(),
        }
    }

    /// A write that fails `Full` `fails` times, then lands.
    fn flaky(
        fails: usize,
    ) -> (
        Arc<AtomicUsize>,
        impl Fn() -> std::future::Ready<Result<u32, StoreError>>,
    ) {
        let tries = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&tries);
        (tries, move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            std::future::ready(if n < fails { Err(full()) } else { Ok(7) })
        })
    }

    #[tokio::test]
    async fn a_write_waits_out_a_full_disk_and_lands_saying_so() {
        let wait = StoreWait::new(CancellationToken::new(), Duration::from_secs(60));
        let said = Mutex::new(Vec::new());
        let (tries, attempt) = flaky(3);
        let done = wait
            .retry("append_event", |w| said.lock().unwrap().push(w), attempt)
            .await;
        assert_eq!(done.unwrap(), 7);
        assert_eq!(tries.load(Ordering::SeqCst), 4);
        let said = said.into_inner().unwrap();
        assert_eq!(said.len(), 2);
        assert!(said[0].waiting && said[0].error.as_deref().unwrap().contains("no space left"));
        // 100 + 200 + 400 ms of pauses
        assert!(
            !said[1].waiting && said[1].waited_ms >= 700,
            "{:?}",
            said[1]
        );
    }

    #[tokio::test]
    async fn past_the_bound_the_write_fails_full() {
        let wait = StoreWait::new(CancellationToken::new(), Duration::from_millis(1500));
        let (tries, attempt) = flaky(usize::MAX);
        let started = Instant::now();
        let done = wait.retry("append_event", |_| {}, attempt).await;
        assert!(matches!(done, Err(StoreError::Full { .. })), "{done:?}");
        assert!(started.elapsed() >= Duration::from_millis(1500));
        // 100, 200, 400, 800 ms, then the last 0 ms of the bound
        assert!(tries.load(Ordering::SeqCst) >= 5, "{tries:?}");
    }

    #[tokio::test]
    async fn a_cancel_ends_the_wait_but_not_the_end_record() {
        let cancel = CancellationToken::new();
        let wait = StoreWait::new(cancel.clone(), Duration::from_secs(60));
        cancel.cancel();
        let (tries, attempt) = flaky(usize::MAX);
        let done = wait.retry("append_event", |_| {}, attempt).await;
        assert!(matches!(done, Err(StoreError::Full { .. })));
        assert_eq!(tries.load(Ordering::SeqCst), 1);

        // recording the end waits for space whatever the cancel
        wait.ending();
        let (tries, attempt) = flaky(2);
        let done = wait.retry("update_run", |_| {}, attempt).await;
        assert_eq!(done.unwrap(), 7);
        assert_eq!(tries.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn other_errors_are_not_waited_for() {
        let wait = StoreWait::new(CancellationToken::new(), Duration::from_secs(60));
        let tries = AtomicUsize::new(0);
        let done: Result<(), _> = wait
            .retry(
                "append_event",
                |_| panic!("nothing to say"),
                || {
                    tries.fetch_add(1, Ordering::SeqCst);
                    std::future::ready(Err(StoreError::Invalid {
                        field: "x",
                        reason: "y".into(),
                    }))
                },
            )
            .await;
        assert!(matches!(done, Err(StoreError::Invalid { .. })));
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }
}
