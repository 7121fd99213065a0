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
use paddock_core::store::{HistoryPoint, Store, visible_messages};

use crate::error::RuntimeError;

/// How the driver's history maps onto the stored messages: `history[0]` is
/// the latest compaction's summary when `summarised`, the entries after it
/// are the stored messages `loaded` (in order; a rewind can leave gaps),
/// and every entry the run adds after those is appended to the store, in the
/// same order, from `next_seq` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextBase {
    pub(crate) loaded: Vec<u64>,
    pub(crate) next_seq: u64,
    pub(crate) summarised: bool,
}

impl ContextBase {
    fn synthetic(&self) -> usize {
        usize::from(self.summarised)
    }

    /// The stored sequence number of `history[index]` (None for the summary).
    pub(crate) fn seq_of(&self, index: usize) -> Option<u64> {
        let offset = index.checked_sub(self.synthetic())?;
        match self.loaded.get(offset) {
            Some(seq) => Some(*seq),
            None => {
                let appended = u64::try_from(offset - self.loaded.len()).unwrap_or(u64::MAX);
                Some(self.next_seq.saturating_add(appended))
            }
        }
    }

    /// The base once `history[..cut]` was replaced by a summary.
    pub(crate) fn after_cut(&self, cut: usize) -> Self {
        let dropped = cut.saturating_sub(self.synthetic());
        let kept = self.loaded.get(dropped..).unwrap_or_default().to_vec();
        let appended = u64::try_from(dropped.saturating_sub(self.loaded.len())).unwrap_or(0);
        Self {
            loaded: kept,
            next_seq: self.next_seq.saturating_add(appended),
            summarised: true,
        }
    }
}

/// The context a new run of `session` starts from: the latest compaction's
/// summary and the messages after it, or the whole history when it was never
/// compacted; without the messages a rewind took out of the history
/// ([`visible_messages`]), and from the latest compaction that is still in it.
pub(crate) async fn load_history(
    store: &dyn Store,
    tenant: &TenantId,
    session: &SessionId,
) -> Result<(Vec<Message>, ContextBase), RuntimeError> {
    let rewinds = store
        .list_rewinds(tenant, session)
        .await
        .map_err(RuntimeError::store("list_rewinds"))?;
    let latest = if rewinds.is_empty() {
        store
            .latest_compaction(tenant, session)
            .await
            .map_err(RuntimeError::store("latest_compaction"))?
    } else {
        store
            .list_compactions(tenant, session)
            .await
            .map_err(RuntimeError::store("list_compactions"))?
            .into_iter()
            .rev()
            .find(|c| {
                c.through_seq == 0 || visible_messages(&rewinds, HistoryPoint::NOW, c.through_seq)
            })
    };
    let (after, mut history) = match &latest {
        Some(c) => (c.through_seq, vec![summary::summary_message(&c.summary)]),
        None => (0, Vec::new()),
    };
    let stored = store
        .list_messages_after(tenant, session, after)
        .await
        .map_err(RuntimeError::store("list_messages_after"))?;
    let next_seq = stored
        .last()
        .map_or(after, |m| m.seq)
        .max(rewinds.iter().map(|r| r.through_seq).max().unwrap_or(0))
        + 1;
    let mut loaded = Vec::with_capacity(stored.len());
    for message in stored {
        if visible_messages(&rewinds, HistoryPoint::NOW, message.seq) {
            loaded.push(message.seq);
            history.push(message.message);
        }
    }
    Ok((
        history,
        ContextBase {
            loaded,
            next_seq,
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
            loaded: vec![1, 2, 3],
            next_seq: 4,
            summarised: false,
        };
        assert_eq!(plain.seq_of(0), Some(1));
        assert_eq!(plain.seq_of(4), Some(5));
        let compacted = ContextBase {
            loaded: vec![42, 43],
            next_seq: 44,
            summarised: true,
        };
        assert_eq!(compacted.seq_of(0), None);
        assert_eq!(compacted.seq_of(1), Some(42));
        assert_eq!(compacted.seq_of(3), Some(44));
    }

    #[test]
    fn a_rewound_history_maps_across_its_gap() {
        // 1..4 kept, 5..10 rewound away; the run appends from 11
        let base = ContextBase {
            loaded: vec![1, 2, 3, 4],
            next_seq: 11,
            summarised: false,
        };
        assert_eq!(base.seq_of(3), Some(4));
        assert_eq!(base.seq_of(4), Some(11));
        let cut = base.after_cut(3);
        assert_eq!((cut.loaded.as_slice(), cut.next_seq), (&[4][..], 11));
        assert_eq!(cut.seq_of(1), Some(4));
        assert_eq!(cut.seq_of(2), Some(11));
        let past = base.after_cut(6);
        assert_eq!((past.loaded.len(), past.next_seq), (0, 13));
        assert_eq!(past.seq_of(1), Some(13));
    }
}
