//! The egress decisions of one sandbox, newest last, bounded: what the API
//! lists, and what a run reads (from a cursor) to put them in its session.
//! Filled by the backend from its egress proxy.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use paddock_proto::EgressDecision;

/// What [`super::Sandbox::set_network`] did: the policy it replaced and
/// the open connections it cut (`host:port`, sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSwap {
    pub old: paddock_proto::NetworkPolicy,
    pub cut: Vec<String>,
}

/// How many decisions a sandbox keeps; older ones go first.
pub const EGRESS_LOG_LEN: usize = 1024;

#[derive(Debug, Default)]
struct Kept {
    decisions: VecDeque<EgressDecision>,
    /// Decisions ever pushed: the cursor of the one after the newest.
    pushed: u64,
}

#[derive(Debug, Clone, Default)]
pub struct EgressLog(Arc<Mutex<Kept>>);

/// The decisions after a cursor ([`EgressLog::since`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EgressSince {
    pub decisions: Vec<EgressDecision>,
    /// Pass this to the next call.
    pub next: u64,
    /// Decisions after the cursor that had already gone (more than
    /// [`EGRESS_LOG_LEN`] came since).
    pub missed: u64,
}

impl EgressLog {
    pub fn push(&self, decision: EgressDecision) {
        if let Ok(mut log) = self.0.lock() {
            if log.decisions.len() == EGRESS_LOG_LEN {
                log.decisions.pop_front();
            }
            log.decisions.push_back(decision);
            log.pushed += 1;
        }
    }

    /// Every decision kept, oldest first.
    pub fn list(&self) -> Vec<EgressDecision> {
        self.0
            .lock()
            .map(|log| log.decisions.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The decisions pushed since `cursor` (0: since the start), oldest first.
    pub fn since(&self, cursor: u64) -> EgressSince {
        let Ok(log) = self.0.lock() else {
            return EgressSince {
                next: cursor,
                ..EgressSince::default()
            };
        };
        let oldest = log.pushed - log.decisions.len() as u64;
        let from = cursor.clamp(oldest, log.pushed);
        let skip = usize::try_from(from - oldest).unwrap_or(usize::MAX);
        EgressSince {
            decisions: log.decisions.iter().skip(skip).cloned().collect(),
            next: log.pushed,
            missed: from - cursor.min(from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(port: u16) -> EgressDecision {
        EgressDecision {
            allowed: true,
            host: "a.test".to_owned(),
            port,
            via: "connect".to_owned(),
            reason: None,
            bytes_out: 0,
            bytes_in: 0,
            duration_ms: 0,
        }
    }

    #[test]
    fn keeps_the_newest_up_to_the_bound() {
        let log = EgressLog::default();
        for port in 0..=u16::try_from(EGRESS_LOG_LEN).unwrap_or(u16::MAX) {
            log.push(decision(port));
        }
        let list = log.list();
        assert_eq!(list.len(), EGRESS_LOG_LEN);
        assert_eq!(list[0].port, 1);
    }

    #[test]
    fn since_reads_from_a_cursor_and_counts_what_it_missed() {
        let log = EgressLog::default();
        assert_eq!(log.since(0), EgressSince::default());
        log.push(decision(1));
        log.push(decision(2));
        let first = log.since(0);
        assert_eq!(first.decisions, [decision(1), decision(2)]);
        assert_eq!((first.next, first.missed), (2, 0));
        log.push(decision(3));
        let second = log.since(first.next);
        assert_eq!(second.decisions, [decision(3)]);
        assert_eq!(log.since(second.next).decisions, []);
        let len = u16::try_from(EGRESS_LOG_LEN).unwrap_or(u16::MAX);
        for port in 0..len + 5 {
            log.push(decision(port));
        }
        let behind = log.since(second.next);
        assert_eq!(behind.decisions.len(), EGRESS_LOG_LEN);
        assert_eq!(behind.missed, 5);
        assert_eq!(behind.next, 3 + u64::from(len) + 5);
    }
}
