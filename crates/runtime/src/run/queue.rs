//! The run queue: where the operator asks for it (`[runs] when_full =
//! "queue"`), a root run whose sandbox finds its tenant's or the node's
//! slots full is recorded `queued` instead of refused, and starts when a
//! slot frees, first in first out per tenant.
//!
//! - Only the head of a tenant's queue asks for a slot, so a later run of
//!   the tenant never overtakes an earlier one; a tenant's new run queues
//!   behind its queued ones even when a slot is free. Other tenants are
//!   not held back by it: each tenant has its own line.
//! - A waiting run asks again when a run of this runtime ends
//!   ([`RunQueue::freed`]) and at least every [`RECHECK`] (a slot freed by
//!   a sandbox of the front end's own), never in a busy loop.
//! - Bounded: a tenant queues at most `max_queued_per_tenant` runs (the
//!   next is refused, [`crate::RuntimeError::QueueFull`]), and a run waits
//!   at most `max_wait` (then it ends `failed`, `queue_timeout`).
//! - Subagents are never queued: a subagent waiting for a slot its own
//!   parent's family holds could wait forever, so its spawn is refused at
//!   once and the parent's model reads why (docs/architecture.md).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use paddock_core::ids::{RunId, TenantId};
use serde::Deserialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::SettingsError;

/// Longest a queued run goes without asking for a slot again.
pub(crate) const RECHECK: Duration = Duration::from_millis(500);

/// What a root run does when its sandbox finds no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// 429 naming the quota; nothing is recorded (the default).
    #[default]
    Refuse,
    /// Recorded `queued`; starts when a slot frees.
    Queue,
}

/// `[runs] when_full`, `max_queued_per_tenant`, `max_queue_wait_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueSettings {
    pub when_full: WhenFull,
    /// The most runs one tenant may have queued at once.
    pub max_queued_per_tenant: usize,
    /// The longest a run waits in the queue before it fails.
    #[serde(
        rename = "max_queue_wait_secs",
        deserialize_with = "paddock_core::settings::secs"
    )]
    pub max_wait: Duration,
}

/// The most [`QueueSettings::max_queued_per_tenant`] may be.
pub const MAX_QUEUED_PER_TENANT: usize = 10_000;
/// The most [`QueueSettings::max_wait`] may be: a day.
pub const MAX_QUEUE_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            when_full: WhenFull::Refuse,
            max_queued_per_tenant: 16,
            max_wait: Duration::from_secs(15 * 60),
        }
    }
}

impl QueueSettings {
    /// Both bounds set and within reason.
    pub fn validate(&self) -> Result<(), SettingsError> {
        SettingsError::check_range(
            "max_queued_per_tenant",
            self.max_queued_per_tenant as u64,
            1,
            MAX_QUEUED_PER_TENANT as u64,
        )?;
        SettingsError::check_range(
            "max_queue_wait_secs",
            self.max_wait.as_secs(),
            1,
            MAX_QUEUE_WAIT.as_secs(),
        )
    }
}

/// Each tenant's queued runs of this runtime, oldest first.
#[derive(Debug, Default)]
pub(crate) struct RunQueue {
    lines: Mutex<HashMap<TenantId, VecDeque<RunId>>>,
    freed: Notify,
    /// Cancelled (under the lines' lock) when the runtime lets go of its
    /// queued runs at a shutdown: no run takes its turn after that.
    closing: CancellationToken,
}

/// Why a run was not put in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueFull {
    pub(crate) queued: usize,
}

impl RunQueue {
    fn lines(&self) -> std::sync::MutexGuard<'_, HashMap<TenantId, VecDeque<RunId>>> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many runs `tenant` has queued here.
    pub(crate) fn queued(&self, tenant: &TenantId) -> usize {
        self.lines().get(tenant).map_or(0, VecDeque::len)
    }

