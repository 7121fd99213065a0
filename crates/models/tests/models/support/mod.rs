//! A local HTTP server that answers model requests with scripted replies in
//! the providers' real streaming wire formats, and records what it received.

#![allow(dead_code)] // each test binary uses part of it

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use paddock_core::model::{ModelError, ModelEvent, ModelStream};
use paddock_models::RetryPolicy;
use serde_json::Value;

/// How an SSE reply ends after its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The body ends normally.
    Complete,
    /// The connection is aborted (the chunked body never terminates properly).
    Abort,
    /// The connection stays open and silent.
    Hang,
}

#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream`: `body` written in pieces of `piece` bytes.
    Sse {
        body: String,
        piece: usize,
        end: End,
    },
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Never answers.
    Stall,
}

impl Reply {
    pub fn sse(body: String) -> Self {
        Reply::Sse {
            body,
            piece: 11,
            end: End::Complete,
        }
    }

    pub fn sse_then(body: String, end: End) -> Self {
        Reply::Sse {
            body,
            piece: 11,
            end,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
}

pub struct FakeServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Serves `replies` in order, one per request; later requests get a 418.
    pub async fn start(replies: Vec<Reply>) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, shared, task })
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(Recorded {
            path: uri.path().to_owned(),
            headers,
            body,
        });
    }
    let reply = shared.replies.lock().ok().and_then(|mut r| r.pop_front());
    match reply {
        None => plain(StatusCode::IM_A_TEAPOT, Vec::new(), "no reply scripted"),
        Some(Reply::Stall) => {
            std::future::pending::<()>().await;
            plain(StatusCode::IM_A_TEAPOT, Vec::new(), "")
        }
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => plain(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers,
            &body,
        ),
        Some(Reply::Sse { body, piece, end }) => {
            let pieces: Vec<Bytes> = body
                .as_bytes()
                .chunks(piece.max(1))
                .map(Bytes::copy_from_slice)
                .collect();
            let body = futures_util::stream::iter(pieces).then(|piece| async move {
                // separate writes, so the client sees many small reads
                tokio::task::yield_now().await;
                Ok::<_, std::io::Error>(piece)
            });
            let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match end {
                End::Complete => futures_util::stream::empty().boxed(),
                End::Abort => futures_util::stream::once(async {
                    // let what was written reach the client before the cut
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(std::io::Error::other("connection cut by the test"))
                })
                .boxed(),
                End::Hang => futures_util::stream::pending().boxed(),
            };
            Response::builder()
                .status(StatusCode::OK)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(body.chain(tail)))
                .unwrap_or_default()
        }
    }
}

fn plain(status: StatusCode, headers: Vec<(&'static str, String)>, body: &str) -> Response {
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Body::from(body.to_owned()))
        .unwrap_or_default()
}

/// Retries without waiting (tests of the retry loop).
pub fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(5),
    }
}

/// Every item of a stream, errors included (a stream ends after its first error).
pub async fn drain(mut stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item);
    }
    items
}

/// The events before the first error, and that error.
pub async fn events_then_error(stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    for item in drain(stream).await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}
