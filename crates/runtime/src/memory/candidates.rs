//! What a finished run proposes to remember, and the session memory it
//! leaves, both pure functions of its history and ending.
//!
//! The rule: a command that ran successfully after the run's last change to
//! the workspace is how this workspace is checked; it is proposed as a fact
//! (once: a text already stored is not proposed again). Nothing is proposed
//! from a run that changed nothing it then checked.

use paddock_core::model::{ContentPart, Message};
use paddock_core::store::{MemoryKind, SessionMemory};

use crate::context::summary::{self, SUMMARY_HEADER};

/// Most characters of a command quoted in a candidate.
const COMMAND_CHARS: usize = 200;

/// Tools whose success changes the workspace.
const WRITERS: [&str; 3] = ["write_file", "edit_file", "apply_patch"];

/// One proposed memory record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) kind: MemoryKind,
    pub(crate) text: String,
}

/// The result of the call `id`, if the history holds it.
fn result_of<'h>(history: &'h [Message], id: &str) -> Option<(&'h str, bool)> {
    history
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|p| match p {
            ContentPart::ToolResult(r) if r.call_id == id => Some((r.content.as_str(), r.is_error)),
            _ => None,
        })
}

pub(crate) fn candidates(history: &[Message]) -> Vec<Candidate> {
    let calls: Vec<_> = history.iter().flat_map(Message::tool_calls).collect();
    let Some(last_write) = calls.iter().rposition(|c| {
        WRITERS.contains(&c.name.as_str()) && result_of(history, &c.id).is_some_and(|(_, e)| !e)
    }) else {
        return Vec::new();
    };
    let checked = calls[last_write + 1..].iter().rev().find_map(|c| {
        let command = c.arguments.get("command")?.as_str()?.trim();
        let (content, is_error) = result_of(history, &c.id)?;
        (c.name == "run_command" && !is_error && content.contains("[exit code 0"))
            .then_some(command)
    });
    checked
        .filter(|c| !c.is_empty() && c.chars().count() <= COMMAND_CHARS)
        .map(|command| Candidate {
            kind: MemoryKind::Fact,
            text: format!(
                "`{command}` checks changes in this workspace (it passed after the last change)."
            ),
        })
        .into_iter()
        .collect()
}

/// How a run ended, as its session memory needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome<'a> {
    Completed {
        summary: &'a str,
        remaining: &'a [String],
    },
    Stopped(&'a str),
    AwaitingUser(&'a str),
    Failed(&'a str),
    Cancelled,
}

/// The session memory a run leaves: its outcome on top of what the latest
/// compaction summary (first in `history`, if any) said.
pub(crate) fn session_memory(
    goal: &str,
    outcome: Outcome<'_>,
    history: &[Message],
    facts: &[Candidate],
) -> SessionMemory {
    let earlier = history
        .first()
        .map(Message::joined_text)
        .filter(|t| t.starts_with(SUMMARY_HEADER))
        .unwrap_or_default();
    let mut memory = from_summary(&earlier);
    let (line, next) = match outcome {
        Outcome::Completed { summary, remaining } => {
            (format!("Completed: {}", summary.trim()), remaining.to_vec())
        }
        Outcome::Stopped(text) => (format!("Stopped: {}", text.trim()), Vec::new()),
        Outcome::AwaitingUser(question) => {
            memory.open_questions.push(question.trim().to_owned());
            ("Waiting for the user's answer".to_owned(), Vec::new())
        }
        Outcome::Failed(error) => (format!("Failed: {}", error.trim()), Vec::new()),
        Outcome::Cancelled => ("Cancelled".to_owned(), Vec::new()),
    };
    let done = std::mem::take(&mut memory.summary);
    memory.summary = if done.is_empty() {
        format!("Goal: {}\n{line}", goal.trim())
    } else {
        format!("Goal: {}\n{line}\nEarlier: {done}", goal.trim())
    };
    if !next.is_empty() || matches!(outcome, Outcome::Completed { .. }) {
        memory.next_steps = next;
    }
    memory.facts.extend(facts.iter().map(|c| c.text.clone()));
    memory
}

/// The session memory a compaction summary gives.
pub(crate) fn from_summary(text: &str) -> SessionMemory {
    SessionMemory {
        summary: summary::section(text, "Done").join("; "),
        open_questions: summary::section(text, "Open risks and questions"),
        next_steps: summary::section(text, "To do"),
        facts: summary::section(text, "Constraints"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::model::{ToolCall, ToolResult};
    use serde_json::json;

    fn turn(
        id: &str,
        name: &str,
        args: serde_json::Value,
        result: &str,
        error: bool,
    ) -> [Message; 2] {
        [
            Message::assistant(
                "",
                vec![ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: args,
                }],
            ),
            Message::tool_results(vec![ToolResult {
                call_id: id.into(),
                content: result.into(),
                is_error: error,
            }]),
        ]
    }

    #[test]
    fn a_command_passing_after_the_last_change_is_proposed() {
        let mut h = vec![Message::user("Goal: fix")];
        h.extend(turn(
            "1",
            "run_command",
            json!({"command": "sh test.sh"}),
            "FAIL\n[exit code 1 after 0.1s]",
            false,
        ));
        h.extend(turn(
            "2",
            "edit_file",
            json!({"path": "a.sh"}),
            "edited",
            false,
        ));
        h.extend(turn(
            "3",
            "run_command",
            json!({"command": "sh test.sh"}),
            "PASS\n[exit code 0 after 0.1s]",
            false,
        ));
        let found = candidates(&h);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, MemoryKind::Fact);
        assert!(found[0].text.starts_with("`sh test.sh` checks"));
    }

    #[test]
    fn nothing_is_proposed_without_a_checked_change() {
        let mut h = vec![Message::user("Goal: look")];
        h.extend(turn(
            "1",
            "run_command",
            json!({"command": "ls"}),
            "[exit code 0 after 0.1s]",
            false,
        ));
        assert!(candidates(&h).is_empty(), "no change");
        h.extend(turn(
            "2",
            "write_file",
            json!({"path": "a"}),
            "written",
            false,
        ));
        assert!(candidates(&h).is_empty(), "no check after it");
        h.extend(turn(
            "3",
            "run_command",
            json!({"command": "make"}),
            "[exit code 2 after 1s]",
            false,
        ));
        assert!(candidates(&h).is_empty(), "the check failed");
    }

    #[test]
    fn the_session_memory_joins_the_outcome_and_the_latest_summary() {
        let summary = crate::context::summary::summary_message(
            "Goal:\n- g\nDone:\n- read a\nTo do:\n- fix b\nConstraints:\n- no network\n\
             Open risks and questions:\n- is c used?",
        );
        let m = session_memory(
            "g",
            Outcome::AwaitingUser("which branch?"),
            std::slice::from_ref(&summary),
            &[],
        );
        assert_eq!(
            m.summary,
            "Goal: g\nWaiting for the user's answer\nEarlier: read a"
        );
        assert_eq!(m.open_questions, ["is c used?", "which branch?"]);
        assert_eq!(m.next_steps, ["fix b"]);
        assert_eq!(m.facts, ["no network"]);
        let done = session_memory(
            "g",
            Outcome::Completed {
                summary: "fixed b",
                remaining: &[],
            },
            &[summary],
            &[Candidate {
                kind: MemoryKind::Fact,
                text: "`make` checks".into(),
            }],
        );
        assert!(done.summary.starts_with("Goal: g\nCompleted: fixed b"));
        assert!(done.next_steps.is_empty());
        assert_eq!(done.facts, ["no network", "`make` checks"]);
    }
}
