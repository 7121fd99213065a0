//! Where a compaction cuts the history: the longest old prefix whose removal
//! leaves a recent tail within the tail budget, never between a tool call and
//! its result, and never the last turn.

use paddock_core::model::{Message, Role};

/// The index the kept tail starts at, or None when nothing old enough can go.
///
/// The tail starts at an assistant or user message (a tool-results message
/// always stays with the call before it), holds at most `tail_budget`
/// estimated tokens where it can, and always holds the last assistant turn
/// with what followed it. `protected` leading messages (a previous summary
/// counts as old, so it is 0 or more only for callers that need it) are
/// never a cut on their own: a cut must remove more than them.
pub(crate) fn cut_point(history: &[Message], tail_budget: u64, protected: usize) -> Option<usize> {
    let last_turn = history.iter().rposition(|m| m.role == Role::Assistant)?;
    let mut start = history.len();
    let mut tokens = 0u64;
    for (index, message) in history.iter().enumerate().rev() {
        tokens += message.estimate_tokens();
        if tokens > tail_budget && index < last_turn {
            break;
        }
        if message.role != Role::Tool {
            start = index;
        }
    }
    // a boundary never splits a call from its results
    while start < history.len() && history[start].role == Role::Tool {
        start += 1;
    }
    let start = start.min(last_turn);
    (start > protected).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::model::{ToolCall, ToolResult};
    use serde_json::json;

    fn call(n: usize) -> Message {
        Message::assistant(
            "",
            vec![ToolCall {
                id: format!("c{n}"),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
            }],
        )
    }

    fn result(n: usize, chars: usize) -> Message {
        Message::tool_results(vec![ToolResult {
            call_id: format!("c{n}"),
            content: "x".repeat(chars),
            is_error: false,
        }])
    }

    fn history(turns: usize, chars: usize) -> Vec<Message> {
        let mut h = vec![Message::user("Goal: g")];
        for n in 0..turns {
            h.push(call(n));
            h.push(result(n, chars));
        }
        h
    }

    #[test]
    fn the_tail_fits_the_budget_and_starts_at_a_call() {
        // each turn ~ 8 + 4 + 4 + 100 = ~120 tokens
        let h = history(20, 400);
        let start = cut_point(&h, 500, 0).unwrap();
        assert_eq!(h[start].role, Role::Assistant);
        let tail: u64 = h[start..].iter().map(Message::estimate_tokens).sum();
        assert!(tail <= 500, "{tail}");
        let one_more: u64 = h[start - 2..].iter().map(Message::estimate_tokens).sum();
        assert!(one_more > 500, "the tail is as long as it may be");
    }

    #[test]
    fn a_huge_last_turn_is_kept_whole() {
        let mut h = history(5, 40);
        h.push(call(9));
        h.push(result(9, 40_000));
        let start = cut_point(&h, 100, 0).unwrap();
        assert_eq!(start, h.len() - 2);
    }

    #[test]
    fn nothing_to_cut_when_only_protected_messages_are_old() {
        let h = history(1, 40);
        assert_eq!(cut_point(&h, 10, 1), None);
        assert_eq!(cut_point(&[Message::user("g")], 10, 0), None);
    }

    #[test]
    fn a_user_message_may_start_the_tail() {
        let mut h = history(6, 400);
        h.push(Message::user("Goal: next"));
        h.push(call(7));
        h.push(result(7, 10));
        let start = cut_point(&h, 60, 0).unwrap();
        assert_eq!(h[start].role, Role::User);
    }
}
