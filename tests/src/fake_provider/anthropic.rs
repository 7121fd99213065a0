//! Anthropic Messages API (`POST /v1/messages`): the SSE stream and the
//! JSON Message, as the real API sends them.

use serde_json::{Value, json};

use super::script::{Content, Plan, halves, items};
use super::sse::{Step, id, pause};

/// Tool results already in the conversation: `tool_result` content blocks.
pub(crate) fn tool_results(body: &Value) -> usize {
    items(body, "messages")
        .iter()
        .flat_map(|m| items(m, "content"))
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .count()
}

fn model(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-fake")
}

fn stop_reason(plan: &Plan) -> &'static str {
    match plan.content {
        Content::Tool { .. } => "tool_use",
        Content::Text { .. } => "end_turn",
    }
}

fn usage(plan: &Plan, output_tokens: u64) -> Value {
    json!({
        "input_tokens": plan.usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    })
}

/// The SSE events: `message_start`, `ping`, one content block
/// (`content_block_start`, deltas, `content_block_stop`), `message_delta`
/// with the stop reason and the output tokens, `message_stop`.
pub(crate) fn stream(body: &Value, plan: &Plan) -> Vec<Step> {
    let message = json!({
        "id": id("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": model(body),
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": usage(plan, 1),
    });
    let mut steps = vec![
        Step::typed(json!({"type": "message_start", "message": message})),
        Step::typed(json!({"type": "ping"})),
    ];
    steps.extend(pause(plan.delay));
    match &plan.content {
        Content::Tool { name, arguments } => {
            let block =
                json!({"type": "tool_use", "id": id("toolu_01", 22), "name": name, "input": {}});
            steps.push(Step::typed(
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ));
            for part in halves(arguments) {
                steps.push(Step::typed(json!({
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                })));
            }
        }
        Content::Text { parts, every } => {
            steps.push(Step::typed(json!({
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            })));
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    steps.extend(pause(*every));
                }
                steps.push(Step::typed(json!({
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": part},
                })));
            }
        }
    }
    steps.push(Step::typed(
        json!({"type": "content_block_stop", "index": 0}),
    ));
    steps.push(Step::typed(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(plan), "stop_sequence": null},
        "usage": {"output_tokens": plan.usage.output_tokens},
    })));
    steps.push(Step::typed(json!({"type": "message_stop"})));
    steps
}

/// The whole Message, for a request without `stream: true`.
pub(crate) fn message(body: &Value, plan: &Plan) -> Value {
    let block = match &plan.content {
        Content::Tool { name, arguments } => json!({
            "type": "tool_use",
            "id": id("toolu_01", 22),
            "name": name,
            "input": serde_json::from_str::<Value>(arguments).unwrap_or(Value::Null),
        }),
        Content::Text { .. } => json!({"type": "text", "text": plan.content.text()}),
    };
    json!({
        "id": id("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": model(body),
        "content": [block],
        "stop_reason": stop_reason(plan),
        "stop_sequence": null,
        "usage": usage(plan, plan.usage.output_tokens),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::script::{Script, Turn, plan};
    use crate::fake_provider::sse::{parse, text};

    fn request(results: usize) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..results {
            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": "hi"}]}));
        }
        json!({"model": "claude-x", "stream": true, "tools": [{"name": "Bash"}], "messages": messages})
    }

    fn script() -> Script {
        Script::new(vec![
            Turn::tool("Bash", json!({"command": "echo hi > note.txt"})).with_usage(100, 20),
            Turn::text("Done.").with_usage(200, 30),
        ])
    }

    #[test]
    fn counts_tool_results() {
        assert_eq!(tool_results(&request(0)), 0);
        assert_eq!(tool_results(&request(2)), 2);
    }

    #[test]
    fn a_tool_call_streams_and_parses() {
        let body = request(0);
        let p = plan(&script(), true, tool_results(&body));
        let events = parse(&text(&stream(&body, &p)));
        let names: Vec<_> = events.iter().filter_map(|(n, _)| n.clone()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let data: Vec<Value> = events
            .iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        assert!(
            data[0]["message"]["id"]
                .as_str()
                .unwrap()
                .starts_with("msg_")
        );
        assert_eq!(data[0]["message"]["usage"]["input_tokens"], 100);
        assert_eq!(data[0]["message"]["model"], "claude-x");
        let block = &data[2]["content_block"];
        assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
        assert_eq!(block["name"], "Bash");
        let args: String = data[3..5]
            .iter()
            .map(|d| d["delta"]["partial_json"].as_str().unwrap())
            .collect();
        let args: Value = serde_json::from_str(&args).unwrap();
        assert_eq!(args["command"], "echo hi > note.txt");
        assert_eq!(data[6]["delta"]["stop_reason"], "tool_use");
        assert_eq!(data[6]["usage"]["output_tokens"], 20);
    }

    #[test]
    fn the_final_text_streams_and_as_a_message() {
        let body = request(1);
        let p = plan(&script(), true, tool_results(&body));
        let events = parse(&text(&stream(&body, &p)));
        assert_eq!(events.len(), 8);
        let text: String = events
            .iter()
            .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap())
            .filter(|d| d["delta"]["type"] == "text_delta")
            .map(|d| d["delta"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(text, "Done.");
        let last: Value = serde_json::from_str(&events[6].1).unwrap();
        assert_eq!(last["delta"]["stop_reason"], "end_turn");
        assert_eq!(last["usage"]["output_tokens"], 30);
        let m = message(&body, &p);
        assert_eq!(m["content"][0]["text"], "Done.");
        assert_eq!(m["usage"]["input_tokens"], 200);
        assert_eq!(m["stop_reason"], "end_turn");
    }
}
