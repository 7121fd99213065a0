//! The streaming HTTP call shared by the OpenAI and Anthropic providers:
//! POST, retry until the first event is handed out, then decode the SSE body.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use paddock_core::model::{ModelError, ModelEvent, ModelStream};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::retry::{RetryPolicy, retry_after};
use crate::sse::{SseEvent, SseParser};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A stream silent this long is treated as broken (both providers send
/// keep-alives well within it).
const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of an error answer is kept in [`ModelError::Http`].
const BODY_EXCERPT: usize = 512;

/// Turns a provider's SSE events into model events.
pub(crate) trait WireDecoder: Send {
    fn decode(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
    /// The end marker was decoded: the body is not read any further.
    fn is_done(&self) -> bool;
}

/// Where and how one provider posts its requests.
#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    retry: RetryPolicy,
}

impl Transport {
    /// `headers` carry the credentials; mark them sensitive.
    pub fn new(url: String, mut headers: HeaderMap) -> Result<Self, ModelError> {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(ModelError::Config {
                reason: format!("{url}: the base URL must start with https:// or http://"),
            });
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|source| ModelError::Config {
                reason: format!("building the HTTP client: {source}"),
            })?;
        Ok(Self {
            client,
            url,
            headers,
            retry: RetryPolicy::default(),
        })
    }

    pub fn set_retry(&mut self, retry: RetryPolicy) {
        self.retry = retry;
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts `body` and streams the decoded answer.
    pub fn stream(
        &self,
        body: Vec<u8>,
        new_decoder: fn() -> Box<dyn WireDecoder>,
        cancel: CancellationToken,
    ) -> ModelStream {
        let call = Call {
            client: self.client.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            retry: self.retry.clone(),
            body,
            new_decoder,
            cancel,
            attempts: 0,
            handed_out: 0,
            pending: VecDeque::new(),
            failure: None,
            state: State::Connect,
            finished: false,
        };
        futures_util::stream::unfold(call, |mut call| async move {
            call.next().await.map(|item| (item, call))
        })
        .boxed()
    }
}

struct Call {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    retry: RetryPolicy,
    body: Vec<u8>,
    new_decoder: fn() -> Box<dyn WireDecoder>,
    cancel: CancellationToken,
    attempts: u32,
    /// Events already given to the consumer: once non-zero, no more retries.
    handed_out: usize,
    pending: VecDeque<ModelEvent>,
    /// The error to yield once `pending` is drained.
    failure: Option<ModelError>,
    state: State,
    finished: bool,
}

enum State {
    Connect,
    Reading(Box<Reading>),
    Ended,
}

struct Reading {
    response: reqwest::Response,
    sse: SseParser,
    decoder: Box<dyn WireDecoder>,
}

enum Step {
    More,
    Done,
}

impl Call {
    async fn next(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if self.finished {
                return None;
            }
            let complete = matches!(self.state, State::Ended)
                && self.pending.is_empty()
                && self.failure.is_none();
            if complete {
                self.finished = true;
                return None;
            }
            if self.cancel.is_cancelled() {
                self.finished = true;
                return Some(Err(ModelError::Cancelled));
            }
            if let Some(event) = self.pending.pop_front() {
                self.handed_out += 1;
                return Some(Ok(event));
            }
            if let Some(error) = self.failure.take() {
                self.finished = true;
                return Some(Err(error));
            }
            let result = match std::mem::replace(&mut self.state, State::Ended) {
                State::Ended => continue,
                State::Connect => self.connect().await.map(|reading| {
                    self.state = State::Reading(Box::new(reading));
                }),
                State::Reading(mut reading) => match self.read(&mut reading).await {
                    Ok(Step::More) => {
                        self.state = State::Reading(reading);
                        Ok(())
                    }
                    Ok(Step::Done) => Ok(()),
                    Err(error) => Err(error),
                },
            };
            if let Err(error) = result {
                self.fail_or_retry(error).await;
            }
        }
    }

    async fn connect(&mut self) -> Result<Reading, ModelError> {
        self.attempts += 1;
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(self.body.clone());
        let response = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(ModelError::Cancelled),
            response = request.send() => response.map_err(|source| self.network(source))?,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(Reading {
                response,
                sse: SseParser::new(),
                decoder: (self.new_decoder)(),
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(ModelError::RateLimited {
                retry_after: retry_after(response.headers()),
            });
        }
        let body = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(ModelError::Cancelled),
            body = excerpt(response) => body,
        };
        Err(ModelError::Http {
            status: status.as_u16(),
            body,
        })
    }

    async fn read(&mut self, reading: &mut Reading) -> Result<Step, ModelError> {
        let chunk = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(ModelError::Cancelled),
            chunk = reading.response.chunk() => chunk,
        };
        let mut sse_events = Vec::new();
        let eof = match chunk {
            Ok(Some(bytes)) => {
                reading.sse.push(&bytes, &mut sse_events)?;
                false
            }
            Ok(None) => {
                reading.sse.finish(&mut sse_events)?;
                true
            }
            Err(source) => {
                if self.handed_out == 0 {
                    return Err(self.network(source));
                }
                tracing::warn!(url = %self.url, error = %source, "model stream broke");
                return Err(self.cut());
            }
        };
        let mut events = Vec::new();
        for event in sse_events {
            let decoded = reading.decoder.decode(event, &mut events);
            self.pending.extend(events.drain(..));
            decoded?;
            if reading.decoder.is_done() {
                return Ok(Step::Done);
            }
        }
        if eof { Err(self.cut()) } else { Ok(Step::More) }
    }

    /// Queues the error, or sleeps and schedules another attempt.
    async fn fail_or_retry(&mut self, error: ModelError) {
        let retryable = error.is_retryable()
            || matches!(error, ModelError::StreamCut { .. }) && self.handed_out == 0;
        if !retryable || self.handed_out > 0 {
            self.failure = Some(error);
            return;
        }
        if self.attempts >= self.retry.max_attempts {
            self.failure = Some(if self.attempts > 1 {
                ModelError::RetriesExhausted {
                    attempts: self.attempts,
                    last: Box::new(error),
                }
            } else {
                error
            });
            return;
        }
        let delay = match error {
            ModelError::RateLimited {
                retry_after: Some(after),
            } if after > self.retry.max_delay => {
                self.failure = Some(error);
                return;
            }
            ModelError::RateLimited {
                retry_after: Some(after),
            } => after,
            _ => self.retry.backoff(self.attempts),
        };
        tracing::warn!(
            url = %self.url,
            attempt = self.attempts,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "model request failed, retrying"
        );
        self.pending.clear();
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => self.failure = Some(ModelError::Cancelled),
            () = tokio::time::sleep(delay) => self.state = State::Connect,
        }
    }

    fn network(&self, source: reqwest::Error) -> ModelError {
        ModelError::Network {
            url: self.url.clone(),
            source: Box::new(source),
        }
    }

    fn cut(&self) -> ModelError {
        ModelError::StreamCut {
            after_events: self.handed_out + self.pending.len(),
        }
    }
}

/// The start of an error answer, as text.
async fn excerpt(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < BODY_EXCERPT * 4 {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    match text.char_indices().nth(BODY_EXCERPT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
