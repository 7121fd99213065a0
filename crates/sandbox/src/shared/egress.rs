//! A sandbox's egress log, filled from its proxy's decisions (every
//! backend with network keeps one the same way).

use paddock_core::sandbox::EgressLog;
use tokio::task::JoinHandle;

pub(crate) type EgressReceiver = tokio::sync::mpsc::Receiver<paddock_egress::EgressDecision>;

/// The sandbox's egress log, filled from the proxy's decisions by a task
/// that ends when the proxy stops (its sender goes with it).
pub(crate) fn fill_egress_log(mut decisions: EgressReceiver) -> (EgressLog, JoinHandle<()>) {
    let log = EgressLog::default();
    let filled = log.clone();
    let task = tokio::spawn(async move {
        while let Some(decision) = decisions.recv().await {
            filled.push(decision);
        }
    });
    (log, task)
}
