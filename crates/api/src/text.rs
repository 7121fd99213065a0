//! Bytes in JSON: command output, process output and stdin travel either as
//! UTF-8 text (the default; invalid sequences become U+FFFD) or as base64
//! (exact bytes).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// How bytes are written into a JSON string.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// UTF-8 text, JSON-escaped; bytes that are not UTF-8 become U+FFFD.
    #[default]
    Text,
    /// Standard base64 with padding: the exact bytes.
    Base64,
}

impl Encoding {
    pub fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Text => String::from_utf8_lossy(bytes).into_owned(),
            Encoding::Base64 => STANDARD.encode(bytes),
        }
    }
}

pub fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    STANDARD.decode(text)
}

/// Length of the prefix of `bytes` that does not end inside a UTF-8
/// sequence: the cut that leaves an incomplete trailing character (at most
/// 3 bytes) for the next read.
pub fn complete_utf8_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        // Invalid bytes before the end: look only at the tail.
        Err(_) => {
            let tail_start = bytes.len().saturating_sub(3);
            (tail_start..bytes.len())
                .find(|&i| {
                    bytes[i] >= 0xC0
                        && std::str::from_utf8(&bytes[i..]).is_err_and(|e| e.error_len().is_none())
                })
                .unwrap_or(bytes.len())
        }
    }
}

/// Encodes a stream of byte chunks: in text mode a character split between
/// two chunks is held back and written whole with the next one.
#[derive(Debug, Default)]
pub struct ChunkEncoder {
    encoding: Encoding,
    pending: Vec<u8>,
}

impl ChunkEncoder {
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            pending: Vec::new(),
        }
    }

    /// The text for `chunk`; empty when everything was held back.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        if self.encoding == Encoding::Base64 {
            return self.encoding.encode(chunk);
        }
        self.pending.extend_from_slice(chunk);
        let complete = complete_utf8_len(&self.pending);
        let rest = self.pending.split_off(complete);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    /// Whatever is still held back (an incomplete character at the very end).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_between_chunks_arrives_whole() {
        let bytes = "añb€".as_bytes();
        let mut encoder = ChunkEncoder::new(Encoding::Text);
        let mut out = String::new();
        for byte in bytes {
            out.push_str(&encoder.push(std::slice::from_ref(byte)));
        }
        out.push_str(&encoder.finish());
        assert_eq!(out, "añb€");
        assert!(!out.contains('\u{FFFD}'));
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut encoder = ChunkEncoder::new(Encoding::Text);
        assert_eq!(encoder.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(encoder.push(b"\xe2\x82"), "");
        assert_eq!(encoder.finish(), "\u{FFFD}");
    }

    #[test]
    fn base64_keeps_exact_bytes() {
        let mut encoder = ChunkEncoder::new(Encoding::Base64);
        let text = encoder.push(b"\x00\xff\xe2");
        assert_eq!(decode_base64(&text).ok(), Some(b"\x00\xff\xe2".to_vec()));
        assert_eq!(encoder.finish(), "");
    }

    #[test]
    fn complete_length_cuts_only_an_unfinished_tail() {
        assert_eq!(complete_utf8_len(b"abc"), 3);
        assert_eq!(complete_utf8_len("a€".as_bytes()), 4);
        assert_eq!(complete_utf8_len(&"a€".as_bytes()[..3]), 1);
        assert_eq!(complete_utf8_len(b"\xffa\xe2\x82"), 2);
        assert_eq!(complete_utf8_len(b"\xffab"), 3);
    }
}
