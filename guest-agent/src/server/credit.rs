//! Per-request flow control: how many more event payload bytes the host has
//! room for on each stream ([`paddock_proto::STREAM_WINDOW`] to start with,
//! topped up by `StreamCredit`). A stream without credit waits; the others on
//! the connection go on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use paddock_proto::STREAM_WINDOW;
use tokio::sync::Notify;

/// The credit of every stream that has sent an event and not finished.
#[derive(Debug, Default)]
pub struct Credits {
    streams: Mutex<HashMap<u64, Arc<Credit>>>,
}

/// One stream's credit.
#[derive(Debug)]
pub struct Credit {
    left: Mutex<u64>,
    granted: Notify,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Single-value updates: a panic while holding the lock leaves it consistent.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Credits {
    /// The credit of request `id`, created with a full window on first use.
    pub fn stream(&self, id: u64) -> Arc<Credit> {
        locked(&self.streams)
            .entry(id)
            .or_insert_with(|| {
                Arc::new(Credit {
                    left: Mutex::new(STREAM_WINDOW),
                    granted: Notify::new(),
                })
            })
            .clone()
    }

    /// More credit for `id`; ignored when that stream sent nothing yet or is
    /// over (a grant never creates state the host could pile up).
    pub fn grant(&self, id: u64, bytes: u64) {
        let credit = locked(&self.streams).get(&id).cloned();
        if let Some(credit) = credit {
            credit.grant(bytes);
        }
    }

    /// The stream's final frame is out: forget it.
    pub fn end(&self, id: u64) {
        locked(&self.streams).remove(&id);
    }
}

impl Credit {
    pub fn left(&self) -> u64 {
        *locked(&self.left)
    }

    pub fn spend(&self, bytes: usize) {
        let mut left = locked(&self.left);
        *left = left.saturating_sub(bytes as u64);
    }

    fn grant(&self, bytes: u64) {
        let mut left = locked(&self.left);
        *left = left.saturating_add(bytes);
        drop(left);
        self.granted.notify_waiters();
    }

    /// Resolves once there is credit.
    pub async fn available(&self) {
        loop {
            let granted = self.granted.notified();
            tokio::pin!(granted);
            // Registered before the check, so a grant in between is not missed.
            granted.as_mut().enable();
            if self.left() > 0 {
                return;
            }
            granted.await;
        }
    }

    /// [`Credit::available`], false when none came within `stall`. With
    /// credit left it answers at once, without arming the timeout (whose
    /// deadline is a clock read: a trapped system call under gVisor).
    pub async fn available_within(&self, stall: Duration) -> bool {
        self.left() > 0 || tokio::time::timeout(stall, self.available()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_waits_for_credit_and_others_do_not() {
        let credits = Credits::default();
        let slow = credits.stream(1);
        slow.spend(STREAM_WINDOW as usize);
        assert_eq!(slow.left(), 0);
        assert!(!slow.available_within(Duration::from_millis(50)).await);
        // Another stream still has its whole window.
        assert_eq!(credits.stream(2).left(), STREAM_WINDOW);
        credits.grant(1, 10);
        assert!(slow.available_within(Duration::from_millis(50)).await);
        assert_eq!(slow.left(), 10);
        // Grants for streams that do not exist create nothing.
        credits.end(1);
        credits.grant(7, 10);
        assert!(locked(&credits.streams).get(&7).is_none());
    }

    /// With credit left no timer is armed: a runtime without a time driver
    /// would panic on one.
    #[test]
    fn credit_left_answers_without_a_timer() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let credit = Credits::default().stream(1);
        assert!(runtime.block_on(credit.available_within(Duration::from_secs(60))));
    }
}
