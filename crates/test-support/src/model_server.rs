//! A model endpoint for scenario tests and benchmarks: it answers
//! `POST /v1/chat/completions` with scripted turns in OpenAI's streaming
//! wire format (`chat.completion.chunk` server-sent events, the text and
//! each call's arguments in several chunks, usage last, then `[DONE]`),
//! and records every request it got, when, and in what order. A turn can
//! be held until the test releases it, and paced, so a client sees its
//! pieces arrive one by one.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub text: String,
    /// `(tool, arguments)`; ids are `call_<turn>_<n>`, both 1-based.
    pub tool_calls: Vec<(String, Value)>,
    /// Wait for [`ModelServer::release`] of this turn before answering.
    pub held: bool,
    /// Pause between chunks.
    pub pace: Duration,
}

impl Turn {
    pub fn text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ..Self::default()
        }
    }

    pub fn call(tool: &str, arguments: Value) -> Self {
        Self::default().and_call(tool, arguments)
    }

    pub fn and_call(mut self, tool: &str, arguments: Value) -> Self {
        self.tool_calls.push((tool.to_owned(), arguments));
        self
    }

    pub fn with_text(mut self, text: &str) -> Self {
        self.text = text.to_owned();
        self
    }

    pub fn held(mut self) -> Self {
        self.held = true;
        self
    }

    pub fn paced(mut self, pace: Duration) -> Self {
        self.pace = pace;
        self
    }
}

/// A request as the server got it.
#[derive(Debug, Clone)]
pub struct Request {
    pub body: Value,
    pub at: Instant,
    /// The same moment on the wall clock (to compare with a sandbox's).
    pub wall: SystemTime,
}

impl Request {
    /// The content of the request's last tool result message.
    pub fn last_tool_result(&self) -> Option<String> {
        self.body["messages"]
            .as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str().map(str::to_owned))
    }

    /// The texts of the request's user messages, in order.
    pub fn user_texts(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| match &m["content"] {
                Value::String(text) => Some(text.clone()),
                Value::Array(parts) => Some(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join(""),
                ),
                _ => None,
            })
            .collect()
    }
}

#[derive(Default)]
struct Shared {
    turns: Vec<Turn>,
    requests: Mutex<Vec<Request>>,
    released: Mutex<HashSet<usize>>,
    changed: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub struct ModelServer {
    /// `http://127.0.0.1:PORT/v1`: the `--base-url` of an `openai:` model.
    pub base_url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelServer")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl ModelServer {
    /// Serves `turns` in order, one per request; a request past the script
    /// is answered with a text saying so (and ends the run).
    pub async fn start(turns: Vec<Turn>) -> Result<Self> {
        let shared = Arc::new(Shared {
            turns,
            ..Shared::default()
        });
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url,
            shared,
            task,
        })
    }

    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.requests).clone()
    }

    /// Waits until `n` requests came.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Result<Vec<Request>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.changed.notified();
            let requests = self.requests();
            if requests.len() >= n {
                return Ok(requests);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                bail!(
                    "the model server got {} requests in {timeout:?}, not {n}",
                    requests.len()
                );
            }
        }
    }

    /// Lets held turn `index` (0-based) answer.
    pub fn release(&self, index: usize) {
        lock(&self.shared.released).insert(index);
        self.shared.changed.notify_waiters();
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let index = {
        let mut requests = lock(&shared.requests);
        requests.push(Request {
            body,
            at: Instant::now(),
            wall: SystemTime::now(),
        });
        requests.len() - 1
    };
    shared.changed.notify_waiters();
    let turn = shared
        .turns
        .get(index)
        .cloned()
        .unwrap_or_else(|| Turn::text("(the script has no more turns)"));
    if turn.held {
        loop {
            let notified = shared.changed.notified();
            if lock(&shared.released).contains(&index) {
                break;
            }
            notified.await;
        }
    }
    let pace = turn.pace;
    let chunks =
        futures_util::stream::iter(chunks(&turn, index + 1)).then(move |chunk| async move {
            if pace.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(pace).await;
            }
            Ok::<_, std::io::Error>(Bytes::from(chunk))
        });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(chunks))
        .unwrap_or_default()
}

fn chunk(delta: Value, finish_reason: Value) -> String {
    let chunk = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    });
    format!("data: {chunk}\n\n")
}

/// The turn as SSE chunks: its text word by word, each call's name, then
/// its arguments in pieces, the finish reason, usage and `[DONE]`.
fn chunks(turn: &Turn, number: usize) -> Vec<String> {
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for word in turn.text.split_inclusive(' ') {
        out.push(chunk(json!({"content": word}), Value::Null));
    }
    for (n, (tool, arguments)) in turn.tool_calls.iter().enumerate() {
        let id = format!("call_{number}_{}", n + 1);
        out.push(chunk(
            json!({"tool_calls": [{"index": n, "id": id, "type": "function",
                "function": {"name": tool, "arguments": ""}}]}),
            Value::Null,
        ));
        let text = arguments.to_string();
        let pieces: Vec<String> = text
            .chars()
            .collect::<Vec<_>>()
            .chunks(16)
            .map(|c| c.iter().collect())
            .collect();
        for piece in pieces {
            out.push(chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(chunk(json!({}), json!(finish)));
    let usage = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "scripted",
        "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    });
    out.push(format!("data: {usage}\n\n"));
    out.push("data: [DONE]\n\n".to_owned());
    out
}
