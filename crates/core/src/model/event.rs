//! What comes back from a model: streamed events and the assembled response.

use serde::{Deserialize, Serialize};

use super::error::ModelError;
use super::message::{Message, ToolCall};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model stopped to have its tool calls run.
    ToolCalls,
    /// The output hit `max_tokens`.
    MaxTokens,
    StopSequence,
    /// Anything else the provider reported, verbatim.
    Other(String),
}

/// One step of a streamed model answer.
///
/// Order: text deltas and tool-call events in the order the model produced
/// them (a call's `ToolCallStart`, then its `ToolCallDelta`s, then its
/// complete `ToolCall`), at most one `Usage` with the call's totals, and
/// `Done` last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    TextDelta {
        text: String,
    },
    ToolCallStart {
        id: String,
        name: String,
    },
    /// A fragment of the call's arguments JSON, not parseable on its own.
    ToolCallDelta {
        id: String,
        json: String,
    },
    /// The call with its arguments complete and parsed.
    ToolCall(ToolCall),
    Usage(Usage),
    Done {
        stop: StopReason,
    },
}

/// A whole model answer, assembled from its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// `None` when the provider reported no usage.
    pub usage: Option<Usage>,
    pub stop: StopReason,
}

impl ModelResponse {
    /// The answer as an assistant message for the transcript.
    pub fn to_message(&self) -> Message {
        Message::assistant(self.text.clone(), self.tool_calls.clone())
    }
}

/// Folds [`ModelEvent`]s into a [`ModelResponse`], for callers that also
/// forward the events as they come.
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    text: String,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    stop: Option<StopReason>,
    events: usize,
}

impl ResponseAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: ModelEvent) {
        self.events += 1;
        match event {
            ModelEvent::TextDelta { text } => self.text.push_str(&text),
            ModelEvent::ToolCall(call) => self.tool_calls.push(call),
            ModelEvent::Usage(usage) => self.usage = Some(usage),
            ModelEvent::Done { stop } => self.stop = Some(stop),
            ModelEvent::ToolCallStart { .. } | ModelEvent::ToolCallDelta { .. } => {}
        }
    }

    /// The response, or [`ModelError::StreamCut`] when `Done` never came.
    pub fn finish(self) -> Result<ModelResponse, ModelError> {
        let stop = self.stop.ok_or(ModelError::StreamCut {
            after_events: self.events,
        })?;
        Ok(ModelResponse {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assembles_text_calls_usage_and_stop() -> Result<(), ModelError> {
        let call = ToolCall {
            id: "c1".into(),
            name: "run".into(),
            arguments: json!({"cmd": "ls"}),
        };
        let mut assembler = ResponseAssembler::new();
        for event in [
            ModelEvent::TextDelta { text: "Hel".into() },
            ModelEvent::TextDelta { text: "lo".into() },
            ModelEvent::ToolCallStart {
                id: "c1".into(),
                name: "run".into(),
            },
            ModelEvent::ToolCallDelta {
                id: "c1".into(),
                json: "{\"cmd\"".into(),
            },
            ModelEvent::ToolCall(call.clone()),
            ModelEvent::Usage(Usage {
                input_tokens: 3,
                output_tokens: 5,
            }),
            ModelEvent::Done {
                stop: StopReason::ToolCalls,
            },
        ] {
            assembler.push(event);
        }
        assert_eq!(
            assembler.finish()?,
            ModelResponse {
                text: "Hello".into(),
                tool_calls: vec![call],
                usage: Some(Usage {
                    input_tokens: 3,
                    output_tokens: 5
                }),
                stop: StopReason::ToolCalls,
            }
        );
        Ok(())
    }

    #[test]
    fn missing_done_is_a_stream_cut() {
        let mut assembler = ResponseAssembler::new();
        assembler.push(ModelEvent::TextDelta {
            text: "partial".into(),
        });
        assert!(matches!(
            assembler.finish(),
            Err(ModelError::StreamCut { after_events: 1 })
        ));
    }
}
