//! The Anthropic provider against a local server speaking the Messages
//! streaming format.

use crate::support;

use paddock_core::model::{
    Message, ModelConfig, ModelError, ModelEvent, ModelProvider, ModelRequest, ModelResponse,
    ProviderKind, StopReason, ToolCall, ToolResult, ToolSchema, Usage, collect,
};
use paddock_models::{AnthropicProvider, ApiKey, RetryPolicy};
use serde_json::{Value, json};
use support::{End, FakeServer, Reply, drain, events_then_error, fast_retry};
use tokio_util::sync::CancellationToken;

fn provider(server: &FakeServer, retry: RetryPolicy) -> anyhow::Result<AnthropicProvider> {
    let config = ModelConfig {
        provider: ProviderKind::Anthropic,
        model: "claude-test".into(),
        base_url: Some(server.url.clone()),
        context_window: 200_000,
        api_key_env: Some("ANTHROPIC_API_KEY".into()),
    };
    Ok(AnthropicProvider::new(&config, Some(ApiKey::new("sk-ant-test")))?.with_retry(retry))
}

fn event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or_default().to_owned();
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(input_tokens: u64) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}))
}

fn text_block(index: u32, parts: &[&str]) -> String {
    let mut out = event(json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}}));
    for text in parts {
        out += &event(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": text}}));
    }
    out + &event(json!({"type": "content_block_stop", "index": index}))
}

fn message_end(stop_reason: &str, output_tokens: u64) -> String {
    event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens}}))
        + &event(json!({"type": "message_stop"}))
}

fn ping() -> String {
    event(json!({"type": "ping"}))
}

fn hello_body() -> String {
    [
        message_start(25),
        ping(),
        text_block(0, &["Hel", "lo"]),
        message_end("end_turn", 15),
    ]
    .concat()
}

fn text_delta(text: &str) -> ModelEvent {
    ModelEvent::TextDelta { text: text.into() }
}

#[tokio::test]
async fn streams_text_and_usage_and_sends_the_documented_request() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![Reply::sse(hello_body())]).await?;
    let provider = provider(&server, RetryPolicy::default())?;
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![
            Message::system("The workspace is /workspace."),
            Message::user("What is in a.rs?"),
            Message::assistant(
                "Reading.",
                vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a.rs"}),
                }],
            ),
            Message::tool_results(vec![ToolResult {
                call_id: "toolu_1".into(),
                content: "fn main() {}".into(),
                is_error: false,
            }]),
            Message::user("Go on."),
        ],
        tools: vec![ToolSchema {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_tokens: None,
        temperature: None,
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
                input_tokens: 25,
                output_tokens: 15
            }),
            ModelEvent::Done {
                stop: StopReason::EndTurn
            },
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "system": "Be brief.\n\nThe workspace is /workspace.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "What is in a.rs?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}", "is_error": false},
                    {"type": "text", "text": "Go on."},
                ]},
            ],
            "tools": [{
                "name": "read_file",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }],
            "stream": true,
        })
    );
    Ok(())
}

