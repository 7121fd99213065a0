//! How run events and results are printed: a human line or two per event,
//! or one JSON object per line (`--json`).

use std::io::Write;

use paddock_api::service::RunView;
use paddock_core::store::{Review, Run, RunEvent, Verdict};
use serde_json::{Value, json};

/// Longest one-line summary of a tool call or result, in characters.
const SUMMARY_CHARS: usize = 110;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
}

/// One stored event as a JSON line.
pub fn event_json(event: &RunEvent) -> Value {
    json!({
        "type": "event",
        "seq": event.seq,
        "session": event.session,
        "run": event.run,
        "kind": event.kind,
        "created_at": event.created_at.to_string(),
        "data": payload(event),
    })
}

fn payload(event: &RunEvent) -> Value {
    serde_json::from_str(&event.payload).unwrap_or_else(|_| Value::String(event.payload.clone()))
}

/// Prints one event; write errors (a closed pipe) are ignored.
pub fn print_event(out: &mut impl Write, format: Format, event: &RunEvent) {
    let _ = match format {
        Format::Json => writeln!(out, "{}", event_json(event)),
        Format::Human => match human_event(event) {
            Some(text) => writeln!(out, "{text}"),
            None => Ok(()),
        },
    };
    let _ = out.flush();
}

/// The human text of an event; None for the ones not worth a line.
pub fn human_event(event: &RunEvent) -> Option<String> {
    let data = payload(event);
    let text = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
    match event.kind.as_str() {
        "run.started" => Some(format!(
            "[run] {} mode, model {}: {}",
            text("mode"),
            text("model"),
            first_line(&text("goal"))
        )),
        "run.state" => match text("state").as_str() {
            state @ ("cancelling" | "awaiting_user") => Some(format!("[state] {state}")),
            _ => None,
        },
        "sandbox.ready" => Some(format!(
            "[sandbox] {} ready{}",
            text("backend"),
            if data["read_only"].as_bool() == Some(true) {
                " (workspace read-only)"
            } else {
                ""
            }
        )),
        "sandbox.stopped" => Some(match data["error"].as_str() {
            Some(error) => format!("[sandbox] stopped: {error}"),
            None => "[sandbox] stopped".to_owned(),
        }),
        "model.message" => {
            let message = text("text");
            let message = message.trim();
            (!message.is_empty()).then(|| indent_rest(&format!("[agent] {message}"), "        "))
        }
        "plan.updated" => Some(plan(&data)),
        "tool.call" => Some(format!(
            "[tool] {}",
            call_summary(&text("tool"), &data["arguments"])
        )),
        "tool.result" => Some(result_summary(&data)),
        "progress" => Some(indent_rest(
            &format!("[progress] {}", text("message").trim()),
            "           ",
        )),
        "run.review" => None, // printed whole at the end
        "run.finished" => Some(format!(
            "[finished] {} ({})",
            text("state"),
            text("end_reason")
        )),
        "subagent.status" => Some(subagent_status(&data)),
        "parent.message" => Some(indent_rest(
            &format!("[parent] {}", text("message").trim()),
            "         ",
        )),
        other if other.starts_with("child.") || other.starts_with("subagent.") => Some(format!(
            "[subagent] {other}: {}",
            truncate(&data.to_string())
        )),
        _ => None,
    }
}

/// `[subagent] build fix-api (run_...) running`, and on finishing its state,
/// verdict, changed files and summary.
fn subagent_status(data: &Value) -> String {
    let text = |key: &str| data[key].as_str().unwrap_or_default();
    let mut line = format!(
        "[subagent] {} {} ({}) {}",
        text("profile"),
        text("task_id"),
        text("run_id"),
        text("status")
    );
    if text("status") == "finished" {
        line.push_str(&format!(": {}", text("state")));
        if let Some(verdict) = data["verdict"].as_str() {
            line.push_str(&format!(", {verdict}"));
        }
        if let Some(changed) = data["changed_paths"].as_u64().filter(|n| *n > 0) {
            line.push_str(&format!(", {changed} changed file(s)"));
        }
        if let Some(summary) = data["summary"].as_str().filter(|s| !s.trim().is_empty()) {
            line.push_str(&format!(" - {}", first_line(summary)));
        }
    }
    truncate(&line)
}

fn plan(data: &Value) -> String {
    let mut out = format!("[plan] v{}", data["version"].as_u64().unwrap_or(0));
    if let Some(explanation) = data["explanation"]
        .as_str()
        .filter(|e| !e.trim().is_empty())
    {
        out.push_str(&format!(": {}", first_line(explanation)));
    }
    for task in data["tasks"].as_array().into_iter().flatten() {
        let mark = match task["status"].as_str().unwrap_or_default() {
            "done" => "[x]",
            "in_progress" => "[>]",
            "blocked" => "[!]",
            "cancelled" => "[-]",
            _ => "[ ]",
        };
        out.push_str(&format!(
            "\n    {mark} {}",
            task["title"].as_str().unwrap_or_default()
        ));
    }
    out
}

