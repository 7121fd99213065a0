//! opencode (`opencode run --format json`): JSON lines, each with the
//! session id. `step_start` is one model call; `text` its text;
//! `tool_use` a call and its result together (sent when the tool is done);
//! `step_finish` the call's tokens and cost; `error` a failure. There is no
//! end event: the run ends when the process does.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::bridged::{Bridged, Spent, command_finished, micro_usd, text_of, workspace_relative};
use super::cli::{CliAdapter, Invocation, Launch};
use crate::tools::Effect;

/// The provider's name in the config opencode is given.
const PROVIDER: &str = "paddock";

#[derive(Debug, Default)]
pub(crate) struct Opencode {
    session: Option<String>,
}

impl CliAdapter for Opencode {
    fn launch(&self, inv: &Invocation<'_>) -> Launch {
        let mut argv = vec![
            inv.program.to_owned(),
            "run".to_owned(),
            "--format".to_owned(),
            "json".to_owned(),
        ];
        if let Some(session) = inv.resume {
            argv.extend(["--session".to_owned(), session.to_owned()]);
        }
        argv.push(inv.prompt.to_owned());
        let config_path = format!("{}/opencode.json", inv.home);
        let env = BTreeMap::from([
            ("OPENCODE_CONFIG".to_owned(), config_path.clone()),
            // no models.dev catalog fetch, no self-update
            ("OPENCODE_DISABLE_MODELS_FETCH".to_owned(), "1".to_owned()),
            ("OPENCODE_DISABLE_AUTOUPDATE".to_owned(), "1".to_owned()),
            // its data (sessions, logs) under its own home
            ("HOME".to_owned(), inv.home.to_owned()),
            // it takes its project from $PWD, not from its working directory
            ("PWD".to_owned(), "/workspace".to_owned()),
        ]);
        Launch {
            argv,
            env,
            files: vec![(config_path, config(inv).to_string().into_bytes())],
        }
    }

    fn read(&mut self, line: &Value) -> Vec<Bridged> {
        let mut out = Vec::new();
        if self.session.is_none()
            && let Some(id) = line.get("sessionID").and_then(Value::as_str)
        {
            self.session = Some(id.to_owned());
            out.push(Bridged::Session(id.to_owned()));
        }
        let part = line.get("part").unwrap_or(&Value::Null);
        match line.get("type").and_then(Value::as_str) {
            Some("step_start") => out.push(Bridged::Turn),
            Some("text") => {
                let text = text_of(part.get("text").unwrap_or(&Value::Null));
                if !text.is_empty() {
                    out.push(Bridged::Text(text));
                }
            }
            Some("tool_use") => tool_use(part, &mut out),
            Some("step_finish") => {
                let tokens = part.get("tokens").unwrap_or(&Value::Null);
                let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
                let cache = tokens.get("cache");
                let spent = Spent {
                    input_tokens: n(tokens.get("input"))
                        + n(cache.and_then(|c| c.get("read")))
                        + n(cache.and_then(|c| c.get("write"))),
                    output_tokens: n(tokens.get("output")) + n(tokens.get("reasoning")),
                    cost_micro_usd: part
                        .get("cost")
                        .and_then(Value::as_f64)
                        .map_or(0, micro_usd),
                };
                if !spent.is_empty() {
                    out.push(Bridged::Spent(spent));
                }
            }
            Some("error") => {
                let error = line.get("error").unwrap_or(&Value::Null);
                let message = error
                    .get("data")
                    .and_then(|d| d.get("message"))
                    .or_else(|| error.get("name"))
                    .map(text_of)
                    .unwrap_or_else(|| "opencode reported an error".to_owned());
                out.push(Bridged::Finished {
                    text: message,
                    is_error: true,
                });
            }
            _ => {}
        }
        out
    }
}

