//! What is sent to a model: messages, tool schemas and the request itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    /// Results of tool calls, answering the previous assistant message.
    Tool,
}

/// A tool call the model asked for; `arguments` is always parsed JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The answer to one [`ToolCall`], matched by `call_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text { text: String },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl Message {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant turn: its text (omitted when empty) followed by its tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        let mut content = Vec::with_capacity(tool_calls.len() + 1);
        if !text.is_empty() {
            content.push(ContentPart::Text { text });
        }
        content.extend(tool_calls.into_iter().map(ContentPart::ToolCall));
        Self {
            role: Role::Assistant,
            content,
        }
    }

    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self {
            role: Role::Tool,
            content: results.into_iter().map(ContentPart::ToolResult).collect(),
        }
    }

    /// The text parts joined, without tool calls or results.
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// Rough token count, see [`estimate_tokens`]; 4 tokens of framing per message.
    pub fn estimate_tokens(&self) -> u64 {
        let parts: u64 = self
            .content
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => estimate_tokens(text),
                ContentPart::ToolCall(call) => {
                    estimate_tokens(&call.name) + estimate_tokens(&call.arguments.to_string())
                }
                ContentPart::ToolResult(result) => estimate_tokens(&result.content) + 4,
            })
            .sum();
        parts + 4
    }
}

/// A tool the model may call; `parameters` is its arguments' JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt, sent the way each provider expects it.
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    /// Output cap; providers that require one use their default when `None`.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Why the request is made; providers send it the same way either way.
    #[serde(default, skip_serializing_if = "RequestPurpose::is_turn")]
    pub purpose: RequestPurpose,
}

/// What a model request is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestPurpose {
    /// A turn of the agent loop.
    #[default]
    Turn,
    /// Summarising older history for a compaction (a scripted model answers
    /// it from its summary steps).
    Summary,
}

impl RequestPurpose {
    fn is_turn(&self) -> bool {
        *self == RequestPurpose::Turn
    }
}

impl ModelRequest {
    /// Rough size of the whole request in tokens (system, messages, tool
    /// schemas), for deciding when to compact against the context window.
    pub fn estimate_tokens(&self) -> u64 {
        let system = self.system.as_deref().map_or(0, estimate_tokens);
        let messages: u64 = self.messages.iter().map(Message::estimate_tokens).sum();
        let tools: u64 = self
            .tools
            .iter()
            .map(|tool| {
                estimate_tokens(&tool.name)
                    + estimate_tokens(&tool.description)
                    + estimate_tokens(&tool.parameters.to_string())
            })
            .sum();
        system + messages + tools
    }
}

/// Token estimate of a text: one token per 4 characters, rounded up.
///
/// A deliberate heuristic, not a tokenizer: close for English prose, low for
/// dense code and CJK text. Good enough to trigger compaction with margin;
/// never use it for billing.
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimate_is_chars_over_four_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // characters, not bytes
        assert_eq!(estimate_tokens("ééééé"), 2);
    }

    #[test]
    fn request_estimate_counts_system_messages_and_tools() {
        let request = ModelRequest {
            system: Some("x".repeat(40)),
            messages: vec![Message::user("y".repeat(80))],
            tools: vec![ToolSchema {
                name: "abcd".into(),
                description: "z".repeat(8),
                parameters: json!({}),
            }],
            ..ModelRequest::default()
        };
        // 10 + (20 + 4) + (1 + 2 + 1)
        assert_eq!(request.estimate_tokens(), 38);
    }

    #[test]
    fn assistant_message_keeps_text_then_calls_and_serializes_tagged() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        };
        let message = Message::assistant("", vec![call.clone()]);
        assert_eq!(message.content, vec![ContentPart::ToolCall(call.clone())]);
        assert_eq!(message.tool_calls().collect::<Vec<_>>(), vec![&call]);
        assert_eq!(
            serde_json::to_value(&message).ok(),
            Some(json!({"role": "assistant", "content": [
                {"type": "tool_call", "id": "c1", "name": "read_file", "arguments": {"path": "a"}}
            ]}))
        );
    }
}
