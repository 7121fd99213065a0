//! `GET /v1/sessions/{id}/events`: the session's event log as server-sent
//! events, from a sequence number on, then live. `GET /v1/runs/{id}/events`:
//! the same for one run's events only, ending after its `run.finished`. Every event carries
//! `id: <seq>`, `event: <kind>` and `data: {"seq", "run", "created_at",
//! "payload"}`; a client that reconnects with `Last-Event-ID` (or `?after=N`)
//! gets every later event exactly once, in order. The stream stays open for
//! the session's next runs unless `?until=run_finished` asks it to end after
//! the next `run.finished`, or `?until=caught_up` after the events stored so far.
//! Transient events (`model.delta`, `tool.output`: published live by the
//! node driving the run, never stored) come without an `id` and `seq` 0, so
//! they never move a client's resume point; a reconnect does not replay them.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use futures_util::stream::Stream;
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::RunEvent;
use paddock_runtime::EventStream;
use paddock_runtime::events::{Event as TypedEvent, payload_json};
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiPath, ApiQuery};
use super::openapi::SseEvent;
use super::runs::run_id;
use super::sessions::session_id;
use super::streams::holding;
use super::{ApiError, AppState, Caller};
use crate::service::{AgentError, AgentService};

const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct EventsQuery {
    /// Only events with a higher sequence number (`Last-Event-ID` wins).
    after: Option<u64>,
    /// End the stream after the next `run.finished`, or once the stored events were sent.
    #[param(inline)]
    until: Option<Until>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
enum Until {
    RunFinished,
    CaughtUp,
}

/// The data of one event on a session's or a run's stream. Fields are in
/// alphabetical order, as the wire has always had them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventEnvelope {
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// The event's payload, as its kind defines it.
    pub payload: serde_json::Value,
    /// The run it belongs to; null for a session's own events.
    pub run: Option<RunId>,
    /// Its sequence number in the session; 0 for a transient event.
    pub seq: u64,
}

/// Events read from the store per query for `until=caught_up`.
const PAGE: u32 = 500;

/// Each event: `id: <seq>`, `event: <kind>`, `data: {"seq", "run", "created_at", "payload"}`;
/// a failure midway ends the stream with an `error` event (an error body).
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "runs",
    summary = "A session's events as server-sent events, from a sequence number on, then live",
    params(("id" = SessionId, Path), EventsQuery, ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "Resume after this sequence number (wins over `after`).")),
    responses((status = 200, description = "the event stream", body = SseEvent, content_type = "text/event-stream"),
        (status = 429, description = "the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`)", body = ErrorBody)))]
pub(super) async fn stream(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<Response, ApiError> {
    let id = session_id(&id)?;
    let after = after_seq(&headers, query.after)?;
    let agents = state.agents()?;
    let slot = state.streams.take(&tenant)?;
    let closing = agents.closing();
    let body = if query.until == Some(Until::CaughtUp) {
        agents.get_session(&tenant, &id).await?;
        stored_events(agents.clone(), tenant, id, after).boxed()
    } else {
        let events = agents.events(&tenant, &id, after).await?;
        let stop_after_finish = query.until == Some(Until::RunFinished);
        sse_events(events, stop_after_finish).boxed()
    };
    let body = holding(body.take_until(closing.cancelled_owned()), slot);
    Ok(Sse::new(body)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

/// `Last-Event-ID`, else `?after`, else 0.
fn after_seq(headers: &HeaderMap, after: Option<u64>) -> Result<u64, ApiError> {
    last_event_id(headers, after, "the sequence number of an event")
}

/// A number from `Last-Event-ID` (a resuming client's), else `fallback`,
/// else 0; `what` says in the error what the id should have been.
pub(super) fn last_event_id(
    headers: &HeaderMap,
    fallback: Option<u64>,
    what: &str,
) -> Result<u64, ApiError> {
    match headers.get("last-event-id") {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("Last-Event-ID: expected {what}"),
                )
            }),
        None => Ok(fallback.unwrap_or(0)),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct RunEventsQuery {
    /// Only events with a higher sequence number (`Last-Event-ID` wins).
    after: Option<u64>,
}

/// One run's events (sequence numbers are its session's), ending after its
/// `run.finished`; a finished run's stream ends once its events were sent.
#[utoipa::path(get, path = "/v1/runs/{id}/events", tag = "runs",
    summary = "One run's events as server-sent events, ending after its `run.finished`",
    params(("id" = RunId, Path), RunEventsQuery, ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "Resume after this sequence number (wins over `after`).")),
    responses((status = 200, description = "the event stream", body = SseEvent, content_type = "text/event-stream"),
        (status = 429, description = "the tenant has `http.max_streams_per_tenant` streams open (`too_many_streams`)", body = ErrorBody)))]
