//! Server-sent events read off a response, one frame at a time.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures_util::StreamExt;
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;

/// Longest a stream may stay silent (keep-alives aside).
const QUIET_TIMEOUT: Duration = Duration::from_secs(90);

/// One server-sent event with its data parsed.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<u64>,
    pub event: String,
    pub data: Value,
}

/// Reads server-sent events off a response body.
pub struct EventReader {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl EventReader {
    pub async fn open(request: RequestBuilder) -> Result<Self> {
        let response = request.header("accept", "text/event-stream").send().await?;
        if response.status() != StatusCode::OK {
            bail!("{}: {}", response.status(), response.text().await?);
        }
        let content_type = response.headers()["content-type"].to_str()?.to_owned();
        ensure!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Ok(Self {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        })
    }

    /// The next event (comments skipped); None at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<Frame>> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame {
                    id: None,
                    event: String::new(),
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        frame.id = Some(v.parse()?);
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        frame.event = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if frame.event.is_empty() && data.is_empty() {
                    continue; // a keep-alive comment
                }
                frame.data = serde_json::from_str(&data).with_context(|| data.clone())?;
                ensure!(frame.event != "error", "the stream failed: {}", frame.data);
                return Ok(Some(frame));
            }
            let next = tokio::time::timeout(QUIET_TIMEOUT, self.body.next())
                .await
                .context("no event for too long")?;
            match next {
                Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk?)),
                None => return Ok(None),
            }
        }
    }
}
