//! What an agent CLI is asked: the run's goal with its criteria and
//! instructions, and for a run that cannot go on in the CLI's own session,
//! what the session said before.

use paddock_core::model::{ContentPart, Message, Role};

/// Most characters of earlier history carried into a new CLI session.
const HISTORY_CHARS: usize = 20_000;

/// How the CLI starts on the run's goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// A new run: a new CLI session, told what the session said before.
    New,
    /// A resumed run going on in the CLI's own session (it has the history).
    InItsSession,
    /// A resumed run with no CLI session to go on with: a new one, told all
    /// the session said, the interrupted run's steps included.
    ResumedAfresh,
}

/// The prompt the CLI starts with.
pub(crate) fn prompt(
    goal: &str,
    criteria: &[String],
    instructions: Option<&str>,
    history: &[Message],
    start: Start,
) -> String {
    let mut text = String::new();
    let earlier = match start {
        Start::New => earlier(before_goal(history)),
        Start::ResumedAfresh => earlier(history),
        Start::InItsSession => None,
    };
    if start != Start::New {
        text.push_str(
            "Your previous run on this goal was interrupted; the workspace is as the last \
             finished step left it. Go on with the goal.\n\n",
        );
    }
    if let Some(earlier) = earlier {
        text.push_str("Earlier in this session (oldest first, cut to the latest):\n");
        text.push_str(&earlier);
        text.push_str("\n\n");
    }
    text.push_str(goal.trim());
    if !criteria.is_empty() {
        text.push_str(
            "\n\nSuccess criteria (checked against what happens in the workspace, so show each \
             one with a command that passes):",
        );
        for criterion in criteria {
            text.push_str("\n- ");
            text.push_str(criterion);
        }
    }
    if let Some(instructions) = instructions.filter(|i| !i.trim().is_empty()) {
        text.push_str("\n\n");
        text.push_str(instructions.trim());
    }
    text.push_str("\n\nThe workspace is /workspace (your working directory).");
    text
}

/// The session's messages before a new run's goal (its last user message).
fn before_goal(history: &[Message]) -> &[Message] {
    match history.iter().rposition(|m| m.role == Role::User) {
        Some(at) => &history[..at],
        None => history,
    }
}

/// `messages` as text, the latest kept when it is long.
fn earlier(messages: &[Message]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for message in messages {
        for part in &message.content {
            let line = match (&message.role, part) {
                (Role::User, ContentPart::Text { text }) => format!("user: {text}"),
                (Role::Assistant, ContentPart::Text { text }) => format!("agent: {text}"),
                (_, ContentPart::ToolCall(call)) => {
                    format!("agent ran {} {}", call.name, call.arguments)
                }
                (_, ContentPart::ToolResult(result)) => {
                    let first = result.content.lines().next().unwrap_or_default();
                    format!("result: {first}")
                }
                _ => continue,
            };
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return None;
    }
    let text = lines.join("\n");
    let count = text.chars().count();
    Some(if count > HISTORY_CHARS {
        let cut: String = text.chars().skip(count - HISTORY_CHARS).collect();
        format!("...{cut}")
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_session_gets_the_goal_criteria_and_what_came_before() {
        let history = vec![
            Message::user("make calc.py add"),
            Message::assistant("done", Vec::new()),
            Message::user("now subtract"),
        ];
        let text = prompt(
            "now subtract",
            &["sh test.sh exits 0".to_owned()],
            Some("Be brief."),
            &history,
            Start::New,
        );
        assert!(text.starts_with("Earlier in this session"), "{text}");
        assert!(
            text.contains("user: make calc.py add\nagent: done\n\nnow subtract"),
            "{text}"
        );
        assert!(text.contains("\n- sh test.sh exits 0"), "{text}");
        assert!(text.contains("Be brief."), "{text}");
        let resumed = prompt("g", &[], None, &history, Start::InItsSession);
        assert!(resumed.starts_with("Your previous run"), "{resumed}");
        assert!(!resumed.contains("Earlier"), "{resumed}");
        // no session to go on with: everything the session said, its last goal too
        let afresh = prompt("g", &[], None, &history, Start::ResumedAfresh);
        assert!(
            afresh.contains("agent: done\nuser: now subtract"),
            "{afresh}"
        );
        let first = prompt("g", &[], None, &[Message::user("g")], Start::New);
        assert!(first.starts_with("g\n\nThe workspace"), "{first}");
    }
}
