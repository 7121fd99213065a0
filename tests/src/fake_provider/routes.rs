//! One connection: its requests in turn, each recorded, then routed to the
//! wire format it speaks.

use std::io::{BufReader, Write};

use serde_json::{Value, json};

use super::http::{Request, read_request, write_full, write_sse};
use super::script::{Plan, has_tools, plan};
use super::{Recorded, Shared, anthropic, chat, responses};
use crate::nethost::ReadWrite;

/// The model ids `GET /v1/models` lists.
const MODELS: &[&str] = &["claude-sonnet-4-5", "gpt-5.1-codex", "gpt-5", "fake-model"];

/// Serves the requests of one connection until the client closes it (or
/// asks to).
pub(crate) fn serve_connection(shared: &Shared, conn: Box<dyn ReadWrite>) {
    let mut conn = BufReader::new(conn);
    loop {
        let request = match read_request(&mut conn) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                let body = error("invalid_request_error", &format!("fake provider: {e:#}"));
                let _ = write_full(conn.get_mut(), 400, JSON, &body, false, false);
                return;
            }
        };
        let keep_alive = request.keep_alive();
        if answer(shared, &request, conn.get_mut(), keep_alive).is_err() || !keep_alive {
            return;
        }
    }
}

const JSON: &str = "application/json";

fn error(kind: &str, message: &str) -> Vec<u8> {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message, "param": null, "code": null},
    })
    .to_string()
    .into_bytes()
}

/// The wire format a model route speaks.
#[derive(Debug, Clone, Copy)]
enum Api {
    Anthropic,
    Responses,
    Chat,
}

fn api(method: &str, path: &str) -> Option<Api> {
    if method != "POST" {
        return None;
    }
    // Any prefix before /v1 (a base URL with a path) is allowed.
    if path.ends_with("/v1/messages") {
        Some(Api::Anthropic)
    } else if path.ends_with("/v1/responses") {
        Some(Api::Responses)
    } else if path.ends_with("/v1/chat/completions") {
        Some(Api::Chat)
    } else {
        None
    }
}

fn answer(
    shared: &Shared,
    request: &Request,
    w: &mut impl Write,
    keep_alive: bool,
) -> std::io::Result<()> {
    let body: Value = if request.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into_owned()))
    };
    let path = request.path();
    let route = api(&request.method, path);
    let planned = route.filter(|_| body.is_object()).map(|api| {
        let results = match api {
            Api::Anthropic => anthropic::tool_results(&body),
            Api::Responses => responses::tool_results(&body),
            Api::Chat => chat::tool_results(&body),
        };
        plan(&shared.script(), has_tools(&body), results)
    });
    shared.record(Recorded {
        method: request.method.clone(),
        path: request.target.clone(),
        headers: request.headers.clone(),
        body: body.clone(),
        model_call: planned.is_some(),
        turn: planned.as_ref().and_then(|p| p.turn),
        unix_ms: unix_ms(),
    });
    let head = request.method == "HEAD";
    match (route, planned) {
        (Some(api), Some(plan)) => model(w, api, &body, &plan, keep_alive),
        (Some(_), None) => {
            let e = error(
                "invalid_request_error",
                "fake provider: the body is not a JSON object",
            );
            write_full(w, 400, JSON, &e, false, keep_alive)
        }
        (None, _) if head && (path == "/" || path == "/api/hello") => {
            write_full(w, 200, JSON, b"", true, keep_alive)
        }
        (None, _) if request.method == "POST" && path.ends_with("/v1/messages/count_tokens") => {
            let b = json!({"input_tokens": 123}).to_string();
            write_full(w, 200, JSON, b.as_bytes(), false, keep_alive)
        }
        (None, _) if request.method == "GET" && path.ends_with("/v1/models") => {
            let b = models().to_string();
            write_full(w, 200, JSON, b.as_bytes(), false, keep_alive)
        }
        (None, _) => {
            let e = error(
                "not_found_error",
                &format!("fake provider: no route {} {path}", request.method),
            );
            write_full(w, 404, JSON, &e, head, keep_alive)
        }
    }
}

fn model(
    w: &mut impl Write,
    api: Api,
    body: &Value,
    plan: &Plan,
    keep_alive: bool,
) -> std::io::Result<()> {
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let steps = match api {
            Api::Anthropic => anthropic::stream(body, plan),
            Api::Responses => responses::stream(body, plan),
            Api::Chat => chat::stream(body, plan),
        };
        return write_sse(w, &steps, keep_alive);
    }
    std::thread::sleep(plan.delay);
    let whole = match api {
        Api::Anthropic => anthropic::message(body, plan),
        Api::Responses => responses::whole(body, plan),
        Api::Chat => chat::whole(body, plan),
    };
    write_full(
        w,
        200,
        JSON,
        whole.to_string().as_bytes(),
        false,
        keep_alive,
    )
}

/// A model list both OpenAI's and Anthropic's clients read.
fn models() -> Value {
    let data: Vec<Value> = MODELS
        .iter()
        .map(|m| {
            json!({
                "id": m, "object": "model", "type": "model", "created": 1_700_000_000,
                "owned_by": "fake", "display_name": m, "created_at": "2025-01-01T00:00:00Z",
            })
        })
        .collect();
    json!({
        "object": "list", "data": data, "has_more": false,
        "first_id": MODELS.first(), "last_id": MODELS.last(),
    })
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
