//! Claude Code (`claude -p --output-format stream-json --verbose`): one
//! JSON object per line. `system`/`init` names the session; each
//! `assistant` line is one content block of a model message (a new message
//! id is a new model turn); `user` lines carry tool results; `result` ends
//! the run with its totals (tokens and cost are only final there: the
//! per-message usage is the stream's first snapshot).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::bridged::{Bridged, Spent, command_finished, micro_usd, text_of, workspace_relative};
use super::cli::{CliAdapter, Invocation, Launch};
use crate::tools::Effect;

/// Claude Code's reader: what it has counted, to turn totals into spending.
#[derive(Debug, Default)]
pub(crate) struct Claude {
    turns: HashSet<String>,
    /// Tool calls by id: their tool and arguments, for their effects.
    calls: HashMap<String, (String, Value)>,
    counted: Spent,
}

impl CliAdapter for Claude {
    fn launch(&self, inv: &Invocation<'_>) -> Launch {
        let mut argv = vec![
            inv.program.to_owned(),
            "-p".to_owned(),
            inv.prompt.to_owned(),
            "--output-format".to_owned(),
            "stream-json".to_owned(),
            "--verbose".to_owned(),
            // the text as it streams, for the run's live view
            "--include-partial-messages".to_owned(),
            // Paddock's sandbox is the boundary: the CLI asks no one
            "--dangerously-skip-permissions".to_owned(),
        ];
        if let Some(model) = inv.model {
            argv.extend(["--model".to_owned(), model.to_owned()]);
        }
        if let Some(session) = inv.resume {
            argv.extend(["--resume".to_owned(), session.to_owned()]);
        }
        let env = BTreeMap::from([
            // the flag above is refused to root unless the CLI knows it is sandboxed
            ("IS_SANDBOX".to_owned(), "1".to_owned()),
            ("CLAUDE_CONFIG_DIR".to_owned(), inv.home.to_owned()),
            // no feature flags, telemetry or bootstrap calls to api.anthropic.com
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_owned(),
                "1".to_owned(),
            ),
            ("DISABLE_AUTOUPDATER".to_owned(), "1".to_owned()),
            ("ANTHROPIC_BASE_URL".to_owned(), inv.base_url.to_owned()),
        ]);
        Launch {
            argv,
            env,
            files: Vec::new(),
        }
    }

    fn read(&mut self, line: &Value) -> Vec<Bridged> {
        match line.get("type").and_then(Value::as_str) {
            Some("system") => line
                .get("session_id")
                .and_then(Value::as_str)
                .filter(|_| line.get("subtype").and_then(Value::as_str) == Some("init"))
                .map(|id| vec![Bridged::Session(id.to_owned())])
                .unwrap_or_default(),
            Some("assistant") => self.assistant(line),
            Some("user") => self.tool_results(line),
            Some("result") => self.result(line),
            Some("stream_event") => delta(line).map(|d| vec![d]).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// A streamed piece of the run's own text (`--include-partial-messages`).
fn delta(line: &Value) -> Option<Bridged> {
    if line.get("parent_tool_use_id").is_some_and(|p| !p.is_null()) {
        return None;
    }
    let event = line.get("event")?;
    let delta = event.get("delta")?;
    (event.get("type")?.as_str()? == "content_block_delta"
        && delta.get("type")?.as_str()? == "text_delta")
        .then(|| {
            delta
                .get("text")?
                .as_str()
                .map(|t| Bridged::Delta(t.to_owned()))
        })
        .flatten()
        .filter(|d| !matches!(d, Bridged::Delta(t) if t.is_empty()))
}

fn tokens(usage: &Value) -> Spent {
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Spent {
        input_tokens: n("input_tokens")
            + n("cache_creation_input_tokens")
            + n("cache_read_input_tokens"),
        output_tokens: n("output_tokens"),
        cost_micro_usd: 0,
    }
}

impl Claude {
    fn assistant(&mut self, line: &Value) -> Vec<Bridged> {
        let Some(message) = line.get("message") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let id = message
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // a subagent's (Task tool) messages are not the run's turns
        let nested = line.get("parent_tool_use_id").is_some_and(|p| !p.is_null());
        if !nested && self.turns.insert(id.to_owned()) {
            out.push(Bridged::Turn);
            let spent = message.get("usage").map(tokens).unwrap_or_default();
            self.counted.input_tokens += spent.input_tokens;
            self.counted.output_tokens += spent.output_tokens;
            if !spent.is_empty() {
                out.push(Bridged::Spent(spent));
            }
        }
        let blocks = message.get("content").and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = text_of(block.get("text").unwrap_or(&Value::Null));
                    if !text.is_empty() {
                        out.push(Bridged::Text(text));
                    }
                }
                Some("tool_use") => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    let tool = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let arguments = block.get("input").cloned().unwrap_or(Value::Null);
                    self.calls
                        .insert(id.to_owned(), (tool.to_owned(), arguments.clone()));
                    out.push(Bridged::ToolCall {
                        id: id.to_owned(),
                        tool: tool.to_owned(),
                        arguments,
                    });
                }
                _ => {}
            }
        }
        out
    }

    fn tool_results(&mut self, line: &Value) -> Vec<Bridged> {
        let blocks = line
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        let mut out = Vec::new();
        for block in blocks.into_iter().flatten() {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let content = text_of(block.get("content").unwrap_or(&Value::Null));
            let is_error = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let effects = self
                .calls
                .remove(id)
                .map(|(tool, args)| effects(&tool, &args, &content, is_error))
                .unwrap_or_default();
            out.push(Bridged::ToolResult {
                id: id.to_owned(),
                content,
                is_error,
                effects,
            });
        }
        out
    }

    fn result(&mut self, line: &Value) -> Vec<Bridged> {
        let mut out = Vec::new();
        let total = line.get("usage").map(tokens).unwrap_or_default();
        let cost = line
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .map(micro_usd)
            .unwrap_or(0);
        let spent = Spent {
            input_tokens: total.input_tokens.saturating_sub(self.counted.input_tokens),
            output_tokens: total
                .output_tokens
                .saturating_sub(self.counted.output_tokens),
            cost_micro_usd: cost.saturating_sub(self.counted.cost_micro_usd),
        };
        self.counted.input_tokens = self.counted.input_tokens.max(total.input_tokens);
        self.counted.output_tokens = self.counted.output_tokens.max(total.output_tokens);
        self.counted.cost_micro_usd = self.counted.cost_micro_usd.max(cost);
        if !spent.is_empty() {
            out.push(Bridged::Spent(spent));
        }
        let is_error = line
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || line.get("subtype").and_then(Value::as_str) != Some("success");
        let text = match line.get("result") {
            Some(result) => text_of(result),
            None => line
                .get("subtype")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_owned(),
        };
        out.push(Bridged::Finished { text, is_error });
        out
    }
}

