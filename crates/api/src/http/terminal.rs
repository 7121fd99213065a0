//! A background process's output as server-sent events (a terminal's
//! screen, live), and resizing its terminal. Input goes through the
//! process's `stdin` route. A browser's fetch sets the same bearer header
//! as every other route, so no ticket or token in the URL is needed.
//!
//! Events: `output` `{"offset", "data_base64", "dropped"}` with `id:` the
//! offset after it (a reconnect with `Last-Event-ID` resumes there), then
//! `exit` (an exit view) last, or `error` (an error body) last.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use paddock_core::sandbox::SandboxId;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::Body as ErrorBody;
use super::events::last_event_id;
use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::openapi::SseEvent;
use super::streams::holding;
use super::{ApiError, AppState, Caller};
use crate::service::commands::ResizeTerminal;
use crate::service::{ExitView, ProcessFollow, SandboxService};
use crate::text::Encoding;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct StreamQuery {
    /// The output byte to start from (`Last-Event-ID` wins); 0, the
    /// default, replays the scrollback the sandbox still keeps.
    offset: Option<u64>,
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/processes/{handle}/stream", tag = "processes",
    summary = "Follow a process's output live (a terminal's screen), as server-sent events",
    params(("id" = SandboxId, Path), ("handle" = u64, Path, description = "The handle its start answered."), StreamQuery,
        ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "Resume at this output offset (wins over `offset`).")),
    responses(
        (status = 200, description = "`output` events, then `exit`", body = SseEvent, content_type = "text/event-stream"),
        (status = 400, description = "unknown process or bad offset (`bad_request`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
        (status = 429, description = "the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`)", body = ErrorBody),
    ))]
pub(super) async fn stream(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, handle)): ApiPath<(String, u64)>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let id = sandbox_id(&id)?;
    let offset = last_event_id(&headers, query.offset, "an output offset")?;
    let slot = state.streams.take(&tenant)?;
    let follow = state
        .service
        .follow_process(&tenant, &id, handle, offset)
        .await?;
    let events = holding(output_events(state.service.clone(), follow), slot);
    let keep_alive = KeepAlive::new().interval(Duration::from_secs(15));
    Ok(Sse::new(events).keep_alive(keep_alive).into_response())
}

/// The data of a process stream's `output` event (its `id` is the offset
/// to resume after).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TerminalOutput {
    /// The bytes from `offset` on, standard base64.
    pub data_base64: String,
    /// Bytes before `offset` that the bounded buffer no longer holds.
    pub dropped: u64,
    /// Offset of the first byte of `data_base64` in the whole output.
    pub offset: u64,
}

fn output_events(
    service: Arc<SandboxService>,
    follow: ProcessFollow,
) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(Some(follow), move |follow| {
        let service = service.clone();
        async move {
            let mut follow = follow?;
            loop {
                match service.next_process_output(&mut follow).await {
                    Ok(out) if !out.data.is_empty() => {
                        let event = Event::default()
                            .event("output")
                            .id(out.next_offset.to_string())
                            .data(
                                json!(TerminalOutput {
                                    data_base64: Encoding::Base64.encode(&out.data),
                                    dropped: out.dropped,
                                    offset: out.offset,
                                })
                                .to_string(),
                            );
                        return Some((Ok(event), Some(follow)));
                    }
                    Ok(out) => {
                        if let Some(exit) = out.exit {
                            let event = Event::default()
                                .event("exit")
                                .data(json!(ExitView::from(&exit)).to_string());
                            return Some((Ok(event), None));
                        }
                        // A quiet wait: ask again (keep-alives hold the line).
                    }
                    Err(err) => {
                        let event = Event::default()
                            .event("error")
                            .data(ApiError::from(err).to_json().to_string());
                        return Some((Ok(event), None));
                    }
                }
            }
        }
    })
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/processes/{handle}/resize", tag = "processes",
    summary = "Resize a process's terminal",
    params(("id" = SandboxId, Path), ("handle" = u64, Path, description = "The handle its start answered.")),
    request_body = ResizeTerminal,
    responses(
        (status = 204, description = "resized; its foreground job got SIGWINCH"),
        (status = 400, description = "the process has no terminal, or is unknown (`bad_request`)", body = ErrorBody),
        (status = 422, description = "the size is out of range (`invalid_request`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn resize(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, handle)): ApiPath<(String, u64)>,
    ApiJson(command): ApiJson<ResizeTerminal>,
) -> Result<StatusCode, ApiError> {
    let id: SandboxId = sandbox_id(&id)?;
    state
        .service
        .resize_process(&tenant, &id, handle, command)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
