//! A provider that replays canned turns from a JSON file, for tests and demos:
//!
//! ```json
//! {"turns": [
//!   {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.rs"}}]},
//!   {"text": "Done.", "usage": {"input_tokens": 120, "output_tokens": 8}}
//! ]}
//! ```
//!
//! Each call consumes the next turn, whatever the request says. Tool call ids
//! are `call_<turn>_<n>` (both 1-based), so transcripts are reproducible.
//! Without `usage`, a turn reports the request's and its own token estimates.
//!
//! A turn marked `"summary": true` answers a compaction's summary request
//! ([`RequestPurpose::Summary`]) instead: summary requests consume the
//! summary turns in order and agent turns the others, so a script reads in
//! the order things happen. A turn with `"error": "..."` fails its call with
//! that message (a summary call that fails, say). A turn with `"delay_ms": N`
//! streams its text after N ms (a model that thinks; the fault tests kill a
//! run in the middle of such a stream). A turn with `"delta_ms": N` streams
//! its text a word at a time and each call's arguments in pieces of
//! [`ARGUMENT_PIECE`] characters, N ms apart (what a person watching the
//! console sees a real model do).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use paddock_core::model::{
    ModelError, ModelEvent, ModelProvider, ModelRequest, ModelStream, RequestPurpose, StopReason,
    ToolCall, Usage, estimate_tokens,
};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Turn>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    usage: Option<Usage>,
    /// Answers a summary request, not an agent turn.
    #[serde(default)]
    summary: bool,
    /// The call fails with this provider error instead of answering.
    #[serde(default)]
    error: Option<String>,
    /// How long the stream waits before its first event.
    #[serde(default)]
    delay_ms: u64,
    /// Stream the text word by word and the arguments in pieces, this many
    /// ms apart (0: each in one piece, at once).
    #[serde(default)]
    delta_ms: u64,
}

/// Characters of a call's arguments JSON per piece when a turn streams
/// (`delta_ms`).
const ARGUMENT_PIECE: usize = 16;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug)]
pub struct ScriptedProvider {
    name: String,
    path: PathBuf,
    context_window: u32,
    turns: Vec<Turn>,
    summaries: Vec<Turn>,
    next: AtomicUsize,
    next_summary: AtomicUsize,
}

