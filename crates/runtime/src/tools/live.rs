//! Output a tool prints while it runs, sent on live (the `tool.output`
//! events), bounded: chunks of at most [`OUTPUT_CHUNK_CAP`] bytes, at most
//! [`OUTPUT_LIVE_CAP`] bytes per call, then one chunk saying the rest is
//! only in the call's result.

use std::fmt;
use std::sync::{Arc, Mutex};

use paddock_proto::OutputStream;

use crate::events::{OUTPUT_CHUNK_CAP, OUTPUT_LIVE_CAP, ToolOutputChunk};

/// Where live output goes (the run's event bus).
pub trait OutputSink: Send + Sync {
    fn publish(&self, chunk: ToolOutputChunk);
}

#[derive(Debug, Default)]
struct CallState {
    sent: usize,
    /// The start of a UTF-8 character split across the guest's reads.
    carry: Vec<u8>,
    done: bool,
}

/// A tool's handle on live output; the default sends nowhere. The run loop
/// gives each call its own ([`LiveOutput::for_call`]).
#[derive(Clone, Default)]
pub struct LiveOutput {
    sink: Option<Arc<dyn OutputSink>>,
    call: Option<(String, String)>,
    state: Arc<Mutex<CallState>>,
}

impl fmt::Debug for LiveOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveOutput")
            .field("live", &self.sink.is_some())
            .field("call", &self.call)
            .finish_non_exhaustive()
    }
}

impl LiveOutput {
    pub fn new(sink: Arc<dyn OutputSink>) -> Self {
        Self {
            sink: Some(sink),
            ..Self::default()
        }
    }

    /// The handle of one call (`call_id` of `tool`), counting its own bytes.
    pub fn for_call(&self, call_id: &str, tool: &str) -> Self {
        Self {
            sink: self.sink.clone(),
            call: Some((call_id.to_owned(), tool.to_owned())),
            state: Arc::default(),
        }
    }

    /// Sends what the call printed on `stream`.
    pub fn send(&self, stream: OutputStream, data: &[u8]) {
        let (Some(sink), Some((call_id, tool))) = (&self.sink, &self.call) else {
            return;
        };
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.done {
            return;
        }
        let mut bytes = std::mem::take(&mut state.carry);
        bytes.extend_from_slice(data);
        let room = OUTPUT_LIVE_CAP.saturating_sub(state.sent);
        let truncated = bytes.len() > room;
        bytes.truncate(room);
        let text = if truncated {
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            let (text, rest) = split_utf8(&bytes);
            state.carry = rest.to_vec();
            text
        };
        state.sent += text.len();
        let stream = match stream {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        };
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut end = rest.len().min(OUTPUT_CHUNK_CAP);
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let (piece, tail) = rest.split_at(end);
            rest = tail;
            sink.publish(ToolOutputChunk {
                call_id: call_id.clone(),
                tool: tool.clone(),
                stream: stream.to_owned(),
                text: piece.to_owned(),
                truncated: truncated && rest.is_empty(),
            });
        }
        if truncated {
            state.done = true;
            if text.is_empty() {
                sink.publish(ToolOutputChunk {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    stream: stream.to_owned(),
                    text: String::new(),
                    truncated: true,
                });
            }
        }
    }
}

/// The valid UTF-8 text of `bytes` (invalid bytes replaced) and an
/// incomplete character at its end, kept for the next read.
fn split_utf8(bytes: &[u8]) -> (String, &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), &[]),
        Err(err) if err.error_len().is_none() => {
            let (valid, rest) = bytes.split_at(err.valid_up_to());
            (String::from_utf8_lossy(valid).into_owned(), rest)
        }
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<ToolOutputChunk>>);

    impl OutputSink for Recorder {
        fn publish(&self, chunk: ToolOutputChunk) {
            self.0.lock().unwrap().push(chunk);
        }
    }

    fn live() -> (Arc<Recorder>, LiveOutput) {
        let recorder = Arc::new(Recorder::default());
        let sink: Arc<dyn OutputSink> = recorder.clone();
        (
            recorder,
            LiveOutput::new(sink).for_call("call_1", "run_command"),
        )
    }

    #[test]
    fn a_character_split_across_reads_arrives_whole() {
        let (recorder, live) = live();
        let e_acute = "é".as_bytes();
        live.send(OutputStream::Stdout, &[b'a', e_acute[0]]);
        live.send(OutputStream::Stdout, &[e_acute[1], b'b']);
        let texts: Vec<String> = recorder
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.text.clone())
            .collect();
        assert_eq!(texts, ["a", "éb"]);
    }

    #[test]
    fn output_is_cut_into_bounded_chunks_and_stops_at_the_live_cap() {
        let (recorder, live) = live();
        let block = vec![b'x'; OUTPUT_CHUNK_CAP * 3 + 5];
        live.send(OutputStream::Stderr, &block);
        {
            let chunks = recorder.0.lock().unwrap();
            assert_eq!(chunks.len(), 4);
            assert!(chunks.iter().all(|c| c.text.len() <= OUTPUT_CHUNK_CAP));
            assert!(chunks.iter().all(|c| c.stream == "stderr" && !c.truncated));
        }
        for _ in 0..(OUTPUT_LIVE_CAP / block.len() + 2) {
            live.send(OutputStream::Stdout, &block);
        }
        let chunks = recorder.0.lock().unwrap();
        let sent: usize = chunks.iter().map(|c| c.text.len()).sum();
        assert_eq!(sent, OUTPUT_LIVE_CAP);
        assert!(chunks.last().unwrap().truncated);
        assert_eq!(chunks.iter().filter(|c| c.truncated).count(), 1);
    }

    #[test]
    fn without_a_sink_nothing_is_sent() {
        LiveOutput::default().send(OutputStream::Stdout, b"ignored");
        let recorder = Arc::new(Recorder::default());
        let sink: Arc<dyn OutputSink> = recorder.clone();
        // not yet given to a call: no call id to send under
        LiveOutput::new(sink).send(OutputStream::Stdout, b"ignored");
        assert!(recorder.0.lock().unwrap().is_empty());
    }
}
