//! What a run shows while it works, published live and never stored: the
//! model's answer as it streams (`model.delta`) and a running command's
//! output (`tool.output`). The stored events (`model.message`,
//! `tool.result`) carry the same in full once it is complete.

use std::sync::Arc;

use futures_util::StreamExt;
use paddock_core::model::{ModelError, ModelEvent, ModelResponse, ModelStream, ResponseAssembler};

use crate::events::journal::Journal;
use crate::events::{ModelDelta, ToolOutputChunk, Transient};
use crate::tools::{LiveOutput, OutputSink};

/// Publishes on the run's bus.
struct BusSink(Arc<Journal>);

impl OutputSink for BusSink {
    fn publish(&self, chunk: ToolOutputChunk) {
        publish(&self.0, &chunk);
    }
}

fn publish<P: Transient>(journal: &Journal, payload: &P) {
    if let Err(err) = journal.publish_transient(payload) {
        // only an encoding failure; the stored events still say it all
        tracing::debug!(error = %err, "publishing a live event");
    }
}

/// The live output of the run's tool calls.
pub(super) fn tool_output(journal: &Arc<Journal>) -> LiveOutput {
    LiveOutput::new(Arc::new(BusSink(Arc::clone(journal))))
}

/// The delta an event of the model's stream shows, if any.
fn delta(event: &ModelEvent, turn: u32) -> Option<ModelDelta> {
    match event {
        ModelEvent::TextDelta { text } if !text.is_empty() => Some(ModelDelta::Text {
            turn,
            text: text.clone(),
        }),
        ModelEvent::ToolCallStart { id, name } => Some(ModelDelta::ToolCall {
            turn,
            call_id: id.clone(),
            tool: name.clone(),
        }),
        ModelEvent::ToolCallDelta { id, json } if !json.is_empty() => {
            Some(ModelDelta::ToolArguments {
                turn,
                call_id: id.clone(),
                json: json.clone(),
            })
        }
        _ => None,
    }
}

/// Drains the model's stream into one response (the first error wins),
/// publishing its text and tool-call arguments as they come.
pub(super) async fn collect(
    mut stream: ModelStream,
    journal: &Journal,
    turn: u32,
) -> Result<ModelResponse, ModelError> {
    let mut assembler = ResponseAssembler::new();
    while let Some(event) = stream.next().await {
        let event = event?;
        if let Some(delta) = delta(&event, turn) {
            publish(journal, &delta);
        }
        assembler.push(event);
    }
    assembler.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_tool_call_pieces_are_deltas_the_rest_is_not() {
        let text = ModelEvent::TextDelta { text: "Hel".into() };
        assert_eq!(
            delta(&text, 2),
            Some(ModelDelta::Text {
                turn: 2,
                text: "Hel".into()
            })
        );
        let start = ModelEvent::ToolCallStart {
            id: "c1".into(),
            name: "run_command".into(),
        };
        assert!(matches!(
            delta(&start, 1),
            Some(ModelDelta::ToolCall { .. })
        ));
        let args = ModelEvent::ToolCallDelta {
            id: "c1".into(),
            json: "{\"comm".into(),
        };
        assert!(matches!(
            delta(&args, 1),
            Some(ModelDelta::ToolArguments { .. })
        ));
        assert_eq!(
            delta(
                &ModelEvent::TextDelta {
                    text: String::new()
                },
                1
            ),
            None
        );
        assert_eq!(
            delta(&ModelEvent::Usage(paddock_core::model::Usage::default()), 1),
            None
        );
    }
}