impl ScriptedProvider {
    /// Reads and checks the whole script now, so a bad file fails before any run.
    pub fn load(path: &Path, context_window: u32) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::ScriptRead {
            path: path.to_owned(),
            source,
        })?;
        let invalid =
            |source: Box<dyn std::error::Error + Send + Sync>| ModelError::ScriptInvalid {
                path: path.to_owned(),
                source,
            };
        let script: Script = serde_json::from_str(&text).map_err(|e| invalid(Box::new(e)))?;
        for (index, turn) in script.turns.iter().enumerate() {
            if turn.summary && !turn.tool_calls.is_empty() {
                return Err(invalid(
                    format!("turn {}: a summary turn has no tool calls", index + 1).into(),
                ));
            }
            for call in &turn.tool_calls {
                if call.name.trim().is_empty() {
                    return Err(invalid(
                        format!("turn {}: a tool call without a name", index + 1).into(),
                    ));
                }
            }
        }
        let (summaries, turns) = script.turns.into_iter().partition(|t| t.summary);
        Ok(Self {
            name: format!("scripted:{}", path.display()),
            path: path.to_owned(),
            context_window,
            turns,
            summaries,
            next: AtomicUsize::new(0),
            next_summary: AtomicUsize::new(0),
        })
    }

    /// The same script from its first turn, for another conversation.
    pub fn restart(&self) -> Self {
        Self {
            name: self.name.clone(),
            path: self.path.clone(),
            context_window: self.context_window,
            turns: self.turns.clone(),
            summaries: self.summaries.clone(),
            next: AtomicUsize::new(0),
            next_summary: AtomicUsize::new(0),
        }
    }

    /// Agent turns not consumed yet.
    pub fn remaining(&self) -> usize {
        self.turns
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    /// Summary turns consumed so far.
    pub fn summaries_answered(&self) -> usize {
        self.next_summary
            .load(Ordering::SeqCst)
            .min(self.summaries.len())
    }

    /// The turn's stream: each event with the pause before it.
    fn events(turn: &Turn, index: usize, request: &ModelRequest) -> Vec<(Duration, ModelEvent)> {
        let step = Duration::from_millis(turn.delta_ms);
        let streaming = !step.is_zero();
        let mut events = Vec::new();
        if !turn.text.is_empty() {
            let pieces: Vec<&str> = if streaming {
                turn.text.split_inclusive(' ').collect()
            } else {
                vec![turn.text.as_str()]
            };
            for piece in pieces {
                events.push((
                    step,
                    ModelEvent::TextDelta {
                        text: piece.to_owned(),
                    },
                ));
            }
        }
        for (n, call) in turn.tool_calls.iter().enumerate() {
            let id = format!("call_{}_{}", index + 1, n + 1);
            events.push((
                step,
                ModelEvent::ToolCallStart {
                    id: id.clone(),
                    name: call.name.clone(),
                },
            ));
            let json = call.arguments.to_string();
            let pieces = if streaming {
                pieces_of(&json, ARGUMENT_PIECE)
            } else {
                vec![json]
            };
            for json in pieces {
                events.push((
                    step,
                    ModelEvent::ToolCallDelta {
                        id: id.clone(),
                        json,
                    },
                ));
            }
            events.push((
                Duration::ZERO,
                ModelEvent::ToolCall(ToolCall {
                    id,
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }),
            ));
        }
        let usage = turn.usage.unwrap_or_else(|| Usage {
            input_tokens: request.estimate_tokens(),
            output_tokens: estimate_tokens(&turn.text)
                + turn
                    .tool_calls
                    .iter()
                    .map(|call| estimate_tokens(&call.arguments.to_string()))
                    .sum::<u64>(),
        });
        events.push((Duration::ZERO, ModelEvent::Usage(usage)));
        let stop = if turn.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolCalls
        };
        events.push((Duration::ZERO, ModelEvent::Done { stop }));
        // the first event waits as the turn thinks, not a step
        if let Some((pause, _)) = events.first_mut() {
            *pause = Duration::from_millis(turn.delay_ms);
        }
        events
    }
}

/// `text` in pieces of at most `size` characters.
fn pieces_of(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// Each conversation replays the script from its first turn.
    fn fresh_copy(&self) -> Option<Arc<dyn ModelProvider>> {
        Some(Arc::new(self.restart()))
    }

    fn context_window(&self) -> u32 {
        self.context_window
    }

    fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> ModelStream {
        // a cancelled call consumes no turn
        if cancel.is_cancelled() {
            return futures_util::stream::iter([Err(ModelError::Cancelled)]).boxed();
        }
        let (turns, next) = match request.purpose {
            RequestPurpose::Turn => (&self.turns, &self.next),
            RequestPurpose::Summary => (&self.summaries, &self.next_summary),
        };
        let index = next.fetch_add(1, Ordering::SeqCst);
        let Some(turn) = turns.get(index) else {
            let error = ModelError::ScriptExhausted {
                path: self.path.clone(),
                turn: index + 1,
                available: turns.len(),
            };
            return futures_util::stream::iter([Err(error)]).boxed();
        };
        if let Some(message) = &turn.error {
            let error = ModelError::Provider {
                kind: "scripted_error".to_owned(),
                message: message.clone(),
            };
            return futures_util::stream::iter([Err(error)]).boxed();
        }
        tracing::debug!(model = %self.name, turn = index + 1, purpose = ?request.purpose, "scripted turn");
        let events = Self::events(turn, index, request).into_iter();
        futures_util::stream::unfold(Some((events, cancel)), |state| async move {
            let (mut events, cancel) = state?;
            let (pause, event) = events.next()?;
            if !pause.is_zero() {
                tokio::select! {
                    () = cancel.cancelled() => return Some((Err(ModelError::Cancelled), None)),
                    () = tokio::time::sleep(pause) => {}
                }
            }
            if cancel.is_cancelled() {
                return Some((Err(ModelError::Cancelled), None));
            }
            Some((Ok(event), Some((events, cancel))))
        })
        .boxed()
    }
}
