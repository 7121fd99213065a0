//! Server-sent events from the API (a session's or a run's event log): the
//! frame parser, and an open stream read frame by frame with an idle
//! timeout (the server sends a keep-alive every 15 s).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use anyhow::{Context, bail};
use futures_util::{Stream, StreamExt};
use paddock_api::http::EventEnvelope;
use paddock_core::ids::{SessionId, TenantId};
use paddock_core::store::{RunEvent, Timestamp};
use reqwest::Method;

use super::ApiClient;

/// No byte for this long (three keep-alives missed): the connection is dead.
const IDLE_TIMEOUT: Duration = Duration::from_secs(45);

/// One server-sent event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl Frame {
    /// The stored event this frame carries (`id: <seq>`, `data`: an
    /// [`EventEnvelope`]), None for a frame without a sequence number.
    pub fn run_event(&self, session: &SessionId) -> Option<RunEvent> {
        let seq = self.id.as_deref()?.parse::<u64>().ok()?;
        self.event_at(session, seq, self.envelope())
    }

    /// The transient event (`model.delta`, `tool.output`) this frame
    /// carries: no `id`, `seq` 0 in its data; None for any other frame.
    pub fn transient_event(&self, session: &SessionId) -> Option<RunEvent> {
        if self.id.is_some() || self.event.is_empty() {
            return None;
        }
        let data = self.envelope()?;
        (data.seq == 0).then_some(())?;
        self.event_at(session, 0, Some(data))
    }

    /// The frame's data as the server wrote it; None when it is not one.
    fn envelope(&self) -> Option<EventEnvelope> {
        serde_json::from_str(&self.data).ok()
    }

    /// The event at `seq`; unreadable data becomes a null payload of an
    /// unknown run at time 0 (the kind still tells a reader what it was).
    fn event_at(
        &self,
        session: &SessionId,
        seq: u64,
        data: Option<EventEnvelope>,
    ) -> Option<RunEvent> {
        let (run, payload, created_at) = match data {
            Some(data) => (
                data.run,
                data.payload.to_string(),
                Timestamp::parse_rfc3339(&data.created_at),
            ),
            None => (None, "null".to_owned(), None),
        };
        Some(RunEvent {
            // The caller's own tenant, which the API never names.
            tenant: TenantId::parse("remote").ok()?,
            session: session.clone(),
            seq,
            run,
            kind: self.event.clone(),
            payload,
            created_at: created_at.unwrap_or(Timestamp::from_millis(0)),
        })
    }
}

/// Splits an SSE byte stream into events; comments (keep-alives) are dropped.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    current: Frame,
    has_data: bool,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        self.buffer.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data || !self.current.event.is_empty() {
                    frames.push(std::mem::take(&mut self.current));
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => self.current.id = Some(value.to_owned()),
                "event" => self.current.event = value.to_owned(),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        frames
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Vec<u8>>> + Send>>;

/// An open event stream.
pub struct EventSource {
    body: Body,
    parser: SseParser,
    pending: VecDeque<Frame>,
}

impl EventSource {
    /// GETs `path` as `text/event-stream` with `query`.
    pub async fn open(
        api: &ApiClient,
        path: &str,
        query: &[(&str, String)],
    ) -> anyhow::Result<Self> {
        let request = api
            .request(Method::GET, path)
            .header("accept", "text/event-stream")
            .query(query);
        let response = api.send(request).await?;
        Ok(Self {
            body: Box::pin(
                response
                    .bytes_stream()
                    .map(|chunk| chunk.map(|b| b.to_vec())),
            ),
            parser: SseParser::default(),
            pending: VecDeque::new(),
        })
    }

    /// The next frame; None when the server ended the stream. An `error`
    /// frame (the server failed midway) is an error.
    pub async fn next(&mut self) -> anyhow::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                if frame.event == "error" {
                    bail!("the server ended the event stream: {}", frame.data);
                }
                return Ok(Some(frame));
            }
            let chunk = tokio::time::timeout(IDLE_TIMEOUT, self.body.next())
                .await
                .map_err(|_| {
                    anyhow::anyhow!(
                        "the event stream sent nothing for {} s",
                        IDLE_TIMEOUT.as_secs()
                    )
                })?;
            let Some(chunk) = chunk else {
                return Ok(None);
            };
            let chunk = chunk.context("reading the event stream")?;
            self.pending.extend(self.parser.push(&chunk));
        }
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::RunId;

    use super::*;

    #[test]
    fn frames_split_across_chunks_and_comments_are_skipped() {
        let mut parser = SseParser::default();
        assert!(
            parser
                .push(b": keep-alive\n\nid: 4\nevent: progr")
                .is_empty()
        );
        let frames = parser.push(b"ess\ndata: {\"message\":\"a\"}\n\nid: 5\n");
        assert_eq!(
            frames,
            [Frame {
                id: Some("4".into()),
                event: "progress".into(),
                data: "{\"message\":\"a\"}".into()
            }]
        );
        let frames = parser.push(b"event: run.finished\r\ndata: {}\r\n\r\n");
        assert_eq!(frames[0].id.as_deref(), Some("5"));
        assert_eq!(frames[0].event, "run.finished");
    }

    #[test]
    fn a_frame_becomes_the_stored_event_it_carries() {
        let session = SessionId::generate();
        let run = RunId::generate();
        let frame = Frame {
            id: Some("7".into()),
            event: "progress".into(),
            data: format!(
                "{{\"seq\":7,\"run\":\"{run}\",\"created_at\":\"2023-11-14T22:13:20.123Z\",\"payload\":{{\"message\":\"hi\"}}}}"
            ),
        };
        let event = frame.run_event(&session).unwrap();
        assert_eq!((event.seq, event.run.as_ref()), (7, Some(&run)));
        assert_eq!(event.payload, r#"{"message":"hi"}"#);
        assert_eq!(event.created_at.as_millis(), 1_700_000_000_123);
        let no_id = Frame { id: None, ..frame };
        assert!(no_id.run_event(&session).is_none());
    }
}
