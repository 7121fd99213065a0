//! How run events and results are printed: a human line or two per event,
//! or one JSON object per line (`--json`).

use std::io::Write;

use paddock_api::service::RunView;
use paddock_core::model::Usd;
use paddock_core::store::{Review, RunEvent, RunState, TaskStatus, Verdict};
use paddock_runtime::events::{
    CallStatus, Event, PlanUpdated, SubagentPhase, SubagentStatus, ToolResultEvent, payload_json,
};
use serde_json::{Value, json};

use crate::printable::printable;

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
        "data": payload_json(&event.payload),
    })
}

/// Prints one stored event; write errors (a closed pipe) are ignored.
/// Transient events are left out: only a terminal shows them ([`super::live`]).
pub fn print_event(out: &mut impl Write, format: Format, event: &RunEvent) {
    if event.is_transient() {
        return;
    }
    let _ = match format {
        Format::Json => writeln!(out, "{}", event_json(event)),
        Format::Human => match human_event(event) {
            Some(text) => writeln!(out, "{}", printable(&text)),
            None => Ok(()),
        },
    };
    let _ = out.flush();
}

/// The human text of an event; None for the ones not worth a line.
pub fn human_event(event: &RunEvent) -> Option<String> {
    match Event::of(event) {
        Event::RunStarted(started) => Some(format!(
            "[run] {} mode, model {}{}{}: {}",
            started.mode,
            started.model,
            match &started.network {
                Some(network) if network.has_egress() => format!(", network {}", network.label()),
                _ => String::new(),
            },
            started
                .resumed_from
                .as_ref()
                .map(|from| format!(", resuming {from}"))
                .unwrap_or_default(),
            first_line(&started.goal)
        )),
        Event::EgressDecision(egress) => Some(egress_line(&egress)),
        Event::RunQueued(queued) => Some(format!(
            "[queued] waiting for a sandbox slot ({} ahead, at most {} s): {}",
            queued.ahead,
            queued.max_wait_ms / 1000,
            queued.reason
        )),
        Event::RunState(changed) => match changed.state {
            state @ (RunState::Cancelling | RunState::AwaitingUser) => {
                Some(format!("[state] {state}"))
            }
            _ => None,
        },
        Event::SandboxReady(ready) => Some(format!(
            "[sandbox] {} ready{}",
            ready.backend,
            if ready.read_only {
                " (workspace read-only)"
            } else {
                ""
            }
        )),
        Event::SandboxStopped(stopped) => Some(match stopped.error {
            Some(error) => format!("[sandbox] stopped: {error}"),
            None => "[sandbox] stopped".to_owned(),
        }),
        Event::ModelMessage(message) => {
            let text = message.text.trim();
            (!text.is_empty()).then(|| indent_rest(&format!("[agent] {text}"), "        "))
        }
        Event::ContextCompacting(c) => Some(format!(
            "[context] compacting: ~{} tokens of a {}-token window, summarising {} messages",
            c.tokens_before, c.context_window, c.messages_replaced
        )),
        Event::ContextCompacted(c) => Some(format!(
            "[context] compacted ~{} -> ~{} tokens, {} messages kept{}",
            c.tokens_before,
            c.tokens_after,
            c.messages_kept,
            match &c.error {
                Some(error) => format!(" (fallback summary: {error})"),
                None => String::new(),
            }
        )),
        Event::PlanUpdated(update) => Some(plan(&update)),
        Event::ToolCall(call) => Some(format!(
            "[tool] {}",
            call_summary(&call.tool, &call.arguments)
        )),
        Event::ToolResult(result) => Some(result_summary(&result)),
        Event::Progress(progress) => Some(indent_rest(
            &format!("[progress] {}", progress.message.trim()),
            "           ",
        )),
        Event::RunReview(_) => None, // printed whole at the end
        Event::RunFinished(finished) => Some(
            match (&finished.snapshot_limit, &finished.snapshot_error) {
                (Some(hit), _) => format!(
                    "[finished] {} ({})\n[snapshot] no end snapshot was kept (no fork from this run): {}",
                    finished.state, finished.end_reason, hit.message
                ),
                (None, Some(error)) => format!(
                    "[finished] {} ({})\n[snapshot] no end snapshot was kept (no fork from this run): {error}",
                    finished.state, finished.end_reason
                ),
                (None, None) => format!("[finished] {} ({})", finished.state, finished.end_reason),
            } + &undelivered(&finished.undelivered),
        ),
        Event::SubagentStatus(status) => Some(subagent_status(&status)),
        Event::ParentMessage(message) => Some(indent_rest(
            &format!("[parent] {}", message.message.trim()),
            "         ",
        )),
        Event::CheckpointCreated(c) => Some(format!(
            "[checkpoint] {} ({}): {} files, {} new ({} bytes) in {} ms",
            c.checkpoint_id, c.reason, c.files, c.new_blobs, c.new_bytes, c.duration_ms
        )),
        Event::CheckpointFailed(failed) => Some(format!(
            "[checkpoint] none taken ({}): {}",
            failed.reason, failed.error
        )),
        Event::CheckpointsPruned(pruned) => Some(format!(
            "[checkpoint] {} pruned past the session's cap of {} ({} kept, {} bytes freed)",
            pruned.checkpoints.len(),
            pruned.max_per_session,
            pruned.kept,
            pruned.bytes_freed
        )),
        // shown live on a terminal only (agent::live)
        Event::StoreWaiting(waiting) if waiting.waiting => Some(format!(
            "[store] cannot write ({}): the run waits for space",
            waiting.error.as_deref().unwrap_or("disk full")
        )),
        Event::StoreWaiting(waiting) => Some(format!(
            "[store] writes again after {} ms: the run goes on",
            waiting.waited_ms
        )),
        Event::ModelDelta(_) | Event::ToolOutput(_) => None,
        Event::UserMessage(message) => Some(indent_rest(
            &format!("[you] {}", message.message.trim()),
            "      ",
        )),
        Event::Other(other)
            if other.kind.starts_with("child.") || other.kind.starts_with("subagent.") =>
        {
            Some(format!(
                "[subagent] {}: {}",
                other.kind,
                truncate(&other.json().to_string())
            ))
        }
        Event::Other(_) => None,
    }
}

