//! `POST /v1/sandboxes/{id}/exec`: one JSON answer, or with
//! `Accept: text/event-stream` the events as they happen:
//!
//! - `started` `{"pid": N}`
//! - `stdout` / `stderr` `{"data": "..."}` (text or base64, as `output_encoding` asked)
//! - `exit` `{"exit_code", "signal", "timed_out", "truncated", "duration_ms", "oom_killed"}`, last
//! - `error` `{"error": {"code", "message"}}`, last, when the sandbox went away
//!
//! A client that disconnects kills the command.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use paddock_core::sandbox::{ExecEvent, SandboxId};
use paddock_proto::OutputStream;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, sandbox_id};
use super::openapi::SseEvent;
use super::streams::holding;
use super::{ApiError, AppState, Caller};
use crate::service::commands::ExecCommand;
use crate::service::{ExecResult, ExecStream, ExitView, SandboxService};
use crate::text::ChunkEncoder;

/// The data of an exec stream's `started` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecStarted {
    /// The command's pid inside the sandbox.
    pub pid: u32,
}

/// The data of an exec stream's `stdout` or `stderr` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OutputChunk {
    /// The bytes, written as the request's `output_encoding` asked.
    pub data: String,
}

/// One JSON answer, or with `Accept: text/event-stream` server-sent events:
/// `started` `{"pid"}`, `stdout`/`stderr` `{"data"}`, then `exit` (an
/// [`ExitView`]) or `error` (an error body).
#[utoipa::path(post, path = "/v1/sandboxes/{id}/exec", tag = "sandboxes",
    summary = "Run a command and wait for it (or stream it)",
    params(("id" = SandboxId, Path)),
    request_body = ExecCommand,
    responses(
        (status = 200, description = "how it ended, with its output; or its events as they happen", content(
            (ExecResult = "application/json"),
            (SseEvent = "text/event-stream"),
        )),
        (status = 422, description = "the body does not fit the request type (`invalid_request`), or the command could not be started (`spawn_failed`)", body = ErrorBody),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
        (status = 429, description = "the tenant has `http.max_streams_per_tenant` streams open (with `Accept: text/event-stream`) (`too_many_streams`)", body = ErrorBody),
    ))]
pub(super) async fn exec(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(command): ApiJson<ExecCommand>,
) -> Result<Response, ApiError> {
    let id = sandbox_id(&id)?;
    if wants_event_stream(&headers) {
        let slot = state.streams.take(&tenant)?;
        let stream = state.service.exec_stream(&tenant, &id, command).await?;
        let events = holding(sse_events(state.service.clone(), stream), slot);
        let keep_alive = KeepAlive::new().interval(Duration::from_secs(15));
        return Ok(Sse::new(events).keep_alive(keep_alive).into_response());
    }
    let result = state.service.exec(&tenant, &id, command).await?;
    Ok(Json(result).into_response())
}

fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().starts_with("text/event-stream"))
}

struct SseState {
    service: Arc<SandboxService>,
    exec: ExecStream,
    stdout: ChunkEncoder,
    stderr: ChunkEncoder,
    queued: VecDeque<Event>,
    done: bool,
}

fn sse_events(
    service: Arc<SandboxService>,
    exec: ExecStream,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let encoding = exec.encoding;
    let state = SseState {
        service,
        exec,
        stdout: ChunkEncoder::new(encoding),
        stderr: ChunkEncoder::new(encoding),
        queued: VecDeque::new(),
        done: false,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.queued.pop_front() {
                return Some((Ok(event), st));
            }
            if st.done {
                return None;
            }
            st.next_events().await;
        }
    })
}

impl SseState {
    /// Reads one exec event and queues what it becomes on the wire.
    async fn next_events(&mut self) {
        let service = self.service.clone();
        match service.next_exec_event(&mut self.exec).await {
            Ok(Some(ExecEvent::Started { pid })) => {
                self.push("started", json!(ExecStarted { pid }))
            }
            Ok(Some(ExecEvent::Output { stream, data })) => {
                let (name, encoder) = match stream {
                    OutputStream::Stdout => ("stdout", &mut self.stdout),
                    OutputStream::Stderr => ("stderr", &mut self.stderr),
                };
                let text = encoder.push(&data);
                if !text.is_empty() {
                    self.push(name, json!(OutputChunk { data: text }));
                }
            }
            Ok(Some(ExecEvent::Exited(exit))) => {
                for (name, rest) in [
                    ("stdout", self.stdout.finish()),
                    ("stderr", self.stderr.finish()),
                ] {
                    if !rest.is_empty() {
                        self.push(name, json!(OutputChunk { data: rest }));
                    }
                }
                self.push("exit", json!(ExitView::from(&exit)));
                self.done = true;
            }
            Ok(None) => self.done = true,
            Err(err) => {
                let api = ApiError::from(err);
                self.push("error", api.to_json());
                self.done = true;
            }
        }
    }

    fn push(&mut self, name: &'static str, data: serde_json::Value) {
        self.queued
            .push_back(Event::default().event(name).data(data.to_string()));
    }
}
