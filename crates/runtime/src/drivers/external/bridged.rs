//! What an agent CLI reported, in Paddock's terms: each CLI's JSON lines
//! are read into these (claude.rs, codex.rs, opencode.rs), and the bridge
//! (bridge.rs) records them as a built-in run's events, messages and
//! invocations.

use serde_json::Value;

use crate::tools::Effect;

/// Tokens and cost a CLI reported spending since its last report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cost_micro_usd: u64,
}

impl Spent {
    pub(crate) fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// One thing an agent CLI reported.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bridged {
    /// The CLI's own session, which its resume takes.
    Session(String),
    /// The CLI asked its model again: one model turn.
    Turn,
    /// A piece of the model's text as it streams (shown live, not stored;
    /// the whole text comes as [`Bridged::Text`]).
    Delta(String),
    /// Text the model wrote.
    Text(String),
    /// The model asked for a tool.
    ToolCall {
        id: String,
        tool: String,
        arguments: Value,
    },
    /// A tool's result, with what it did to the workspace.
    ToolResult {
        id: String,
        content: String,
        is_error: bool,
        effects: Vec<Effect>,
    },
    Spent(Spent),
    /// The CLI's own end: its final text, and whether it reports failure.
    Finished {
        text: String,
        is_error: bool,
    },
    /// An error the CLI reported (it may go on).
    Error(String),
}

/// A cost a CLI reports in dollars, in micro-dollars (0 when absurd).
pub(crate) fn micro_usd(dollars: f64) -> u64 {
    paddock_core::model::dollars_to_micro(dollars).unwrap_or(0)
}

/// A JSON field as text: strings as they are, anything else as JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match part.get("text") {
                Some(Value::String(text)) => text.clone(),
                _ => text_of(part),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// A tool call's effects once its result is in: a shell command finished
/// (its exit code, when the CLI says), or workspace files written.
pub(crate) fn command_finished(command: &str, exit_code: Option<i32>, failed: bool) -> Effect {
    Effect::CommandFinished {
        command: command.to_owned(),
        exit_code,
        success: !failed && exit_code.is_none_or(|code| code == 0),
    }
}

/// A path a CLI's file tool names, relative to /workspace.
pub(crate) fn workspace_relative(path: &str) -> String {
    let path = path.trim();
    path.strip_prefix("/workspace/")
        .unwrap_or(path)
        .trim_start_matches("./")
        .to_owned()
}
