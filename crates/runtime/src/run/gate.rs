//! A running slot a run waits for before its sandbox starts: how a parent
//! bounds how many of its children run at once. The run says when it queued
//! and when it got its slot; whoever made the gate decides what that means.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Where a run waiting at a gate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Every slot was taken: the run waits.
    Queued,
    /// The run has its slot.
    Running,
}

/// A slot out of a shared set, and where the run's admissions are reported.
#[derive(Debug)]
pub(crate) struct Gate {
    slots: Arc<Semaphore>,
    admissions: mpsc::UnboundedSender<Admission>,
}

impl Gate {
    pub(crate) fn new(slots: Arc<Semaphore>, admissions: mpsc::UnboundedSender<Admission>) -> Self {
        Self { slots, admissions }
    }

    /// Waits for a slot (reporting `Queued` if it has to); None when the run
    /// was cancelled first. The slot is held as long as the permit lives.
    pub(crate) async fn enter(self, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
        let permit = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // the receiver is gone only when the gate's maker stopped following: nothing to tell
                let _ = self.admissions.send(Admission::Queued);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return None,
                    permit = Arc::clone(&self.slots).acquire_owned() => permit.ok()?,
                }
            }
        };
        let _ = self.admissions.send(Admission::Running);
        Some(permit)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_free_slot_admits_at_once_and_a_taken_one_queues_until_freed() {
        let slots = Arc::new(Semaphore::new(1));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let first = Gate::new(Arc::clone(&slots), tx.clone())
            .enter(&cancel)
            .await
            .unwrap();
        assert_eq!(rx.try_recv().unwrap(), Admission::Running);
        let second = tokio::spawn({
            let (slots, tx, cancel) = (Arc::clone(&slots), tx.clone(), cancel.clone());
            async move { Gate::new(slots, tx).enter(&cancel).await.is_some() }
        });
        assert_eq!(rx.recv().await.unwrap(), Admission::Queued);
        drop(first);
        assert!(second.await.unwrap());
        assert_eq!(rx.recv().await.unwrap(), Admission::Running);
    }

    #[tokio::test]
    async fn a_run_cancelled_while_queued_gets_no_slot() {
        let slots = Arc::new(Semaphore::new(0));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(Gate::new(slots, tx).enter(&cancel).await.is_none());
        assert_eq!(rx.try_recv().unwrap(), Admission::Queued);
        assert!(rx.try_recv().is_err());
    }
}
