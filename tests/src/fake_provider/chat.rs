//! OpenAI Chat Completions (`POST /v1/chat/completions`, opencode's
//! OpenAI-compatible provider): `chat.completion.chunk` SSE with a usage
//! chunk and `[DONE]`, or one `chat.completion`.

use serde_json::{Value, json};

use super::script::{Content, Plan, halves, items};
use super::sse::{Step, id, now, pause};

/// Tool results already in the conversation: `role: "tool"` messages.
pub(crate) fn tool_results(body: &Value) -> usize {
    items(body, "messages")
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .count()
}

fn usage(plan: &Plan) -> Value {
    let (input, output) = (plan.usage.input_tokens, plan.usage.output_tokens);
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

fn finish_reason(plan: &Plan) -> &'static str {
    match plan.content {
        Content::Tool { .. } => "tool_calls",
        Content::Text { .. } => "stop",
    }
}

/// The chunks: the role, the tool call (id, name, then the arguments in two
/// pieces) or the text deltas, the finish reason, the usage chunk (no
/// choices), `[DONE]`.
pub(crate) fn stream(body: &Value, plan: &Plan) -> Vec<Step> {
    let cid = id("chatcmpl-", 29);
    let created = now();
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("gpt-fake")
        .to_owned();
    let chunk = |choices: Value| {
        Step::Event(
            None,
            json!({
                "id": cid, "object": "chat.completion.chunk", "created": created,
                "model": model, "system_fingerprint": "fp_fake", "choices": choices,
            }),
        )
    };
    let delta = |delta: Value, finish: Value| {
        chunk(json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]))
    };
    let mut steps = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    steps.extend(pause(plan.delay));
    match &plan.content {
        Content::Tool { name, arguments } => {
            for (i, part) in halves(arguments).into_iter().enumerate() {
                let call = if i == 0 {
                    json!({"index": 0, "id": id("call_", 24), "type": "function",
                           "function": {"name": name, "arguments": part}})
                } else {
                    json!({"index": 0, "function": {"arguments": part}})
                };
                steps.push(delta(json!({"tool_calls": [call]}), Value::Null));
            }
        }
        Content::Text { parts, every } => {
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    steps.extend(pause(*every));
                }
                steps.push(delta(json!({"content": part}), Value::Null));
            }
        }
    }
    steps.push(delta(json!({}), json!(finish_reason(plan))));
    let mut last = chunk(json!([]));
    if let Step::Event(_, data) = &mut last {
        data["usage"] = usage(plan);
    }
    steps.push(last);
    steps.push(Step::Done);
    steps
}

/// The whole completion, for a request without `stream: true`.
pub(crate) fn whole(body: &Value, plan: &Plan) -> Value {
    let message = match &plan.content {
        Content::Tool { name, arguments } => json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": id("call_", 24), "type": "function",
                            "function": {"name": name, "arguments": arguments}}],
        }),
        Content::Text { .. } => json!({"role": "assistant", "content": plan.content.text()}),
    };
    json!({
        "id": id("chatcmpl-", 29), "object": "chat.completion", "created": now(),
        "model": body.get("model").and_then(Value::as_str).unwrap_or("gpt-fake"),
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(plan)}],
        "usage": usage(plan),
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
            messages.push(json!({"role": "assistant", "content": "", "tool_calls": [{"id": format!("call_{i}"), "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}));
            messages.push(
                json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": "hi"}),
            );
        }
        json!({"model": "fake-model", "stream": true, "tools": [{"type": "function", "function": {"name": "bash"}}], "messages": messages})
    }

    fn script() -> Script {
        Script::new(vec![
            Turn::tool("bash", json!({"command": "echo hi"})).with_usage(7, 3),
            Turn::deltas(5, std::time::Duration::from_millis(1)).with_usage(9, 5),
        ])
    }

    fn chunks(results: usize) -> Vec<String> {
        let body = request(results);
        let p = plan(&script(), true, tool_results(&body));
        parse(&text(&stream(&body, &p)))
            .into_iter()
            .map(|(name, data)| {
                assert_eq!(name, None);
                data
            })
            .collect()
    }

    #[test]
    fn a_tool_call_streams_and_parses() {
        let c = chunks(0);
        assert_eq!(c.len(), 6);
        assert_eq!(c[5], "[DONE]");
        let data: Vec<Value> = c[..5]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert!(data.iter().all(|d| d["object"] == "chat.completion.chunk"));
        assert!(data[0]["id"].as_str().unwrap().starts_with("chatcmpl-"));
        let call = &data[1]["choices"][0]["delta"]["tool_calls"][0];
        assert!(call["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(call["function"]["name"], "bash");
        let args: String = data[1..3]
            .iter()
            .map(|d| {
                d["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap()["command"],
            "echo hi"
        );
        assert_eq!(data[3]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(data[4]["choices"], json!([]));
        assert_eq!(data[4]["usage"]["total_tokens"], 10);
    }

    #[test]
    fn text_deltas_stream_and_end_with_usage() {
        let c = chunks(1);
        // role, 5 deltas, finish, usage, [DONE]
        assert_eq!(c.len(), 9);
        let usage: Value = serde_json::from_str(&c[7]).unwrap();
        assert_eq!(usage["usage"]["prompt_tokens"], 9);
        assert_eq!(usage["usage"]["completion_tokens"], 5);
        let finish: Value = serde_json::from_str(&c[6]).unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        let w = whole(&request(1), &plan(&script(), true, 1));
        assert_eq!(
            w["choices"][0]["message"]["content"],
            "delta 0 delta 1 delta 2 delta 3 delta 4 "
        );
    }
}