/// What a finished call of Claude Code's tools did: `Bash` ran a command
/// (a failed one says `Exit code N`), the file tools wrote a file.
fn effects(tool: &str, args: &Value, content: &str, is_error: bool) -> Vec<Effect> {
    let arg = |key: &str| args.get(key).and_then(Value::as_str);
    match tool {
        "Bash" => {
            let command = arg("command").unwrap_or_default();
            let exit_code = if is_error {
                exit_code_in(content).or(Some(1))
            } else {
                Some(0)
            };
            vec![command_finished(command, exit_code, is_error)]
        }
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" if !is_error => {
            match arg("file_path").or_else(|| arg("notebook_path")) {
                Some(path) => vec![Effect::FilesChanged {
                    paths: vec![workspace_relative(path)],
                }],
                None => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// `Exit code 2` at the start of a failed command's result.
fn exit_code_in(content: &str) -> Option<i32> {
    content
        .trim_start()
        .strip_prefix("Exit code ")?
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_all(lines: &[Value]) -> Vec<Bridged> {
        let mut claude = Claude::default();
        lines.iter().flat_map(|line| claude.read(line)).collect()
    }

    #[test]
    fn a_run_reads_as_turns_calls_results_and_its_totals() {
        let session = "5c79f5f2-8de0-40ce-b31e-64114042b92a";
        let usage = json!({"input_tokens": 123, "output_tokens": 1,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
        let lines = [
            json!({"type": "system", "subtype": "init", "session_id": session}),
            json!({"type": "assistant", "message": {"id": "msg_1", "content": [
                {"type": "text", "text": "I'll create the file."}], "usage": usage},
                "parent_tool_use_id": null, "session_id": session}),
            json!({"type": "assistant", "message": {"id": "msg_1", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                 "input": {"command": "echo hi > note.txt && cat note.txt"}}], "usage": usage},
                "parent_tool_use_id": null}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": "toolu_1", "type": "tool_result", "content": "hi",
                 "is_error": false}]}}),
            json!({"type": "assistant", "message": {"id": "msg_2", "content": [
                {"type": "text", "text": "Done."}], "usage": usage}, "parent_tool_use_id": null}),
            json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
                "total_cost_usd": 0.002664, "usage": {"input_tokens": 246, "output_tokens": 84,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}),
        ];
        let per_turn = Spent {
            input_tokens: 123,
            output_tokens: 1,
            cost_micro_usd: 0,
        };
        assert_eq!(
            read_all(&lines),
            vec![
                Bridged::Session(session.to_owned()),
                Bridged::Turn,
                Bridged::Spent(per_turn),
                Bridged::Text("I'll create the file.".into()),
                Bridged::ToolCall {
                    id: "toolu_1".into(),
                    tool: "Bash".into(),
                    arguments: json!({"command": "echo hi > note.txt && cat note.txt"}),
                },
                Bridged::ToolResult {
                    id: "toolu_1".into(),
                    content: "hi".into(),
                    is_error: false,
                    effects: vec![Effect::CommandFinished {
                        command: "echo hi > note.txt && cat note.txt".into(),
                        exit_code: Some(0),
                        success: true,
                    }],
                },
                Bridged::Turn,
                Bridged::Spent(per_turn),
                Bridged::Text("Done.".into()),
                // the totals less what the turns counted
                Bridged::Spent(Spent {
                    input_tokens: 0,
                    output_tokens: 82,
                    cost_micro_usd: 2_664,
                }),
                Bridged::Finished {
                    text: "Done.".into(),
                    is_error: false,
                },
            ]
        );
    }

    #[test]
    fn streamed_text_reads_as_deltas_and_other_stream_events_as_nothing() {
        let mut claude = Claude::default();
        let text = json!({"type": "stream_event", "parent_tool_use_id": null, "event": {
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Fixing"}}});
        assert_eq!(claude.read(&text), vec![Bridged::Delta("Fixing".into())]);
        let arguments = json!({"type": "stream_event", "event": {"type": "content_block_delta",
            "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a"}}});
        assert_eq!(claude.read(&arguments), Vec::new());
        let start = json!({"type": "stream_event", "event": {"type": "message_start",
            "message": {"id": "msg_9"}}});
        assert_eq!(claude.read(&start), Vec::new());
        let nested = json!({"type": "stream_event", "parent_tool_use_id": "toolu_1",
            "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}});
        assert_eq!(claude.read(&nested), Vec::new());
    }

    #[test]
    fn failed_commands_and_written_files_are_what_the_review_weighs() {
        let lines = [
            json!({"type": "assistant", "message": {"id": "m", "content": [
                {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "sh test.sh"}},
                {"type": "tool_use", "id": "b", "name": "Write",
                 "input": {"file_path": "/workspace/src/lib.rs", "content": "x"}}]}}),
            json!({"type": "user", "message": {"content": [
                {"tool_use_id": "a", "type": "tool_result", "content": "Exit code 3\nboom",
                 "is_error": true},
                {"tool_use_id": "b", "type": "tool_result",
                 "content": [{"type": "text", "text": "written"}]}]}}),
            json!({"type": "result", "subtype": "error_max_turns", "is_error": true}),
        ];
        let read = read_all(&lines);
        let effects: Vec<&Vec<Effect>> = read
            .iter()
            .filter_map(|b| match b {
                Bridged::ToolResult { effects, .. } => Some(effects),
                _ => None,
            })
            .collect();
        assert_eq!(
            effects,
            vec![
                &vec![Effect::CommandFinished {
                    command: "sh test.sh".into(),
                    exit_code: Some(3),
                    success: false,
                }],
                &vec![Effect::FilesChanged {
                    paths: vec!["src/lib.rs".into()],
                }],
            ]
        );
        assert_eq!(
            read.last(),
            Some(&Bridged::Finished {
                text: "error_max_turns".into(),
                is_error: true,
            })
        );
    }

    #[test]
    fn the_launch_resumes_its_session_and_keeps_traffic_to_the_model() {
        let inv = Invocation {
            program: "/usr/local/lib/paddock-agents/bin/claude",
            prompt: "fix it",
            home: "/workspace/.paddock-agent/claude-code",
            model: Some("claude-sonnet-4-5"),
            base_url: "https://api.anthropic.com",
            resume: Some("5c79f5f2"),
        };
        let launch = Claude::default().launch(&inv);
        assert_eq!(launch.argv[..3], [inv.program, "-p", "fix it"]);
        assert!(
            launch
                .argv
                .windows(2)
                .any(|w| w == ["--resume", "5c79f5f2"])
        );
        assert!(
            launch
                .argv
                .windows(2)
                .any(|w| w == ["--model", "claude-sonnet-4-5"])
        );
        assert_eq!(launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1");
        assert_eq!(launch.env["CLAUDE_CONFIG_DIR"], inv.home);
        assert!(!launch.env.contains_key("ANTHROPIC_API_KEY"));
    }
}