/// `tool` with the argument that says most about the call.
pub fn call_summary(tool: &str, arguments: &Value) -> String {
    let arg = |key: &str| arguments[key].as_str().map(str::to_owned);
    let detail = match tool {
        "run_command" | "process_start" => arg("command").map(|c| format!("$ {}", first_line(&c))),
        "write_file" => arg("path").map(|p| {
            let lines = arguments["content"]
                .as_str()
                .map_or(0, |c| c.lines().count());
            format!("{p} ({lines} lines)")
        }),
        "edit_file" => arg("path").map(|p| {
            let old = arg("old_string").unwrap_or_default();
            let new = arg("new_string").unwrap_or_default();
            format!("{p}: {:?} -> {:?}", first_line(&old), first_line(&new))
        }),
        "read_file" | "workspace_tree" => arg("path"),
        "search" => arg("pattern")
            .or_else(|| arg("query"))
            .or_else(|| arg("content"))
            .map(|p| format!("{p:?}")),
        "update_plan" | "report_progress" | "complete_task" => None,
        "ask_user" => arg("question"),
        "spawn_subagent" => arg("task_id").map(|task| {
            let profile = arg("profile").unwrap_or_default();
            format!(
                "{profile} {task}: {}",
                first_line(&arg("prompt").unwrap_or_default())
            )
        }),
        "message_subagent"
        | "stop_subagent"
        | "apply_subagent_changes"
        | "reject_subagent_changes" => arg("run_id"),
        _ => (!arguments.is_null() && arguments.as_object().is_none_or(|o| !o.is_empty()))
            .then(|| arguments.to_string()),
    };
    truncate(&match detail {
        Some(detail) if !detail.is_empty() => format!("{tool} {detail}"),
        _ => tool.to_owned(),
    })
}

/// `<- tool label: line (+N lines)`: for a command its exit code and the last
/// line it printed (where test runners put their totals), else the first line.
fn result_summary(data: &Value) -> String {
    let tool = data["tool"].as_str().unwrap_or("tool");
    let status = data["status"].as_str().unwrap_or("succeeded");
    let is_error = data["is_error"].as_bool() == Some(true);
    let content = data["content"].as_str().unwrap_or_default();
    let mut lines: Vec<&str> = content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let exit = lines.last().and_then(|l| exit_marker(l));
    if exit.is_some() {
        lines.pop();
    }
    let label = match (status, is_error, exit) {
        ("succeeded", false, Some(code)) => format!("exit {code}"),
        ("succeeded", false, None) => "ok".to_owned(),
        ("succeeded", true, _) | ("failed", _, _) => "error".to_owned(),
        (other, _, _) => other.to_owned(),
    };
    let shown = if exit.is_some() {
        lines.last()
    } else {
        lines.first()
    };
    let mut out = format!("    <- {tool} {label}");
    if let Some(line) = shown {
        out.push_str(&format!(": {line}"));
        if lines.len() > 1 {
            out.push_str(&format!(" (+{} lines)", lines.len() - 1));
        }
    }
    truncate(&out)
}

/// The exit code of run_command's closing `[exit code N after 0.1s]` line.
fn exit_marker(line: &str) -> Option<i64> {
    let rest = line.strip_prefix("[exit code ")?;
    let code = rest.split_whitespace().next()?.trim_end_matches(']');
    code.parse().ok()
}

/// The end of a run for people: its review, or why it has none.
pub fn print_result(out: &mut impl Write, run: &Run, session: &str) {
    let _ = write!(out, "{}", human_result(run, session));
    let _ = out.flush();
}

pub fn human_result(run: &Run, session: &str) -> String {
    let mut out = String::from("\n");
    match &run.review {
        Some(review) => out.push_str(&review_text(review)),
        None => out.push_str("== No review ==\n"),
    }
    if let Some(error) = &run.error {
        out.push_str(&format!("Error: {error}\n"));
    }
    let usage = &run.usage;
    out.push_str(&format!(
        "Run {} {}{} after {} model turns, {} tool calls, {} tokens, {:.1} s (session {session}).\n",
        run.id,
        run.state,
        run.end_reason
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        usage.turns,
        usage.tool_calls,
        usage.tokens(),
        usage.wall_clock_ms as f64 / 1000.0,
    ));
    out
}

