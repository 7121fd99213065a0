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
    pub to_seq: u64,
    pub through_seq: u64,
    pub created_at: Timestamp,
}

/// Whether message `seq` is in the session's history as of message `limit`
/// (`u64::MAX`: now) given its `rewinds` (any order). The history as of a
/// point `limit` is the history as of the
/// latest rewind made by then (`through_seq <= limit`) at its target
/// (`to_seq`), followed by the messages after it up to `limit`; with no
/// rewind, every message up to `limit`. So a rewind to a checkpoint taken
/// after an earlier rewind keeps that rewind, and one to a checkpoint from
/// before it does not.
pub fn visible_messages(rewinds: &[Rewind], limit: u64, seq: u64) -> bool {
    let mut limit = limit;
    loop {
        if seq > limit {
            return false;
        }
        let latest = rewinds
            .iter()
            .filter(|r| r.through_seq <= limit)
            .max_by_key(|r| r.through_seq);
        match latest {
            None => return true,
            Some(r) if seq > r.through_seq => return true,
            Some(r) => limit = r.to_seq.min(r.through_seq.saturating_sub(1)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rewind(to_seq: u64, through_seq: u64) -> Rewind {
        Rewind {
            tenant: TenantId::parse("acme").unwrap(),
            session: SessionId::generate(),
            run: RunId::generate(),
            checkpoint: CheckpointId::generate(),
            to_seq,
            through_seq,
            created_at: Timestamp::from_millis(0),
        }
    }

    fn visible(rewinds: &[Rewind], upto: u64) -> Vec<u64> {
        (1..=upto)
            .filter(|s| visible_messages(rewinds, u64::MAX, *s))
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
        let at_13: Vec<u64> = (1..=16)
            .filter(|s| visible_messages(&rewinds, 13, *s))
            .collect();
        assert_eq!(at_13, [1, 2, 3, 4, 11, 12, 13]);
    }
}
