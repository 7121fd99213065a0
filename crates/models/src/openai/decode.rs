//! Decoding `chat.completion.chunk` events.
//!
//! Tool calls arrive by `index`: the first delta of a call carries its `id`
//! and `function.name`, later ones only `function.arguments` fragments, and
//! deltas of parallel calls may interleave. Usage comes in a last chunk with
//! empty `choices` (`stream_options.include_usage`), then `[DONE]`.

use std::collections::BTreeMap;

use paddock_core::model::{ModelError, ModelEvent, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::http::WireDecoder;
use crate::sse::SseEvent;

#[derive(Debug, Default)]
pub(super) struct ChunkDecoder {
    calls: BTreeMap<u32, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
    completed: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<ChunkError>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct ChunkError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

impl WireDecoder for ChunkDecoder {
    fn decode(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.finish(out);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|source| ModelError::Decode {
            what: "chat completion chunk".into(),
            source: Some(Box::new(source)),
        })?;
        if let Some(error) = chunk.error {
            let kind = error
                .kind
                .or_else(|| error.code.map(|code| code.to_string()))
                .unwrap_or_else(|| "error".into());
            return Err(ModelError::Provider {
                kind,
                message: error.message.unwrap_or_default(),
            });
        }
        // n = 1: only the first choice is ours
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    out.push(ModelEvent::TextDelta { text });
                }
                for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate()
                {
                    let index = call
                        .index
                        .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX));
                    self.tool_call_delta(index, call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
                self.complete_calls(out)?;
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

impl ChunkDecoder {
    fn tool_call_delta(&mut self, index: u32, delta: ToolCallDelta, out: &mut Vec<ModelEvent>) {
        let call = self.calls.entry(index).or_default();
        if call.id.is_empty() {
            call.id = delta
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}"));
        }
        let (name, fragment) = match delta.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            call.name.push_str(&name);
        }
        let fragment = fragment.unwrap_or_default();
        call.arguments.push_str(&fragment);
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            // fragments that came before the name
            if !call.arguments.is_empty() {
                out.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    json: call.arguments.clone(),
                });
            }
        } else if call.started && !fragment.is_empty() {
            out.push(ModelEvent::ToolCallDelta {
                id: call.id.clone(),
                json: fragment,
            });
        }
    }

    /// Emits every call not yet completed, in index order.
    fn complete_calls(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for (index, call) in &mut self.calls {
            if call.completed {
                continue;
            }
            if call.name.is_empty() {
                return Err(ModelError::decode(format!(
                    "tool call {index} ({}): no function name",
                    call.id
                )));
            }
            out.push(ModelEvent::ToolCall(ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: crate::parse_arguments(&call.id, &call.name, &call.arguments)?,
            }));
            call.completed = true;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        self.complete_calls(out)?;
        if let Some(usage) = self.usage {
            out.push(ModelEvent::Usage(usage));
        }
        let stop = match self.finish_reason.as_deref() {
            Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolCalls,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None if self.calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolCalls,
        };
        out.push(ModelEvent::Done { stop });
        self.done = true;
        Ok(())
    }
}
