//! Decoding Messages stream events.
//!
//! `message_start` carries the input usage; each content block is opened by
//! `content_block_start` (text or tool_use with id and name), grown by
//! `content_block_delta` (`text_delta`, `input_json_delta`) and closed by
//! `content_block_stop`; `message_delta` brings the stop reason and the
//! output usage; `message_stop` ends the stream. `ping` and unknown events
//! are skipped, `error` fails the call.

use std::collections::HashMap;

use paddock_core::model::{ModelError, ModelEvent, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::http::WireDecoder;
use crate::sse::SseEvent;

#[derive(Debug, Default)]
pub(super) struct EventDecoder {
    /// Open tool_use blocks by index.
    tools: HashMap<u32, ToolBlock>,
    saw_tool_call: bool,
    usage: Usage,
    stop_reason: Option<String>,
    done: bool,
}

#[derive(Debug)]
struct ToolBlock {
    id: String,
    name: String,
    json: String,
    input: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<EventUsage>,
    },
    MessageStop,
    Error {
        error: EventError,
    },
    /// `ping` and event types added after this was written.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<EventUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// thinking and other block kinds: not part of the answer
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Counts are cumulative; cache reads and writes count as input.
#[derive(Deserialize)]
struct EventUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct EventError {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

impl WireDecoder for EventDecoder {
    fn decode(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let parsed: Event =
            serde_json::from_str(&event.data).map_err(|source| ModelError::Decode {
                what: format!("Anthropic stream event {:?}", event.event),
                source: Some(Box::new(source)),
            })?;
        match parsed {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(&usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } if !text.is_empty() => {
                    out.push(ModelEvent::TextDelta { text });
                }
                Block::ToolUse { id, name, input } => {
                    out.push(ModelEvent::ToolCallStart {
                        id: id.clone(),
                        name: name.clone(),
                    });
                    self.tools.insert(
                        index,
                        ToolBlock {
                            id,
                            name,
                            json: String::new(),
                            input,
                        },
                    );
                }
                Block::Text { .. } | Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => out.push(ModelEvent::TextDelta { text }),
                BlockDelta::InputJsonDelta { partial_json } => {
                    let block = self.tools.get_mut(&index).ok_or_else(|| {
                        ModelError::decode(format!(
                            "Anthropic input_json_delta for block {index}, which is not a tool_use"
                        ))
                    })?;
                    block.json.push_str(&partial_json);
                    out.push(ModelEvent::ToolCallDelta {
                        id: block.id.clone(),
                        json: partial_json,
                    });
                }
                BlockDelta::Other => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some(block) = self.tools.remove(&index) {
                    let arguments = if block.json.trim().is_empty() {
                        empty_object_if_null(block.input)
                    } else {
                        crate::parse_arguments(&block.id, &block.name, &block.json)?
                    };
                    self.saw_tool_call = true;
                    out.push(ModelEvent::ToolCall(ToolCall {
                        id: block.id,
                        name: block.name,
                        arguments,
                    }));
                }
            }
            Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.add_usage(&usage);
                }
            }
            Event::MessageStop => {
                if let Some((_, block)) = self.tools.iter().next() {
                    return Err(ModelError::decode(format!(
                        "Anthropic message_stop with tool_use block {} still open",
                        block.id
                    )));
                }
                out.push(ModelEvent::Usage(self.usage));
                let stop = match self.stop_reason.as_deref() {
                    Some("end_turn") => StopReason::EndTurn,
                    Some("tool_use") => StopReason::ToolCalls,
                    Some("max_tokens") => StopReason::MaxTokens,
                    Some("stop_sequence") => StopReason::StopSequence,
                    Some(other) => StopReason::Other(other.to_owned()),
                    None if self.saw_tool_call => StopReason::ToolCalls,
                    None => StopReason::EndTurn,
                };
                out.push(ModelEvent::Done { stop });
                self.done = true;
            }
            Event::Error { error } => {
                return Err(ModelError::Provider {
                    kind: error.kind,
                    message: error.message,
                });
            }
            Event::Ignored => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl EventDecoder {
    /// Later counts replace earlier ones: both events carry running totals.
    fn add_usage(&mut self, usage: &EventUsage) {
        let cache = usage.cache_creation_input_tokens.unwrap_or(0)
            + usage.cache_read_input_tokens.unwrap_or(0);
        if let Some(input) = usage.input_tokens {
            self.usage.input_tokens = input + cache;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

fn empty_object_if_null(input: Value) -> Value {
    if input.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        input
    }
}