    /// Puts `run` at the end of its tenant's line, unless the line holds
    /// `max` already.
    pub(crate) fn join(&self, tenant: &TenantId, run: &RunId, max: usize) -> Result<(), QueueFull> {
        let mut lines = self.lines();
        let line = lines.entry(tenant.clone()).or_default();
        if line.len() >= max {
            return Err(QueueFull { queued: line.len() });
        }
        line.push_back(run.clone());
        Ok(())
    }

    /// Whether `run` is first in its tenant's line (the only one that asks).
    pub(crate) fn is_head(&self, tenant: &TenantId, run: &RunId) -> bool {
        self.lines()
            .get(tenant)
            .and_then(VecDeque::front)
            .is_some_and(|head| head == run)
    }

    /// Takes `run` out of its line (started, cancelled, timed out, let go);
    /// the next in line is told.
    pub(crate) fn leave(&self, tenant: &TenantId, run: &RunId) {
        {
            let mut lines = self.lines();
            if let Some(line) = lines.get_mut(tenant) {
                line.retain(|queued| queued != run);
                if line.is_empty() {
                    lines.remove(tenant);
                }
            }
        }
        self.freed.notify_waiters();
    }

    /// Takes `run` out of its line as it got its slot; false (and the run
    /// stays in line) once the queue is closing: the run lets go instead.
    pub(crate) fn take_turn(&self, tenant: &TenantId, run: &RunId) -> bool {
        {
            let mut lines = self.lines();
            if self.closing.is_cancelled() {
                return false;
            }
            if let Some(line) = lines.get_mut(tenant) {
                line.retain(|queued| queued != run);
                if line.is_empty() {
                    lines.remove(tenant);
                }
            }
        }
        self.freed.notify_waiters();
        true
    }

    /// Closes the queue: every run still in it lets go (it stays `queued`
    /// in the store). Answers those runs.
    pub(crate) fn close(&self) -> Vec<RunId> {
        let lines = self.lines();
        self.closing.cancel();
        lines.values().flatten().cloned().collect()
    }

    /// Cancelled once the queue closes.
    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.closing
    }

    /// A slot may have freed (a run ended): every waiting run asks again.
    pub(crate) fn freed(&self) {
        self.freed.notify_waiters();
    }

    /// Resolves at the next [`RunQueue::freed`] or [`RunQueue::leave`].
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.freed.notified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_has_its_own_bounded_line_in_order() {
        let queue = RunQueue::default();
        let (a, b) = (TenantId::parse("a").unwrap(), TenantId::parse("b").unwrap());
        let runs: Vec<RunId> = (0..3).map(|_| RunId::generate()).collect();
        queue.join(&a, &runs[0], 2).unwrap();
        queue.join(&a, &runs[1], 2).unwrap();
        assert_eq!(queue.join(&a, &runs[2], 2), Err(QueueFull { queued: 2 }));
        queue.join(&b, &runs[2], 2).unwrap();
        assert!(queue.is_head(&a, &runs[0]) && !queue.is_head(&a, &runs[1]));
        assert!(queue.is_head(&b, &runs[2]));
        queue.leave(&a, &runs[0]);
        assert!(queue.is_head(&a, &runs[1]));
        assert_eq!((queue.queued(&a), queue.queued(&b)), (1, 1));
        assert!(queue.take_turn(&a, &runs[1]));
        assert_eq!(queue.close(), vec![runs[2].clone()]);
        assert!(!queue.take_turn(&b, &runs[2]));
        assert!(queue.is_head(&b, &runs[2]));
    }

    #[test]
    fn settings_are_bounded() {
        assert!(QueueSettings::default().validate().is_ok());
        for bad in [
            QueueSettings {
                max_queued_per_tenant: 0,
                ..QueueSettings::default()
            },
            QueueSettings {
                max_wait: Duration::ZERO,
                ..QueueSettings::default()
            },
            QueueSettings {
                max_wait: MAX_QUEUE_WAIT + Duration::from_secs(1),
                ..QueueSettings::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
