//! The last resort when a request is still too large after summarising
//! compaction (`crate::context::compactor`), as when the kept tail holds a
//! huge result: old tool results (and then long strings in old tool-call
//! arguments) are cut down to a head with a marker. Only the request is
//! changed, never the stored history; the system prompt, every user message
//! (the goal among them) and the most recent turns stay intact.

use paddock_core::model::{ContentPart, ModelRequest, Role};
use serde_json::Value;

/// The most recent messages are never shortened.
pub(crate) const KEEP_RECENT: usize = 6;
/// Characters kept at the head of a shortened text.
const KEEP_CHARS: usize = 200;

/// What compaction did to one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Compaction {
    pub(crate) tokens_before: u64,
    pub(crate) tokens_after: u64,
    /// Texts shortened.
    pub(crate) shortened: usize,
}

fn marker(omitted: usize, what: &str) -> String {
    format!(
        "\n[compacted: {omitted} more characters of this old {what} omitted to fit the context window]"
    )
}

/// `text` cut to its head plus a marker, if that makes it shorter.
fn shorten(text: &str, what: &str) -> Option<String> {
    let total = text.chars().count();
    let (end, _) = text.char_indices().nth(KEEP_CHARS)?;
    let omitted = total - KEEP_CHARS;
    let marker = marker(omitted, what);
    (marker.chars().count() < omitted).then(|| format!("{}{marker}", &text[..end]))
}

fn shorten_strings(value: &mut Value) -> usize {
    match value {
        Value::String(text) => match shorten(text, "tool argument") {
            Some(short) => {
                *text = short;
                1
            }
            None => 0,
        },
        Value::Array(items) => items.iter_mut().map(shorten_strings).sum(),
        Value::Object(map) => map.values_mut().map(shorten_strings).sum(),
        _ => 0,
    }
}

/// Shortens old parts of `request` until its estimate is under `limit`,
/// oldest first: tool results, then tool-call arguments.
pub(crate) fn compact(request: &mut ModelRequest, limit: u64) -> Compaction {
    let before = request.estimate_tokens();
    let mut stats = Compaction {
        tokens_before: before,
        tokens_after: before,
        shortened: 0,
    };
    if before <= limit {
        return stats;
    }
    let old = request.messages.len().saturating_sub(KEEP_RECENT);
    let mut current = before;
    for pass in [Pass::Results, Pass::Arguments] {
        for message in request.messages.iter_mut().take(old) {
            if current <= limit {
                break;
            }
            if message.role == Role::User || message.role == Role::System {
                continue;
            }
            let before_message = message.estimate_tokens();
            let mut changed = 0;
            for part in &mut message.content {
                match (pass, part) {
                    (Pass::Results, ContentPart::ToolResult(result)) => {
                        if let Some(short) = shorten(&result.content, "tool result") {
                            result.content = short;
                            changed += 1;
                        }
                    }
                    (Pass::Arguments, ContentPart::ToolCall(call)) => {
                        changed += shorten_strings(&mut call.arguments);
                    }
                    _ => {}
                }
            }
            if changed > 0 {
                stats.shortened += changed;
                current = current.saturating_sub(before_message) + message.estimate_tokens();
            }
        }
    }
    stats.tokens_after = current;
    stats
}

#[derive(Debug, Clone, Copy)]
enum Pass {
    Results,
    Arguments,
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::model::{Message, ToolCall, ToolResult};
    use serde_json::json;

    fn turn(n: usize, result_chars: usize) -> [Message; 2] {
        let id = format!("c{n}");
        [
            Message::assistant(
                "",
                vec![ToolCall {
                    id: id.clone(),
                    name: "read_file".into(),
                    arguments: json!({"path": format!("f{n}")}),
                }],
            ),
            Message::tool_results(vec![ToolResult {
                call_id: id,
                content: "x".repeat(result_chars),
                is_error: false,
            }]),
        ]
    }

    fn request(turns: usize, result_chars: usize) -> ModelRequest {
        let mut messages = vec![Message::user("Goal: make the tests pass")];
        for n in 0..turns {
            messages.extend(turn(n, result_chars));
        }
        ModelRequest {
            system: Some("You are an agent.".into()),
            messages,
            ..ModelRequest::default()
        }
    }

    fn result_len(message: &Message) -> usize {
        message
            .content
            .iter()
            .map(|part| match part {
                ContentPart::ToolResult(r) => r.content.chars().count(),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn a_request_under_the_threshold_is_left_alone() {
        let mut req = request(5, 1_000);
        let original = req.clone();
        let stats = compact(&mut req, 70_000);
        assert_eq!(req, original);
        assert_eq!(stats.shortened, 0);
        assert_eq!(stats.tokens_before, stats.tokens_after);
    }

    #[test]
    fn old_results_are_shortened_and_the_goal_and_recent_turns_kept() {
        // 10 turns of 4000-char results: ~10k tokens; window 8k -> limit 5.6k
        let mut req = request(10, 4_000);
        let original = req.clone();
        let stats = compact(&mut req, 5_600);
        assert!(stats.tokens_before > 5_600);
        assert!(stats.tokens_after <= 5_600, "{stats:?}");
        assert_eq!(stats.tokens_after, req.estimate_tokens());
        assert!(stats.shortened > 0);
        // system prompt and goal untouched
        assert_eq!(req.system, original.system);
        assert_eq!(req.messages[0], original.messages[0]);
        // the last KEEP_RECENT messages untouched
        let n = req.messages.len();
        assert_eq!(
            req.messages[n - KEEP_RECENT..],
            original.messages[n - KEEP_RECENT..]
        );
        // the oldest result was cut, with the marker, keeping its head
        let ContentPart::ToolResult(first) = &req.messages[2].content[0] else {
            panic!("not a tool result");
        };
        assert!(first.content.starts_with(&"x".repeat(KEEP_CHARS)));
        assert!(first.content.contains("[compacted: 3800 more characters"));
        // shortening stops once under the limit: the newest old results stay whole
        assert_eq!(result_len(&req.messages[n - KEEP_RECENT - 1]), 4_000);
        // calls and results still pair up
        assert_eq!(req.messages.len(), original.messages.len());
    }

    #[test]
    fn long_arguments_of_old_calls_go_when_results_are_not_enough() {
        let mut req = request(0, 0);
        for n in 0..8 {
            req.messages.push(Message::assistant(
                "",
                vec![ToolCall {
                    id: format!("w{n}"),
                    name: "write_file".into(),
                    arguments: json!({"path": "a", "content": "y".repeat(4_000)}),
                }],
            ));
            req.messages.push(Message::tool_results(vec![ToolResult {
                call_id: format!("w{n}"),
                content: "ok".into(),
                is_error: false,
            }]));
        }
        let stats = compact(&mut req, 4_200);
        assert!(stats.tokens_after <= 4_200, "{stats:?}");
        let call = req.messages[1].tool_calls().next().unwrap();
        let content = call.arguments["content"].as_str().unwrap();
        assert!(content.contains("old tool argument omitted"));
        assert_eq!(call.arguments["path"], "a");
    }

    #[test]
    fn short_texts_are_never_made_longer() {
        assert_eq!(shorten(&"a".repeat(KEEP_CHARS), "x"), None);
        assert_eq!(shorten(&"a".repeat(KEEP_CHARS + 20), "tool result"), None);
        assert!(shorten(&"a".repeat(KEEP_CHARS + 500), "tool result").is_some());
    }
}
