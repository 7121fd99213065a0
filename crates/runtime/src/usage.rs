//! A run's usage with its subagents': the run's own usage (what its budgets
//! count) plus every descendant run's, read from the store.

use std::collections::VecDeque;

use paddock_core::store::{Run, RunUsage, Store, StoreError};

/// Most descendant runs summed (depth 1 and 6 children per run today; the
/// bound keeps a corrupt parent chain from running away).
const MAX_DESCENDANTS: usize = 1000;

/// `run`'s usage plus its descendants', as recorded now (a running child
/// counts what it has spent so far).
pub(crate) async fn total(store: &dyn Store, run: &Run) -> Result<RunUsage, StoreError> {
    let mut total = run.usage;
    let mut queue = VecDeque::from([run.id.clone()]);
    let mut seen = 0usize;
    while let Some(parent) = queue.pop_front() {
        for child in store.list_child_runs(&run.tenant, &parent).await? {
            seen += 1;
            if seen > MAX_DESCENDANTS {
                return Ok(total);
            }
            total = total.plus(&child.usage);
            queue.push_back(child.id);
        }
    }
    Ok(total)
}
