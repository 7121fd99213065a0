//! What a compaction asks the model, and what it uses when the model fails.
//!
//! The summary input is the replaced history as a plain transcript: texts,
//! tool calls and results each cut to a head, and anything that looks like a
//! blob (a long run of characters without a space: base64, minified code,
//! binary output) named by its size instead. When the transcript is still
//! too large for the summary call, its oldest entries go first (the previous
//! summary and the goal, at the start, stay).

use paddock_core::model::{
    ContentPart, ContextProfile, Message, ModelRequest, RequestPurpose, Role, ToolCall,
    estimate_tokens,
};

/// The headings of a structured summary, in order.
pub(crate) const SECTIONS: [&str; 7] = [
    "Goal",
    "Done",
    "To do",
    "Constraints",
    "Decisions",
    "Files touched",
    "Open risks and questions",
];

/// How a summary opens the compacted history the model sees.
pub(crate) const SUMMARY_HEADER: &str =
    "[Summary of the earlier conversation, compacted to fit the context window]";

/// Characters kept of one text, tool argument or result in the transcript.
const ENTRY_CHARS: usize = 600;
/// A word at least this long is taken for a blob.
const BLOB_CHARS: usize = 200;

const SUMMARISER: &str = "You summarise the earlier part of a coding agent's conversation so \
    that the agent can continue its work from the summary alone. Be factual and specific: name \
    files, commands, results and decisions. Answer with exactly these sections, each a heading \
    line followed by short bullet points (write 'none' where there is nothing):";

/// The message that stands for the replaced history.
pub(crate) fn summary_message(summary: &str) -> Message {
    Message::user(format!("{SUMMARY_HEADER}\n{}", summary.trim()))
}

/// `text` with blobs named by their size and cut to `max` characters.
fn strip(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let chars = word.chars().count();
        if chars >= BLOB_CHARS {
            out.push_str(&format!("[blob of {chars} characters omitted]"));
        } else {
            out.push_str(word);
        }
        if out.chars().count() > max {
            break;
        }
    }
    match out.char_indices().nth(max) {
        Some((end, _)) => format!("{} [... cut]", &out[..end]),
        None => out,
    }
}

fn render_call(call: &ToolCall) -> String {
    format!(
        "called {}({})",
        call.name,
        strip(&call.arguments.to_string(), ENTRY_CHARS / 2)
    )
}

/// One transcript entry per message part.
fn transcript(history: &[Message]) -> Vec<String> {
    let mut entries = Vec::new();
    for message in history {
        let who = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        for part in &message.content {
            let entry = match part {
                ContentPart::Text { text } if text.starts_with(SUMMARY_HEADER) => {
                    format!("previous summary:\n{}", strip(text, ENTRY_CHARS * 8))
                }
                ContentPart::Text { text } => format!("{who}: {}", strip(text, ENTRY_CHARS)),
                ContentPart::ToolCall(call) => format!("assistant {}", render_call(call)),
                ContentPart::ToolResult(result) => format!(
                    "{} of {}: {}",
                    if result.is_error { "error" } else { "result" },
                    result.call_id,
                    strip(&result.content, ENTRY_CHARS)
                ),
            };
            entries.push(entry);
        }
    }
    entries
}

/// The summary call for the replaced `history` of a run working on `goal`;
/// its input fits the window less the summary reserve and the safety buffer.
pub(crate) fn summary_request(
    history: &[Message],
    goal: &str,
    profile: &ContextProfile,
) -> ModelRequest {
    let system = format!("{SUMMARISER}\n{}", SECTIONS.join("\n"));
    let budget = u64::from(profile.context_window)
        .saturating_sub(u64::from(profile.summary_reserve))
        .saturating_sub(u64::from(profile.safety_buffer))
        .saturating_sub(estimate_tokens(&system) + 64);
    let mut entries = transcript(history);
    let mut omitted = 0usize;
    let size = |entries: &[String]| entries.iter().map(|e| estimate_tokens(e) + 1).sum::<u64>();
    // keep the first two entries (previous summary or goal) and the newest
    while size(&entries) > budget && entries.len() > 3 {
        entries.remove(2);
        omitted += 1;
    }
    if omitted > 0 {
        entries.insert(2, format!("[{omitted} older entries omitted]"));
    }
    let text = format!(
        "The agent's goal: {}\n\nThe conversation so far:\n{}\n\nSummarise it with the sections {}.",
        goal.trim(),
        entries.join("\n"),
        SECTIONS.join(", ")
    );
    ModelRequest {
        system: Some(system),
        messages: vec![Message::user(text)],
        tools: Vec::new(),
        max_tokens: Some(profile.summary_reserve.max(1)),
        temperature: Some(0.0),
        purpose: RequestPurpose::Summary,
    }
}

