//! `WatchDir`'s stream: a start event, then what each poll finds, a
//! keepalive when nothing was sent for a while, and the end at the call's
//! deadline (or when the client goes and hyper drops the body).

use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::Stream;
use tokio::time::Instant;

use super::super::super::connect::{
    self, CallShape, Code, ConnectError, single_request, streaming,
};
use super::super::super::filesystem_pb::Empty;
use super::super::super::filesystem_pb::watch::{
    WatchDirRequest, WatchDirResponse, watch_dir_response,
};
use super::super::Files;
use super::poll::Watch;
use super::{POLL_INTERVAL, now, owner_of};
use crate::http::AppState;
use crate::http::e2b::auth::EnvdCaller;
use crate::http::e2b::error::E2bError;
use crate::http::streams::StreamSlot;

/// The longest one listing may take.
const POLL_LIMIT: Duration = Duration::from_secs(30);
/// envd's keepalive interval when the client names none, and the bounds
/// of one it names.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(90);
const MIN_KEEPALIVE: Duration = Duration::from_secs(1);
const MAX_KEEPALIVE: Duration = Duration::from_secs(600);

pub(super) async fn open_stream(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ConnectError> {
    let shape = CallShape::of(headers)?;
    if !shape.streaming {
        return Err(ConnectError::new(
            Code::InvalidArgument,
            "WatchDir is a server stream: send application/connect+json or application/connect+proto",
        ));
    }
    let deadline = connect::deadline(headers).map(|t| now() + t);
    let caller = EnvdCaller::from_headers(headers, state)
        .map_err(|refused| ConnectError::from(E2bError::from(refused)))?;
    let request: WatchDirRequest = single_request(shape, body).await?;
    let slot = state.streams.take(&caller.tenant)?;
    let files = Files {
        service: state.service.clone(),
        tenant: caller.tenant,
        sandbox: caller.sandbox,
    };
    let watch = Watch::open(&files, &request).await?;
    let opened = Opened {
        files,
        watch,
        _slot: slot,
        deadline,
        keepalive: keepalive_interval(headers),
        last_sent: now(),
        next_poll: now() + POLL_INTERVAL,
        step: Step::Start,
    };
    Ok(streaming(shape, opened.events()))
}

/// The client's `Keepalive-Ping-Interval`, in seconds, within bounds.
fn keepalive_interval(headers: &HeaderMap) -> Duration {
    headers
        .get("keepalive-ping-interval")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_KEEPALIVE, |secs| {
            Duration::from_secs(secs).clamp(MIN_KEEPALIVE, MAX_KEEPALIVE)
        })
}

/// What the stream does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Start,
    Watch,
    Done,
}

/// A `WatchDir` stream once its first listing is taken.
struct Opened {
    files: Files,
    watch: Watch,
    /// Held while the stream is open (the tenant's stream count).
    _slot: StreamSlot,
    deadline: Option<Instant>,
    keepalive: Duration,
    last_sent: Instant,
    next_poll: Instant,
    step: Step,
}

fn answer(event: watch_dir_response::Event) -> WatchDirResponse {
    WatchDirResponse { event: Some(event) }
}

fn deadline_passed() -> ConnectError {
    ConnectError::new(
        Code::DeadlineExceeded,
        "the call's timeout passed: the watch ended",
    )
}

impl Opened {
    fn events(self) -> impl Stream<Item = Result<WatchDirResponse, ConnectError>> + Send + 'static {
        futures_util::stream::unfold(self, |mut opened| async move {
            let item = match opened.step {
                Step::Done => return None,
                Step::Start => {
                    opened.step = Step::Watch;
                    opened.last_sent = now();
                    Ok(answer(watch_dir_response::Event::Start(Empty {})))
                }
                Step::Watch => opened.next().await,
            };
            if item.is_err() {
                opened.step = Step::Done;
            }
            Some((item, opened))
        })
    }

    /// The next message: a pending event, else a keepalive when one is
    /// due, else whatever the next polls find.
    async fn next(&mut self) -> Result<WatchDirResponse, ConnectError> {
        loop {
            if let Some(event) = self.watch.pending.pop_front() {
                self.last_sent = now();
                return Ok(answer(watch_dir_response::Event::Filesystem(Box::new(
                    event,
                ))));
            }
            let keepalive_at = self.last_sent + self.keepalive;
            if now() >= keepalive_at {
                self.last_sent = now();
                return Ok(answer(watch_dir_response::Event::Keepalive(Empty {})));
            }
            let wake = self.next_poll.min(keepalive_at);
            if let Some(deadline) = self.deadline
                && deadline <= wake
            {
                tokio::time::sleep_until(deadline).await;
                return Err(deadline_passed());
            }
            tokio::time::sleep_until(wake).await;
            if now() < self.next_poll {
                continue;
            }
            let limit = now() + POLL_LIMIT;
            let until = self.deadline.map_or(limit, |d| d.min(limit));
            match tokio::time::timeout_at(until, self.watch.poll(&self.files)).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => return Err(err.forgetting(&owner_of(&self.files))),
                Err(_) if self.deadline.is_some_and(|d| d <= now()) => {
                    return Err(deadline_passed());
                }
                Err(_) => {
                    return Err(ConnectError::new(
                        Code::DeadlineExceeded,
                        format!(
                            "listing {} took longer than {} s: the watch ended",
                            self.watch.shown,
                            POLL_LIMIT.as_secs()
                        ),
                    ));
                }
            }
            self.next_poll = now() + POLL_INTERVAL;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keepalive_interval_is_the_clients_within_bounds() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("keepalive-ping-interval", value.parse().unwrap());
            keepalive_interval(&headers)
        };
        assert_eq!(keepalive_interval(&HeaderMap::new()), DEFAULT_KEEPALIVE);
        assert_eq!(with("50"), Duration::from_secs(50));
        assert_eq!(with("0"), MIN_KEEPALIVE);
        assert_eq!(with("99999"), MAX_KEEPALIVE);
        assert_eq!(with("soon"), DEFAULT_KEEPALIVE);
    }
}
