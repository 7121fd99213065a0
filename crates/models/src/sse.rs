//! Incremental Server-Sent Events parser (the WHATWG event-stream format):
//! LF, CRLF or CR line ends, `:` comments, multi-line `data`, an optional BOM.

use paddock_core::model::ModelError;

/// A line longer than this is refused instead of buffered without bound.
const MAX_LINE: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, empty when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    started: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; complete events are appended to `out`. An event still
    /// open when the body ends is dropped, as the format requires.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        self.buf.extend_from_slice(bytes);
        if !self.started {
            if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                return Ok(());
            }
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
            }
            self.started = true;
        }
        let mut consumed = 0;
        while let Some(offset) = self.buf[consumed..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = consumed + offset;
            let next = match self.buf[end] {
                // a CR at the end of what we have may be the first half of a CRLF
                b'\r' if end + 1 == self.buf.len() => break,
                b'\r' if self.buf[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let line = std::str::from_utf8(&self.buf[consumed..end])
                .map_err(|source| ModelError::Decode {
                    what: "event stream line as UTF-8".into(),
                    source: Some(Box::new(source)),
                })?
                .to_owned();
            self.line(&line, out);
            consumed = next;
        }
        self.buf.drain(..consumed);
        if self.buf.len() > MAX_LINE {
            return Err(ModelError::decode(format!(
                "event stream: a line longer than {MAX_LINE} bytes"
            )));
        }
        Ok(())
    }

    /// The body ended: a CR still held back (waiting for a possible LF)
    /// ends its line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if self.buf.last() == Some(&b'\r') {
            self.push(b"\n", out)?;
        }
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` only matter to reconnecting browsers
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Result<Vec<SseEvent>, ModelError> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            parser.push(chunk, &mut out)?;
        }
        Ok(out)
    }

    fn event(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn parses_the_same_at_every_split() -> Result<(), ModelError> {
        let input = "\u{FEFF}: keep-alive\r\n\r\nevent: ping\r\ndata: {\"a\":1}\r\n\r\n\
                     data: line one\ndata:line two\n\n\
                     data: cr\r\r\
                     id: 7\nretry: 10\ndata\n\n\
                     : only a comment\n\n\
                     data: unterminated";
        let expected = vec![
            event("ping", "{\"a\":1}"),
            event("", "line one\nline two"),
            event("", "cr"),
            event("", ""),
        ];
        for piece in 1..=input.len() {
            assert_eq!(
                parse_in_pieces(input.as_bytes(), piece)?,
                expected,
                "piece {piece}"
            );
        }
        Ok(())
    }

    #[test]
    fn finish_ends_a_held_back_cr() -> Result<(), ModelError> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: [DONE]\r\r", &mut out)?;
        assert_eq!(out, vec![]);
        parser.finish(&mut out)?;
        assert_eq!(out, vec![event("", "[DONE]")]);
        Ok(())
    }

    #[test]
    fn invalid_utf8_is_a_decode_error() {
        let result = parse_in_pieces(b"data: \xff\xfe\n\n", 64);
        assert!(
            matches!(result, Err(ModelError::Decode { .. })),
            "{result:?}"
        );
    }
}
