//! Shaping results for a model's context: bounded command output, and guest
//! refusals turned into results the model can act on.

use std::collections::VecDeque;

use paddock_core::sandbox::GuestError;
use serde_json::json;

use super::{ToolError, ToolOutput};

/// Keeps the first `head` and the last `tail` bytes of a stream of any
/// length in bounded memory: the start says what ran, the end says how it ended.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let take = room.min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(data[data.len() - self.tail_cap..].iter().copied());
            return;
        }
        self.tail.extend(data.iter().copied());
        let over = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..over);
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes seen but not kept.
    pub(crate) fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text, with a marker where bytes were left out.
    pub(crate) fn render(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let omitted = self.omitted();
        if omitted > 0 {
            text.push_str(&format!("\n[... {omitted} bytes of output omitted ...]\n"));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// Maps a guest error to the tool's error, to be sorted by [`refusal_as_result`].
pub(crate) fn guest(tool: &'static str) -> impl FnOnce(GuestError) -> ToolError {
    move |source| ToolError::Guest {
        tool: tool.to_owned(),
        source,
    }
}

/// A guest that refused a request (no such file, read-only workspace, not a
/// directory, ...) answered: that is a failed result the model reads and can
/// act on. Only a broken connection to the guest stays a [`ToolError`].
pub(crate) fn refusal_as_result(
    result: Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    match result {
        Err(ToolError::Guest {
            tool,
            source: GuestError::Refused { error, .. },
        }) => Ok(ToolOutput {
            content: format!("{tool} failed: {}", error.message),
            is_error: true,
            data: json!({ "error": error.code, "message": error.message }),
            effects: Vec::new(),
        }),
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use paddock_proto::{ErrorCode, ErrorInfo};

    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut out = HeadTail::new(4, 4);
        out.push(b"abc");
        out.push(b"defgh");
        assert_eq!(out.render(), "abcdefgh");
        assert_eq!((out.total(), out.omitted()), (8, 0));
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_rest() {
        let mut out = HeadTail::new(3, 4);
        for chunk in [&b"0123"[..], b"456789", b"ab", b"cdefghij"] {
            out.push(chunk);
        }
        assert_eq!(out.total(), 20);
        assert_eq!(out.omitted(), 13);
        assert_eq!(
            out.render(),
            "012\n[... 13 bytes of output omitted ...]\nghij"
        );
    }

    #[test]
    fn refusals_become_error_results_and_disconnects_stay_errors() {
        let refused = Err(ToolError::Guest {
            tool: "read_file".into(),
            source: GuestError::Refused {
                op: "file_read",
                error: ErrorInfo::new(ErrorCode::NotFound, "no such file a.txt"),
            },
        });
        let out = refusal_as_result(refused).unwrap();
        assert!(out.is_error);
        assert_eq!(out.content, "read_file failed: no such file a.txt");
        assert_eq!(out.data["error"], "not_found");

        let lost = Err(ToolError::Guest {
            tool: "read_file".into(),
            source: GuestError::Disconnected {
                op: "file_read",
                reason: "eof".into(),
            },
        });
        assert!(matches!(
            refusal_as_result(lost),
            Err(ToolError::Guest { .. })
        ));
    }
}
