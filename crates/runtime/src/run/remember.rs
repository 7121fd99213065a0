//! The end of a root run: the session's memory is updated from how the run
//! ended, and the memory candidates it found are stored as the runtime's
//! [`MemoryReview`] says. Failures are logged; they never change the ending.

use paddock_core::store::{MemoryFilter, MemoryScope, MemoryStatus};

use super::driver::{Driver, Ending};
use crate::config::MemoryReview;
use crate::memory::MemoryPlace;
use crate::memory::candidates::{self, Candidate, Outcome};
use crate::util::error_chain;

fn outcome(ending: &Ending) -> Outcome<'_> {
    match ending {
        Ending::Completed(review) => Outcome::Completed {
            summary: &review.summary,
            remaining: &review.remaining,
        },
        Ending::Stopped { text } => Outcome::Stopped(text),
        Ending::AwaitingUser { question } => Outcome::AwaitingUser(question),
        Ending::Failed { error, .. } => Outcome::Failed(error),
        Ending::Cancelled => Outcome::Cancelled,
    }
}

/// Stores the candidates not stored yet (same text in this workspace's view).
async fn store_candidates(place: &MemoryPlace, review: MemoryReview, found: &[Candidate]) {
    let status = match review {
        MemoryReview::Off => return,
        MemoryReview::Auto => MemoryStatus::Active,
        MemoryReview::Proposed => MemoryStatus::Proposed,
    };
    for candidate in found {
        let seen = MemoryFilter {
            include_proposed: true,
            ..place.filter(20)
        };
        let known = match place
            .store
            .search_memories(&place.tenant, &candidate.text, &seen)
            .await
        {
            Ok(records) => records.iter().any(|r| r.text == candidate.text),
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "looking up a memory candidate");
                continue;
            }
        };
        if known {
            continue;
        }
        let record = place.record(
            MemoryScope::Workspace,
            candidate.kind,
            &candidate.text,
            status,
        );
        if let Err(err) = place.store.create_memory(&record).await {
            tracing::warn!(error = %error_chain(&err), "storing a memory candidate");
        }
    }
}

impl Driver {
    pub(super) async fn leave_memory(&mut self, ending: &Ending) {
        let Some((place, review)) = self.memory() else {
            return;
        };
        let found = candidates::candidates(self.history());
        store_candidates(&place, review, &found).await;
        let memory =
            candidates::session_memory(&self.run_goal(), outcome(ending), self.history(), &found);
        if let Err(err) = self.journal().put_session_memory(memory).await {
            tracing::warn!(error = %error_chain(&err), "updating the session memory");
        }
    }
}
