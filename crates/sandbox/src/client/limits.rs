//! How much one guest connection may hold in host memory, and what happens to
//! a stream whose reader falls behind.

use std::time::Duration;

use paddock_proto::{MAX_PAYLOAD_LEN, STREAM_WINDOW};

/// What a command's output does when its reader is slower than the command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// Bounds for one guest connection (one sandbox).
#[derive(Debug, Clone)]
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
    pub input_stall: Duration,
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