pub(super) async fn run_stream(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<RunEventsQuery>,
) -> Result<Response, ApiError> {
    let id = run_id(&id)?;
    let after = after_seq(&headers, query.after)?;
    let agents = state.agents()?;
    let slot = state.streams.take(&tenant)?;
    let closing = agents.closing();
    let events = agents.run_events(&tenant, &id, after).await?;
    let body = holding(
        sse_events(events, true).take_until(closing.cancelled_owned()),
        slot,
    );
    Ok(Sse::new(body)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

/// The events stored after `after`, page by page, then the end.
fn stored_events(
    agents: Arc<AgentService>,
    tenant: TenantId,
    session: SessionId,
    after: u64,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(Some(after), move |after| {
        let (agents, tenant, session) = (agents.clone(), tenant.clone(), session.clone());
        async move {
            let after = after?;
            match agents.event_page(&tenant, &session, after, PAGE).await {
                Ok(page) => {
                    let next = match page.last() {
                        Some(last) if page.len() >= PAGE as usize => Some(last.seq),
                        _ => None,
                    };
                    let events: Vec<Result<Event, Infallible>> =
                        page.iter().map(|e| Ok(to_sse(e))).collect();
                    Some((futures_util::stream::iter(events), next))
                }
                Err(err) => {
                    let error = error_event(ApiError::from(err));
                    Some((futures_util::stream::iter(vec![Ok(error)]), None))
                }
            }
        }
    })
    .flatten()
}

fn error_event(error: ApiError) -> Event {
    Event::default()
        .event("error")
        .data(error.to_json().to_string())
}

fn sse_events(
    events: EventStream,
    stop_after_finish: bool,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(Some(events), move |events| async move {
        let mut events = events?;
        match events.next().await? {
            Ok(event) => {
                let last = stop_after_finish && TypedEvent::of(&event).is_run_finished();
                let sse = to_sse(&event);
                Some((Ok(sse), (!last).then_some(events)))
            }
            Err(err) => {
                let api = ApiError::from(AgentError::Runtime {
                    op: "event_stream",
                    source: Box::new(err),
                });
                Some((Ok(error_event(api)), None))
            }
        }
    })
}

/// One stored event on the wire: its payload inside an envelope that says
/// which run it belongs to. Kinds come from the runtime; anything that would
/// break the framing is replaced.
fn to_sse(event: &RunEvent) -> Event {
    let kind: String = event
        .kind
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let payload = payload_json(&event.payload);
    // serde_json writes one line: raw line breaks in strings are escaped.
    let data = EventEnvelope {
        created_at: event.created_at.to_string(),
        payload,
        run: event.run.clone(),
        seq: event.seq,
    };
    let sse = if event.is_transient() {
        // never stored: no id, so a client's Last-Event-ID stays the last
        // stored event's and resuming stays exact
        Event::default()
    } else {
        Event::default().id(event.seq.to_string())
    };
    sse.event(kind).data(serde_json::json!(data).to_string())
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::Timestamp;

    use super::*;

    fn event(kind: &str, payload: &str) -> RunEvent {
        RunEvent {
            tenant: TenantId::parse("t").unwrap(),
            session: SessionId::generate(),
            seq: 7,
            run: None,
            kind: kind.into(),
            payload: payload.into(),
            created_at: Timestamp::from_millis(0),
        }
    }

    async fn wire(event: Event) -> String {
        let body = Sse::new(futures_util::stream::iter([Ok::<_, Infallible>(event)]))
            .into_response()
            .into_body();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn until_run_finished_ends_after_it_and_unknown_kinds_pass_through() {
        let mut finished = event(
            "run.finished",
            r#"{"state":"completed","end_reason":"completed","usage":{},"error":null,"verdict":"met","question":null,"end_snapshot":null,"snapshot_error":null}"#,
        );
        finished.seq = 8;
        let mut after = event("progress", r#"{"message":"next run"}"#);
        after.seq = 9;
        let events: EventStream = futures_util::stream::iter(
            [event("child.spawned", r#"{"a":1}"#), finished, after].map(Ok),
        )
        .boxed();
        let frames: Vec<Event> = sse_events(events, true)
            .map(|frame| frame.unwrap_or_else(|never| match never {}))
            .collect()
            .await;
        let mut text = String::new();
        for frame in frames {
            text.push_str(&wire(frame).await);
        }
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("event: "))
                .collect::<Vec<_>>(),
            ["event: child.spawned", "event: run.finished"],
            "{text}"
        );
        assert!(text.contains(r#""payload":{"a":1}"#), "{text}");
    }

    #[tokio::test]
    async fn every_event_carries_its_sequence_kind_and_one_line_of_json() {
        let text = wire(to_sse(&event("tool.call", r#"{"tool":"read_file"}"#))).await;
        assert_eq!(
            text,
            "id: 7\nevent: tool.call\ndata: {\"created_at\":\"1970-01-01T00:00:00.000Z\",\
             \"payload\":{\"tool\":\"read_file\"},\"run\":null,\"seq\":7}\n\n"
        );
        // Raw line breaks (not what the runtime writes) cannot break the framing.
        let text = wire(to_sse(&event("pro\ngress", "{\n\"message\": \"a\r\"}"))).await;
        assert_eq!(text.lines().filter(|l| !l.is_empty()).count(), 3, "{text}");
        assert!(
            text.starts_with("id: 7\nevent: pro gress\ndata: {"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_transient_event_has_no_id_to_resume_from() {
        let mut delta = event("model.delta", r#"{"part":"text","turn":1,"text":"Hi"}"#);
        delta.seq = 0;
        let text = wire(to_sse(&delta)).await;
        assert!(text.starts_with("event: model.delta\ndata: {"), "{text}");
        assert!(!text.contains("id:"), "{text}");
        assert!(text.contains(r#""seq":0"#), "{text}");
    }
}
