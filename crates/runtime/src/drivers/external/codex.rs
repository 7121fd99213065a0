//! Codex CLI (`codex exec --json`): JSON lines of a thread, its turns and
//! their items. `thread.started` names the thread (what `codex exec resume`
//! takes); `command_execution` items are shell calls (started, then
//! completed with their output and exit code); `file_change` items are
//! edits; `agent_message` items are the model's text; `turn.completed`
//! carries the thread's token totals so far (no cost). A model call is not
//! reported as such: one is counted at a turn's start and after each
//! finished tool call the model must read.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::bridged::{Bridged, Spent, command_finished, text_of, workspace_relative};
use super::cli::{CliAdapter, Invocation, Launch};
use crate::tools::Effect;

/// The tool name Codex's shell calls are bridged as.
const SHELL: &str = "exec_command";

#[derive(Debug, Default)]
pub(crate) struct Codex {
    /// The model is to be called again (a turn started, a tool finished).
    awaiting_model: bool,
    /// Calls whose start was bridged.
    started: HashSet<String>,
    counted: Spent,
    last_text: String,
}

impl CliAdapter for Codex {
    fn launch(&self, inv: &Invocation<'_>) -> Launch {
        let mut argv = vec![
            inv.program.to_owned(),
            "exec".to_owned(),
            "--json".to_owned(),
            "--skip-git-repo-check".to_owned(),
            // Paddock's sandbox is the boundary; Codex's own (bubblewrap)
            // needs user namespaces a sandbox does not give
            "--dangerously-bypass-approvals-and-sandbox".to_owned(),
        ];
        if let Some(thread) = inv.resume {
            argv.extend(["resume".to_owned(), thread.to_owned()]);
        }
        argv.push(inv.prompt.to_owned());
        let env = BTreeMap::from([("CODEX_HOME".to_owned(), inv.home.to_owned())]);
        Launch {
            argv,
            env,
            files: vec![(
                format!("{}/config.toml", inv.home),
                config(inv).into_bytes(),
            )],
        }
    }

    fn read(&mut self, line: &Value) -> Vec<Bridged> {
        match line.get("type").and_then(Value::as_str) {
            Some("thread.started") => line
                .get("thread_id")
                .and_then(Value::as_str)
                .map(|id| vec![Bridged::Session(id.to_owned())])
                .unwrap_or_default(),
            Some("turn.started") => {
                self.awaiting_model = true;
                Vec::new()
            }
            Some("item.started") => self.item(line.get("item"), false),
            Some("item.completed") => self.item(line.get("item"), true),
            Some("turn.completed") => {
                let mut out = self.spent(line.get("usage"));
                out.push(Bridged::Finished {
                    text: self.last_text.clone(),
                    is_error: false,
                });
                out
            }
            Some("turn.failed") => vec![Bridged::Finished {
                text: message_of(line.get("error")),
                is_error: true,
            }],
            Some("error") => vec![Bridged::Error(message_of(Some(line)))],
            _ => Vec::new(),
        }
    }
}

/// The config Codex reads from `$CODEX_HOME`: the provider at the run's
/// base URL over the Responses API (Codex ignores `OPENAI_BASE_URL` and
/// would retry api.openai.com forever), no approvals, no plugin sync or
/// analytics (traffic to hosts the run does not allow).
fn config(inv: &Invocation<'_>) -> String {
    let base = format!("{}/v1", paddock_core::model::api_root(inv.base_url));
    let mut text = String::new();
    if let Some(model) = inv.model {
        text.push_str(&format!("model = {}\n", toml_string(model)));
    }
    text.push_str(&format!(
        "model_provider = \"paddock\"\n\
         approval_policy = \"never\"\n\
         sandbox_mode = \"danger-full-access\"\n\
         \n[analytics]\nenabled = false\n\
         \n[features]\nplugins = false\n\
         \n[model_providers.paddock]\n\
         name = \"paddock\"\n\
         base_url = {}\n\
         env_key = \"OPENAI_API_KEY\"\n\
         wire_api = \"responses\"\n",
        toml_string(&base)
    ));
    text
}

