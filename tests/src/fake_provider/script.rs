//! What the fake model answers: the test's script of turns, and which turn a
//! request gets.
//!
//! A request is answered with the turn whose index is the number of tool
//! results already in its conversation (clamped to the last turn), so a
//! retried or resumed request gets the same answer. A request advertising no
//! tools (opencode's title generation) gets a short text and no turn.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The answer a request without tools gets.
pub const TITLE: &str = "Fake title";

/// Token counts a turn reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Self {
            input_tokens: 123,
            output_tokens: 42,
        }
    }
}

/// What the model says in one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// Calls `tool` (its name as the CLI advertises it: Claude `Bash`,
    /// `Write`, `Edit`; Codex `exec_command` with `{"cmd": ...}`; opencode
    /// `bash`, `write`) with these arguments.
    ToolCall { tool: String, arguments: Value },
    /// A final text answer, sent as two deltas.
    Text(String),
    /// `count` text deltas (`"delta 0 "`, `"delta 1 "`, ...), `every_ms`
    /// apart: a long answer to cancel in the middle of.
    Deltas { count: usize, every_ms: u64 },
}

/// One turn of the script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    #[serde(flatten)]
    pub reply: Reply,
    #[serde(default)]
    pub usage: Usage,
    /// How long the model "thinks": the stream opens, then waits this long
    /// before the content (a non-streamed answer waits before answering).
    #[serde(default)]
    pub delay_ms: u64,
}

impl Turn {
    pub fn tool(tool: &str, arguments: Value) -> Self {
        Self::of(Reply::ToolCall {
            tool: tool.to_owned(),
            arguments,
        })
    }

    pub fn text(text: &str) -> Self {
        Self::of(Reply::Text(text.to_owned()))
    }

    pub fn deltas(count: usize, every: Duration) -> Self {
        Self::of(Reply::Deltas {
            count,
            every_ms: millis(every),
        })
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay_ms = millis(delay);
        self
    }

    fn of(reply: Reply) -> Self {
        Self {
            reply,
            usage: Usage::default(),
            delay_ms: 0,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The test's script: the turns in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    pub turns: Vec<Turn>,
}

impl Script {
    pub fn new(turns: Vec<Turn>) -> Self {
        Self { turns }
    }

    /// Run `command` with the shell tool of `cli` then answer `final_text`:
    /// `cli` is `"claude"` (`Bash`), `"codex"` (`exec_command`) or anything
    /// else for opencode (`bash`).
    pub fn shell_then_text(cli: &str, command: &str, final_text: &str) -> Self {
        let call = match cli {
            "claude" => Turn::tool(
                "Bash",
                serde_json::json!({"command": command, "description": "Run a command"}),
            ),
            "codex" => Turn::tool("exec_command", serde_json::json!({"cmd": command})),
            _ => Turn::tool(
                "bash",
                serde_json::json!({"command": command, "description": "Run a command"}),
            ),
        };
        Self::new(vec![call, Turn::text(final_text)])
    }

    /// Reads a script file: `{"turns": [...]}` or just the list of turns.
    pub fn from_json(text: &str) -> anyhow::Result<Self> {
        let value: Value = serde_json::from_str(text)?;
        if value.is_array() {
            Ok(Self::new(serde_json::from_value(value)?))
        } else {
            Ok(serde_json::from_value(value)?)
        }
    }
}

/// The content of one answer, whatever the wire format.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    Tool { name: String, arguments: String },
    Text { parts: Vec<String>, every: Duration },
}

impl Content {
    pub(crate) fn text(&self) -> String {
        match self {
            Content::Text { parts, .. } => parts.concat(),
            Content::Tool { .. } => String::new(),
        }
    }
}

/// What to answer one request with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The turn answered; `None` for a request without tools.
    pub turn: Option<usize>,
    pub content: Content,
    pub usage: Usage,
    pub delay: Duration,
}

