//! Checkpoints of a session: its workspace as a manifest blob plus where its
//! history, events and plan stood, and the rewinds that took a session back
//! to one.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::{CheckpointId, RunId, SessionId, TenantId, WorkspaceId};

text_enum!(
    /// Why a checkpoint was taken.
    CheckpointReason {
        /// Before a run started working (the state a user can always go back to).
        RunStart => "run_start",
        /// After a tool batch that changed the workspace.
        ToolBatch => "tool_batch",
        /// The state a rewind restored.
        Rewind => "rewind",
    }
);

/// One checkpoint. The store fills `message_seq`, `event_seq` and
/// `plan_version` from the session when it records the row (the values of
/// the argument are ignored), so they are where the session stood then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub id: CheckpointId,
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    pub workspace: WorkspaceId,
    pub reason: CheckpointReason,
    /// The session's last message and event when it was taken.
    pub message_seq: u64,
    pub event_seq: u64,
    /// The session's plan version then (0: no plan yet).
    pub plan_version: u64,
    /// The blob holding the workspace's manifest.
    pub manifest_hash: String,
    pub file_count: u64,
    /// File content, all files together.
    pub bytes: u64,
    /// Blobs (and their bytes) this checkpoint stored that no earlier one had.
    pub new_blobs: u64,
    pub new_bytes: u64,
    pub created_at: Timestamp,
}

/// A rewind of a session's history: the messages after `to_seq` up to and
/// including `through_seq` (the session's last message when it happened)
/// are no longer in the context of later runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewind {
    pub tenant: TenantId,
    pub session: SessionId,
    /// The run that recorded the rewind.
    pub run: RunId,
    pub checkpoint: CheckpointId,
    /// The checkpoint's position: its `message_seq` and `event_seq`.
    pub to_seq: u64,
    pub to_event_seq: u64,
    /// The session's last message and event when it happened (the store
    /// fills both; the values of the argument are ignored).
    pub through_seq: u64,
    pub through_event_seq: u64,
    pub created_at: Timestamp,
}

/// A point in a session's history: its last message and last event then
/// (a checkpoint's `message_seq` and `event_seq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryPoint {
    pub message_seq: u64,
    pub event_seq: u64,
}

impl HistoryPoint {
    /// Now: after every message and event.
    pub const NOW: Self = Self {
        message_seq: u64::MAX,
        event_seq: u64::MAX,
    };

    /// Where `checkpoint` stood.
    pub fn of(checkpoint: &Checkpoint) -> Self {
        Self {
            message_seq: checkpoint.message_seq,
            event_seq: checkpoint.event_seq,
        }
    }
}

/// Whether message `seq` is in the session's history as of the point `at`
/// ([`HistoryPoint::NOW`]: now) given its `rewinds` (any order). The
/// history as of a point is the history as of the latest rewind made by
/// then (`through_seq` and `through_event_seq` at or before it) at its
/// target (`to_seq`, `to_event_seq`), followed by the messages after it up
/// to the point; with no rewind, every message up to it. So a rewind to a
/// checkpoint taken after an earlier rewind keeps that rewind, and one to a
/// checkpoint from before it (even at the same message, as the checkpoint
/// a rewind takes of what it overwrites is) does not. Rewinds are ordered
/// by event, then message position; each step follows an earlier one, so
/// the walk ends.
pub fn visible_messages(rewinds: &[Rewind], at: HistoryPoint, seq: u64) -> bool {
    let key = |r: &Rewind| (r.through_event_seq, r.through_seq);
    let mut at = at;
    let mut before: Option<(u64, u64)> = None;
    loop {
        if seq > at.message_seq {
            return false;
        }
        let latest = rewinds
            .iter()
            .filter(|r| r.through_seq <= at.message_seq && r.through_event_seq <= at.event_seq)
            .filter(|r| before.is_none_or(|b| key(r) < b))
            .max_by_key(|r| key(r));
        match latest {
            None => return true,
            Some(r) if seq > r.through_seq => return true,
            Some(r) => {
                at = HistoryPoint {
                    message_seq: r.to_seq,
                    event_seq: r.to_event_seq,
                };
                before = Some(key(r));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rewind(to_seq: u64, through_seq: u64) -> Rewind {
        // events: each message one event, the rewind one more
        at(to_seq, to_seq, through_seq, through_seq)
    }

    fn at(to_seq: u64, to_event_seq: u64, through_seq: u64, through_event_seq: u64) -> Rewind {
        Rewind {
            tenant: TenantId::parse("acme").unwrap(),
            session: SessionId::generate(),
            run: RunId::generate(),
            checkpoint: CheckpointId::generate(),
            to_seq,
            to_event_seq,
            through_seq,
            through_event_seq,
            created_at: Timestamp::from_millis(0),
        }
    }

    fn visible(rewinds: &[Rewind], upto: u64) -> Vec<u64> {
        (1..=upto)
            .filter(|s| visible_messages(rewinds, HistoryPoint::NOW, *s))
            .collect()
    }

    #[test]
    fn without_rewinds_every_message_is_visible() {
        assert_eq!(visible(&[], 4), [1, 2, 3, 4]);
    }

    #[test]
    fn a_rewind_hides_what_came_after_its_checkpoint() {
        // 1..10, rewound to 4: 5..10 gone; 11.. follow
        assert_eq!(visible(&[rewind(4, 10)], 12), [1, 2, 3, 4, 11, 12]);
    }

    #[test]
    fn a_rewind_to_a_checkpoint_after_an_earlier_rewind_keeps_it() {
        // then 11..15, a checkpoint at 13, rewound to it at 15
        let rewinds = [rewind(4, 10), rewind(13, 15)];
        assert_eq!(visible(&rewinds, 16), [1, 2, 3, 4, 11, 12, 13, 16]);
    }

    #[test]
    fn a_rewind_to_a_checkpoint_before_an_earlier_rewind_undoes_it() {
        // a checkpoint at 8 (before the first rewind at 10), rewound to at 15
        let rewinds = [rewind(4, 10), rewind(8, 15)];
        assert_eq!(visible(&rewinds, 16), [1, 2, 3, 4, 5, 6, 7, 8, 16]);
    }

    #[test]
    fn the_history_as_of_an_earlier_point_ignores_later_rewinds() {
        let rewinds = [rewind(4, 10), rewind(8, 15)];
        let point = HistoryPoint {
            message_seq: 13,
            event_seq: 13,
        };
        let at_13: Vec<u64> = (1..=16)
            .filter(|s| visible_messages(&rewinds, point, *s))
            .collect();
        assert_eq!(at_13, [1, 2, 3, 4, 11, 12, 13]);
    }

    #[test]
    fn a_rewind_to_the_checkpoint_taken_just_before_a_rewind_undoes_it() {
        // 1..10; at event 20 a checkpoint of the workspace, then at event 21
        // the rewind to message 4; then, no message since, at event 25 the
        // rewind to that checkpoint: all of 1..10 is back
        let first = at(4, 6, 10, 21);
        let undo = at(10, 20, 10, 25);
        assert_eq!(visible(std::slice::from_ref(&first), 10), [1, 2, 3, 4]);
        assert_eq!(
            visible(&[first.clone(), undo.clone()], 10),
            (1..=10).collect::<Vec<_>>()
        );
        assert_eq!(
            visible(&[undo, first.clone()], 10),
            (1..=10).collect::<Vec<_>>(),
            "any order"
        );
        // the checkpoint of the restored state, just after the first rewind, keeps it
        let to_restored = at(10, 22, 10, 30);
        assert_eq!(visible(&[first, to_restored], 10), [1, 2, 3, 4]);
    }
}
