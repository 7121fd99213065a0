//! The OpenAI-compatible provider against a local server speaking the chat
//! completions streaming format.

use crate::support;

use std::time::{Duration, Instant};

use anyhow::Context;
use paddock_core::model::{
    Message, ModelConfig, ModelError, ModelEvent, ModelProvider, ModelRequest, ModelResponse,
    ProviderKind, StopReason, ToolCall, ToolResult, ToolSchema, Usage, collect,
};
use paddock_models::{ApiKey, OpenAiProvider, RetryPolicy};
use serde_json::{Value, json};
use support::{End, FakeServer, Reply, drain, events_then_error, fast_retry};
use tokio_util::sync::CancellationToken;

fn provider(server: &FakeServer, retry: RetryPolicy) -> anyhow::Result<OpenAiProvider> {
    let config = ModelConfig {
        provider: ProviderKind::OpenAi,
        model: "gpt-test".into(),
        base_url: Some(format!("{}/v1/", server.url)),
        context_window: 128_000,
        api_key_env: Some("OPENAI_API_KEY".into()),
    };
    Ok(OpenAiProvider::new(&config, Some(ApiKey::new("sk-test-key")))?.with_retry(retry))
}

/// A `chat.completion.chunk` as OpenAI streams it.
fn chunk(delta: Value, finish_reason: Value) -> String {
    let chunk = json!({
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    });
    format!("data: {chunk}\n\n")
}

/// The last chunk with `stream_options.include_usage`: no choices, the usage.
fn usage_chunk(prompt: u64, completion: u64) -> String {
    let chunk = json!({
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    });
    format!("data: {chunk}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

fn hello_body() -> String {
    [
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ),
        chunk(json!({"content": "Hel"}), Value::Null),
        chunk(json!({"content": "lo"}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage_chunk(9, 2),
        DONE.to_owned(),
    ]
    .concat()
}

fn hello_response() -> ModelResponse {
    ModelResponse {
        text: "Hello".into(),
        tool_calls: vec![],
        usage: Some(Usage {
            input_tokens: 9,
            output_tokens: 2,
        }),
        stop: StopReason::EndTurn,
    }
}

fn text_delta(text: &str) -> ModelEvent {
    ModelEvent::TextDelta { text: text.into() }
}

#[tokio::test]
async fn streams_text_and_usage_and_sends_the_documented_request() -> anyhow::Result<()> {
    // CRLF line ends and keep-alive comments, as proxies may send them
    let body = format!(": keep-alive\n\n{}", hello_body()).replace('\n', "\r\n");
    let server = FakeServer::start(vec![Reply::sse(body)]).await?;
    let provider = provider(&server, RetryPolicy::default())?;
    let request = ModelRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            Message::user("List files"),
            Message::assistant(
                "Looking.",
                vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "workspace_tree".into(),
                        arguments: json!({"depth": 1}),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "b.rs"}),
                    },
                ],
            ),
            Message::tool_results(vec![
                ToolResult {
                    call_id: "call_1".into(),
                    content: "a.rs".into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "call_2".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
            ]),
        ],
        tools: vec![ToolSchema {
            name: "workspace_tree".into(),
            description: "List the workspace".into(),
            parameters: json!({"type": "object", "properties": {"depth": {"type": "integer"}}}),
        }],
        max_tokens: Some(256),
        temperature: Some(0.5),
        purpose: Default::default(),
    };

    let events: Vec<ModelEvent> = drain(provider.stream(&request, CancellationToken::new()))
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    assert_eq!(
        events,
        vec![
            text_delta("Hel"),
            text_delta("lo"),
            ModelEvent::Usage(Usage {
                input_tokens: 9,
                output_tokens: 2
            }),
            ModelEvent::Done {
                stop: StopReason::EndTurn
            },
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "List files"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "workspace_tree", "arguments": "{\"depth\":1}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"path\":\"b.rs\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.rs"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "workspace_tree",
                "description": "List the workspace",
                "parameters": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            }}],
            "max_tokens": 256,
            "temperature": 0.5,
        })
    );
    Ok(())
}