/// A TOML basic string (serde_json's escaping is TOML's for these).
fn toml_string(value: &str) -> String {
    Value::String(value.to_owned()).to_string()
}

fn message_of(value: Option<&Value>) -> String {
    value
        .and_then(|v| v.get("message"))
        .map(text_of)
        .unwrap_or_else(|| "codex reported an error".to_owned())
}

impl Codex {
    fn turn(&mut self, out: &mut Vec<Bridged>) {
        if std::mem::take(&mut self.awaiting_model) {
            out.push(Bridged::Turn);
        }
    }

    fn item(&mut self, item: Option<&Value>, completed: bool) -> Vec<Bridged> {
        let Some(item) = item else {
            return Vec::new();
        };
        let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        let mut out = Vec::new();
        match item.get("type").and_then(Value::as_str) {
            Some("command_execution") => {
                let command = item.get("command").and_then(Value::as_str).unwrap_or("");
                if self.started.insert(id.to_owned()) {
                    self.turn(&mut out);
                    out.push(Bridged::ToolCall {
                        id: id.to_owned(),
                        tool: SHELL.to_owned(),
                        arguments: serde_json::json!({ "cmd": command }),
                    });
                }
                if completed {
                    let exit_code = item
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .and_then(|c| i32::try_from(c).ok());
                    let failed = item.get("status").and_then(Value::as_str) == Some("failed");
                    out.push(Bridged::ToolResult {
                        id: id.to_owned(),
                        content: text_of(item.get("aggregated_output").unwrap_or(&Value::Null)),
                        is_error: failed || exit_code.is_some_and(|c| c != 0),
                        effects: vec![command_finished(command, exit_code, failed)],
                    });
                    self.awaiting_model = true;
                }
            }
            Some("file_change") if completed => {
                let paths: Vec<String> = item
                    .get("changes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("path").and_then(Value::as_str))
                    .map(workspace_relative)
                    .collect();
                let failed = item.get("status").and_then(Value::as_str) == Some("failed");
                self.turn(&mut out);
                out.push(Bridged::ToolCall {
                    id: id.to_owned(),
                    tool: "apply_patch".to_owned(),
                    arguments: serde_json::json!({ "paths": paths }),
                });
                out.push(Bridged::ToolResult {
                    id: id.to_owned(),
                    content: paths.join("\n"),
                    is_error: failed,
                    effects: if failed {
                        Vec::new()
                    } else {
                        vec![Effect::FilesChanged { paths }]
                    },
                });
                self.awaiting_model = true;
            }
            Some("agent_message") if completed => {
                self.turn(&mut out);
                let text = text_of(item.get("text").unwrap_or(&Value::Null));
                self.last_text = text.clone();
                out.push(Bridged::Text(text));
            }
            // an error item (a model's metadata unknown, ...) does not end the run
            Some("error") if completed => {
                out.push(Bridged::Error(message_of(Some(item))));
            }
            _ => {}
        }
        out
    }

    /// The thread's totals less what was counted: this turn's spending.
    fn spent(&mut self, usage: Option<&Value>) -> Vec<Bridged> {
        let n = |key: &str| {
            usage
                .and_then(|u| u.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let total = Spent {
            input_tokens: n("input_tokens"),
            output_tokens: n("output_tokens") + n("reasoning_output_tokens"),
            cost_micro_usd: 0,
        };
        let spent = Spent {
            input_tokens: total.input_tokens.saturating_sub(self.counted.input_tokens),
            output_tokens: total
                .output_tokens
                .saturating_sub(self.counted.output_tokens),
            cost_micro_usd: 0,
        };
        self.counted = total;
        if spent.is_empty() {
            Vec::new()
        } else {
            vec![Bridged::Spent(spent)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_thread_reads_as_turns_calls_and_the_turns_usage() {
        let lines = [
            json!({"type": "thread.started", "thread_id": "01a2"}),
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "error",
                "message": "Model metadata for `x` not found."}}),
            json!({"type": "turn.started"}),
            json!({"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                "command": "/bin/bash -lc 'sh test.sh'", "aggregated_output": "",
                "exit_code": null, "status": "in_progress"}}),
            json!({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                "command": "/bin/bash -lc 'sh test.sh'", "aggregated_output": "FAIL\n",
                "exit_code": 1, "status": "failed"}}),
            json!({"type": "item.completed", "item": {"id": "item_2", "type": "file_change",
                "changes": [{"path": "/workspace/calc.py", "kind": "update"}],
                "status": "completed"}}),
            json!({"type": "item.completed", "item": {"id": "item_3", "type": "agent_message",
                "text": "Fixed."}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 246,
                "cached_input_tokens": 0, "output_tokens": 84, "reasoning_output_tokens": 0}}),
        ];
        let mut codex = Codex::default();
        let read: Vec<Bridged> = lines.iter().flat_map(|l| codex.read(l)).collect();
        assert_eq!(
            read,
            vec![
                Bridged::Session("01a2".into()),
                Bridged::Error("Model metadata for `x` not found.".into()),
                Bridged::Turn,
                Bridged::ToolCall {
                    id: "item_1".into(),
                    tool: SHELL.into(),
                    arguments: json!({"cmd": "/bin/bash -lc 'sh test.sh'"}),
                },
                Bridged::ToolResult {
                    id: "item_1".into(),
                    content: "FAIL\n".into(),
                    is_error: true,
                    effects: vec![Effect::CommandFinished {
                        command: "/bin/bash -lc 'sh test.sh'".into(),
                        exit_code: Some(1),
                        success: false,
                    }],
                },
                Bridged::Turn,
                Bridged::ToolCall {
                    id: "item_2".into(),
                    tool: "apply_patch".into(),
                    arguments: json!({"paths": ["calc.py"]}),
                },
                Bridged::ToolResult {
                    id: "item_2".into(),
                    content: "calc.py".into(),
                    is_error: false,
                    effects: vec![Effect::FilesChanged {
                        paths: vec!["calc.py".into()]
                    }],
                },
                Bridged::Turn,
                Bridged::Text("Fixed.".into()),
                Bridged::Spent(Spent {
                    input_tokens: 246,
                    output_tokens: 84,
                    cost_micro_usd: 0
                }),
                Bridged::Finished {
                    text: "Fixed.".into(),
                    is_error: false
                },
            ]
        );
        // a resumed thread's totals include what this reader counted
        let more = codex.read(&json!({"type": "turn.completed",
            "usage": {"input_tokens": 369, "output_tokens": 100}}));
        assert_eq!(
            more[0],
            Bridged::Spent(Spent {
                input_tokens: 123,
                output_tokens: 16,
                cost_micro_usd: 0
            })
        );
    }

    #[test]
    fn the_config_names_the_runs_provider_and_turns_off_other_traffic() {
        let inv = Invocation {
            program: "/usr/local/lib/paddock-agents/bin/codex",
            prompt: "fix \"it\"",
            home: "/tmp/paddock-agent/codex",
            model: Some("gpt-5.1-codex"),
            base_url: "https://api.openai.com/v1",
            resume: Some("01a2"),
        };
        let launch = Codex::default().launch(&inv);
        assert_eq!(
            launch.argv[launch.argv.len() - 3..],
            ["resume", "01a2", "fix \"it\""]
        );
        let (path, text) = &launch.files[0];
        assert_eq!(path, "/tmp/paddock-agent/codex/config.toml");
        let text = String::from_utf8_lossy(text);
        assert!(
            text.contains("base_url = \"https://api.openai.com/v1\""),
            "{text}"
        );
        assert!(text.contains("wire_api = \"responses\""), "{text}");
        assert!(text.contains("model = \"gpt-5.1-codex\""), "{text}");
        assert!(text.contains("[features]\nplugins = false"), "{text}");
        assert_eq!(launch.env["CODEX_HOME"], inv.home);
    }
}
