//! OpenAI Responses API (`POST /v1/responses`, Codex): the SSE stream and
//! the JSON response, as the real API sends them.

use serde_json::{Value, json};

use super::script::{Content, Plan, halves, items};
use super::sse::{Step, id, now, pause};

/// Input item types that carry a tool's result.
const OUTPUTS: &[&str] = &[
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "mcp_tool_call_output",
];

/// Tool results already in the conversation.
pub(crate) fn tool_results(body: &Value) -> usize {
    items(body, "input")
        .iter()
        .filter(|i| {
            i.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| OUTPUTS.contains(&t))
        })
        .count()
}

fn usage(plan: &Plan) -> Value {
    let (input, output) = (plan.usage.input_tokens, plan.usage.output_tokens);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

/// The response object, with its status, output and usage.
fn response(
    body: &Value,
    rid: &str,
    created: u64,
    status: &str,
    output: Value,
    usage: Value,
) -> Value {
    json!({
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": body.get("model").and_then(Value::as_str).unwrap_or("gpt-fake"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls").cloned().unwrap_or(json!(true)),
        "previous_response_id": null,
        "store": false,
        "usage": usage,
    })
}

/// Numbers the events (`sequence_number`) and names them after `type`.
struct Events {
    steps: Vec<Step>,
    next: u64,
}

impl Events {
    fn push(&mut self, mut data: Value) {
        if let Some(map) = data.as_object_mut() {
            map.insert("sequence_number".to_owned(), json!(self.next));
        }
        self.next += 1;
        self.steps.push(Step::typed(data));
    }
}

/// The SSE events: `response.created`, `response.in_progress`, one output
/// item (a `function_call` with its argument deltas, or a `message` with
/// its text part and deltas), `response.completed` with the usage.
pub(crate) fn stream(body: &Value, plan: &Plan) -> Vec<Step> {
    let rid = id("resp_", 32);
    let created = now();
    let opening = response(body, &rid, created, "in_progress", json!([]), Value::Null);
    let mut ev = Events {
        steps: Vec::new(),
        next: 0,
    };
    ev.push(json!({"type": "response.created", "response": opening}));
    ev.push(json!({"type": "response.in_progress", "response": opening}));
    ev.steps.extend(pause(plan.delay));
    let done = match &plan.content {
        Content::Tool { name, arguments } => {
            let fid = id("fc_", 32);
            let item = json!({
                "id": fid, "type": "function_call", "status": "in_progress",
                "call_id": id("call_", 24), "name": name, "arguments": "",
            });
            ev.push(json!({"type": "response.output_item.added", "output_index": 0, "item": item}));
            for part in halves(arguments) {
                ev.push(json!({
                    "type": "response.function_call_arguments.delta",
                    "item_id": fid, "output_index": 0, "delta": part,
                }));
            }
            ev.push(json!({
                "type": "response.function_call_arguments.done",
                "item_id": fid, "output_index": 0, "arguments": arguments,
            }));
            let mut done = item;
            done["status"] = json!("completed");
            done["arguments"] = json!(arguments);
            done
        }
        Content::Text { parts, every } => {
            let mid = id("msg_", 32);
            let item = json!({
                "id": mid, "type": "message", "status": "in_progress",
                "role": "assistant", "content": [],
            });
            ev.push(json!({"type": "response.output_item.added", "output_index": 0, "item": item}));
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            ev.push(json!({
                "type": "response.content_part.added",
                "item_id": mid, "output_index": 0, "content_index": 0, "part": part,
            }));
            for (i, delta) in parts.iter().enumerate() {
                if i > 0 {
                    ev.steps.extend(pause(*every));
                }
                ev.push(json!({
                    "type": "response.output_text.delta",
                    "item_id": mid, "output_index": 0, "content_index": 0,
                    "delta": delta, "logprobs": [],
                }));
            }
            let text = plan.content.text();
            ev.push(json!({
                "type": "response.output_text.done",
                "item_id": mid, "output_index": 0, "content_index": 0,
                "text": text, "logprobs": [],
            }));
            let full = json!({"type": "output_text", "text": text, "annotations": []});
            ev.push(json!({
                "type": "response.content_part.done",
                "item_id": mid, "output_index": 0, "content_index": 0, "part": full,
            }));
            let mut done = item;
            done["status"] = json!("completed");
            done["content"] = json!([full]);
            done
        }
    };
    ev.push(json!({"type": "response.output_item.done", "output_index": 0, "item": done}));
    let completed = response(body, &rid, created, "completed", json!([done]), usage(plan));
    ev.push(json!({"type": "response.completed", "response": completed}));
    ev.steps
}