#[tokio::test]
async fn assembles_parallel_tool_calls_split_across_chunks() -> anyhow::Result<()> {
    let args = |index: u32, fragment: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
            Value::Null,
        )
    };
    let body = [
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_a",
                "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b",
                "type": "function", "function": {"name": "search", "arguments": ""}}]}),
            Value::Null,
        ),
        args(0, "{\"pa"),
        args(1, "{\"query\": \"fn ma"),
        args(0, "th\": \"src/ma"),
        args(1, "in\"}"),
        args(0, "in.rs\"}"),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(40, 31),
        DONE.to_owned(),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse(body)]).await?;
    let provider = provider(&server, RetryPolicy::default())?;

    let events: Vec<ModelEvent> =
        drain(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
    let delta = |id: &str, json: &str| ModelEvent::ToolCallDelta {
        id: id.into(),
        json: json.into(),
    };
    let read_file = ToolCall {
        id: "call_a".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/main.rs"}),
    };
    let search = ToolCall {
        id: "call_b".into(),
        name: "search".into(),
        arguments: json!({"query": "fn main"}),
    };
    assert_eq!(
        events,
        vec![
            ModelEvent::ToolCallStart {
                id: "call_a".into(),
                name: "read_file".into()
            },
            ModelEvent::ToolCallStart {
                id: "call_b".into(),
                name: "search".into()
            },
            delta("call_a", "{\"pa"),
            delta("call_b", "{\"query\": \"fn ma"),
            delta("call_a", "th\": \"src/ma"),
            delta("call_b", "in\"}"),
            delta("call_a", "in.rs\"}"),
            ModelEvent::ToolCall(read_file),
            ModelEvent::ToolCall(search),
            ModelEvent::Usage(Usage {
                input_tokens: 40,
                output_tokens: 31
            }),
            ModelEvent::Done {
                stop: StopReason::ToolCalls
            },
        ]
    );
    Ok(())
}