/// The model's summary made safe to use: trimmed, cut to the summary
/// reserve, and opening with the goal when the model left it out. None when
/// it is empty.
pub(crate) fn accept(answer: &str, goal: &str, profile: &ContextProfile) -> Option<String> {
    let answer = answer.trim();
    if answer.is_empty() {
        return None;
    }
    let max = usize::try_from(profile.summary_reserve)
        .unwrap_or(usize::MAX)
        .saturating_mul(4);
    let answer = strip(answer, max.max(400));
    if answer.to_lowercase().contains("goal") {
        Some(answer)
    } else {
        Some(format!("Goal:\n- {}\n{answer}", goal.trim()))
    }
}

/// The bullet points of each section of a structured summary, by heading
/// (as in [`SECTIONS`]); headings may carry markdown (`## Done`, `**Done:**`).
pub(crate) fn sections(summary: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    for line in summary.lines() {
        let bare = line
            .trim()
            .trim_matches(|c: char| c == '#' || c == '*' || c == ' ');
        let bare = bare.strip_suffix(':').unwrap_or(bare).trim_end_matches('*');
        if let Some(heading) = SECTIONS.iter().find(|h| h.eq_ignore_ascii_case(bare)) {
            out.push((heading, Vec::new()));
            continue;
        }
        let item = line.trim().trim_start_matches(['-', '*', ' ']).trim();
        if item.is_empty() || item.eq_ignore_ascii_case("none") {
            continue;
        }
        if let Some((_, items)) = out.last_mut() {
            items.push(item.to_owned());
        }
    }
    out
}

/// The items of one section of `summary`.
pub(crate) fn section(summary: &str, heading: &str) -> Vec<String> {
    sections(summary)
        .into_iter()
        .filter(|(h, _)| *h == heading)
        .flat_map(|(_, items)| items)
        .collect()
}