/// The whole response, for a request without `stream: true`.
pub(crate) fn whole(body: &Value, plan: &Plan) -> Value {
    let item = match &plan.content {
        Content::Tool { name, arguments } => json!({
            "id": id("fc_", 32), "type": "function_call", "status": "completed",
            "call_id": id("call_", 24), "name": name, "arguments": arguments,
        }),
        Content::Text { .. } => json!({
            "id": id("msg_", 32), "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": plan.content.text(), "annotations": []}],
        }),
    };
    response(
        body,
        &id("resp_", 32),
        now(),
        "completed",
        json!([item]),
        usage(plan),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::script::{Script, Turn, plan};
    use crate::fake_provider::sse::{parse, text};

    fn request(results: usize) -> Value {
        let mut input = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        ];
        for i in 0..results {
            input.push(json!({"type": "function_call", "call_id": format!("call_{i}"), "name": "exec_command", "arguments": "{}"}));
            input.push(json!({"type": "function_call_output", "call_id": format!("call_{i}"), "output": "hi"}));
        }
        json!({"model": "gpt-x", "stream": true, "tools": [{"type": "function", "name": "exec_command"}], "input": input})
    }

    fn script() -> Script {
        Script::new(vec![
            Turn::tool("exec_command", json!({"cmd": "echo hi"})).with_usage(10, 2),
            Turn::text("Done.").with_usage(30, 4),
        ])
    }

    fn events(results: usize) -> Vec<(String, Value)> {
        let body = request(results);
        let p = plan(&script(), true, tool_results(&body));
        parse(&text(&stream(&body, &p)))
            .into_iter()
            .map(|(n, d)| (n.unwrap(), serde_json::from_str(&d).unwrap()))
            .collect()
    }

    #[test]
    fn a_function_call_streams_and_parses() {
        let ev = events(0);
        let names: Vec<_> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        for (i, (name, d)) in ev.iter().enumerate() {
            assert_eq!(d["type"], name.as_str());
            assert_eq!(d["sequence_number"], i);
        }
        let item = &ev[6].1["item"];
        assert!(item["id"].as_str().unwrap().starts_with("fc_"));
        assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(item["name"], "exec_command");
        let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["cmd"], "echo hi");
        let done = &ev[7].1["response"];
        assert!(done["id"].as_str().unwrap().starts_with("resp_"));
        assert_eq!(done["status"], "completed");
        assert_eq!(done["usage"]["total_tokens"], 12);
    }

    #[test]
    fn the_final_text_streams() {
        let ev = events(1);
        assert_eq!(ev.len(), 10);
        let text: String = ev
            .iter()
            .filter(|(n, _)| n == "response.output_text.delta")
            .map(|(_, d)| d["delta"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(text, "Done.");
        let done = &ev[9].1["response"];
        assert_eq!(done["output"][0]["content"][0]["text"], "Done.");
        assert_eq!(done["usage"]["input_tokens"], 30);
        assert_eq!(done["usage"]["output_tokens"], 4);
        let body = request(1);
        let w = whole(&body, &plan(&script(), true, 1));
        assert_eq!(w["output"][0]["type"], "message");
    }
}