/// `[egress] allowed good.test:8080 via http (2 connections, 80 B out, 1200 B in)`
/// or `[egress] denied ...: the reason`, with what the caps left out.
fn egress_line(egress: &paddock_runtime::events::EgressDecisionEvent) -> String {
    let d = &egress.decision;
    let mut line = format!(
        "[egress] {} {}:{} via {}",
        if d.allowed { "allowed" } else { "denied" },
        d.host,
        d.port,
        d.via
    );
    if egress.count > 0 {
        line.push_str(&format!(
            " ({} connection{}, {} B out, {} B in)",
            egress.count,
            if egress.count == 1 { "" } else { "s" },
            d.bytes_out,
            d.bytes_in
        ));
    }
    if let Some(reason) = &d.reason {
        line.push_str(&format!(": {reason}"));
    }
    if egress.omitted > 0 {
        line.push_str(&format!(" (+{} more not shown)", egress.omitted));
    }
    line
}

/// `[subagent] build fix-api (run_...) running`, and on finishing its state,
/// verdict, changed files and summary.
fn subagent_status(status: &SubagentStatus) -> String {
    let mut line = format!(
        "[subagent] {} {} ({}) {}",
        status.profile,
        status.task_id,
        status.run_id,
        status.status.as_str()
    );
    if status.status == SubagentPhase::Finished {
        line.push_str(&format!(
            ": {}",
            status.state.map(RunState::as_str).unwrap_or_default()
        ));
        if let Some(verdict) = status.verdict {
            line.push_str(&format!(", {verdict}"));
        }
        if let Some(changed) = status.changed_paths.filter(|n| *n > 0) {
            line.push_str(&format!(", {changed} changed file(s)"));
        }
        if let Some(summary) = status.summary.as_deref().filter(|s| !s.trim().is_empty()) {
            line.push_str(&format!(" - {}", first_line(summary)));
        }
    }
    truncate(&line)
}