/// A summary built without the model, from what the history shows: the goal,
/// what an earlier summary said was done, the last calls, the latest plan,
/// the files written and the last results.
pub(crate) fn fallback(history: &[Message], goal: &str) -> String {
    let calls: Vec<&ToolCall> = history.iter().flat_map(Message::tool_calls).collect();
    let earlier: Vec<String> = history
        .first()
        .map(Message::joined_text)
        .filter(|t| t.starts_with(SUMMARY_HEADER))
        .map(|t| section(&t, "Done"))
        .unwrap_or_default();
    let mut files: Vec<String> = Vec::new();
    for call in &calls {
        if matches!(
            call.name.as_str(),
            "write_file" | "edit_file" | "apply_patch"
        ) && let Some(path) = call.arguments.get("path").and_then(|p| p.as_str())
            && !files.iter().any(|f| f == path)
        {
            files.push(path.to_owned());
        }
    }
    let plan = calls
        .iter()
        .rev()
        .find(|c| c.name == "update_plan")
        .and_then(|c| c.arguments.get("steps"))
        .and_then(|s| s.as_array())
        .map(|steps| {
            steps
                .iter()
                .map(|s| {
                    let title = s.get("title").and_then(|t| t.as_str()).unwrap_or("?");
                    let status = s.get("status").and_then(|t| t.as_str()).unwrap_or("?");
                    format!("- [{status}] {}", strip(title, 120))
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let results: Vec<String> = history
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|part| match part {
            ContentPart::ToolResult(r) => Some(format!(
                "- {}{}",
                if r.is_error { "error: " } else { "" },
                strip(&r.content.replace('\n', " "), 100)
            )),
            _ => None,
        })
        .collect();
    let recent = &results[results.len().saturating_sub(3)..];
    let list = |items: &[String]| {
        if items.is_empty() {
            "- none".to_owned()
        } else {
            items.join("\n")
        }
    };
    let files: Vec<String> = files.iter().map(|f| format!("- {f}")).collect();
    let mut done: Vec<String> = earlier
        .iter()
        .rev()
        .take(8)
        .rev()
        .map(|d| format!("- {d}"))
        .collect();
    done.push(format!(
        "- {} tool calls in {} messages (summarised without the model), the last:",
        calls.len(),
        history.len()
    ));
    done.extend(
        calls[calls.len().saturating_sub(3)..]
            .iter()
            .map(|c| format!("- {}", render_call(c))),
    );
    format!(
        "Goal:\n- {}\nDone:\n{}\nTo do:\n{}\nConstraints:\n- none recorded\n\
         Decisions:\n- none recorded\nFiles touched:\n{}\nOpen risks and questions:\n\
         - the summary call failed; the last results were:\n{}",
        goal.trim(),
        done.join("\n"),
        list(&plan),
        list(&files),
        list(recent)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::model::ToolResult;
    use serde_json::json;

    fn profile() -> ContextProfile {
        ContextProfile::for_window(8_192)
    }

    fn turn(n: usize, name: &str, args: serde_json::Value, result: &str) -> [Message; 2] {
        let id = format!("c{n}");
        [
            Message::assistant(
                "",
                vec![ToolCall {
                    id: id.clone(),
                    name: name.into(),
                    arguments: args,
                }],
            ),
            Message::tool_results(vec![ToolResult {
                call_id: id,
                content: result.into(),
                is_error: false,
            }]),
        ]
    }

    #[test]
    fn blobs_and_long_bodies_are_stripped_from_the_input() {
        let blob = "QUJD".repeat(500);
        let mut history = vec![Message::user("Goal: fix it")];
        history.extend(turn(1, "read_file", json!({"path": "a.bin"}), &blob));
        history.extend(turn(
            2,
            "run_command",
            json!({"command": "ls"}),
            &"line ".repeat(1_000),
        ));
        let request = summary_request(&history, "fix it", &profile());
        assert_eq!(request.purpose, RequestPurpose::Summary);
        assert!(request.tools.is_empty());
        let text = request.messages[0].joined_text();
        assert!(!text.contains(&blob[..400]));
        assert!(text.contains("[blob of 2000 characters omitted]"));
        assert!(text.contains("[... cut]"));
        assert!(text.contains("The agent's goal: fix it"));
        for section in SECTIONS {
            assert!(request.system.as_deref().unwrap().contains(section));
        }
    }

    #[test]
    fn an_input_too_large_for_the_window_loses_its_oldest_entries() {
        let mut history = vec![Message::user("Goal: fix it")];
        for n in 0..200 {
            history.extend(turn(
                n,
                "read_file",
                json!({"path": format!("f{n}")}),
                &"w ".repeat(300),
            ));
        }
        let p = profile();
        let request = summary_request(&history, "fix it", &p);
        let limit = u64::from(p.context_window - p.summary_reserve);
        assert!(
            request.estimate_tokens() < limit,
            "{}",
            request.estimate_tokens()
        );
        let text = request.messages[0].joined_text();
        assert!(text.contains("older entries omitted"));
        assert!(text.contains("user: Goal: fix it"));
        assert!(text.contains("f199"), "the newest entries stay");
    }

    #[test]
    fn the_fallback_names_the_goal_plan_files_and_last_results() {
        let mut history = vec![Message::user("Goal: add tests")];
        history.extend(turn(
            1,
            "update_plan",
            json!({"steps": [{"id": "1", "title": "write the test", "status": "in_progress"}]}),
            "ok",
        ));
        history.extend(turn(
            2,
            "write_file",
            json!({"path": "src/lib.rs", "content": "x"}),
            "written",
        ));
        history.extend(turn(
            3,
            "run_command",
            json!({"command": "cargo test"}),
            "1 passed",
        ));
        let text = fallback(&history, "add tests");
        assert_eq!(text, fallback(&history, "add tests"), "deterministic");
        assert!(text.starts_with("Goal:\n- add tests\n"));
        assert!(text.contains("- [in_progress] write the test"));
        assert!(text.contains("Files touched:\n- src/lib.rs\n"));
        assert!(text.contains("- 1 passed"));
        assert!(text.contains("called run_command({\"command\":\"cargo test\"})"));
        for section in SECTIONS {
            assert!(text.contains(&format!("{section}:")), "{section}");
        }
    }

    #[test]
    fn sections_are_read_whatever_the_heading_markup() {
        let text = "## Goal\n- fix a\n**Done:**\n- read a.rs\n- ran tests\nTo do:\nnone\n\
                    Open risks and questions:\n* is b.rs used?";
        assert_eq!(section(text, "Goal"), ["fix a"]);
        assert_eq!(section(text, "Done"), ["read a.rs", "ran tests"]);
        assert!(section(text, "To do").is_empty());
        assert_eq!(section(text, "Open risks and questions"), ["is b.rs used?"]);
        let fallback_text = fallback(&[summary_message(text)], "fix a");
        assert!(
            fallback_text.contains("- read a.rs\n- ran tests\n"),
            "{fallback_text}"
        );
    }

    #[test]
    fn an_accepted_summary_is_capped_and_names_the_goal() {
        let p = profile();
        assert_eq!(accept("   ", "g", &p), None);
        let plain = accept("Done:\n- read a.rs", "fix a", &p).unwrap();
        assert!(plain.starts_with("Goal:\n- fix a\n"));
        let long = accept(&format!("Goal: x\n{}", "word ".repeat(10_000)), "x", &p).unwrap();
        assert!(long.chars().count() < 4_200 + 20);
    }
}