#[tokio::test]
async fn waits_for_retry_after_on_429_then_succeeds() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![
        Reply::Status {
            status: 429,
            headers: vec![("retry-after", "1".into())],
            body: r#"{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}"#.into(),
        },
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let started = Instant::now();
    let response =
        collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await?;
    assert_eq!(response, hello_response());
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After ignored: retried after {:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_fails_at_once() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![Reply::Status {
        status: 429,
        headers: vec![("retry-after", "3600".into())],
        body: String::new(),
    }])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let result = collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await;
    assert!(
        matches!(result, Err(ModelError::RateLimited { retry_after: Some(after) }) if after == Duration::from_secs(3600)),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn retries_a_500_then_succeeds() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![
        Reply::status(
            500,
            r#"{"error": {"message": "The server had an error", "type": "server_error"}}"#,
        ),
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let response =
        collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await?;
    assert_eq!(response, hello_response());
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

#[tokio::test]
async fn gives_up_after_the_last_attempt() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![
        Reply::status(503, "busy 1"),
        Reply::status(502, "busy 2"),
        Reply::status(503, "busy 3"),
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let result = collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await;
    match result {
        Err(ModelError::RetriesExhausted { attempts: 3, last }) => {
            assert!(
                matches!(*last, ModelError::Http { status: 503, ref body } if body == "busy 3"),
                "{last:?}"
            );
        }
        other => anyhow::bail!("expected RetriesExhausted, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
    Ok(())
}

#[tokio::test]
async fn a_client_error_is_not_retried() -> anyhow::Result<()> {
    let body = r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}"#;
    let server =
        FakeServer::start(vec![Reply::status(401, body), Reply::sse(hello_body())]).await?;
    let provider = provider(&server, fast_retry(3))?;
    let result = collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await;
    assert!(
        matches!(&result, Err(ModelError::Http { status: 401, body: b }) if b == body),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_reported_not_retried() -> anyhow::Result<()> {
    let partial = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Hel"}), Value::Null),
        chunk(json!({"content": "lo"}), Value::Null),
    ]
    .concat();
    for end in [End::Abort, End::Complete] {
        let server = FakeServer::start(vec![
            Reply::sse_then(partial.clone(), end),
            Reply::sse(hello_body()),
        ])
        .await?;
        let provider = provider(&server, fast_retry(3))?;
        let (events, error) =
            events_then_error(provider.stream(&ModelRequest::default(), CancellationToken::new()))
                .await;
        assert_eq!(events, vec![text_delta("Hel"), text_delta("lo")], "{end:?}");
        assert!(
            matches!(error, Some(ModelError::StreamCut { after_events: 2 })),
            "{end:?}: {error:?}"
        );
        assert_eq!(server.requests().len(), 1, "{end:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_before_any_event_is_retried() -> anyhow::Result<()> {
    let opening = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    let server = FakeServer::start(vec![
        Reply::sse_then(opening, End::Abort),
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let response =
        collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await?;
    assert_eq!(response, hello_response());
    assert_eq!(server.requests().len(), 2);
    Ok(())
}

#[tokio::test]
async fn malformed_chunk_json_is_a_decode_error() -> anyhow::Result<()> {
    let body = [
        chunk(json!({"content": "Hi"}), Value::Null),
        "data: {\"id\": \"chatcmpl-123\", \"choices\": [{\"delta\": \n\n".to_owned(),
        DONE.to_owned(),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse(body), Reply::sse(hello_body())]).await?;
    let provider = provider(&server, fast_retry(3))?;
    let (events, error) =
        events_then_error(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await;
    assert_eq!(events, vec![text_delta("Hi")]);
    match error {
        Some(ModelError::Decode { what, source }) => {
            assert_eq!(what, "chat completion chunk");
            assert!(source.is_some());
        }
        other => anyhow::bail!("expected a decode error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn invalid_tool_arguments_name_the_call() -> anyhow::Result<()> {
    let body = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function",
                "function": {"name": "write_file", "arguments": "{\"path\": "}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        DONE.to_owned(),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse(body)]).await?;
    let provider = provider(&server, fast_retry(1))?;
    let result = collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await;
    assert!(
        matches!(&result, Err(ModelError::Decode { what, .. }) if what == "arguments of tool call call_x (write_file)"),
        "{result:?}"
    );
    Ok(())
}

#[tokio::test]
async fn cancellation_aborts_a_stream_in_flight() -> anyhow::Result<()> {
    let opening = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "thinking"}), Value::Null),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse_then(opening, End::Hang)]).await?;
    let provider = provider(&server, RetryPolicy::default())?;
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(&ModelRequest::default(), cancel.clone());

    use futures_util::StreamExt;
    let first = stream.next().await.context("stream ended")??;
    assert_eq!(first, text_delta("thinking"));
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .context("cancellation did not abort the stream")?;
    assert!(matches!(next, Some(Err(ModelError::Cancelled))), "{next:?}");
    assert!(stream.next().await.is_none());
    Ok(())
}

#[tokio::test]
async fn cancellation_aborts_a_request_still_waiting_for_headers() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![Reply::Stall]).await?;
    let provider = provider(&server, RetryPolicy::default())?;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        collect(provider.stream(&ModelRequest::default(), cancel)),
    )
    .await
    .context("cancellation did not abort the request")?;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    Ok(())
}

#[tokio::test]
async fn an_error_chunk_is_a_provider_error() -> anyhow::Result<()> {
    let body = [
        chunk(json!({"content": "Hi"}), Value::Null),
        format!(
            "data: {}\n\n",
            json!({"error": {"message": "The model is overloaded", "type": "server_error", "code": null}})
        ),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse(body)]).await?;
    let provider = provider(&server, fast_retry(3))?;
    let (events, error) =
        events_then_error(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await;
    assert_eq!(events, vec![text_delta("Hi")]);
    assert!(
        matches!(&error, Some(ModelError::Provider { kind, message }) if kind == "server_error" && message == "The model is overloaded"),
        "{error:?}"
    );
    Ok(())
}

/// A local server: the base URL without `/v1` reaches the same
/// path, and no key is needed or sent when its variable is unset.
#[tokio::test]
async fn a_keyless_local_server_is_reached_with_or_without_v1() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![Reply::sse(hello_body())]).await?;
    let mut config = paddock_models::parse_spec("openai:local")?;
    config.base_url = Some(server.url.clone());
    let provider = paddock_models::build_with_env(&config, |_| None)?;
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..ModelRequest::default()
    };
    collect(provider.stream(&request, CancellationToken::new())).await?;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), None);
    Ok(())
}
