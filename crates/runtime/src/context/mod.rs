//! A run's context window: loading a session's history from its latest
//! compaction, and summarising older history when a request grows past the
//! compaction threshold of the model's [`ContextProfile`]
//! (see [`compactor`]). Where to cut is [`cut`], what the summary call asks
//! and the summary used when it fails is [`summary`].

pub(crate) mod compactor;
pub(crate) mod cut;
pub(crate) mod summary;

use paddock_core::ids::{SessionId, TenantId};
use paddock_core::model::Message;
use paddock_core::store::Store;

use crate::error::RuntimeError;

/// How the driver's history maps onto the stored messages: `history[0]` is
/// the latest compaction's summary when `summarised`, and every later entry
/// is the stored message `first_seq`, `first_seq + 1`, ... (every message the
/// run adds to its history is appended to the store, in the same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextBase {
    pub(crate) first_seq: u64,
    pub(crate) summarised: bool,
}

impl ContextBase {
    fn synthetic(&self) -> usize {
        usize::from(self.summarised)
    }

    /// The stored sequence number of `history[index]` (None for the summary).
    pub(crate) fn seq_of(&self, index: usize) -> Option<u64> {
        let offset = index.checked_sub(self.synthetic())?;
        Some(self.first_seq + u64::try_from(offset).unwrap_or(u64::MAX))
    }
}

/// The context a new run of `session` starts from: the latest compaction's
/// summary and the messages after it, or the whole history when it was never
/// compacted.
pub(crate) async fn load_history(
    store: &dyn Store,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<(Vec<Message>, ContextBase), RuntimeError> {
    let latest = store
        .latest_compaction(tenant, session)
        .await
        .map_err(RuntimeError::store("latest_compaction"))?;
    let (after, mut history) = match &latest {
        Some(c) => (c.through_seq, vec![summary::summary_message(&c.summary)]),
        None => (0, Vec::new()),
    };
    let stored = store
        .list_messages_after(tenant, session, after)
        .await
        .map_err(RuntimeError::store("list_messages_after"))?;
    let first_seq = stored.first().map_or(after + 1, |m| m.seq);
    history.extend(stored.into_iter().map(|m| m.message));
    Ok((
        history,
        ContextBase {
            first_seq,
            summarised: latest.is_some(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_indices_map_to_stored_sequence_numbers() {
        let plain = ContextBase {
            first_seq: 1,
            summarised: false,
        };
        assert_eq!(plain.seq_of(0), Some(1));
        assert_eq!(plain.seq_of(4), Some(5));
        let compacted = ContextBase {
            first_seq: 42,
            summarised: true,
        };
        assert_eq!(compacted.seq_of(0), None);
        assert_eq!(compacted.seq_of(1), Some(42));
        assert_eq!(compacted.seq_of(3), Some(44));
    }
}