/// The answer to a request with `tool_results` tool results in it, which
/// advertises tools or not.
pub(crate) fn plan(script: &Script, has_tools: bool, tool_results: usize) -> Plan {
    let last = script.turns.len().checked_sub(1);
    let (Some(last), true) = (last, has_tools) else {
        return Plan {
            turn: None,
            content: Content::Text {
                parts: halves(TITLE),
                every: Duration::ZERO,
            },
            usage: Usage {
                input_tokens: 20,
                output_tokens: 3,
            },
            delay: Duration::ZERO,
        };
    };
    let index = tool_results.min(last);
    let Some(turn) = script.turns.get(index) else {
        return plan(&Script::default(), false, 0);
    };
    let content = match &turn.reply {
        Reply::ToolCall { tool, arguments } => Content::Tool {
            name: tool.clone(),
            arguments: arguments.to_string(),
        },
        Reply::Text(text) => Content::Text {
            parts: halves(text),
            every: Duration::ZERO,
        },
        Reply::Deltas { count, every_ms } => Content::Text {
            parts: (0..*count).map(|i| format!("delta {i} ")).collect(),
            every: Duration::from_millis(*every_ms),
        },
    };
    Plan {
        turn: Some(index),
        content,
        usage: turn.usage,
        delay: Duration::from_millis(turn.delay_ms),
    }
}

/// `text` in two pieces, split on a character boundary.
pub(crate) fn halves(text: &str) -> Vec<String> {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    let (a, b) = text.split_at(mid);
    vec![a.to_owned(), b.to_owned()]
}

/// A JSON array's items (none when absent or not an array).
pub(crate) fn items<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Whether the request advertises any tool.
pub(crate) fn has_tools(body: &Value) -> bool {
    !items(body, "tools").is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn script() -> Script {
        Script::new(vec![
            Turn::tool("Bash", json!({"command": "echo hi"})),
            Turn::tool("Bash", json!({"command": "echo again"})).with_usage(5, 6),
            Turn::text("done"),
        ])
    }

    #[test]
    fn the_turn_is_the_number_of_tool_results_clamped() {
        let s = script();
        assert_eq!(plan(&s, true, 0).turn, Some(0));
        assert_eq!(plan(&s, true, 1).turn, Some(1));
        assert_eq!(
            plan(&s, true, 1).usage,
            Usage {
                input_tokens: 5,
                output_tokens: 6
            }
        );
        assert_eq!(plan(&s, true, 2).turn, Some(2));
        assert_eq!(plan(&s, true, 7).turn, Some(2));
        assert_eq!(plan(&s, true, 7).content.text(), "done");
        match plan(&s, true, 0).content {
            Content::Tool { name, arguments } => {
                assert_eq!(name, "Bash");
                assert_eq!(arguments, r#"{"command":"echo hi"}"#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_request_without_tools_gets_a_title_and_no_turn() {
        let p = plan(&script(), false, 0);
        assert_eq!(p.turn, None);
        assert_eq!(p.content.text(), TITLE);
        assert_eq!(plan(&Script::default(), true, 3).turn, None);
    }

    #[test]
    fn deltas_and_delays() {
        let s = Script::new(vec![
            Turn::deltas(4, Duration::from_millis(10)).with_delay(Duration::from_secs(2)),
        ]);
        let p = plan(&s, true, 0);
        assert_eq!(p.delay, Duration::from_secs(2));
        match p.content {
            Content::Text { parts, every } => {
                assert_eq!(parts.len(), 4);
                assert_eq!(every, Duration::from_millis(10));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn halves_split_on_char_boundaries() {
        assert_eq!(halves("héé").concat(), "héé");
        assert_eq!(halves("abcd"), vec!["ab", "cd"]);
    }

    #[test]
    fn scripts_read_from_json() {
        let text = r#"[
            {"tool_call": {"tool": "Bash", "arguments": {"command": "ls"}}, "usage": {"input_tokens": 1, "output_tokens": 2}},
            {"deltas": {"count": 3, "every_ms": 5}, "delay_ms": 100},
            {"text": "bye"}
        ]"#;
        let s = Script::from_json(text).unwrap();
        assert_eq!(s.turns.len(), 3);
        assert_eq!(
            s.turns[0].usage,
            Usage {
                input_tokens: 1,
                output_tokens: 2
            }
        );
        assert_eq!(s.turns[1].delay_ms, 100);
        assert_eq!(s.turns[2], Turn::text("bye"));
        let wrapped = Script::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(wrapped, s);
    }
}