fn plan(update: &PlanUpdated) -> String {
    let mut out = format!("[plan] v{}", update.version);
    if let Some(explanation) = update
        .explanation
        .as_deref()
        .filter(|e| !e.trim().is_empty())
    {
        out.push_str(&format!(": {}", first_line(explanation)));
    }
    for task in &update.tasks {
        let mark = match task.status {
            TaskStatus::Done => "[x]",
            TaskStatus::InProgress => "[>]",
            TaskStatus::Blocked => "[!]",
            TaskStatus::Cancelled => "[-]",
            TaskStatus::Pending => "[ ]",
        };
        out.push_str(&format!("\n    {mark} {}", task.title));
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
pub(super) fn result_summary(result: &ToolResultEvent) -> String {
    let mut lines: Vec<&str> = result
        .content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let exit = lines.last().and_then(|l| exit_marker(l));
    if exit.is_some() {
        lines.pop();
    }
    let label = match (result.status, result.is_error, exit) {
        (CallStatus::Succeeded, false, Some(code)) => format!("exit {code}"),
        (CallStatus::Succeeded, false, None) => "ok".to_owned(),
        (CallStatus::Succeeded, true, _) | (CallStatus::Failed, _, _) => "error".to_owned(),
        (other, _, _) => other.as_str().to_owned(),
    };
    let shown = if exit.is_some() {
        lines.last()
    } else {
        lines.first()
    };
    let mut out = format!("    <- {} {label}", result.tool);
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
pub fn print_result(out: &mut impl Write, run: &RunView, session: &str) {
    let _ = write!(out, "{}", printable(&human_result(run, session)));
    let _ = out.flush();
}

/// With the run's total (own plus its subagents') when that differs.
pub fn human_result(run: &RunView, session: &str) -> String {
    let total = &run.total_usage;
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
    if total != usage {
        out.push_str(&format!(
            "With its subagents: {} model turns, {} tool calls, {} tokens ({} input, {} output).\n",
            total.turns,
            total.tool_calls,
            total.tokens(),
            total.input_tokens,
            total.output_tokens,
        ));
    }
    if total.cost_micro_usd > 0 {
        let with = if total == usage {
            String::new()
        } else {
            format!(", {} with its subagents", Usd(total.cost_micro_usd))
        };
        out.push_str(&format!("Cost: {}{with}.\n", Usd(usage.cost_micro_usd)));
    }
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
pub fn result_json(run: &RunView, exit_code: u8) -> Value {
    json!({
        "type": "result",
        "exit_code": exit_code,
        "session": run.session,
        "run": run,
    })
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_owned()
}

/// The steering messages a run accepted but could not answer, one line each.
fn undelivered(messages: &[paddock_runtime::events::UserMessage]) -> String {
    messages
        .iter()
        .map(|m| {
            format!(
                "\n[you] not delivered (the run could not go on): {}",
                truncate(m.message.trim())
            )
        })
        .collect()
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
    use paddock_core::ids::{RunId, SessionId, TenantId, ToolInvocationId};
    use paddock_core::store::{SubagentProfile, Timestamp};
    use paddock_runtime::events::{EventPayload, PlanTask, Progress, ToolCallEvent};

    use super::*;

    fn stored(kind: &str, payload: String) -> RunEvent {
        RunEvent {
            tenant: TenantId::parse("t").unwrap(),
            session: SessionId::generate(),
            seq: 3,
            run: None,
            kind: kind.into(),
            payload,
            created_at: Timestamp::from_millis(0),
        }
    }

    /// `payload` as the journal stores it.
    fn event<P: EventPayload>(payload: P) -> RunEvent {
        stored(P::KIND, serde_json::to_string(&payload).unwrap())
    }

    fn call(tool: &str, arguments: Value) -> RunEvent {
        event(ToolCallEvent {
            call_id: "c1".into(),
            tool: tool.into(),
            arguments,
            invocation_id: ToolInvocationId::generate(),
            idempotency_key: None,
        })
    }

    fn result(tool: &str, status: CallStatus, is_error: bool, content: &str) -> RunEvent {
        event(ToolResultEvent {
            call_id: "c1".into(),
            tool: tool.into(),
            invocation_id: None,
            status,
            is_error,
            content: content.into(),
            truncated: false,
            duration_ms: 5,
        })
    }

    #[test]
    fn tool_calls_and_results_fit_one_line() {
        let call_event = call("run_command", json!({"command": "sh test.sh\necho more"}));
        assert_eq!(
            human_event(&call_event).unwrap(),
            "[tool] run_command $ sh test.sh"
        );
        let write = call("write_file", json!({"path": "a.sh", "content": "a\nb\n"}));
        assert_eq!(
            human_event(&write).unwrap(),
            "[tool] write_file a.sh (2 lines)"
        );
        let command = result(
            "run_command",
            CallStatus::Succeeded,
            false,
            "FAIL x\n\nFAIL y\n1 of 2 failed\n[exit code 1 after 0.2s]",
        );
        assert_eq!(
            human_event(&command).unwrap(),
            "    <- run_command exit 1: 1 of 2 failed (+2 lines)"
        );
        let read = result(
            "read_file",
            CallStatus::Succeeded,
            false,
            "1\t#!/bin/sh\n2\techo",
        );
        assert_eq!(
            human_event(&read).unwrap(),
            "    <- read_file ok: 1\t#!/bin/sh (+1 lines)"
        );
        let denied = result(
            "write_file",
            CallStatus::Denied,
            true,
            "write_file is not allowed: plan mode",
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
        let run_id = RunId::parse("run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b").unwrap();
        let status = |phase| SubagentStatus {
            run_id: run_id.clone(),
            session_id: SessionId::generate(),
            task_id: "api".into(),
            profile: SubagentProfile::Build,
            status: phase,
            state: None,
            verdict: None,
            summary: None,
            changed_paths: None,
        };
        let running = event(status(SubagentPhase::Running));
        assert_eq!(
            human_event(&running).unwrap(),
            "[subagent] build api (run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b) running"
        );
        let finished = event(SubagentStatus {
            state: Some(RunState::Completed),
            verdict: Some(Verdict::Met),
            changed_paths: Some(2),
            summary: Some("added the route\nand tests".into()),
            ..status(SubagentPhase::Finished)
        });
        // a whole run id is 36 characters: the line is cut at SUMMARY_CHARS
        assert_eq!(
            human_event(&finished).unwrap(),
            "[subagent] build api (run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b) finished: completed, met, 2 changed file(s) - adde..."
        );
        let short = event(SubagentStatus {
            state: Some(RunState::Completed),
            verdict: Some(Verdict::Met),
            changed_paths: Some(0),
            summary: Some("added\nand tests".into()),
            ..status(SubagentPhase::Finished)
        });
        assert_eq!(
            human_event(&short).unwrap(),
            "[subagent] build api (run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b) finished: completed, met - added"
        );
        let spawn = call_summary(
            "spawn_subagent",
            &json!({"task_id": "api", "profile": "build", "prompt": "add it"}),
        );
        assert_eq!(spawn, "spawn_subagent build api: add it");
    }

    #[test]
    fn plans_show_each_task_with_its_status() {
        let task = |key: &str, title: &str, status| PlanTask {
            key: key.into(),
            title: title.into(),
            status,
        };
        let plan = event(PlanUpdated {
            version: 2,
            explanation: None,
            tasks: vec![
                task("1", "Read", TaskStatus::Done),
                task("2", "Write", TaskStatus::InProgress),
                task("3", "Test", TaskStatus::Pending),
            ],
        });
        assert_eq!(
            human_event(&plan).unwrap(),
            "[plan] v2\n    [x] Read\n    [>] Write\n    [ ] Test"
        );
    }

    #[test]
    fn model_text_cannot_send_escape_sequences_to_the_terminal() {
        let hostile = "done\x1b]0;owned\x07\n\x1b[2Jgone";
        let mut out = Vec::new();
        print_event(
            &mut out,
            Format::Human,
            &call("run_command", json!({"command": hostile})),
        );
        let printed = String::from_utf8(out).unwrap();
        assert!(!printed.contains('\x1b'), "{printed:?}");
        assert!(!printed.contains('\x07'), "{printed:?}");
        assert!(printed.contains("\\x1b]0;owned"), "{printed:?}");
    }

    #[test]
    fn json_lines_carry_the_parsed_payload() {
        let line = event_json(&event(Progress {
            message: "half way".into(),
        }));
        assert_eq!(line["type"], "event");
        assert_eq!(line["seq"], 3);
        assert_eq!(line["data"]["message"], "half way");
    }

    #[test]
    fn kinds_this_version_cannot_type_never_fail_the_output() {
        let child = stored("child.spawned", r#"{"task":"api"}"#.into());
        assert_eq!(
            human_event(&child).unwrap(),
            r#"[subagent] child.spawned: {"task":"api"}"#
        );
        assert_eq!(human_event(&stored("weird.kind", "{}".into())), None);
        // a known kind whose payload does not decode prints nothing
        assert_eq!(
            human_event(&stored("run.started", r#"{"goal":1}"#.into())),
            None
        );
        let line = event_json(&stored("weird.kind", "not json".into()));
        assert_eq!(line["data"], "not json");
    }
}