/// A finished tool: its call, then its result with what it did.
fn tool_use(part: &Value, out: &mut Vec<Bridged>) {
    let id = part
        .get("callID")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let tool = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
    let state = part.get("state").unwrap_or(&Value::Null);
    let input = state.get("input").cloned().unwrap_or(Value::Null);
    let failed = state.get("status").and_then(Value::as_str) == Some("error");
    let content = text_of(
        state
            .get("output")
            .or_else(|| state.get("error"))
            .unwrap_or(&Value::Null),
    );
    let exit_code = state
        .get("metadata")
        .and_then(|m| m.get("exit"))
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let arg = |key: &str| input.get(key).and_then(Value::as_str);
    let effects = match tool {
        "bash" => vec![command_finished(
            arg("command").unwrap_or_default(),
            exit_code,
            failed,
        )],
        "write" | "edit" | "patch" if !failed => arg("filePath")
            .map(|path| {
                vec![Effect::FilesChanged {
                    paths: vec![workspace_relative(path)],
                }]
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    out.push(Bridged::ToolCall {
        id: id.to_owned(),
        tool: tool.to_owned(),
        arguments: input.clone(),
    });
    out.push(Bridged::ToolResult {
        id: id.to_owned(),
        content,
        is_error: failed || exit_code.is_some_and(|c| c != 0),
        effects,
    });
}

/// opencode's config: the run's provider as an OpenAI-compatible chat
/// endpoint (its key from `OPENAI_API_KEY`, the placeholder the egress
/// proxy swaps), every permission granted (the sandbox is the boundary).
fn config(inv: &Invocation<'_>) -> Value {
    let model = inv.model.unwrap_or("default");
    let base = format!("{}/v1", paddock_core::model::api_root(inv.base_url));
    json!({
        "$schema": "https://opencode.ai/config.json",
        "model": format!("{PROVIDER}/{model}"),
        "small_model": format!("{PROVIDER}/{model}"),
        "autoupdate": false,
        "share": "disabled",
        "permission": {"*": "allow"},
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Paddock",
                "options": {"baseURL": base, "apiKey": "{env:OPENAI_API_KEY}"},
                "models": {model: {"name": model, "tool_call": true}},
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_as_turns_calls_with_results_and_their_spending() {
        let lines = [
            json!({"type": "step_start", "sessionID": "ses_1", "part": {"type": "step-start"}}),
            json!({"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool",
                "tool": "bash", "callID": "call_1", "state": {"status": "completed",
                "input": {"command": "echo hi > note.txt"}, "output": "",
                "metadata": {"exit": 0}}}}),
            json!({"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool",
                "tool": "write", "callID": "call_2", "state": {"status": "completed",
                "input": {"filePath": "/workspace/a.txt", "content": "a"}, "output": "ok"}}}),
            json!({"type": "step_finish", "sessionID": "ses_1", "part": {"reason": "tool-calls",
                "tokens": {"input": 123, "output": 42, "reasoning": 0,
                "cache": {"read": 0, "write": 0}}, "cost": 0.0015}}),
            json!({"type": "text", "sessionID": "ses_1", "part": {"text": "Done."}}),
        ];
        let mut opencode = Opencode::default();
        let read: Vec<Bridged> = lines.iter().flat_map(|l| opencode.read(l)).collect();
        assert_eq!(read[0], Bridged::Session("ses_1".into()));
        assert_eq!(read[1], Bridged::Turn);
        assert_eq!(
            read[3],
            Bridged::ToolResult {
                id: "call_1".into(),
                content: String::new(),
                is_error: false,
                effects: vec![Effect::CommandFinished {
                    command: "echo hi > note.txt".into(),
                    exit_code: Some(0),
                    success: true
                }],
            }
        );
        assert_eq!(
            read[5],
            Bridged::ToolResult {
                id: "call_2".into(),
                content: "ok".into(),
                is_error: false,
                effects: vec![Effect::FilesChanged {
                    paths: vec!["a.txt".into()]
                }],
            }
        );
        assert_eq!(
            read[6],
            Bridged::Spent(Spent {
                input_tokens: 123,
                output_tokens: 42,
                cost_micro_usd: 1_500
            })
        );
        assert_eq!(read[7], Bridged::Text("Done.".into()));
        assert_eq!(read.len(), 8);
    }

    #[test]
    fn the_config_points_at_the_runs_provider_and_pwd_at_the_workspace() {
        let inv = Invocation {
            program: "/usr/local/lib/paddock-agents/bin/opencode",
            prompt: "go",
            home: "/workspace/.paddock-agent/opencode",
            model: Some("gpt-4o"),
            base_url: "https://api.openai.com",
            resume: None,
        };
        let launch = Opencode::default().launch(&inv);
        assert_eq!(launch.env["PWD"], "/workspace");
        let config: Value = serde_json::from_slice(&launch.files[0].1).unwrap_or_default();
        assert_eq!(config["model"], "paddock/gpt-4o");
        assert_eq!(
            config["provider"]["paddock"]["options"]["baseURL"],
            "https://api.openai.com/v1"
        );
        assert_eq!(config["permission"]["*"], "allow");
    }
}
