//! The chat completions request body.

use paddock_core::model::{ContentPart, Message, ModelRequest, Role};
use serde_json::{Map, Value, json};

pub(super) fn body(model: &str, request: &ModelRequest) -> Vec<u8> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        push_message(&mut messages, message);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    Value::Object(body).to_string().into_bytes()
}

/// One transcript message becomes one chat message, except tool results:
/// each is its own `tool` message (the format has no error flag, so failed
/// results are prefixed with `Error: `).
fn push_message(out: &mut Vec<Value>, message: &Message) {
    let text = message.joined_text();
    match message.role {
        Role::System => out.push(json!({"role": "system", "content": text})),
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|call| {
                    json!({"id": call.id, "type": "function", "function": {
                        "name": call.name,
                        "arguments": call.arguments.to_string(),
                    }})
                })
                .collect();
            let mut assistant = Map::new();
            assistant.insert("role".into(), json!("assistant"));
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            assistant.insert("content".into(), content);
            if !calls.is_empty() {
                assistant.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(assistant));
        }
        Role::User | Role::Tool => {
            for part in &message.content {
                if let ContentPart::ToolResult(result) = part {
                    let content = if result.is_error {
                        format!("Error: {}", result.content)
                    } else {
                        result.content.clone()
                    };
                    out.push(
                        json!({"role": "tool", "tool_call_id": result.call_id, "content": content}),
                    );
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
    }
}