fn review_text(review: &Review) -> String {
    let verdict = match review.verdict {
        Verdict::Met => "goal met",
        Verdict::NotMet => "goal NOT met",
        Verdict::Unsure => "UNSURE whether the goal is met",
    };
    let mut out = format!("== Review: {verdict} ==\n");
    if !review.summary.trim().is_empty() {
        out.push_str(&format!("{}\n", review.summary.trim()));
    }
    let list = |out: &mut String, title: &str, items: &[String]| {
        if !items.is_empty() {
            out.push_str(&format!("{title}:\n"));
            for item in items {
                out.push_str(&format!("  - {}\n", item.trim()));
            }
        }
    };
    list(&mut out, "Evidence", &review.evidence);
    if !review.criteria.is_empty() {
        out.push_str("Criteria:\n");
        for c in &review.criteria {
            out.push_str(&format!("  [{}] {}", c.verdict, c.criterion));
            if let Some(evidence) = c.evidence.as_deref().filter(|e| !e.trim().is_empty()) {
                out.push_str(&format!(": {}", evidence.trim()));
            }
            out.push('\n');
        }
    }
    list(&mut out, "Remaining", &review.remaining);
    out
}

/// The final `--json` line.
pub fn result_json(run: &Run, exit_code: u8) -> Value {
    json!({
        "type": "result",
        "exit_code": exit_code,
        "session": run.session,
        "run": RunView::from(run),
    })
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}

fn indent_rest(text: &str, indent: &str) -> String {
    text.lines()
        .collect::<Vec<_>>()
        .join(&format!("\n{indent}"))
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::Timestamp;

    use super::*;

    fn event(kind: &str, payload: Value) -> RunEvent {
        RunEvent {
            tenant: TenantId::parse("t").unwrap(),
            session: SessionId::generate(),
            seq: 3,
            run: None,
            kind: kind.into(),
            payload: payload.to_string(),
            created_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn tool_calls_and_results_fit_one_line() {
        let call = event(
            "tool.call",
            json!({"tool": "run_command", "arguments": {"command": "sh test.sh\necho more"}}),
        );
        assert_eq!(
            human_event(&call).unwrap(),
            "[tool] run_command $ sh test.sh"
        );
        let write = event(
            "tool.call",
            json!({"tool": "write_file", "arguments": {"path": "a.sh", "content": "a\nb\n"}}),
        );
        assert_eq!(
            human_event(&write).unwrap(),
            "[tool] write_file a.sh (2 lines)"
        );
        let result = event(
            "tool.result",
            json!({"tool": "run_command", "status": "succeeded", "is_error": false,
                   "content": "FAIL x\n\nFAIL y\n1 of 2 failed\n[exit code 1 after 0.2s]"}),
        );
        assert_eq!(
            human_event(&result).unwrap(),
            "    <- run_command exit 1: 1 of 2 failed (+2 lines)"
        );
        let read = event(
            "tool.result",
            json!({"tool": "read_file", "status": "succeeded", "is_error": false,
                   "content": "1\t#!/bin/sh\n2\techo"}),
        );
        assert_eq!(
            human_event(&read).unwrap(),
            "    <- read_file ok: 1\t#!/bin/sh (+1 lines)"
        );
        let denied = event(
            "tool.result",
            json!({"tool": "write_file", "status": "denied", "is_error": true,
                   "content": "write_file is not allowed: plan mode"}),
        );
        assert_eq!(
            human_event(&denied).unwrap(),
            "    <- write_file denied: write_file is not allowed: plan mode"
        );
        let long = call_summary("read_file", &json!({"path": "x".repeat(500)}));
        assert!(long.chars().count() <= SUMMARY_CHARS + 3, "{long}");
    }

    #[test]
    fn subagent_status_lines_name_the_child_and_how_it_ended() {
        let running = event(
            "subagent.status",
            json!({"run_id": "run_1", "task_id": "api", "profile": "build", "status": "running"}),
        );
        assert_eq!(
            human_event(&running).unwrap(),
            "[subagent] build api (run_1) running"
        );
        let finished = event(
            "subagent.status",
            json!({"run_id": "run_1", "task_id": "api", "profile": "build",
                   "status": "finished", "state": "completed", "verdict": "met",
                   "changed_paths": 2, "summary": "added the route\nand tests"}),
        );
        assert_eq!(
            human_event(&finished).unwrap(),
            "[subagent] build api (run_1) finished: completed, met, 2 changed file(s) - added the route"
        );
        let spawn = call_summary(
            "spawn_subagent",
            &json!({"task_id": "api", "profile": "build", "prompt": "add it"}),
        );
        assert_eq!(spawn, "spawn_subagent build api: add it");
    }

    #[test]
    fn plans_show_each_task_with_its_status() {
        let plan = event(
            "plan.updated",
            json!({"version": 2, "explanation": null, "tasks": [
                {"key": "1", "title": "Read", "status": "done"},
                {"key": "2", "title": "Write", "status": "in_progress"},
                {"key": "3", "title": "Test", "status": "pending"}]}),
        );
        assert_eq!(
            human_event(&plan).unwrap(),
            "[plan] v2\n    [x] Read\n    [>] Write\n    [ ] Test"
        );
    }

    #[test]
    fn json_lines_carry_the_parsed_payload() {
        let line = event_json(&event("progress", json!({"message": "half way"})));
        assert_eq!(line["type"], "event");
        assert_eq!(line["seq"], 3);
        assert_eq!(line["data"]["message"], "half way");
    }
}
