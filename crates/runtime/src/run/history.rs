//! Repairing a history a dead process left behind: when a run stopped between
//! the model's tool calls and their results, the calls have no answers, and
//! providers refuse a transcript like that. A new run first appends results
//! saying those calls never finished.

use std::collections::HashSet;

use paddock_core::model::{ContentPart, Message, Role, ToolResult};

/// The results message that answers the trailing unanswered tool calls of
/// `history`, if there are any.
pub(crate) fn unanswered_calls(history: &[Message]) -> Option<Message> {
    let (index, assistant) = history
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)?;
    let answered: HashSet<&str> = history[index + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|part| match part {
            ContentPart::ToolResult(result) => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    let missing: Vec<ToolResult> = assistant
        .tool_calls()
        .filter(|call| !answered.contains(call.id.as_str()))
        .map(|call| ToolResult {
            call_id: call.id.clone(),
            content: "No result: the run stopped before this call finished.".to_owned(),
            is_error: true,
        })
        .collect();
    (!missing.is_empty()).then(|| Message::tool_results(missing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::model::ToolCall;
    use serde_json::json;

    fn calls(ids: &[&str]) -> Message {
        Message::assistant(
            "",
            ids.iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "read_file".into(),
                    arguments: json!({}),
                })
                .collect(),
        )
    }

    fn results(ids: &[&str]) -> Message {
        Message::tool_results(
            ids.iter()
                .map(|id| ToolResult {
                    call_id: (*id).into(),
                    content: "ok".into(),
                    is_error: false,
                })
                .collect(),
        )
    }

    #[test]
    fn trailing_calls_without_results_get_error_results() {
        let history = vec![Message::user("goal"), calls(&["a", "b"])];
        let repair = unanswered_calls(&history).unwrap();
        assert_eq!(repair.role, Role::Tool);
        let ids: Vec<_> = repair
            .content
            .iter()
            .map(|p| match p {
                ContentPart::ToolResult(r) => (r.call_id.as_str(), r.is_error),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, [("a", true), ("b", true)]);
    }

    #[test]
    fn partly_answered_calls_get_only_the_missing_results() {
        let history = vec![calls(&["a", "b"]), results(&["a"])];
        let repair = unanswered_calls(&history).unwrap();
        assert_eq!(repair.content.len(), 1);
    }

    #[test]
    fn a_complete_history_needs_nothing() {
        assert_eq!(unanswered_calls(&[]), None);
        assert_eq!(
            unanswered_calls(&[Message::user("g"), calls(&["a"]), results(&["a"])]),
            None
        );
        assert_eq!(
            unanswered_calls(&[Message::user("g"), Message::assistant("hi", vec![])]),
            None
        );
    }
}
