//! `paddock session ...` against a server (`--server URL`): the same
//! commands as HTTP requests; events come over SSE.

use anyhow::{Context, bail};
use futures_util::StreamExt;
use paddock_api::service::{RunView, SessionView};
use paddock_core::store::RunEvent;
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::exit::EXIT_CANCELLED;
use super::render::Format;
use super::session::{
    print_forked, print_session, print_session_event, print_sessions, print_show,
};
use crate::cli::SessionCommand;
use crate::client::ApiClient;
use crate::sandbox::signals::TermSignals;

#[derive(Deserialize)]
struct SessionList {
    sessions: Vec<SessionView>,
}

#[derive(Deserialize)]
struct RunList {
    runs: Vec<RunView>,
}

pub async fn session(api: &ApiClient, command: SessionCommand) -> anyhow::Result<u8> {
    match command {
        SessionCommand::Ls {
            workspace, json, ..
        } => {
            let mut request = api.request(Method::GET, "/v1/sessions");
            if let Some(dir) = workspace {
                let id = dir.to_string_lossy().into_owned();
                if !id.starts_with("ws_") {
                    bail!(
                        "with --server, --workspace takes a workspace id (ws_...), not a directory"
                    );
                }
                request = request.query(&[("workspace", id)]);
            }
            let list: SessionList = serde_json::from_value(api.json(request).await?)?;
            print_sessions(&list.sessions, json)?;
        }
        SessionCommand::Show { id, json, .. } => {
            let session = get_session(api, &id).await?;
            let runs: RunList = serde_json::from_value(
                api.json(api.request(Method::GET, &format!("/v1/sessions/{}/runs", segment(&id))))
                    .await?,
            )?;
            print_show(&session, &runs.runs, json)?;
        }
        SessionCommand::Rename {
            id, title, json, ..
        } => {
            let request = api
                .request(Method::PATCH, &format!("/v1/sessions/{}", segment(&id)))
                .json(&json!({ "title": title }));
            print_session(&serde_json::from_value(api.json(request).await?)?, json)?;
        }
        SessionCommand::Archive { id, json, .. } => {
            let request = api.request(Method::DELETE, &format!("/v1/sessions/{}", segment(&id)));
            print_session(&serde_json::from_value(api.json(request).await?)?, json)?;
        }
        SessionCommand::Fork {
            id,
            at_run,
            title,
            json,
            ..
        } => {
            let request = api
                .request(Method::POST, &format!("/v1/sessions/{}/fork", segment(&id)))
                .json(&json!({ "at_run": at_run, "title": title }));
            print_forked(&serde_json::from_value(api.json(request).await?)?, json)?;
        }
        SessionCommand::Events {
            id,
            after,
            follow,
            json,
            ..
        } => {
            let format = if json { Format::Json } else { Format::Human };
            return events(api, &id, after, follow, format).await;
        }
    }
    Ok(0)
}

async fn get_session(api: &ApiClient, id: &str) -> anyhow::Result<SessionView> {
    let value = api
        .json(api.request(Method::GET, &format!("/v1/sessions/{}", segment(id))))
        .await?;
    Ok(serde_json::from_value(value)?)
}

/// Streams the session's events over SSE; without `follow`, stops once the
/// events stored so far are printed.
async fn events(
    api: &ApiClient,
    id: &str,
    after: u64,
    follow: bool,
    format: Format,
) -> anyhow::Result<u8> {
    let session = get_session(api, id).await?;
    let mut query = vec![("after", after.to_string())];
    if !follow {
        query.push(("until", "caught_up".to_owned()));
    }
    let request = api
        .request(Method::GET, &format!("/v1/sessions/{}/events", segment(id)))
        .header("accept", "text/event-stream")
        .query(&query);
    let response = api.send(request).await?;
    let mut body = response.bytes_stream();
    let mut parser = SseParser::default();
    let mut signals = TermSignals::install()?;
    let mut stdout = std::io::stdout();
    loop {
        let chunk = tokio::select! {
            chunk = body.next() => chunk,
            _ = signals.recv() => return Ok(EXIT_CANCELLED),
        };
        let Some(chunk) = chunk else {
            return Ok(0);
        };
        let chunk = chunk.context("reading the event stream")?;
        for frame in parser.push(&chunk) {
            if frame.event == "error" {
                bail!("the server ended the stream: {}", frame.data);
            }
            let Some(seq) = frame.id.as_deref().and_then(|i| i.parse::<u64>().ok()) else {
                continue;
            };
            let data: Value = serde_json::from_str(&frame.data).unwrap_or(Value::Null);
            let event = RunEvent {
                tenant: paddock_core::ids::TenantId::parse("remote")?,
                session: session.id.clone(),
                seq,
                run: data["run"]
                    .as_str()
                    .and_then(|r| paddock_core::ids::RunId::parse(r).ok()),
                kind: frame.event.clone(),
                payload: data["payload"].to_string(),
                created_at: paddock_core::store::Timestamp::from_millis(0),
            };
            print_session_event(&mut stdout, format, &event);
        }
    }
}

/// One server-sent event.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Frame {
    id: Option<String>,
    event: String,
    data: String,
}

/// Splits an SSE byte stream into events; comments (keep-alives) are dropped.
#[derive(Debug, Default)]
struct SseParser {
    buffer: Vec<u8>,
    current: Frame,
    has_data: bool,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
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

/// One path segment, percent-encoded.
fn segment(raw: &str) -> String {
    crate::client::encode_path(&raw.replace('/', "%2F"))
}

#[cfg(test)]
mod tests {
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
}
