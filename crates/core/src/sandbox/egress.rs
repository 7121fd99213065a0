//! The egress decisions of one sandbox, newest last, bounded: what the API
//! lists. Filled by the backend from its egress proxy.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use paddock_proto::EgressDecision;

/// How many decisions a sandbox keeps; older ones go first.
pub const EGRESS_LOG_LEN: usize = 1024;

#[derive(Debug, Clone, Default)]
pub struct EgressLog(Arc<Mutex<VecDeque<EgressDecision>>>);

impl EgressLog {
    pub fn push(&self, decision: EgressDecision) {
        if let Ok(mut log) = self.0.lock() {
            if log.len() == EGRESS_LOG_LEN {
                log.pop_front();
            }
            log.push_back(decision);
        }
    }

    /// Every decision kept, oldest first.
    pub fn list(&self) -> Vec<EgressDecision> {
        self.0
            .lock()
            .map(|log| log.iter().cloned().collect())
            .unwrap_or_default()
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
}
