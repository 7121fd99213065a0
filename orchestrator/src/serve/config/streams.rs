//! `[streams]`: host memory bounds of each sandbox's guest connection.

use paddock_sandbox::{SlowReader, StreamLimits};
use serde::Deserialize;

use super::positive;

/// `[streams]`: defaults in [`StreamLimits::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamsSection {
    /// "wait" (a slow reader slows the command; default) or "drop" (output
    /// past the buffer is dropped with a marker).
    pub slow_reader: Option<SlowReaderName>,
    /// Output bytes one stream may buffer for its reader.
    pub stream_buffer_bytes: Option<usize>,
    /// The same over all streams of one sandbox (default 32 MiB).
    pub sandbox_buffer_bytes: Option<usize>,
    /// Request payload bytes in flight to one sandbox (default 32 MiB).
    pub input_budget_bytes: Option<usize>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlowReaderName {
    Wait,
    Drop,
}

impl StreamsSection {
    /// This section over [`StreamLimits::default`], each size above 0.
    pub fn limits(&self) -> anyhow::Result<StreamLimits> {
        let streams = self;
        let mut limits = StreamLimits::default();
        if let Some(policy) = streams.slow_reader {
            limits.slow_reader = match policy {
                SlowReaderName::Wait => SlowReader::Wait,
                SlowReaderName::Drop => SlowReader::Drop,
            };
        }
        if let Some(bytes) = streams.stream_buffer_bytes {
            limits.stream_buffer_bytes = positive("streams.stream_buffer_bytes", bytes)?;
        }
        if let Some(bytes) = streams.sandbox_buffer_bytes {
            limits.sandbox_buffer_bytes = positive("streams.sandbox_buffer_bytes", bytes)?;
        }
        if let Some(bytes) = streams.input_budget_bytes {
            limits.input_budget_bytes = positive("streams.input_budget_bytes", bytes)?;
        }
        Ok(limits)
    }
}
