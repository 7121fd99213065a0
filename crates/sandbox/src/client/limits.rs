//! How much one guest connection may hold in host memory, and what happens to
//! a stream whose reader falls behind: the operator's `[streams]` section
//! deserialises into [`StreamLimits`] and [`StreamLimits::validate`] checks it.

use std::time::Duration;

use paddock_proto::{MAX_PAYLOAD_LEN, STREAM_WINDOW};
use serde::Deserialize;

/// What a command's output does when its reader is slower than the command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowReader {
    /// The guest stops reading the command's pipes until the reader catches
    /// up, so the command itself slows down; nothing is lost.
    #[default]
    Wait,
    /// The command runs at full speed; output past the stream's buffer is
    /// dropped, the reader gets a marker saying how much, and the exit is
    /// reported truncated.
    Drop,
}

/// Bounds for one guest connection (one sandbox); `[streams]` of the
/// config, a key left out keeping its default.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamLimits {
    pub slow_reader: SlowReader,
    /// Event payload bytes one request's stream may hold waiting for its reader.
    pub stream_buffer_bytes: usize,
    /// The same, summed over every stream of the connection.
    pub sandbox_buffer_bytes: usize,
    /// Request payload bytes (file writes, stdin, archive chunks) sent to the
    /// guest and not yet answered; later requests wait for room.
    pub input_budget_bytes: usize,
    /// How long a request waits for that room before it fails.
    #[serde(skip)]
    pub input_stall: Duration,
}

/// A [`StreamLimits`] setting out of bounds, named as in `[streams]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamLimitsError {
    #[error("{setting} must be more than 0")]
    Zero { setting: &'static str },
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            slow_reader: SlowReader::Wait,
            // A window of exec output and one whole archive chunk past it.
            stream_buffer_bytes: (STREAM_WINDOW as usize) + (1 << 20),
            sandbox_buffer_bytes: 32 << 20,
            // One largest frame and a second one queued behind it.
            input_budget_bytes: 2 * MAX_PAYLOAD_LEN as usize,
            input_stall: Duration::from_secs(30),
        }
    }
}

impl StreamLimits {
    /// Every size above 0.
    pub fn validate(&self) -> Result<(), StreamLimitsError> {
        for (setting, value) in [
            ("stream_buffer_bytes", self.stream_buffer_bytes),
            ("sandbox_buffer_bytes", self.sandbox_buffer_bytes),
            ("input_budget_bytes", self.input_budget_bytes),
        ] {
            if value == 0 {
                return Err(StreamLimitsError::Zero { setting });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StreamLimits, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn keys_left_out_keep_their_defaults() {
        let limits = parse(r#"{"slow_reader": "drop", "sandbox_buffer_bytes": 1024}"#).unwrap();
        let defaults = StreamLimits::default();
        assert_eq!(limits.slow_reader, SlowReader::Drop);
        assert_eq!(limits.sandbox_buffer_bytes, 1024);
        assert_eq!(limits.stream_buffer_bytes, defaults.stream_buffer_bytes);
        assert_eq!(limits.input_stall, defaults.input_stall);
        assert_eq!(limits.validate(), Ok(()));
        assert_eq!(defaults.validate(), Ok(()));
    }

    #[test]
    fn a_zero_size_is_refused_by_name_and_unknown_keys_are_refused() {
        for setting in [
            "stream_buffer_bytes",
            "sandbox_buffer_bytes",
            "input_budget_bytes",
        ] {
            let limits = parse(&format!(r#"{{"{setting}": 0}}"#)).unwrap();
            let err = limits.validate().unwrap_err();
            assert_eq!(err, StreamLimitsError::Zero { setting });
            assert_eq!(err.to_string(), format!("{setting} must be more than 0"));
        }
        assert!(parse(r#"{"slow_reader": "later"}"#).is_err());
        assert!(parse(r#"{"input_stall": 5}"#).is_err());
    }
}
