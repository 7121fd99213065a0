//! The egress decisions of a run's sandbox as `egress.decision` events in
//! its session, bounded so that a chatty program cannot flood the store:
//! every [`FLUSH_EVERY`] the decisions since the last flush are coalesced
//! (those alike are one event with a count and totals), at most
//! [`EVENTS_PER_FLUSH`] are written, and at most [`EVENTS_PER_RUN`] in all.
//! What is left out is counted in the `omitted` of the last event written
//! (after the run's cap, one last event at the end carries the count).
//! The sandbox's own log (the API's list) keeps them regardless.

use std::sync::Arc;
use std::time::Duration;

use paddock_core::sandbox::{EgressLog, SandboxId};
use paddock_proto::EgressDecision;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::events::EgressDecisionEvent;
use crate::events::journal::{Encoded, Journal};
use crate::util::error_chain;

/// How often decisions are written.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Most events one flush writes.
pub(crate) const EVENTS_PER_FLUSH: usize = 16;
/// Most events one run's sandbox writes.
pub(crate) const EVENTS_PER_RUN: usize = 1_000;
/// How long the last flush may take when the sandbox stops.
const LAST_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Decisions alike are coalesced: same outcome, destination, way in and reason.
fn alike(a: &EgressDecision, b: &EgressDecision) -> bool {
    a.allowed == b.allowed
        && a.port == b.port
        && a.host == b.host
        && a.via == b.via
        && a.reason == b.reason
}

/// The events for `decisions` (oldest first): alike ones coalesced in the
/// order first seen, at most `cap`; the decisions of the groups beyond it,
/// and `missed` ones, counted in the last event's `omitted`. With `cap` 0
/// nothing is written and everything is returned as omitted.
pub(crate) fn coalesce(
    sandbox: &SandboxId,
    decisions: &[EgressDecision],
    missed: u64,
    cap: usize,
) -> (Vec<EgressDecisionEvent>, u64) {
    let mut events: Vec<EgressDecisionEvent> = Vec::new();
    let mut omitted = missed;
    for decision in decisions {
        if let Some(event) = events.iter_mut().find(|e| alike(&e.decision, decision)) {
            let total = &mut event.decision;
            total.bytes_out = total.bytes_out.saturating_add(decision.bytes_out);
            total.bytes_in = total.bytes_in.saturating_add(decision.bytes_in);
            total.duration_ms = total.duration_ms.saturating_add(decision.duration_ms);
            event.count += 1;
        } else if events.len() < cap {
            events.push(EgressDecisionEvent {
                sandbox_id: sandbox.clone(),
                decision: decision.clone(),
                count: 1,
                omitted: 0,
            });
        } else {
            omitted += 1;
        }
    }
    match events.last_mut() {
        Some(last) => {
            last.omitted = omitted;
            (events, 0)
        }
        None => (events, omitted),
    }
}

/// Writes a run sandbox's decisions until stopped.
#[derive(Debug)]
pub(crate) struct EgressEvents {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl EgressEvents {
    pub(crate) fn start(journal: Arc<Journal>, log: EgressLog, sandbox: SandboxId) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(forward(journal, log, sandbox, stop.clone()));
        Self { stop, task }
    }

    /// Writes what is left (within a timeout) and ends.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        let abort = self.task.abort_handle();
        if tokio::time::timeout(LAST_FLUSH_TIMEOUT, self.task)
            .await
            .is_err()
        {
            abort.abort();
            tracing::warn!("the last egress events were not written in time");
        }
    }
}

async fn forward(
    journal: Arc<Journal>,
    log: EgressLog,
    sandbox: SandboxId,
    stop: CancellationToken,
) {
    let mut cursor = 0;
    let mut written = 0;
    let mut carried = 0;
    let mut latest: Option<EgressDecision> = None;
    loop {
        let last = tokio::select! {
            () = tokio::time::sleep(FLUSH_EVERY) => false,
            () = stop.cancelled() => true,
        };
        let since = log.since(cursor);
        cursor = since.next;
        if let Some(decision) = since.decisions.last() {
            latest = Some(decision.clone());
        }
        // one event is kept for the end, to carry what the caps left out
        let room = (EVENTS_PER_RUN - 1).saturating_sub(written) + usize::from(last);
        let cap = EVENTS_PER_FLUSH.min(room);
        let (mut events, left) = coalesce(&sandbox, &since.decisions, since.missed, cap);
        carried += left;
        if let Some(event) = events.last_mut() {
            event.omitted += carried;
            carried = 0;
        } else if last
            && carried > 0
            && let Some(decision) = latest.take()
        {
            // count 0: only a summary of what was left out, naming the latest
            events.push(EgressDecisionEvent {
                sandbox_id: sandbox.clone(),
                decision,
                count: 0,
                omitted: carried,
            });
        }
        written += events.len();
        let encoded: Result<Vec<_>, _> = events.iter().map(Encoded::of).collect();
        let result = match encoded {
            Ok(encoded) => journal.emit_all(encoded).await.map(drop),
            Err(err) => Err(err),
        };
        if let Err(err) = result {
            tracing::warn!(sandbox_id = %sandbox, error = %error_chain(&err), "writing egress events");
        }
        if last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decision(host: &str, allowed: bool, bytes: u64) -> EgressDecision {
        EgressDecision {
            allowed,
            host: host.to_owned(),
            port: 443,
            via: "connect".to_owned(),
            reason: (!allowed).then(|| "not allowed".to_owned()),
            bytes_out: bytes,
            bytes_in: bytes * 2,
            duration_ms: 3,
        }
    }

    fn sandbox() -> SandboxId {
        SandboxId::parse("sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3").unwrap()
    }

    #[test]
    fn alike_decisions_become_one_event_with_their_count_and_totals() {
        let decisions = [
            decision("a.test", true, 10),
            decision("b.test", false, 0),
            decision("a.test", true, 5),
            decision("a.test", false, 0),
        ];
        let (events, left) = coalesce(&sandbox(), &decisions, 0, 16);
        assert_eq!(left, 0);
        let shown: Vec<_> = events
            .iter()
            .map(|e| {
                let d = &e.decision;
                (
                    d.host.as_str(),
                    d.allowed,
                    e.count,
                    d.bytes_out,
                    d.bytes_in,
                    d.duration_ms,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("a.test", true, 2, 15, 30, 6),
                ("b.test", false, 1, 0, 0, 3),
                ("a.test", false, 1, 0, 0, 3),
            ]
        );
        assert!(events.iter().all(|e| e.omitted == 0));
    }

    #[test]
    fn beyond_the_cap_decisions_are_counted_not_written() {
        let decisions: Vec<_> = (0..100)
            .map(|i| decision(&format!("h{i}.test"), true, 1))
            .collect();
        let (events, left) = coalesce(&sandbox(), &decisions, 7, 3);
        assert_eq!(events.len(), 3);
        assert_eq!(events[2].omitted, 97 + 7);
        assert_eq!(left, 0);
        let (events, left) = coalesce(&sandbox(), &decisions, 0, 0);
        assert!(events.is_empty());
        assert_eq!(left, 100);
    }
}