#[tokio::test]
async fn assembles_tool_use_blocks_from_split_json_deltas() -> anyhow::Result<()> {
    let tool_block = |index: u32, id: &str, name: &str, parts: &[&str]| {
        let mut out = event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        for part in parts {
            out += &event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": part}}));
        }
        out + &event(json!({"type": "content_block_stop", "index": index}))
    };
    let body = [
        message_start(472),
        text_block(0, &["Checking both."]),
        tool_block(
            1,
            "toolu_01A",
            "read_file",
            &["", "{\"path\": \"src/li", "b.rs\"}"],
        ),
        ping(),
        // a tool without arguments sends no fragments at all
        tool_block(2, "toolu_01B", "workspace_tree", &[]),
        message_end("tool_use", 89),
    ]
    .concat();
    let server = FakeServer::start(vec![Reply::sse(body)]).await?;
    let provider = provider(&server, RetryPolicy::default())?;

    let events: Vec<ModelEvent> =
        drain(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
    let delta = |json: &str| ModelEvent::ToolCallDelta {
        id: "toolu_01A".into(),
        json: json.into(),
    };
    let read_file = ToolCall {
        id: "toolu_01A".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/lib.rs"}),
    };
    let tree = ToolCall {
        id: "toolu_01B".into(),
        name: "workspace_tree".into(),
        arguments: json!({}),
    };
    assert_eq!(
        events,
        vec![
            text_delta("Checking both."),
            ModelEvent::ToolCallStart {
                id: "toolu_01A".into(),
                name: "read_file".into()
            },
            delta(""),
            delta("{\"path\": \"src/li"),
            delta("b.rs\"}"),
            ModelEvent::ToolCall(read_file.clone()),
            ModelEvent::ToolCallStart {
                id: "toolu_01B".into(),
                name: "workspace_tree".into()
            },
            ModelEvent::ToolCall(tree.clone()),
            ModelEvent::Usage(Usage {
                input_tokens: 472,
                output_tokens: 89
            }),
            ModelEvent::Done {
                stop: StopReason::ToolCalls
            },
        ]
    );
    Ok(())
}

#[tokio::test]
async fn retries_overload_before_the_first_event_then_succeeds() -> anyhow::Result<()> {
    let overloaded =
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
    let in_stream_overload = message_start(25) + &format!("event: error\ndata: {overloaded}\n\n");
    let server = FakeServer::start(vec![
        Reply::status(529, overloaded),
        Reply::sse(in_stream_overload),
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let response =
        collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await?;
    assert_eq!(
        response,
        ModelResponse {
            text: "Hello".into(),
            tool_calls: vec![],
            usage: Some(Usage {
                input_tokens: 25,
                output_tokens: 15
            }),
            stop: StopReason::EndTurn,
        }
    );
    assert_eq!(server.requests().len(), 3);
    Ok(())
}

#[tokio::test]
async fn an_error_event_after_output_fails_the_call() -> anyhow::Result<()> {
    let body = message_start(25)
        + &event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        + &event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Par"}}),
        )
        + "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let server = FakeServer::start(vec![Reply::sse(body), Reply::sse(hello_body())]).await?;
    let provider = provider(&server, fast_retry(3))?;
    let (events, error) =
        events_then_error(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await;
    assert_eq!(events, vec![text_delta("Par")]);
    assert!(
        matches!(&error, Some(ModelError::Provider { kind, message }) if kind == "overloaded_error" && message == "Overloaded"),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_reported_not_retried() -> anyhow::Result<()> {
    let partial = message_start(25)
        + &event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        + &event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        );
    let server = FakeServer::start(vec![
        Reply::sse_then(partial, End::Abort),
        Reply::sse(hello_body()),
    ])
    .await?;
    let provider = provider(&server, fast_retry(3))?;
    let (events, error) =
        events_then_error(provider.stream(&ModelRequest::default(), CancellationToken::new()))
            .await;
    assert_eq!(events, vec![text_delta("Hel")]);
    assert!(
        matches!(error, Some(ModelError::StreamCut { after_events: 1 })),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn malformed_event_json_is_a_decode_error() -> anyhow::Result<()> {
    let body = message_start(25)
        + "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 0,\n\n";
    let server = FakeServer::start(vec![Reply::sse(body), Reply::sse(hello_body())]).await?;
    let provider = provider(&server, fast_retry(3))?;
    let result = collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await;
    assert!(
        matches!(&result, Err(ModelError::Decode { what, source: Some(_) }) if what == "Anthropic stream event \"content_block_start\""),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

/// A local server: the base URL with `/v1` reaches the same
/// path, and no key is needed or sent when its variable is unset.
#[tokio::test]
async fn a_keyless_local_server_is_reached_with_or_without_v1() -> anyhow::Result<()> {
    let server = FakeServer::start(vec![Reply::sse(hello_body())]).await?;
    let mut config = paddock_models::parse_spec("anthropic:local")?;
    config.base_url = Some(format!("{}/v1/", server.url));
    let provider = paddock_models::build_with_env(&config, |_| None)?;
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..ModelRequest::default()
    };
    collect(provider.stream(&request, CancellationToken::new())).await?;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), None);
    Ok(())
}
